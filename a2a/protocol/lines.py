"""Newline-delimited framing (the stdio binding): an encoder and a sans-IO decoder, bytes in, lines out.

One JSON-RPC message per line, UTF-8, ended by ``\\n`` (a ``\\r`` before it is dropped). JSON as
msgspec writes it never contains a raw newline, so a message is always exactly one line.
"""

from __future__ import annotations

__all__ = ["DEFAULT_MAX_LINE_BYTES", "LineDecoder", "LineTooLongError", "encode_line"]

#: Longest line a peer is expected to accept (what our client accepts from an agent).
DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024


class LineTooLongError(ValueError):
    """A line grew past the limit before its newline arrived."""

    def __init__(self, limit: int, size: int) -> None:
        super().__init__(f"a line of at least {size} bytes is over the limit of {limit} bytes")
        self.limit = limit
        self.size = size


def encode_line(message: bytes) -> bytes:
    return message + b"\n"


class LineDecoder:
    """Feed bytes as they arrive (any split); get complete, non-blank lines back, without ``\\n``.

    Raises ``LineTooLongError`` as soon as the pending line is over ``max_line_bytes``, without
    waiting for (or buffering) the rest of it. After an error the decoder is not usable again.
    """

    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self._buffer = bytearray()
        self._scanned = 0  # bytes of the buffer known to hold no newline
        self.max_line_bytes = max_line_bytes

    def feed(self, data: bytes) -> list[bytes]:
        buf = self._buffer
        buf += data
        lines: list[bytes] = []
        start = 0
        search = self._scanned
        while True:
            end = buf.find(b"\n", search)
            if end < 0:
                break
            self._take(buf, start, end, lines)
            start = search = end + 1
        if start:
            del buf[:start]
        self._scanned = len(buf)
        if len(buf) > self.max_line_bytes:
            raise LineTooLongError(self.max_line_bytes, len(buf))
        return lines

    def _take(self, buf: bytearray, start: int, end: int, lines: list[bytes]) -> None:
        stop = end - 1 if end > start and buf[end - 1] == 0x0D else end
        if stop - start > self.max_line_bytes:
            raise LineTooLongError(self.max_line_bytes, stop - start)
        line = bytes(buf[start:stop])
        if line.strip():
            lines.append(line)

    def flush(self) -> bytes | None:
        """At end of input: the last line if it had no newline (``None`` if nothing is left)."""
        rest = bytes(self._buffer).rstrip(b"\r")
        self._buffer.clear()
        self._scanned = 0
        return rest if rest.strip() else None

    @property
    def pending(self) -> int:
        """Bytes of an unfinished line held back."""
        return len(self._buffer)
