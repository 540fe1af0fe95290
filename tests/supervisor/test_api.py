"""The Python API: agents added and removed, credentials kept to their agent, cards refreshed, nesting."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp import web

import supervisor
from a2a import A2AClient, A2AServer, BearerAuth, ServerConfig
from a2a.metadata import DEPTH_KEY
from supervisor import ConfigError, Supervisor
from supervisor.agent import supervisor_agent
from tests.supervisor.agents import WAIT, Probe, serving, worker


def test_the_exported_names_are_sorted_and_exist() -> None:
    names = supervisor.__all__
    assert names == sorted(names, key=lambda n: (n[0].islower(), n))
    assert all(hasattr(supervisor, n) for n in names)


async def test_agents_can_be_added_and_removed() -> None:
    probe = Probe()
    sup = Supervisor(checkpoint={"backend": "memory"})
    await sup.add_agent(worker("A", probe))
    async with serving(worker("B", probe)) as (url,):
        added = await sup.add_agent(url, name="B")
        assert added.name == "B" and added.url == url
        first = await asyncio.wait_for(sup.run("work on apples; work on pears"), WAIT)
        await sup.remove_agent("A")
        second = await asyncio.wait_for(sup.run("work on plums"), WAIT)
    assert {i.agent for i in first.items} == {"A", "B"}
    assert [i.agent for i in second.items] == ["B"] and [a["name"] for a in sup.agents] == ["B"]
    with pytest.raises(KeyError):
        await sup.remove_agent("A")


async def test_add_agent_inside_async_with_resolves_at_once() -> None:
    async with Supervisor(checkpoint={"backend": "memory"}) as sup:
        await sup.add_agent({"name": "A", "module": "tests/supervisor/agents.py:stdio_worker"})
        assert sup.agents[0]["status"] == "up" and sup.agents[0]["skills"] == ["work"]


def test_bad_python_arguments_are_config_errors_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"supervisor.max_concurrency: Input should be greater than or equal to 1"):
        Supervisor(max_concurrency=0)
    with pytest.raises(ConfigError, match=r"agents\[0\]: .*needs exactly one of url, command or module"):
        Supervisor([{"name": "x"}])
    with pytest.raises(TypeError, match="unknown Supervisor option"):
        Supervisor(max_concurency=2)


class Recording(A2AServer):
    """Records the Authorization header of every request (and of card requests, separately)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, config=ServerConfig(port=0), middlewares=[self.record], **kwargs)
        self.seen: list[tuple[str, str | None]] = []
        #: (If-None-Match sent, status answered) for every card request.
        self.cards: list[tuple[str | None, int]] = []

    async def record(self, request: web.Request, handler: Any) -> web.StreamResponse:
        self.seen.append((request.path, request.headers.get("Authorization")))
        response = await handler(request)
        if request.path == "/.well-known/agent-card.json":
            self.cards.append((request.headers.get("If-None-Match"), response.status))
        return response


async def test_a_credential_is_sent_only_to_the_agent_it_is_configured_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "s3cret")
    secured = Recording(worker("A"), auth=[BearerAuth(credentials={"s3cret": "alice"})])
    other = Recording(worker("B"))
    async with secured, other:
        sup = Supervisor(
            [
                {"name": "A", "url": secured.url, "auth": {"type": "bearer", "token": "${SECRET_TOKEN}"}},
                {"name": "B", "url": other.url},
            ],
            checkpoint={"backend": "memory"},
        )
        result = await asyncio.wait_for(sup.run("work on apples; work on pears"), WAIT)
    assert result.status == "completed"
    assert {a for _, a in secured.seen if _ != "/.well-known/agent-card.json"} == {"Bearer s3cret"}
    assert all(auth is None for _, auth in other.seen)
    assert all(auth is None for path, auth in secured.seen if path == "/.well-known/agent-card.json")
    assert "s3cret" not in repr(sup.config)


async def test_credentials_are_not_sent_to_an_interface_on_another_origin(monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = Recording(worker("Elsewhere"))
    async with elsewhere:
        assert elsewhere.url is not None
        lying = A2AServer(worker("A"), config=ServerConfig(port=0, public_url=elsewhere.url))
        async with lying:
            host = lying.bound_url
            sup = Supervisor(
                [{"name": "A", "url": host, "auth": {"type": "bearer", "token": "s3cret"}}],
                checkpoint={"backend": "memory"},
            )
            result = await asyncio.wait_for(sup.run("work on apples"), WAIT)
    assert result.status == "failed"
    assert "another origin" in (result.error or "") and "credentials are not sent there" in (result.error or "")
    assert elsewhere.seen == []


async def test_cards_are_cached_and_refreshed_with_their_etag() -> None:
    server = Recording(worker("A"))
    async with server:
        sup = Supervisor([server.url], checkpoint={"backend": "memory"}, a2a={"card_max_age": 0})
        server.config.card_max_age = 0  # the agent says: revalidate every time
        async with sup:
            await sup.registry.discover()
            await sup.registry.discover()
    entry = sup.registry.entries[sup.config.agents[0].name]
    assert entry.etag is not None
    assert server.cards == [(None, 200), (entry.etag, 304), (entry.etag, 304)]


async def test_a_supervisor_served_as_an_agent_passes_the_hop_count_on() -> None:
    probe = Probe()
    inner = Supervisor([worker("W", probe)], max_depth=2, checkpoint={"backend": "memory"})
    outer = Supervisor([supervisor_agent(inner, name="Inner")], max_depth=3, checkpoint={"backend": "memory"})
    result = await asyncio.wait_for(outer.run("work on apples"), WAIT)
    assert result.status == "completed", result.final
    assert probe.metadata[0][DEPTH_KEY] == 2  # outer -> inner is hop 1, inner -> worker hop 2
    assert "W did: work on apples" in result.final

    shallow = Supervisor([worker("W", probe)], max_depth=1, checkpoint={"backend": "memory"})
    nested = Supervisor([supervisor_agent(shallow, name="Inner")], checkpoint={"backend": "memory"})
    refused = await asyncio.wait_for(nested.run("work on pears"), WAIT)
    assert refused.status == "failed"
    assert "beyond supervisor.max_depth = 1" in (refused.final + (refused.items[0].error or ""))


async def test_a_nested_supervisor_shows_its_caller_the_plan_and_each_step() -> None:
    inner = Supervisor([worker("W")], checkpoint={"backend": "memory"})
    async with A2AServer(supervisor_agent(inner, name="Inner"), config=ServerConfig(port=0)) as server:
        assert server.url is not None
        statuses: list[str] = []
        async with A2AClient(server.url) as client:
            async for event in client.stream("work on apples; work on pears"):
                status = getattr(event.payload, "status", None)
                message = getattr(status, "message", None)
                if message is not None:
                    statuses.extend(p.text for p in message.parts if p.text)
    assert statuses[0] == "planning"
    assert any(s.startswith("plan: 1. work on apples (W); 2. work on pears (W)") for s in statuses)
    assert "item 1: delegated to W: work on apples" in statuses
    assert "item 2: done" in statuses
