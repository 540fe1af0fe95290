"""Faults: agents down at start, overloaded, hanging, killed mid-task; cancellation; limits."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from a2a import A2AClient, A2AServer, ServerConfig
from a2a.metadata import DEPTH_KEY
from a2a.types import TaskState
from supervisor import Supervisor, events
from tests.bindings._bindings_support import CuttableProxy
from tests.supervisor.agents import WAIT, FlakyServer, Probe, asking, hanging, serving, worker
from tests.supervisor.conftest import FAST_RETRY

ROOT = Path(__file__).resolve().parents[2]


def closed_port_url() -> str:
    """An address where nothing listens (the port was free a moment ago)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


async def collect(stream: AsyncIterator[events.Event]) -> list[events.Event]:
    return [e async for e in stream]


async def test_an_optional_agent_down_at_start_is_reported_and_skipped() -> None:
    sup = Supervisor(
        [{"name": "gone", "url": closed_port_url()}, worker("A")],
        checkpoint={"backend": "memory"},
        a2a={"discovery_timeout": 5, **FAST_RETRY},
    )
    seen = await asyncio.wait_for(collect(sup.stream("work on apples; work on pears")), WAIT)
    down = [e for e in seen if isinstance(e, events.AgentStatus) and e.agent == "gone"]
    assert down and down[0].status == "down" and "cannot fetch the card" in (down[0].error or "")
    result = seen[-1].result  # type: ignore[attr-defined]
    assert result.status == "completed"
    assert {i.agent for i in result.items} == {"A"}


async def test_a_module_agent_that_cannot_be_loaded_is_down_with_the_loaders_one_line_reason() -> None:
    # The same loader as ``a2a serve`` (a2a.loader), with the same messages.
    sup = Supervisor(
        [{"name": "missing", "module": "examples/no_such_file.py:agent"}, {"name": "typo", "module": "nosuchmodule:x"}],
        checkpoint={"backend": "memory"},
    )
    async with sup:
        reasons = {a["name"]: a["error"] for a in sup.agents}
    assert reasons == {
        "missing": "no such file: examples/no_such_file.py",
        "typo": "cannot import module 'nosuchmodule': No module named 'nosuchmodule'",
    }


async def test_a_required_agent_down_at_start_fails_the_run() -> None:
    sup = Supervisor(
        [{"name": "gone", "url": closed_port_url(), "required": True}, worker("A")],
        checkpoint={"backend": "memory"},
        a2a=FAST_RETRY,
    )
    result = await asyncio.wait_for(sup.run("work on apples"), WAIT)
    assert result.status == "failed"
    assert result.error is not None and "required agent unavailable (gone:" in result.error
    assert result.delegations == []


async def test_503_three_times_then_success_is_retried_with_the_same_message() -> None:
    probe = Probe()
    async with FlakyServer(worker("A", probe), failures=3) as server:
        assert server.url is not None
        sup = Supervisor([server.url], checkpoint={"backend": "memory"}, a2a=FAST_RETRY)
        seen = await asyncio.wait_for(collect(sup.stream("work on apples")), WAIT)
    result = seen[-1].result  # type: ignore[attr-defined]
    assert result.status == "completed"
    assert server.refused == 3
    (delegation,) = result.delegations
    assert delegation.attempts == 4 and delegation.state == "completed"
    retries = [e for e in seen if isinstance(e, events.DelegationRetrying)]
    assert len(retries) == 3 and "503" in retries[0].error
    assert list(probe.executions.values()) == [1] and delegation.message_id in probe.executions


async def test_a_hanging_agent_times_out_and_its_task_is_canceled() -> None:
    async with serving(hanging) as (url,):
        sup = Supervisor(
            [{"name": "slow", "url": url, "timeout": 1.5}], checkpoint={"backend": "memory"}, a2a=FAST_RETRY
        )
        result = await asyncio.wait_for(sup.run("work on apples"), WAIT)
        (delegation,) = result.delegations
        async with A2AClient(url) as client:
            task = await client.get_task(delegation.task_id or "")
    assert result.status == "failed"
    assert delegation.state == "timeout" and "did not finish within 1.5s" in (delegation.error or "")
    assert task.status.state == TaskState.CANCELED
    assert "timeout" in result.final or "did not finish" in result.final


async def _serve_in_child(target: str) -> tuple[asyncio.subprocess.Process, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "a2a.cli.main",
        "serve",
        target,
        "--port",
        "0",
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdout is not None
    line = (await asyncio.wait_for(process.stdout.readline(), WAIT)).decode()
    assert "Serving" in line, line
    return process, line.rsplit(" at ", 1)[1].strip()


@pytest.mark.slow
async def test_an_agent_killed_mid_task_fails_over_to_another_with_the_same_skill() -> None:
    process, url = await _serve_in_child("tests/supervisor/agents.py:hanging")
    try:
        async with serving(worker("B", tags=["work"])) as (backup,):
            sup = Supervisor(
                [{"name": "A", "url": url}, {"name": "B", "url": backup}],
                checkpoint={"backend": "memory"},
                a2a=FAST_RETRY,
            )
            seen: list[events.Event] = []
            async for event in sup.stream("start work and never finish"):
                seen.append(event)
                if isinstance(event, events.DelegationProgress) and event.agent == "A" and event.state == "working":
                    os.kill(process.pid, signal.SIGKILL)  # the agent dies with the task in its hands
    finally:
        if process.returncode is None:
            process.kill()
        await asyncio.wait_for(process.wait(), WAIT)
    result = seen[-1].result  # type: ignore[attr-defined]
    assert result.status == "completed", result.final
    (failover,) = [e for e in seen if isinstance(e, events.Failover)]
    assert (failover.from_agent, failover.to_agent) == ("A", "B")
    first, second = result.delegations
    assert first.agent == "A" and first.state == "error" and first.attempts > 1
    assert second.agent == "B" and second.failover_from == "A" and second.state == "completed"
    assert result.items[0].agent == "B"
    assert result.metrics.failovers == 1


async def test_the_circuit_breaker_stops_sending_to_an_agent_that_keeps_failing() -> None:
    async with FlakyServer(worker("A"), failures=10_000) as flaky, serving(worker("B")) as (backup,):
        assert flaky.url is not None
        sup = Supervisor(
            [{"name": "A", "url": flaky.url}, {"name": "B", "url": backup}],
            strategy="sequential",
            checkpoint={"backend": "memory"},
            a2a={"retry": {"max_attempts": 2, "initial_backoff": 0.01}, "circuit_breaker": {"failure_threshold": 2}},
        )
        seen = await asyncio.wait_for(collect(sup.stream("\n".join(f"work on item {i}" for i in range(6)))), WAIT)
    result = seen[-1].result  # type: ignore[attr-defined]
    assert result.status == "completed"
    assert {i.agent for i in result.items} == {"B"}
    opened = [e for e in seen if isinstance(e, events.CircuitOpened)]
    assert [e.agent for e in opened] == ["A"]
    # Two delegations reached A (two attempts each) before the breaker opened; none after.
    assert flaky.refused == 4
    later = [e for e in seen if isinstance(e, events.Failover) and "circuit breaker open" in e.reason]
    assert later


async def test_cancelling_a_run_cancels_every_remote_task() -> None:
    probe = Probe(hold=True)
    agents = [worker(name, probe, partial=f"{name} got halfway") for name in "ABC"]
    async with serving(*agents) as urls:
        sup = Supervisor(urls, checkpoint={"backend": "memory"})
        run = asyncio.create_task(sup.run("work on apples; work on pears; work on plums"))
        await probe.wait_until(lambda p: p.in_flight == 3)
        sup.cancel()
        result = await asyncio.wait_for(run, WAIT)
        url_of = {a.name: a.url for a in sup.config.agents}
        states = []
        for delegation in result.delegations:
            async with A2AClient(url_of[delegation.agent]) as client:
                states.append((await client.get_task(delegation.task_id or "")).status.state)
    assert result.status == "canceled"
    assert states == [TaskState.CANCELED] * 3
    assert [d.state for d in result.delegations] == ["canceled"] * 3
    assert all(i.status == "canceled" for i in result.items)
    assert sorted(i.result or "" for i in result.items) == ["A got halfway", "B got halfway", "C got halfway"]
    assert "canceled" in result.final and "(partial result: A got halfway)" in result.final


async def test_the_hop_count_travels_and_a_delegation_beyond_max_depth_is_refused() -> None:
    probe = Probe()
    sup = Supervisor([worker("A", probe)], max_depth=2, checkpoint={"backend": "memory"})
    ok = await asyncio.wait_for(sup.run("work on apples", depth=1), WAIT)
    assert ok.status == "completed" and probe.metadata[0][DEPTH_KEY] == 2
    refused = await asyncio.wait_for(sup.run("work on pears", depth=2), WAIT)
    assert refused.status == "failed"
    (delegation,) = refused.delegations
    assert delegation.state == "refused"
    assert "hop 3" in (delegation.error or "") and "max_depth = 2" in (delegation.error or "")
    assert len(probe.executions) == 1  # the refused one never reached the agent


async def test_input_required_fails_the_item_in_a_batch_run() -> None:
    sup = Supervisor([asking()], checkpoint={"backend": "memory"})
    result = await asyncio.wait_for(sup.run("paint the fence"), WAIT)
    assert result.status == "failed"
    (item,) = result.items
    assert item.status == "failed" and "Which colour?" in (item.error or "")


async def test_input_required_is_relayed_in_an_interactive_run_and_answered_into_the_same_task() -> None:
    questions: list[str] = []

    async def ask(event: events.InputRequested) -> str:
        questions.append(event.question)
        return "blue"

    async with serving(asking()) as (url,):
        sup = Supervisor([url], checkpoint={"backend": "memory"})
        result = await asyncio.wait_for(sup.run("paint the fence", ask=ask), WAIT)
    assert questions == ["Which colour?"]
    assert result.status == "completed", result.final
    (delegation,) = result.delegations
    assert delegation.result == "painted blue"


async def test_a_context_over_budget_fails_fast_naming_the_sizes() -> None:
    sup = Supervisor(
        [worker("A", answer=lambda text: "x" * 4000)],
        checkpoint={"backend": "memory"},
        context={"tokens": 200, "on_overflow": "fail"},
    )
    result = await asyncio.wait_for(sup.run("work on apples. Then work on the result"), WAIT)
    second = result.item("2")
    assert second.status == "failed" and second.delegations == []
    assert "context budget exceeded for item 2" in (second.error or "")
    assert "over the budget of 200 tokens" in (second.error or "")


async def test_a_context_over_budget_is_compressed_by_the_documented_rule() -> None:
    probe = Probe()
    sup = Supervisor(
        [worker("A", probe, answer=lambda text: "head " + "x" * 4000 + " tail")],
        checkpoint={"backend": "memory"},
        context={"tokens": 400, "on_overflow": "compress"},
    )
    seen = await asyncio.wait_for(collect(sup.stream("work on apples. Then work on the result")), WAIT)
    result = seen[-1].result  # type: ignore[attr-defined]
    assert result.status == "completed"
    (compressed,) = [e for e in seen if isinstance(e, events.ContextCompressed)]
    assert compressed.item_id == "2" and compressed.tokens_after <= 400 < compressed.tokens_before
    sent = probe.texts[1]
    assert "tokens of this result were left out to fit the context budget" in sent
    assert "head" in sent and "tail" in sent


async def test_an_agent_without_streaming_is_polled() -> None:
    probe = Probe()
    async with serving(worker("A", probe, streaming=False)) as (url,):
        sup = Supervisor([url], checkpoint={"backend": "memory"})
        result = await asyncio.wait_for(sup.run("work on apples"), WAIT)
    assert result.status == "completed", result.final
    assert result.delegations[0].result == "A did: work on apples"
    assert result.delegations[0].input_tokens == 10


async def test_a_server_shutting_down_mid_task_counts_as_a_failure_of_that_agent() -> None:
    probe = Probe(hold=True)
    server = A2AServer(worker("A", probe), config=ServerConfig(port=0, shutdown_timeout=1))
    url = await server.start()
    async with serving(worker("B", tags=["work"])) as (backup,):
        sup = Supervisor(
            [{"name": "A", "url": url}, {"name": "B", "url": backup}], checkpoint={"backend": "memory"}, a2a=FAST_RETRY
        )
        run = asyncio.create_task(sup.run("work on apples"))
        await probe.wait_until(lambda p: p.in_flight == 1)
        await server.stop()  # the task ends CANCELED: "the server is shutting down"
        result = await asyncio.wait_for(run, WAIT)
    assert result.status == "completed"
    assert [d.agent for d in result.delegations] == ["A", "B"]


async def test_the_wall_time_budget_cancels_what_is_in_flight() -> None:
    probe = Probe(hold=True)
    async with serving(worker("A", probe)) as (url,):
        sup = Supervisor([url], budget={"wall_time": 1.5}, checkpoint={"backend": "memory"})
        result = await asyncio.wait_for(sup.run("work on apples"), WAIT)
        (delegation,) = result.delegations
        async with A2AClient(url) as client:
            task = await client.get_task(delegation.task_id or "")
    assert result.status == "failed" and result.stopped == "budget:wall_time"
    assert task.status.state == TaskState.CANCELED
    assert "the wall-time limit was reached (supervisor.budget.wall_time: 1.5s)" in result.final


async def test_max_steps_limits_the_delegations_of_a_run() -> None:
    probe = Probe()
    sup = Supervisor([worker("A", probe)], max_steps=2, strategy="sequential", checkpoint={"backend": "memory"})
    result = await asyncio.wait_for(sup.run("work on a; work on b; work on c; work on d"), WAIT)
    assert result.status == "partial" and result.stopped == "budget:max_steps"
    assert [i.status for i in result.items] == ["done", "done", "pending", "pending"]
    assert sum(probe.executions.values()) == 2


async def test_leaving_the_event_stream_early_cancels_the_run() -> None:
    probe = Probe(hold=True)
    async with serving(worker("A", probe)) as (url,):
        sup = Supervisor([url], checkpoint={"backend": "memory"})
        stream = sup.stream("work on apples")
        task_id = None
        async with asyncio.timeout(WAIT):
            async for event in stream:
                if isinstance(event, events.DelegationProgress) and event.task_id:
                    task_id = event.task_id
                    break
            await stream.aclose()  # type: ignore[attr-defined]
        async with A2AClient(url) as client:
            task = await client.get_task(task_id or "")
    assert task.status.state == TaskState.CANCELED


async def test_a_stream_the_client_cannot_resume_is_followed_from_the_last_event_seen() -> None:
    probe = Probe(hold=True)
    async with A2AServer(worker("A", probe, partial="half way"), config=ServerConfig(port=0)) as server:
        assert server.url is not None
        proxy = CuttableProxy(int(server.url.rsplit(":", 1)[1]))
        await proxy.start()
        # No jitter: the retry waits 50 ms, time for this test to see the retry event first.
        retry = {"retry": {"max_attempts": 4, "initial_backoff": 0.05, "jitter": False}}
        sup = Supervisor(
            [{"name": "A", "url": f"ws://127.0.0.1:{proxy.port}/a2a/ws"}], checkpoint={"backend": "memory"}, a2a=retry
        )
        seen: list[events.Event] = []
        try:
            async with asyncio.timeout(WAIT):
                async for event in sup.stream("work on apples"):
                    seen.append(event)
                    if isinstance(event, events.DelegationProgress) and event.events == 3 and not proxy.refusing:
                        # Task, WORKING, the partial artifact: then the connection drops, and
                        # the client's own attempt to resume is refused too.
                        proxy.refusing = True
                        proxy.cut()
                    elif isinstance(event, events.DelegationRetrying):
                        proxy.refusing = False
                        probe.release()
        finally:
            await proxy.close()
    result = seen[-1].result  # type: ignore[attr-defined]
    assert result.status == "completed", result.final
    (delegation,) = result.delegations
    retries = [e for e in seen if isinstance(e, events.DelegationRetrying)]
    assert len(retries) == 1 and delegation.attempts == 2
    # Followed after event 3 (the result artifact and COMPLETED only), not from the task's
    # current state again, and never sent again.
    assert delegation.events == 5
    assert list(probe.executions.values()) == [1]


async def test_an_agent_whose_card_is_endless_is_reported_down_without_reading_it_all() -> None:
    """The supervisor's card fetch reads at most the client's response limit (16 MiB), however
    large the card an agent announces or sends."""
    from aiohttp import web

    async def endless(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        await response.write(b'{"name": "')
        with contextlib.suppress(ConnectionError):  # the client hangs up: what the test wants
            while True:  # chunked, no length: only counting while reading stops it
                await response.write(b"x" * 65536)
        return response

    app = web.Application()
    app.router.add_get("/.well-known/agent-card.json", endless)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        sup = Supervisor(
            [{"name": "huge", "url": f"http://127.0.0.1:{port}"}, worker("A")],
            checkpoint={"backend": "memory"},
            a2a={"discovery_timeout": 20, **FAST_RETRY},
        )
        seen = await asyncio.wait_for(collect(sup.stream("work on apples")), WAIT)
    finally:
        await runner.cleanup()
    down = [e for e in seen if isinstance(e, events.AgentStatus) and e.agent == "huge"]
    assert down and down[0].status == "down", down
    assert "over this client's limit of 16777216 bytes" in (down[0].error or ""), down[0].error
