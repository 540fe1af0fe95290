"""A JSON answer with status 200 (a unary call's result), its head written with its body in one piece.

aiohttp's ``web.Response`` is general: a header table built at construction, then at ``prepare``
keep-alive, chunking, compression, ``Date``, ``Server`` and ``Connection`` decided, the prepare
hook run, the table serialised, and the body written through three levels of ``write_eof``:
about twenty Python calls for an answer that, on a kept-alive HTTP/1.1 connection of our own
server, always has the same head::

    HTTP/1.1 200 OK
    Content-Type: application/json
    Content-Length: <n>
    Date: <IMF-fixdate>
    Server: a2a-net/<version>

(the headers aiohttp writes there, in its order). ``JsonAnswer`` writes that head and the body
with one ``writer.write_eof`` (with no headers buffered and no chunking, the writer sends the
bytes as they are, counts them and drains). It is a ``web.Response`` for everyone who handles
it (middlewares, aiohttp's ``finish_response``, the connection layer, the access log), and
wherever its fast path does not apply it becomes one exactly: its header table and the rest of
``web.Response.__init__`` are made the first time anything reaches for them (a middleware
reading ``headers``, say), and it is then prepared and written by aiohttp (also when that
happens after a fast ``prepare``, which writes nothing: see ``_leave_fast_path``). The fast path
applies only to a request of ``A2AServer.start``'s server (``ServedRequest``: its prepare hook
sets just ``Server``; an embedded server's application runs ``on_response_prepare`` signals,
which must see the response), on HTTP/1.1, kept alive, not ``HEAD``, with nothing changed on the
answer that the head above would not say (status, cookies, compression, chunking, a body that is
not bytes).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from http import HTTPStatus
from typing import Any

from aiohttp import web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.http import HttpVersion11

from .server_header import ServedRequest, server_software

__all__ = ["JSON", "FastRoute", "JsonAnswer", "Reply", "answer_head", "http_date", "ready", "response_of"]

JSON = "application/json"
#: A unary call's answer, as a binding makes it for either way of serving it (a ``web.Response``,
#: ``response_of``; or written by the connection itself, ``connections``): its HTTP status, its
#: content type, its body, and any header it needs beyond ``Content-Type`` and
#: ``Content-Length`` (a 401's challenge).
Reply = tuple[int, str, bytes, Mapping[str, str] | None]
#: A route of the connections' fast path: the reply to a request from its headers (looked up
#: case-insensitively) and its whole body, or ``None`` when aiohttp's path is to serve it.
FastRoute = Callable[[Mapping[str, str], bytes], Awaitable[Reply] | None]

#: Attributes ``web.Response.__init__`` sets on the instance (rather than the class): looked for
#: only when the fast path does not apply, and made by running it then.
_MADE_LATER = frozenset({"_state", "_headers", "_zlib_executor_size", "_zlib_executor"})
#: What the fast path reads before ``web.Response.__init__`` has run: defaults aiohttp keeps on
#: ``StreamResponse`` itself since 3.11 (3.9 and 3.10 set them in ``__init__``). On an aiohttp
#: without them every ``JsonAnswer`` is made a ``web.Response`` at once, and takes its path.
_CLASS_DEFAULTS = (
    "_keep_alive",
    "_chunked",
    "_compression",
    "_req",
    "_payload_writer",
    "_eof_sent",
    "_must_be_empty_body",
    "_body_length",
    "_cookies",
)
LAZY = all(hasattr(web.StreamResponse, name) for name in _CLASS_DEFAULTS)
#: Methods whose 200 answer has no body (RFC 9110 §9.3.2, §9.3.6): aiohttp's path frames those.
_NO_BODY = frozenset({"HEAD", "CONNECT"})

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def http_date(seconds: int) -> str:
    """``seconds`` since the epoch as an RFC 9110 IMF-fixdate (``Sun, 06 Nov 1994 08:49:37 GMT``):
    English names whatever the locale, hence not ``strftime``."""
    t = time.gmtime(seconds)
    return (
        f"{_DAYS[t.tm_wday]}, {t.tm_mday:02d} {_MONTHS[t.tm_mon]} {t.tm_year:04d} "
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} GMT"
    )


# The end of the head (Date, Server, the blank line), made again only when the second changes.
_tail_second = -1
_tail = b""


def _new_tail(now: int) -> bytes:
    global _tail_second, _tail
    _tail = f"\r\nDate: {http_date(now)}\r\nServer: {server_software()}\r\n\r\n".encode("ascii")
    _tail_second = now
    return _tail


#: The head up to the value of ``Content-Length``, per content type.
_starts: dict[str, bytes] = {}


def _new_start(content_type: str) -> bytes:
    if "\r" in content_type or "\n" in content_type:
        raise ValueError(f"a content type cannot hold a line break: {content_type!r}")
    start = _starts[content_type] = f"HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: ".encode()
    return start


def answer_head(status: int, content_type: str, length: int, headers: Mapping[str, str] | None = None) -> bytes:
    """The head of an answer on a kept-alive HTTP/1.1 connection, as ``JsonAnswer`` writes it;
    ``headers``: more, before ``Date`` and ``Server`` (values of the server's own making, with
    no line break: one is refused with ``ValueError``)."""
    now = int(time.time())
    tail = _tail if now == _tail_second else _new_tail(now)
    if status == 200 and not headers:
        return (_starts.get(content_type) or _new_start(content_type)) + b"%d" % length + tail
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", f"Content-Type: {content_type}"]
    lines.append(f"Content-Length: {length}")
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    if any("\r" in line or "\n" in line for line in lines):
        raise ValueError(f"an answer's header cannot hold a line break: {lines!r}")
    return "\r\n".join(lines).encode() + tail


def response_of(reply: Reply) -> web.Response:
    """``reply`` as aiohttp's path sends it: a ``JsonAnswer`` for a 200 with no more headers."""
    status, content_type, body, headers = reply
    if status == 200 and headers is None:
        return JsonAnswer(body, content_type)
    return web.Response(body=body, status=status, headers=headers, content_type=content_type)


async def ready(reply: Reply) -> Reply:
    """A reply known at once, as an awaitable (a refusal, where the call's answer would be one)."""
    return reply


class JsonAnswer(web.Response):
    """``web.Response(body=body, content_type=content_type)`` with status 200, written in one
    piece where it can be (see the module's docstring)."""

    #: What aiohttp asks of every answer (``getattr`` with a default): found here, not by a
    #: failed lookup through ``__getattr__``.
    __http_exception__ = False
    #: Prepared on the fast path, its head not written yet.
    _ready = False

    def __init__(self, body: bytes, content_type: str = JSON) -> None:
        # Not ``web.Response.__init__``: what it sets is made when first needed (``__getattr__``).
        self._fast = True
        self._json_type = content_type
        self._body = body
        self._status = 200
        self._reason = "OK"
        if not LAZY:
            self._become_response()

    def __getattr__(self, name: str) -> Any:
        # Only attributes ``web.Response.__init__`` would have set reach here (the others are
        # class attributes or set above); anything else is a genuine AttributeError.
        if name not in _MADE_LATER or not self.__dict__.get("_fast"):
            raise AttributeError(name)
        self._become_response()
        return object.__getattribute__(self, name)

    def _become_response(self) -> None:
        """Run ``web.Response.__init__`` now, keeping what was changed on the answer since."""
        self._fast = False
        web.Response.__init__(
            self, body=self._body, status=self._status, reason=self._reason, content_type=self._json_type
        )

    async def prepare(self, request: web.BaseRequest) -> AbstractStreamWriter | None:
        if self._eof_sent:
            return None
        if self._payload_writer is not None:
            return self._payload_writer
        if (
            # Whether the fixed head says all there is to say about this answer to ``request``.
            self._fast
            and isinstance(request, ServedRequest)
            and request.version == HttpVersion11
            and self._keep_alive is not False
            and request.keep_alive
            and request.method not in _NO_BODY
            and self._status == 200
            and self._reason == "OK"
            and not self._cookies
            and not self._compression
            and not self._chunked
            and isinstance(self._body, bytes)
        ):
            # Nothing is written yet (as with ``web.Response``, whose head waits for the body).
            self._req = request
            self._keep_alive = True
            self._must_be_empty_body = False
            self._ready = True
            writer = self._payload_writer = request._payload_writer
            return writer
        if self._fast:
            self._become_response()
        return await super().prepare(request)

    async def write_eof(self, data: bytes = b"") -> None:
        if self._ready:
            writer = self._payload_writer
            body = self._body
            if self._fast and not data and isinstance(body, bytes) and writer is not None:
                await writer.write_eof(answer_head(200, self._json_type, len(body)) + body)
                self._ready = False
                self._eof_sent = True
                self._req = None
                self._body_length = writer.output_size
                self._payload_writer = None
                return
            # Changed since ``prepare`` in a way the fixed head cannot say: aiohttp's path.
            await self._leave_fast_path()
        await super().write_eof(data)

    async def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._ready:
            await self._leave_fast_path()
        await super().write(data)

    async def _leave_fast_path(self) -> None:
        """Prepared on the fast path (nothing written yet), then used beyond what it covers
        (its headers reached for, a body that is not bytes, ``write``): prepared again, by
        aiohttp. Unlike aiohttp's own, a header set between ``prepare`` and ``write_eof`` is
        then sent rather than ignored."""
        request = self._req
        assert request is not None
        self._ready = False
        self._req = self._payload_writer = None
        self._keep_alive = None
        if self._fast:
            self._become_response()
        await super().prepare(request)
