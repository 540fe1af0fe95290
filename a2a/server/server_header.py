"""The ``Server: a2a-net/<version>`` header, on every answer of the server.

Set where aiohttp prepares a response (every kind: a plain answer, an SSE stream, a WebSocket
upgrade, a 404 raised by the dispatcher), so it needs no line in any binding: the requests
``A2AServer.start`` makes are ``ServedRequest`` objects, whose prepare hook sets it; an
embedded server (``app()``) sets it with its application's ``on_response_prepare`` signal,
on its own routes only. The value is made once. A unary JSON answer written in one piece
(``json_answer``) is not prepared through the hook: it writes the same value in its head.
"""

from __future__ import annotations

import functools

from aiohttp import hdrs, web

__all__ = ["ServedRequest", "server_software", "set_server_header"]


@functools.cache
def server_software() -> str:
    import a2a  # by the time a response is prepared the package is imported

    return f"a2a-net/{a2a.__version__}"


async def set_server_header(_request: web.BaseRequest, response: web.StreamResponse) -> None:
    """An ``on_response_prepare`` signal handler."""
    response.headers[hdrs.SERVER] = server_software()


class ServedRequest(web.Request):
    """A request of ``A2AServer.start``'s low-level server: its responses name the server."""

    async def _prepare_hook(self, response: web.StreamResponse) -> None:
        response.headers[hdrs.SERVER] = server_software()
        await super()._prepare_hook(response)
