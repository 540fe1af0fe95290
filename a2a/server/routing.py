"""The server's few routes, and the one dispatcher that serves them.

``A2AServer`` has a fixed table: the card, the JSON-RPC endpoint, the REST prefix and the
WebSocket endpoint. ``Dispatcher`` routes a request to its handler: a dictionary lookup and one
prefix test, where aiohttp's application layer (router, match info, middleware chain) would cost
a tenth of a SendMessage. It is what aiohttp's low-level server calls (``A2AServer.start``), and
what the one catch-all route of ``A2AServer.app()`` calls when the server is embedded in a
larger application: so an unknown path (404), a wrong method (405 with ``Allow``) and
``Expect`` are answered alike in both. Middlewares (aiohttp's kind) are run by the dispatcher,
around the routing, as an application runs them around its router.

Every path is served with and without one trailing slash (``/a2a/jsonrpc/`` is
``/a2a/jsonrpc``), and every answer the dispatcher gives itself is a JSON error body, framed
as the endpoint the path is at or under frames its errors (a route's ``errors``): a client that
got a URL slightly wrong can read the answer, where aiohttp's own would be ``text/plain``.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar, cast

from aiohttp import web
from aiohttp.http import HttpVersion11
from aiohttp.typedefs import Middleware

from ..errors import InvalidRequestError, MethodNotFoundError, ProtocolError
from ..protocol import rest

__all__ = ["Dispatcher", "ErrorFraming", "Handler", "Middleware", "Route", "status_body"]

Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]
#: How an endpoint frames an error: the body and its content type.
ErrorFraming = Callable[[ProtocolError], tuple[bytes, str]]


def status_body(error: ProtocolError) -> tuple[bytes, str]:
    """The framing of paths that are no binding's (the card's, unknown ones): a
    ``google.rpc.Status`` body (REST's error format, which names the HTTP status) as JSON."""
    return rest.encode_error(error), "application/json"


class _MethodNotAllowed(MethodNotFoundError):
    http_status = 405


class _ExpectationFailed(InvalidRequestError):
    http_status = 417


@dataclass(frozen=True, slots=True)
class Route:
    path: str
    handler: Handler
    #: The methods served (``None``: any; the handler answers a wrong one itself).
    methods: frozenset[str] | None
    #: Serve every path under ``path + "/"`` too (the handler reads the rest of the path).
    prefix: bool = False
    #: How the dispatcher frames its own answers (404, 405, 417) at ``path`` and under it;
    #: ``None``: ``status_body``.
    errors: ErrorFraming | None = None


class Dispatcher:
    """Serves the routes: the request handler of aiohttp's low-level ``web.Server``.

    Routes may share a path (a WebSocket endpoint configured on the JSON-RPC path, say): each
    method goes to its own handler, as aiohttp's router would do it. An exact path is tried
    before the prefixes, and an exact path with one trailing slash is that path; a path that
    exists for other methods only is 405 with ``Allow``. ``middlewares`` run around all that,
    the first one outermost (they see 404s and 405s too, raised as aiohttp's router raises them).
    """

    def __init__(self, routes: Sequence[Route], middlewares: Sequence[Middleware] = ()) -> None:
        self._exact: dict[str, dict[str, Handler]] = {}
        self._prefixed: list[tuple[str, dict[str, Handler]]] = []
        # The longest path first: a path is framed as the innermost endpoint it is under.
        self._framings = sorted(
            ((route.path, route.errors) for route in routes if route.errors is not None),
            key=lambda entry: len(entry[0]),
            reverse=True,
        )
        for route in routes:
            if route.prefix:
                self._prefixed.append((route.path + "/", {}))
                table = self._prefixed[-1][1]
            else:
                table = self._exact.setdefault(route.path, {})
            for method in sorted(route.methods) if route.methods is not None else ["*"]:
                if method in table:
                    raise ValueError(f"two routes for {method} {route.path}")
                table[method] = route.handler
        self._chain: Callable[[web.Request], Awaitable[web.StreamResponse]] | None = None
        if middlewares:
            chain: Callable[[web.Request], Awaitable[web.StreamResponse]] = self._route
            for middleware in reversed(middlewares):  # built once, not per request
                chain = functools.partial(middleware, handler=chain)
            self._chain = chain

    def handler_for(self, path: str, method: str) -> Handler:
        """The handler for ``method`` on ``path``; ``HTTPNotFound`` or ``HTTPMethodNotAllowed``."""
        allowed: set[str] = set()
        table = self._exact.get(path)
        if table is None and path.endswith("/"):
            table = self._exact.get(path[:-1])  # "/a2a/jsonrpc/" names the same endpoint
        if table is not None:
            handler = table.get(method) or table.get("*")
            if handler is not None:
                return handler
            allowed.update(table)
        for start, table in self._prefixed:
            if path.startswith(start):
                handler = table.get(method) or table.get("*")
                if handler is not None:
                    return handler
                allowed.update(table)
        if allowed:
            refusal = _MethodNotAllowed(f"HTTP {method} is not allowed on {path} (only {', '.join(sorted(allowed))})")
            raise _framed(web.HTTPMethodNotAllowed(method, sorted(allowed)), self.framing(path), refusal)
        error = MethodNotFoundError(f"Nothing is served at {path}: the agent card lists this server's endpoints")
        raise _framed(web.HTTPNotFound(), self.framing(path), error)

    def framing(self, path: str) -> ErrorFraming:
        """How errors are framed at ``path``: as the endpoint it is at or under does it."""
        for start, framing in self._framings:
            if path.startswith(start) and (len(path) == len(start) or path[len(start)] == "/"):
                return framing
        return status_body

    def __call__(self, request: web.BaseRequest) -> Awaitable[web.StreamResponse]:
        if self._chain is not None:
            # Both ways of serving make ``web.Request`` objects, what middlewares are typed for.
            return self._chain(cast(web.Request, request))
        return self._route(request)

    def _route(self, request: web.BaseRequest) -> Awaitable[web.StreamResponse]:
        # Not a coroutine itself: it hands back the handler's, so a request that waits (for
        # its agent) resumes through one frame fewer. aiohttp awaits what it gets, and an
        # exception raised here reaches it the same way as one raised inside a coroutine.
        # Routed on the path with "%2F" still encoded, as aiohttp's router does: an encoded
        # slash never makes another endpoint's path.
        handler = self.handler_for(request.rel_url.path_safe, request.method)
        if request.headers.get("Expect"):
            return _after_expect(request, handler, self.framing(request.rel_url.path_safe))
        return handler(request)


_Refusal = TypeVar("_Refusal", bound=web.HTTPException)


def _framed(refusal: _Refusal, framing: ErrorFraming, error: ProtocolError) -> _Refusal:
    """aiohttp's exception for the status, answering ``error`` as ``framing`` frames it.

    Set after construction: aiohttp deprecates a body given to the constructor, and its ``text=``
    would add a charset that the bindings' own error answers do not have.
    """
    refusal.body, content_type = framing(error)
    refusal.content_type = content_type
    refusal.charset = None
    return refusal


async def _after_expect(request: web.BaseRequest, handler: Handler, framing: ErrorFraming) -> web.StreamResponse:
    await _expect(request, framing)
    return await handler(request)


async def _expect(request: web.BaseRequest, framing: ErrorFraming) -> None:
    """``Expect: 100-continue``: tell the client to send its body (as aiohttp's router does)."""
    expect = request.headers.get("Expect", "")
    if request.version != HttpVersion11:
        return
    if expect.lower() != "100-continue":
        raise _framed(web.HTTPExpectationFailed(), framing, _ExpectationFailed(f"Unknown Expect: {expect}"))
    await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    request.writer.output_size = 0  # the interim answer is not part of the response
