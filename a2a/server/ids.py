"""Identifiers the server makes (task, context, message and artifact ids).

128 random bits in hex, like ``uuid4().hex``, drawn from an in-process generator seeded from the
operating system (``os.urandom`` per id is a system call, which showed as a fifth of a busy
server's time). Ids need to be unique, not secret: a task is protected by its owner, not by the
difficulty of guessing its id. A forked child reseeds, so two workers never share a sequence.
"""

from __future__ import annotations

import os
import random

__all__ = ["new_id"]

_generator = random.Random(os.urandom(32))


def _reseed() -> None:
    _generator.seed(os.urandom(32))


os.register_at_fork(after_in_child=_reseed)


def new_id() -> str:
    return _generator.randbytes(16).hex()  # half the cost of formatting getrandbits(128)
