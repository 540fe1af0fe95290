"""The server's few routes, and the one dispatcher that serves them.

``A2AServer`` has a fixed table: the card, the JSON-RPC endpoint, the REST prefix and the
WebSocket endpoint. ``Dispatcher`` routes a request to its handler: a dictionary lookup and one
prefix test, where aiohttp's application layer (router, match info, middleware chain) would cost
a tenth of a SendMessage. It is what aiohttp's low-level server calls (``A2AServer.start``), and
what the one catch-all route of ``A2AServer.app()`` calls when the server is embedded in a
larger application: so an unknown path (404), a wrong method (405 with ``Allow``) and
``Expect`` are answered alike in both. Middlewares (aiohttp's kind) are run by the dispatcher,
around the routing, as an application runs them around its router.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import cast

from aiohttp import web
from aiohttp.http import HttpVersion11
from aiohttp.typedefs import Middleware

__all__ = ["Dispatcher", "Handler", "Middleware", "Route"]

Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True)
class Route:
    path: str
    handler: Handler
    #: The methods served (``None``: any; the handler answers a wrong one itself).
    methods: frozenset[str] | None
    #: Serve every path under ``path + "/"`` too (the handler reads the rest of the path).
    prefix: bool = False


class Dispatcher:
    """Serves the routes: the request handler of aiohttp's low-level ``web.Server``.

    Routes may share a path (a WebSocket endpoint configured on the JSON-RPC path, say): each
    method goes to its own handler, as aiohttp's router would do it. An exact path is tried
    before the prefixes; a path that exists for other methods only is 405 with ``Allow``.
    ``middlewares`` run around all that, the first one outermost (they see 404s and 405s too).
    """

    def __init__(self, routes: Sequence[Route], middlewares: Sequence[Middleware] = ()) -> None:
        self._exact: dict[str, dict[str, Handler]] = {}
        self._prefixed: list[tuple[str, dict[str, Handler]]] = []
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
            raise web.HTTPMethodNotAllowed(method, sorted(allowed))
        raise web.HTTPNotFound()

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
            return _after_expect(request, handler)
        return handler(request)


async def _after_expect(request: web.BaseRequest, handler: Handler) -> web.StreamResponse:
    await _expect(request)
    return await handler(request)


async def _expect(request: web.BaseRequest) -> None:
    """``Expect: 100-continue``: tell the client to send its body (as aiohttp's router does)."""
    expect = request.headers.get("Expect", "")
    if request.version != HttpVersion11:
        return
    if expect.lower() != "100-continue":
        raise web.HTTPExpectationFailed(text=f"Unknown Expect: {expect}")
    await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    request.writer.output_size = 0  # the interim answer is not part of the response
