"""An HTTP response body, read within a size limit that counts decoded bytes.

httpx reads a body whole (``response.content``) and inflates a compressed chunk in one go, so a
peer that announces 10 GB, or sends a few kilobytes of gzip that inflate to gigabytes, would
fill the client's memory. Here the body is read as it arrives (``aiter_raw``), decoded by our
own inflater a bounded slice at a time, and counted: reading stops at the first byte over the
limit. Only the codings we ask for (``ACCEPT_ENCODING``) are decoded; any other is an error.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Iterator

import httpx

from ..errors import InvalidResponseError

__all__ = ["ACCEPT_ENCODING", "decoded_chunks", "read_body"]

#: What we ask peers for: the codings ``_Inflater`` decodes in bounded steps.
ACCEPT_ENCODING = "gzip, deflate"
#: The most bytes one step of inflating produces: a bomb is inflated a slice at a time, and
#: reading stops as soon as the slices pass the limit.
_STEP = 64 * 1024
_GZIP = frozenset({"gzip", "x-gzip"})


class _Inflater:
    """gzip or deflate (zlib-wrapped, or raw as some servers send it), in bounded slices."""

    def __init__(self, coding: str) -> None:
        self._gzip = coding in _GZIP
        self._raw_tried = self._gzip  # deflate: retry as raw deflate once, if the wrapper is missing
        self._z = zlib.decompressobj(zlib.MAX_WBITS | 16 if self._gzip else zlib.MAX_WBITS)
        self._started = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        pending = data
        while True:
            out = self._inflate(pending)
            if out:
                yield out
            pending = self._z.unconsumed_tail
            # A full slice may leave output inside zlib even when all input is consumed.
            if not pending and len(out) < _STEP:
                return

    def flush(self) -> bytes:
        return self._z.flush() if self._started else b""

    def _inflate(self, data: bytes) -> bytes:
        try:
            out = self._z.decompress(data, _STEP)
        except zlib.error:
            if self._raw_tried or self._started:
                raise
            self._raw_tried = True
            self._z = zlib.decompressobj(-zlib.MAX_WBITS)
            out = self._z.decompress(data, _STEP)
        self._started = True
        return out


def _coding(response: httpx.Response) -> str | None:
    """The one content coding to undo (``None``: identity); refuses one we did not ask for."""
    header: str = response.headers.get("content-encoding", "")
    codings = [c.strip().lower() for c in header.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return None
    if len(codings) == 1 and (codings[0] in _GZIP or codings[0] == "deflate"):
        return codings[0]
    raise InvalidResponseError(
        f"{response.request.url} answered with Content-Encoding {', '.join(codings)}; "
        f"this client asked for {ACCEPT_ENCODING} only"
    )


async def decoded_chunks(response: httpx.Response) -> AsyncIterator[bytes]:
    """The body as it arrives, decoded; a compressed one in slices of at most 64 KiB."""
    coding = _coding(response)
    if coding is None:
        async for chunk in response.aiter_raw():
            yield chunk
        return
    inflater = _Inflater(coding)
    try:
        async for chunk in response.aiter_raw():
            for piece in inflater.feed(chunk):
                yield piece
        tail = inflater.flush()
    except zlib.error as exc:
        raise InvalidResponseError(f"{response.request.url} sent a body that is not valid {coding}: {exc}") from exc
    if tail:
        yield tail


async def read_body(response: httpx.Response, limit: int, *, setting: str = "max_response_bytes") -> bytes:
    """The whole body, decoded; ``InvalidResponseError`` naming the URL and the limit (and the
    ``setting`` that sets it) as soon as it is over ``limit`` bytes (at once when
    ``Content-Length`` says so)."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise InvalidResponseError(
            f"{response.request.url} announced a body of {int(declared)} bytes, over this client's limit of "
            f"{limit} bytes ({setting})"
        )
    chunks: list[bytes] = []
    size = 0
    async for chunk in decoded_chunks(response):
        size += len(chunk)
        if size > limit:
            raise InvalidResponseError(
                f"{response.request.url} sent a body over this client's limit of {limit} bytes ({setting})"
            )
        chunks.append(chunk)
    return b"".join(chunks)
