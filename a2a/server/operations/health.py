"""Health and the root page: ``GET /healthz``, ``GET /readyz`` and ``GET /``.

All three are answered without credentials and without the agent: a probe must not depend on
the agent's code, nor wake it.

- ``/healthz`` (liveness): ``200 {"status": "ok"}`` whenever the process answers HTTP at all.
- ``/readyz`` (readiness): ``200 {"status": "ready"}`` when the task store and the event bus
  answer within ``timeout`` seconds (with Redis, both are the Redis server), else ``503`` with
  ``{"status": "unavailable", "reason": "..."}``; ``503 {"status": "stopping"}`` once the server
  is shutting down, so a load balancer stops sending new requests before the port closes.
- ``/``: what is served here, as JSON (the agent's name, description and version, the card's
  URL, each binding and its URL, the health paths); a small HTML page for a browser
  (``Accept: text/html``).
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Callable
from typing import Any

from ...protocol.codec import encode
from ...types import AgentCard
from ..bindings.messages import HttpRequest, Reply
from ..engine.handler import RequestHandler

__all__ = ["HEALTHZ_PATH", "READYZ_PATH", "Health"]

HEALTHZ_PATH = "/healthz"
READYZ_PATH = "/readyz"
JSON = "application/json"
#: How long readiness waits for the store and the bus.
READY_TIMEOUT = 2.0


_NO_STORE = {"Cache-Control": "no-store"}


def _json(body: dict[str, Any], status: int = 200) -> Reply:
    return Reply(status, JSON, encode(body), _NO_STORE)


class Health:
    """The three routes of one server. ``card`` is the card for a request (its URLs as the
    request reached us); ``links`` are the other paths worth naming on the root page."""

    def __init__(
        self,
        handler: RequestHandler,
        card: Callable[[HttpRequest], AgentCard],
        card_url: Callable[[HttpRequest], str],
        links: dict[str, str],
        *,
        timeout: float | None = None,
    ) -> None:
        self.handler = handler
        self._card = card
        self._card_url = card_url
        self._links = links
        self.timeout = READY_TIMEOUT if timeout is None else timeout
        self.stopping = False

    async def stop(self) -> None:
        """From now on, readiness says ``stopping`` (the first of the server's stop steps)."""
        self.stopping = True

    async def live(self, _request: HttpRequest) -> Reply:
        return _json({"status": "ok"})

    async def ready(self, _request: HttpRequest) -> Reply:
        if self.stopping:
            return _json({"status": "stopping", "reason": "the server is shutting down"}, 503)
        problem = await self.problem()
        if problem is not None:
            return _json({"status": "unavailable", "reason": problem}, 503)
        return _json({"status": "ready"})

    async def problem(self) -> str | None:
        """What keeps the server from serving (``None``: nothing)."""
        for what, ping in (("task store", self.handler.store.ping), ("event bus", self.handler.bus.ping)):
            try:
                async with asyncio.timeout(self.timeout):
                    await ping()
            except TimeoutError:
                return f"the {what} did not answer within {self.timeout:g}s"
            except Exception as exc:  # noqa: BLE001 - any failure to reach it is the answer, in one line
                return f"the {what} is unreachable: {type(exc).__name__}: {str(exc)[:200]}"
        return None

    async def root(self, request: HttpRequest) -> Reply:
        card = self._card(request)
        import a2a

        info: dict[str, Any] = {
            "name": card.name,
            "description": card.description,
            "version": card.version,
            "server": f"a2a-net/{a2a.__version__}",
            "card": self._card_url(request),
            "bindings": [{"binding": i.protocol_binding, "url": i.url} for i in card.supported_interfaces],
            "skills": [skill.id for skill in card.skills],
            **{name: request.mount + path for name, path in self._links.items()},
        }
        if "text/html" in (request.headers.get("Accept") or ""):
            return Reply(200, "text/html; charset=utf-8", _page(info).encode())
        return _json(info)


def _page(info: dict[str, Any]) -> str:
    e = html.escape
    rows = "".join(f"<li><code>{e(b['binding'])}</code>: <code>{e(b['url'])}</code></li>" for b in info["bindings"])
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{e(info['name'])}</title></head><body>"
        f"<h1>{e(info['name'])}</h1><p>{e(info['description'] or '')}</p>"
        f"<p>An A2A agent ({e(info['server'])}). Its card: <a href='{e(info['card'])}'>{e(info['card'])}</a></p>"
        f"<ul>{rows}</ul></body></html>"
    )
