"""Server-Sent Events framing: an encoder and a sans-IO incremental decoder (bytes in, events out)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SSEDecoder", "SSEEvent", "encode_event"]


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
    """Feed bytes as they arrive; get complete events back. Handles CRLF, CR and split chunks."""

    def __init__(self, max_event_bytes: int = 16 * 1024 * 1024) -> None:
        self._buffer = b""
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        self._size = 0
        self._max = max_event_bytes
        self.last_event_id: str | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        self._buffer += chunk
        events: list[SSEEvent] = []
        while True:
            line, found = self._take_line()
            if not found:
                break
            event = self._process(line)
            if event is not None:
                events.append(event)
        if len(self._buffer) + self._size > self._max:
            raise ValueError(f"SSE event larger than {self._max} bytes")
        return events

    def _take_line(self) -> tuple[bytes, bool]:
        buf = self._buffer
        for i, byte in enumerate(buf):
            if byte == 0x0A:  # \n
                line, self._buffer = buf[:i], buf[i + 1 :]
                return line.rstrip(b"\r"), True
            if byte == 0x0D:  # \r, possibly the first half of \r\n
                if i + 1 == len(buf):
                    return b"", False  # wait: the \n may be in the next chunk
                skip = 2 if buf[i + 1] == 0x0A else 1
                line, self._buffer = buf[:i], buf[i + skip :]
                return line, True
        return b"", False

    def _process(self, raw: bytes) -> SSEEvent | None:
        if not raw:
            return self._dispatch()
        line = raw.decode("utf-8", errors="replace")
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._size += len(value)
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
