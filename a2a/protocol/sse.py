"""Server-Sent Events framing: an encoder and a sans-IO incremental decoder (bytes in, events out)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HEARTBEAT", "SSEDecoder", "SSEEvent", "encode_event"]

#: A comment line and the blank line after it: a sign of life on a quiet stream, which no
#: client dispatches as an event (a2a-net's client counts it against its idle timeout).
HEARTBEAT = b": keepalive\n\n"


def encode_event(data: bytes, *, event_id: str | None = None, event: str | None = None) -> bytes:
    """One SSE event. ``data`` is single-line JSON here, so it needs no splitting."""
    head = b""
    if event_id is not None:
        head += b"id: " + event_id.encode() + b"\n"
    if event is not None:
        head += b"event: " + event.encode() + b"\n"
    return head + b"data: " + data + b"\n\n"


@dataclass(slots=True)
class SSEEvent:
    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Feed bytes as they arrive; get complete events back. Handles CRLF, CR and LF line ends,
    lines split across chunks, and refuses an event larger than ``max_event_bytes``.

    ``comments`` counts the comment lines seen (heartbeats: the stream is alive). ``strict``
    refuses a line that is not UTF-8 (``ValueError``) where the SSE specification replaces the
    bad bytes: for a client whose events are JSON, such bytes mean the peer is not sending an
    event stream at all.
    """

    def __init__(self, max_event_bytes: int = 16 * 1024 * 1024, *, strict: bool = False) -> None:
        self._buffer = bytearray()
        self._scanned = 0  # bytes of the buffer known to hold no line end: not searched again
        self._skip_lf = False  # the last chunk ended in CR: a leading LF belongs to that line end
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        self._size = 0
        self._max = max_event_bytes
        self._errors = "strict" if strict else "replace"
        self.last_event_id: str | None = None
        self.comments = 0

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        if self._skip_lf and chunk:
            self._skip_lf = False
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]
        self._buffer += chunk
        events: list[SSEEvent] = []
        start = 0
        buf = self._buffer
        while True:
            end = _line_end(buf, max(start, self._scanned))
            if end < 0:
                break
            line = bytes(buf[start:end])
            start = end + 1
            if buf[end] == 0x0D:  # CR: swallow the LF of a CRLF, now or in the next chunk
                if start < len(buf):
                    if buf[start] == 0x0A:
                        start += 1
                else:
                    self._skip_lf = True
            event = self._process(line)
            if event is not None:
                events.append(event)
        del buf[:start]
        self._scanned = len(buf)
        if len(buf) + self._size > self._max:
            raise ValueError(f"SSE event larger than {self._max} bytes")
        return events

    def _process(self, raw: bytes) -> SSEEvent | None:
        if not raw:
            return self._dispatch()
        try:
            line = raw.decode("utf-8", errors=self._errors)
        except UnicodeDecodeError as exc:
            raise ValueError(f"not an event stream: a line that is not UTF-8 ({exc.reason})") from None
        if line.startswith(":"):
            self.comments += 1
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._size += len(value) + 1
            if self._size > self._max:
                raise ValueError(f"SSE event larger than {self._max} bytes")
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> SSEEvent | None:
        if self._id is not None:
            self.last_event_id = self._id
        if not self._data:
            self._event, self._id = "", None
            return None
        event = SSEEvent("\n".join(self._data), self._event or "message", self._id, self._retry)
        self._data, self._event, self._id, self._retry, self._size = [], "", None, None, 0
        return event


def _line_end(buf: bytearray, start: int) -> int:
    """Index of the first CR or LF at or after ``start``, or -1."""
    lf = buf.find(b"\n", start)
    cr = buf.find(b"\r", start, lf if lf >= 0 else len(buf))
    return cr if cr >= 0 else lf
