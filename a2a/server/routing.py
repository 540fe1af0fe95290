"""The server's few routes, and the two ways they are served.

``A2AServer`` has a fixed table: the card, the JSON-RPC endpoint, the REST prefix and the
WebSocket endpoint. ``install`` puts that table on an aiohttp ``Application`` (to embed the
server in a larger application or to add middlewares); ``Dispatcher`` serves it straight from
aiohttp's low-level server, which is what ``A2AServer.start`` does. Four routes need no router:
a dictionary lookup and one prefix test replace the application layer (router, match info,
middleware chain), which cost a tenth of a SendMessage here. Both ways call the same handlers
and answer an unknown path (404), a wrong method (405 with ``Allow``) and ``Expect`` alike
(except that the dispatcher refuses an unknown path at once, where the router first tells an
``Expect: 100-continue`` client to send its body).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from aiohttp import web
from aiohttp.http import HttpVersion11

__all__ = ["Dispatcher", "Handler", "Route", "install"]

Handler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True)
class Route:
    path: str
    handler: Handler
    #: The methods served (``None``: any; the handler answers a wrong one itself).
    methods: frozenset[str] | None
    #: Serve every path under ``path + "/"`` too (the handler reads the rest of the path).
    prefix: bool = False


def install(app: web.Application, routes: Sequence[Route]) -> None:
    """Add the routes to an aiohttp application."""
    for route in routes:
        path = route.path + "/{tail:.*}" if route.prefix else route.path
        for method in sorted(route.methods) if route.methods is not None else ["*"]:
            app.router.add_route(method, path, route.handler)


class Dispatcher:
    """The request handler of an aiohttp low-level ``web.Server`` serving the routes.

    Routes may share a path (a WebSocket endpoint configured on the JSON-RPC path, say): each
    method goes to its own handler, as aiohttp's router would do it. An exact path is tried
    before the prefixes; a path that exists for other methods only is 405 with ``Allow``.
    """

    def __init__(self, routes: Sequence[Route]) -> None:
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
