"""The server's few routes, and the one dispatcher that serves them.

``A2AServer`` has a fixed table: the card, the JSON-RPC endpoint, the REST prefix, the WebSocket
endpoint and the operations routes. ``Dispatcher`` routes a request (``messages.HttpRequest``,
its path relative to where the server is mounted) to its handler: a dictionary lookup and one
prefix test. Every host calls it the same way, so an unknown path (404) and a wrong method
(405 with ``Allow``) are answered alike by all of them.

Every path is served with and without one trailing slash (``/a2a/jsonrpc/`` is
``/a2a/jsonrpc``), and every answer the dispatcher gives itself is a JSON error body, framed
as the endpoint the path is at or under frames its errors (a route's ``errors``): a client that
got a URL slightly wrong can read the answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from ...errors import MethodNotFoundError, ProtocolError
from ...protocol import rest
from .messages import Answer, HttpRequest, Reply

__all__ = ["Dispatcher", "ErrorFraming", "Handler", "Route", "status_body"]

Handler = Callable[[HttpRequest], Awaitable[Answer]]
#: How an endpoint frames an error: the body and its content type.
ErrorFraming = Callable[[ProtocolError], tuple[bytes, str]]


def status_body(error: ProtocolError) -> tuple[bytes, str]:
    """The framing of paths that are no binding's (the card's, unknown ones): a
    ``google.rpc.Status`` body (REST's error format, which names the HTTP status) as JSON."""
    return rest.encode_error(error), "application/json"


class _MethodNotAllowed(MethodNotFoundError):
    http_status = 405


@dataclass(frozen=True, slots=True)
class Route:
    path: str
    handler: Handler
    #: The methods served (``None``: any; the handler answers a wrong one itself).
    methods: frozenset[str] | None
    #: Serve every path under ``path + "/"`` too (the handler reads the rest of the path).
    prefix: bool = False
    #: How the dispatcher frames its own answers (404, 405) at ``path`` and under it;
    #: ``None``: ``status_body``.
    errors: ErrorFraming | None = None


class Dispatcher:
    """Serves the routes.

    Routes may share a path (a WebSocket endpoint configured on the JSON-RPC path, say): each
    method goes to its own handler. An exact path is tried before the prefixes, and an exact
    path with one trailing slash is that path; a path that exists for other methods only is
    405 with ``Allow``.
    """

    def __init__(self, routes: Sequence[Route]) -> None:
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

    def handler_for(self, path: str, method: str) -> Handler | Reply:
        """The handler for ``method`` on ``path``, or the answer that refuses it (404, 405)."""
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
            shown = ", ".join(sorted(allowed))
            refusal = _MethodNotAllowed(f"HTTP {method} is not allowed on {path} (only {shown})")
            body, content_type = self.framing(path)(refusal)
            return Reply(405, content_type, body, {"Allow": shown})
        error = MethodNotFoundError(f"Nothing is served at {path}: the agent card lists this server's endpoints")
        body, content_type = self.framing(path)(error)
        return Reply(404, content_type, body)

    def framing(self, path: str) -> ErrorFraming:
        """How errors are framed at ``path``: as the endpoint it is at or under does it."""
        for start, framing in self._framings:
            if path.startswith(start) and (len(path) == len(start) or path[len(start)] == "/"):
                return framing
        return status_body

    async def __call__(self, request: HttpRequest) -> Answer:
        found = self.handler_for(request.route_path, request.method)
        if isinstance(found, Reply):
            return found
        return await found(request)
