"""The base Struct every wire object derives from, and the oneof check."""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

__all__ = ["UNSET", "UnsetType", "Wire", "check_oneof"]


class Wire(msgspec.Struct, rename="camel", omit_defaults=True, kw_only=True, gc=False):
    """ProtoJSON shape: camelCase names, unset fields left out, unknown fields ignored.

    ``gc=False``: wire objects are trees (no reference cycles), so the garbage collector need not
    track them; a busy server makes millions of them.
    """


def check_oneof(obj: Any, type_name: str, fields: tuple[str, ...], *, required: bool = True) -> None:
    """Raise ``ValueError`` unless exactly one (or, if not ``required``, at most one) field is set.

    msgspec calls ``__post_init__`` while decoding and turns this ``ValueError`` into a
    ``ValidationError``, so a malformed oneof on the wire becomes invalid params.
    """
    count = 0
    for name in fields:
        if getattr(obj, name) is not UNSET:
            count += 1
    if count == 1 or (count == 0 and not required):
        return
    present = [name for name in fields if getattr(obj, name) is not UNSET]  # only to explain
    got = ", ".join(present) or "none"
    raise ValueError(f"{type_name} must set exactly one of {', '.join(fields)}; got {got}")
