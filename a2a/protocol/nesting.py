"""How deeply a JSON text nests, measured without decoding it (no I/O, no recursion).

A JSON decoder recurses once per level of nesting: about 1,000 levels (2 KB of ``[``) exhaust
Python's stack, and msgspec then raises ``RecursionError``, which no binding expects. So every
request body is measured before it is decoded, and one deeper than the limit is refused.

The measure runs at C speed (``bytes`` methods only; never a Python loop over the bytes), and
for an ordinary body it is two ``bytes.count`` calls: a text with no more than ``limit``
brackets cannot nest deeper than that. Only a body with more brackets is measured exactly.
"""

from __future__ import annotations

import itertools
import re
from array import array

import msgspec

from .. import types as t
from ..errors import InvalidRequestError

__all__ = ["DEFAULT_MAX_JSON_DEPTH", "NestingTooDeepError", "check_depth", "json_depth", "too_deep_id"]

#: Deepest nesting of objects and arrays accepted in a request (the envelope counts as 1; a
#: message part is at level 5, so 64 leaves ample room for structured data and metadata).
DEFAULT_MAX_JSON_DEPTH = 64

#: Every byte but quotes and the four brackets, deleted before counting.
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')
#: Then an opening bracket is the signed byte +1 and a closing one -1: running sums are depths.
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")


def json_depth(body: bytes) -> int:
    """The deepest nesting of objects and arrays in ``body`` (exact for valid JSON).

    For malformed JSON it is exact up to the first error, which is as far as a decoder reads.
    """
    text = body
    if b"\\" in text:
        # Escapes are read left to right: first every escaped backslash, then every escaped
        # quote goes, so that the quotes left are exactly the ones that open or close strings.
        text = text.replace(b"\\\\", b"").replace(b'\\"', b"")
    text = text.translate(None, _NOT_STRUCTURE)
    if b'"' in text:
        # Two adjacent quotes are a string with no bracket in it, or the end of one string and
        # the start of the next: dropping them leaves every other quote opening or closing as
        # before. What is left between quotes (brackets inside strings) is dropped next.
        text = text.replace(b'""', b"")
        if b'"' in text:
            text = b"".join(text.split(b'"')[::2])
    steps = text.translate(_STEPS)
    if steps.count(1) <= 1:
        return steps.count(1)
    # Each pass drops every innermost pair, which lowers every nesting by exactly one level; while
    # that halves what is left (wide, shallow JSON) it is the cheapest measure. After that, the
    # running sums of what is left give the rest. (For malformed JSON both may overcount: an
    # unclosed run is never dropped, so the measure errs on the safe side.)
    peeled = 0
    while True:
        shorter = steps.replace(b"\x01\xff", b"")
        if len(shorter) == len(steps):
            break
        peeled += 1
        if len(shorter) * 2 > len(steps):
            steps = shorter
            break
        steps = shorter
    if not steps:
        return peeled
    return peeled + max(0, *itertools.accumulate(array("b", steps)))


class NestingTooDeepError(InvalidRequestError):
    """A body nested deeper than the limit: -32600 / HTTP 400, and never decoded."""


def check_depth(body: bytes, limit: int) -> None:
    """Refuse ``body`` (``NestingTooDeepError``) if it nests deeper than ``limit``."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return  # the hot path: too few brackets to be too deep
    depth = json_depth(body)
    if depth > limit:
        raise NestingTooDeepError(f"JSON nested {depth} levels deep; the limit is {limit}")


# ---- the id of a body too deep to decode ---------------------------------------------------

_SCALAR = rb'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null'
#: One member of an object whose value is a scalar, and what follows it (``,`` or ``}``).
_MEMBER = re.compile(rb'\s*"((?:[^"\\]|\\.)*)"\s*:\s*(' + _SCALAR + rb")\s*([,}])", re.S)
_OPEN = re.compile(rb"\s*\{")
#: A scalar ``"id"`` that is the last member of the outermost object (the body's last ``}``).
_LAST_ID = re.compile(rb',\s*"id"\s*:\s*(' + _SCALAR + rb")\s*\}\s*\Z", re.S)
#: How much of the end of a body is searched for a trailing ``"id"``.
_TAIL = 4096


def too_deep_id(body: bytes) -> t.RequestId:
    """The ``id`` of a request body too deep to decode, when it can be read without decoding:
    a member of the outermost object before its first nested value (``{"jsonrpc": "2.0", "id":
    7, "method": ..., "params": ...}``, the usual order) or its last member. Else ``None``."""
    found = _leading_id(body)
    if found is None:
        match = _LAST_ID.search(body[-_TAIL:])
        found = match.group(1) if match else None
    if found is None:
        return None
    try:
        value = msgspec.json.decode(found)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None
    return value if isinstance(value, (str, int)) and not isinstance(value, bool) else None


def _leading_id(body: bytes) -> bytes | None:
    opening = _OPEN.match(body)
    if opening is None:
        return None
    pos = opening.end()
    while (member := _MEMBER.match(body, pos)) is not None:
        if member.group(1) == b"id":
            return member.group(2)
        if member.group(3) == b"}":
            return None
        pos = member.end()
    return None
