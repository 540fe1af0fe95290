"""Reading a request body under the body limit, inflating a ``Content-Encoding`` ourselves.

aiohttp would inflate a gzip body as it arrives, and keep inflating what follows after the
request was refused (a 1 MB bomb cost seconds of CPU). The server turns that off
(``auto_decompress=False``) and inflates here instead, in bounded steps: the limit applies to
the *decoded* size, an inflation ratio caps bombs early, and reading stops the moment the answer
is decided (the connection is then closed after the answer instead of read to its end).
"""

from __future__ import annotations

import logging
import zlib
from typing import Final

from aiohttp import web

from ..errors import PayloadTooLargeError
from .limits import BodyDecodingError, BodyTimeoutError, HttpLimits, UnsupportedEncodingError

__all__ = ["BODY_LIMITS", "BodyTimeout", "read_request_body"]

log = logging.getLogger("a2a.server")

#: Where a request carries its server's ``HttpLimits`` (set by ``A2AServer``'s request factory,
#: and by its embedded application's route); a request without them gets the defaults.
BODY_LIMITS: Final = web.RequestKey("a2a_limits", HttpLimits)
_DEFAULT_LIMITS = HttpLimits()
#: Inflated bytes always allowed, whatever the ratio: small bodies compress very well.
_RATIO_FLOOR = 64 * 1024
#: The most inflated by one step, between two checks of the limit and the ratio.
_STEP = 64 * 1024


class BodyTimeout(Exception):
    """Set on a request's payload when its body did not arrive in time (``connections``)."""


async def read_request_body(request: web.BaseRequest, limit: int) -> bytes:
    """The body, decoded, refused with 413 as soon as it (or its decoded form) passes ``limit``
    bytes; 415 for an encoding not inflated; 400 for one that does not decode; 408 when the
    connection's body timeout ran out while it was read."""
    limits: HttpLimits = request.get(BODY_LIMITS, _DEFAULT_LIMITS)
    length = request.content_length
    if length is not None and length > limit:
        raise PayloadTooLargeError(f"Request body of {length} bytes is over the limit of {limit} bytes")
    encoding = request.headers.get("Content-Encoding", "").strip().lower()
    try:
        if not encoding or encoding == "identity" or request.content.total_compressed_bytes is not None:
            # Not encoded, or aiohttp inflates it (an embedding application's server): its
            # reader applies the limit to the inflated size.
            return await _read_plain(request, limit)
        if encoding not in limits.request_encodings:
            accepted = ", ".join(limits.request_encodings) or "none"
            raise UnsupportedEncodingError(
                f"Content-Encoding {encoding[:40]!r} is not accepted on requests (accepted: {accepted})"
            )
        return await _inflate(request, encoding, limit, limits.max_inflate_ratio)
    except BodyTimeout:
        raise BodyTimeoutError(f"The request body did not arrive within {limits.body_timeout:g} s") from None


async def _read_plain(request: web.BaseRequest, limit: int) -> bytes:
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge as exc:
        raise PayloadTooLargeError(f"Request body is over the limit of {limit} bytes") from exc


def _decompressor(encoding: str, first: bytes) -> zlib._Decompress:
    if encoding == "deflate" and first and first[0] & 0x0F != 8:
        # "deflate" is meant to be zlib-wrapped (RFC 9110), but some clients send it raw.
        return zlib.decompressobj(-zlib.MAX_WBITS)
    # gzip: exactly the gzip wrapper (16 + ...); deflate: the zlib wrapper.
    return zlib.decompressobj(16 + zlib.MAX_WBITS if encoding != "deflate" else zlib.MAX_WBITS)


async def _inflate(request: web.BaseRequest, encoding: str, limit: int, ratio: int) -> bytes:
    inflater: zlib._Decompress | None = None
    out = bytearray()
    raw = consumed = 0
    try:
        while chunk := await request.content.readany():
            raw += len(chunk)
            if raw > limit:
                raise PayloadTooLargeError(f"Request body is over the limit of {limit} bytes")
            if inflater is None:
                inflater = _decompressor(encoding, chunk)
            data = chunk
            while data:
                if inflater.eof:
                    raise BodyDecodingError(f"Request body has data after the end of its {encoding} stream")
                # In small steps, each checked: a bomb is found after at most one step more
                # than its ratio allows, and never inflates past one byte over the limit.
                out += inflater.decompress(data, min(_STEP, limit + 1 - len(out)))
                consumed += len(data) - len(inflater.unconsumed_tail)
                data = inflater.unconsumed_tail or inflater.unused_data
                if len(out) > limit:
                    raise PayloadTooLargeError(f"Request body is over the limit of {limit} bytes once decoded")
                if len(out) > max(_RATIO_FLOOR, ratio * consumed):
                    raise PayloadTooLargeError(
                        f"Request body inflates over {ratio} times its size: refused as a compression bomb"
                    )
    except zlib.error as exc:
        raise _undecodable(request, encoding, str(exc)) from None
    if inflater is not None and not inflater.eof:
        raise _undecodable(request, encoding, "truncated")
    return bytes(out)


def _undecodable(request: web.BaseRequest, encoding: str, why: str) -> BodyDecodingError:
    log.warning("request body from %s is not valid %s: %s", request.remote, encoding, why)
    return BodyDecodingError(f"Request body is not valid {encoding} ({why})")
