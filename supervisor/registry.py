"""Discovery: resolve every configured agent, keep their cards fresh, and rank their skills.

``Registry.discover()`` resolves all agents *concurrently*, each within
``a2a.discovery_timeout``: a ``url`` agent's card is fetched (then kept, with its ``ETag``, and
refreshed with ``If-None-Match`` once ``Cache-Control: max-age`` has passed), a ``command`` agent
is started as a child process and asked for its card over stdio, a ``module`` agent is imported
and served in-process. An agent that cannot be resolved is reported ``down`` with the reason;
only a ``required`` one fails the run.

Each agent gets its own ``A2AClient`` (its own connection pool, its own credentials): a
credential configured for one agent is never sent anywhere else, and not even to that agent
when its card points the interface at another origin than the configured URL.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shlex
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx
import msgspec

from a2a import A2AClient, Agent, ApiKey, BearerToken, RetryBudget, RetryPolicy
from a2a.client.card import card_url, decode_card
from a2a.errors import A2AError, CardResolutionError, HTTPStatusError, InvalidResponseError, TransportError
from a2a.loader import AgentLoadError, load_agent
from a2a.local import local_client
from a2a.transport.base import DEFAULT_MAX_RESPONSE_BYTES
from a2a.transport.http import exchange
from a2a.transport.stdio import StdioTransport, resolve_a2a_command
from a2a.types import AgentCard, AgentSkill

from .breaker import CircuitBreaker
from .config import AgentConfig, RetryConfig, SkillConfig, SupervisorConfig
from .ranking import Match, SkillDoc, rank

__all__ = ["AgentEntry", "DiscoveryError", "Registry", "SkillInfo"]

log = logging.getLogger("supervisor.registry")

Status = Literal["pending", "up", "down"]
_MAX_AGE = re.compile(r"max-age=(\d+)")


class DiscoveryError(A2AError):
    """An agent could not be resolved (its card, its process or its module)."""


def retry_policy(config: RetryConfig) -> RetryPolicy:
    # No overall deadline: the delegation's own timeout bounds a delegation, retries included.
    return RetryPolicy(
        max_attempts=config.max_attempts,
        initial_backoff=config.initial_backoff,
        max_backoff=config.max_backoff,
        deadline=None,
        budget=RetryBudget(),
        jitter=config.jitter,
    )


@dataclass(frozen=True)
class SkillInfo:
    """A skill as the supervisor uses it (from the card, or from the config's override)."""

    id: str
    name: str
    description: str
    tags: tuple[str, ...]
    examples: tuple[str, ...]
    input_modes: tuple[str, ...]

    @property
    def structured(self) -> bool:
        """Takes structured input: a data part ``{"tool": id, "arguments": {...}}``."""
        return "application/json" in self.input_modes

    @classmethod
    def of(cls, skill: AgentSkill | SkillConfig, default_modes: Iterable[str]) -> SkillInfo:
        return cls(
            id=skill.id,
            name=skill.name or skill.id,
            description=skill.description,
            tags=tuple(skill.tags),
            examples=tuple(skill.examples or ()),
            input_modes=tuple(skill.input_modes or default_modes),
        )


@dataclass
class AgentEntry:
    """One agent: its configuration, what discovery found, and its client."""

    config: AgentConfig
    retry: RetryPolicy
    breaker: CircuitBreaker
    timeout: float
    obj: Agent | None = None
    status: Status = "pending"
    error: str | None = None
    #: The A2A version the agent speaks when that is why it cannot be used (it is "down" then).
    unsupported_version: str | None = None
    card: AgentCard | None = None
    client: A2AClient | None = None
    transport: str = ""
    etag: str | None = None
    expires_at: float = 0.0
    _close: list[Callable[[], Any]] = field(default_factory=list)
    _skills: tuple[tuple[Any, ...], list[SkillInfo]] | None = field(default=None, repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def up(self) -> bool:
        return self.status == "up" and self.client is not None

    @property
    def problem(self) -> str:
        """Why the agent cannot be used, as one status line."""
        if self.unsupported_version is not None:
            return f"agent {self.name} speaks A2A {self.unsupported_version}: not supported"
        return f"agent {self.name} is down: {self.error or 'not resolved'}"

    @property
    def streaming(self) -> bool:
        return bool(self.card and self.card.capabilities.streaming)

    @property
    def description(self) -> str:
        return self.config.description or (self.card.description if self.card else "")

    @property
    def skills(self) -> list[SkillInfo]:
        # Read for every step routed and every item started: built again only when the card or
        # the configuration it comes from is another object.
        key = (self.card, self.config, self.config.skills)
        if self._skills is None or any(a is not b for a, b in zip(self._skills[0], key, strict=True)):
            modes = self.card.default_input_modes if self.card else ["text/plain"]
            if self.config.skills is not None:
                skills = [SkillInfo.of(s, modes) for s in self.config.skills]
            else:
                skills = [SkillInfo.of(s, modes) for s in (self.card.skills if self.card else [])]
            self._skills = (key, skills)
        return list(self._skills[1])

    def skill(self, skill_id: str | None) -> SkillInfo | None:
        return next((s for s in self.skills if s.id == skill_id), None)

    def docs(self) -> list[SkillDoc]:
        skills = self.skills
        if not skills:
            return [SkillDoc(self.name, None, self.name, self.description, (), (), self.description)]
        return [SkillDoc(self.name, s.id, s.name, s.description, s.tags, s.examples, self.description) for s in skills]

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "transport": self.transport,
            "required": self.config.required,
            "error": self.error,
            "skills": [s.id for s in self.skills],
        }


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    port = parts.port or {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


def _http_url(url: str) -> str:
    """The HTTP(S) address a WebSocket agent's card is served from."""
    for ws, http in (("ws://", "http://"), ("wss://", "https://")):
        if url.startswith(ws):
            return http + url[len(ws) :]
    return url


def _credentials(config: AgentConfig) -> BearerToken | ApiKey | None:
    auth = config.auth
    if auth is None:
        return None
    if auth.type == "bearer":
        assert auth.token is not None
        return BearerToken(auth.token.get_secret_value())
    assert auth.key is not None
    return ApiKey(auth.key.get_secret_value(), header=auth.header)


def _resolved_argv(argv: list[str]) -> list[str]:
    """``argv`` with ``a2a`` made a path (``resolve_a2a_command``, and ``a2a`` on PATH as its full
    path), so that the transport finds nothing left to look up."""
    if argv and argv[0] == "a2a" and (found := shutil.which("a2a")) is not None:
        return [found, *argv[1:]]
    return resolve_a2a_command(argv)


class Registry:
    """The agents of one supervisor."""

    def __init__(self, config: SupervisorConfig, *, objects: dict[str, Agent] | None = None) -> None:
        self.config = config
        self.entries: dict[str, AgentEntry] = {}
        self._objects = dict(objects or {})
        self._http: httpx.AsyncClient | None = None
        self._lock = asyncio.Lock()
        for agent in config.agents:
            self._add(agent, self._objects.get(agent.name))

    # ---- membership --------------------------------------------------------------------

    def _add(self, agent: AgentConfig, obj: Agent | None) -> AgentEntry:
        breaker = self.config.a2a.circuit_breaker
        entry = AgentEntry(
            config=agent,
            retry=retry_policy(self.config.agent_retry(agent)),
            breaker=CircuitBreaker(breaker.failure_threshold, breaker.reset_after),
            timeout=self.config.agent_timeout(agent),
            obj=obj,
        )
        self.entries[agent.name] = entry
        return entry

    def add(self, agent: AgentConfig, obj: Agent | None = None) -> AgentEntry:
        if agent.name in self.entries:
            raise ValueError(f"an agent named {agent.name!r} is already registered")
        if obj is not None:
            self._objects[agent.name] = obj
        return self._add(agent, obj)

    async def remove(self, name: str) -> None:
        entry = self.entries.pop(name, None)
        if entry is None:
            raise KeyError(f"no agent named {name!r}")
        self._objects.pop(name, None)
        await self._close_entry(entry)

    def get(self, name: str | None) -> AgentEntry | None:
        return self.entries.get(name or "")

    def available(self) -> list[AgentEntry]:
        return [e for e in self.entries.values() if e.up]

    # ---- discovery ---------------------------------------------------------------------

    async def discover(self, *, only_pending: bool = False) -> list[AgentEntry]:
        """Resolve agents concurrently (all, or only those not resolved yet); refresh stale cards."""
        async with self._lock:
            now = time.monotonic()
            todo = [e for e in self.entries.values() if self._needs_resolving(e, only_pending, now)]
            await asyncio.gather(*(self._resolve(e) for e in todo))
            for entry in todo:
                self._name_after_card(entry)
        return list(self.entries.values())

    def _name_after_card(self, entry: AgentEntry) -> None:
        """An agent given by address only takes its card's name (``-2``, ``-3``... when taken)."""
        if not entry.config.name_from_card or entry.card is None:
            return
        base = re.sub(r"[^A-Za-z0-9_.\-]+", "-", entry.card.name).strip("-.") or entry.name
        name, n = base, 1
        while name in self.entries and self.entries[name] is not entry:
            n += 1
            name = f"{base}-{n}"
        old = entry.name
        renamed = entry.config.model_copy(update={"name": name, "name_from_card": False})
        self.config.agents[:] = [renamed if a is entry.config else a for a in self.config.agents]
        entry.config = renamed
        self.entries = {(name if k == old else k): v for k, v in self.entries.items()}
        if old in self._objects:
            self._objects[name] = self._objects.pop(old)

    @staticmethod
    def _needs_resolving(entry: AgentEntry, only_pending: bool, now: float) -> bool:
        if entry.status == "pending":
            return True
        if only_pending:
            return False
        if entry.status == "down":
            return True
        return entry.config.kind == "url" and now >= entry.expires_at

    async def _resolve(self, entry: AgentEntry) -> None:
        timeout = self.config.a2a.discovery_timeout
        try:
            async with asyncio.timeout(timeout):
                if entry.config.kind == "url":
                    await self._resolve_url(entry)
                elif entry.config.kind == "module":
                    await self._resolve_module(entry)
                else:
                    await self._resolve_command(entry)
            entry.status, entry.error, entry.unsupported_version = "up", None, None
        except TimeoutError:
            await self._mark_down(entry, f"no answer within {timeout:g}s (a2a.discovery_timeout)")
        except CardResolutionError as exc:
            await self._mark_down(entry, str(exc) or type(exc).__name__)
            if entry.status == "down":
                entry.unsupported_version = exc.unsupported_version
        except (A2AError, AgentLoadError, OSError, ValueError, msgspec.ValidationError, msgspec.DecodeError) as exc:
            await self._mark_down(entry, str(exc) or type(exc).__name__)

    async def _mark_down(self, entry: AgentEntry, reason: str) -> None:
        if entry.status == "up" and entry.config.kind == "url" and entry.card is not None:
            # A refresh failed: keep using the card we have; the delegation will tell if it is gone.
            log.warning("could not refresh the card of %s: %s", entry.name, reason)
            entry.expires_at = time.monotonic() + self.config.a2a.card_max_age
            return
        entry.status, entry.error = "down", reason
        await self._close_entry(entry)

    def _card_http(self) -> httpx.AsyncClient:
        # Cards are public: they are fetched without credentials, by one shared client.
        if self._http is None:
            self._http = httpx.AsyncClient(headers={"A2A-Version": "1.0"}, follow_redirects=False)
        return self._http

    async def _fetch_card(self, entry: AgentEntry) -> bool:
        """Fetch (or revalidate) the card; True when a new card arrived."""
        assert entry.config.url is not None
        address = card_url(entry.config.url)
        headers = {"If-None-Match": entry.etag} if entry.etag and entry.card is not None else {}

        async def fetch() -> tuple[httpx.Response, bytes]:
            http = self._card_http()
            request = http.build_request("GET", address, headers=headers)
            try:
                # The one bounded read of an answer (size and deadline), as A2AClient's own card fetch.
                got, body = await exchange(
                    http, request, timeout=self.config.a2a.call_timeout, max_bytes=DEFAULT_MAX_RESPONSE_BYTES
                )
            except TransportError as exc:
                raise TransportError(f"cannot fetch the card at {address}: {exc}", retryable=exc.retryable) from exc
            if got.status_code in (429, 502, 503, 504):
                raise HTTPStatusError(f"the card at {address} answered HTTP {got.status_code}", status=got.status_code)
            return got, body

        response, body = await entry.retry.run(fetch, what=f"the card of {entry.name}")
        max_age = _MAX_AGE.search(response.headers.get("Cache-Control", ""))
        ttl = float(max_age.group(1)) if max_age else self.config.a2a.card_max_age
        entry.expires_at = time.monotonic() + ttl
        if response.status_code == 304 and entry.card is not None:
            return False
        if response.status_code != 200:
            raise DiscoveryError(f"the card at {address} answered HTTP {response.status_code}")
        try:
            # The client's one card decoder: 1.0 cards, and 0.3 cards read as 1.0 ones.
            entry.card = decode_card(address, body)
        except CardResolutionError as exc:
            if exc.unsupported_version is not None:
                raise  # the version problem, named as such in the agent's status line
            raise DiscoveryError(str(exc)) from exc
        except InvalidResponseError as exc:
            raise DiscoveryError(str(exc)) from exc
        entry.etag = response.headers.get("ETag")
        return True

    async def _resolve_url(self, entry: AgentEntry) -> None:
        assert entry.config.url is not None
        if entry.config.url.startswith(("ws://", "wss://")):
            await self._resolve_websocket(entry)
            return
        changed = await self._fetch_card(entry)
        if not changed and entry.client is not None:
            return
        assert entry.card is not None
        client = A2AClient(
            card=entry.card,
            credentials=_credentials(entry.config),
            retry=RetryPolicy.none(),
            timeout=self.config.a2a.call_timeout,
            binding=entry.config.binding,
        )
        try:
            # Choosing the interface sends nothing; the origin is checked before any request.
            await client.connect()
            assert client.interface is not None
            if entry.config.auth is not None and _origin(client.interface.url) != _origin(entry.config.url):
                raise DiscoveryError(
                    f"the card of {entry.name} points its {client.interface.protocol_binding} interface at "
                    f"{client.interface.url}, another origin than the configured {entry.config.url}; its "
                    "credentials are not sent there"
                )
        except BaseException:
            await client.close()
            raise
        old, entry.client = entry.client, client
        entry.transport = client.interface.protocol_binding
        if old is not None:
            await old.close()

    async def _resolve_websocket(self, entry: AgentEntry) -> None:
        """A ``ws://`` URL is the connection itself: the card is asked for over it."""
        assert entry.config.url is not None
        if entry.client is not None:
            return
        client = A2AClient(
            entry.config.url,
            credentials=_credentials(entry.config),
            retry=RetryPolicy.none(),
            timeout=self.config.a2a.call_timeout,
        )
        try:
            entry.card = await client.get_card()
        except BaseException:
            await client.close()
            raise
        entry.client, entry.transport = client, "websocket"
        entry.expires_at = float("inf")

    async def _resolve_module(self, entry: AgentEntry) -> None:
        obj = entry.obj
        if obj is None:
            assert entry.config.module is not None
            obj = await asyncio.to_thread(load_agent, entry.config.module)
            entry.obj = obj
        client = local_client(obj)
        entry.card = await client.get_card()
        entry.client = client
        entry.transport = "in-process"
        entry._close.append(client.close)

    async def _resolve_command(self, entry: AgentEntry) -> None:
        """Start the agent process (stdio binding) and ask it for its card."""
        command = entry.config.command
        assert command is not None
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        # Looking ``a2a`` up on PATH touches the file system: not on the event loop (a host such as
        # ``langgraph dev`` refuses blocking calls there).
        argv = await asyncio.to_thread(_resolved_argv, argv)
        credentials = _credentials(entry.config)
        transport = StdioTransport(
            argv,
            headers=credentials.headers(None) if credentials is not None else None,
            env={**os.environ, **entry.config.env},
            cwd=entry.config.cwd,
            start_timeout=self.config.a2a.discovery_timeout,
        )
        client = A2AClient(transport=transport, retry=RetryPolicy.none(), timeout=self.config.a2a.call_timeout)
        entry._close.append(client.close)
        entry.client = client
        entry.card = await client.get_card()
        entry.transport = "stdio"

    async def _close_entry(self, entry: AgentEntry) -> None:
        closers, entry._close = entry._close, []
        client, entry.client = entry.client, None
        if client is not None and not closers:
            closers = [client.close]
        for close in reversed(closers):
            try:
                await close()
            except Exception as exc:  # noqa: BLE001 - closing is best effort; the reason is logged
                log.warning("closing agent %s: %s", entry.name, exc)

    async def close(self) -> None:
        for entry in list(self.entries.values()):
            await self._close_entry(entry)
            entry.status = "pending"
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    # ---- ranking -----------------------------------------------------------------------

    def docs(self) -> list[SkillDoc]:
        return [doc for entry in self.available() for doc in entry.docs()]

    def retrieve(self, query: str, k: int | None = 5) -> list[Match]:
        """Skills of available agents ranked for ``query`` (best first; see ``supervisor.ranking``)."""
        return rank(query, self.docs(), k)

    def alternatives(self, skill_id: str | None, exclude: Iterable[str]) -> list[AgentEntry]:
        """Other available agents that offer the skill ``skill_id``, those with a closed breaker first."""
        if skill_id is None:
            return []
        excluded = set(exclude)
        found = [e for e in self.available() if e.name not in excluded and e.skill(skill_id) is not None]
        return sorted(found, key=lambda e: e.breaker.state != "closed")
