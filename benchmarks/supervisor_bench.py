"""Supervisor benchmarks: the overhead it adds per delegation, and a 100-item fan-out over 10 agents.

    .venv/bin/python benchmarks/supervisor_bench.py [--items 200] [--agents 10] [--fanout 100]

The agents are the echo agent (``examples/echo_agent.py``), each in its own child process
(``a2a serve ... --port 0``), on loopback; every child is stopped by its PID at the end. The
supervisor runs the offline planner (no model), so what is measured is the supervisor itself:
planning, the LangGraph steps, checkpoints, events, the delegation machinery.

1. **Overhead per delegation.** N items run one after another (``strategy: sequential``) against
   one echo agent, and the time per item is compared with a bare ``A2AClient.stream`` of the same
   message (the floor: one HTTP request and its SSE answer). Measured with the in-memory and the
   SQLite checkpointer, and for an in-process agent (no network at all).
2. **Fan-out.** 100 independent items against 10 echo agents (``strategy: parallel``), at
   ``max_concurrency`` 10 and 100: wall time, items per second, and how the items were spread.
3. **Scaling.** The overhead per delegation for runs of 1 to 1,000 items (``--sizes``), in-process,
   with the in-memory and the SQLite checkpointer, over ``--rounds`` rounds: wall and CPU time,
   the run's fixed cost apart (a run with no delegation, measured in the same round), and the load
   average (other programs sharing the cores make the wall-time figures noisy).
4. **Prompt size over a long conversation.** A ``conversational`` run of ``--turns`` delegations
   driven by the fake OpenAI-compatible model of the tests (``tests/fakes``, on loopback), each
   task and each result 3,000 characters, with ``messages_tokens`` 3000: the largest prompt the
   model was sent (text, tool calls' arguments, tool results), against the budget and against
   what the whole conversation would be; the summaries written; the run's wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from a2a import A2AClient, RetryPolicy  # noqa: E402
from a2a.local import local_client  # noqa: E402
from supervisor import Supervisor  # noqa: E402
from tests.conftest import load_example  # noqa: E402

ECHO = "examples/echo_agent.py:agent"
#: The echo agent's skill as the supervisor is told it: the offline planner routes a step by its
#: verb and gives a step no skill matches to no one, so the benchmark's steps ("work on an item",
#: "stream:2") must name a word of the skill.
ECHO_SKILLS = [
    {"id": "echo", "name": "Echo", "description": "Replies with the text", "tags": ["echo", "work", "stream"]}
]


def echo_config(url: str | None = None, name: str = "echo") -> dict[str, Any]:
    where = {"url": url} if url else {"module": ECHO}
    return {"name": name, **where, "skills": ECHO_SKILLS}


@contextlib.asynccontextmanager
async def echo_agents(count: int) -> AsyncIterator[list[str]]:
    """``count`` echo agents, each in a child process on a free port; stopped by PID on exit."""
    children: list[asyncio.subprocess.Process] = []
    try:
        for _ in range(count):
            children.append(
                await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "a2a.cli.main",
                    "serve",
                    ECHO,
                    "--port",
                    "0",
                    cwd=ROOT,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.DEVNULL,
                )
            )
        urls = []
        for child in children:
            assert child.stdout is not None
            line = (await asyncio.wait_for(child.stdout.readline(), 30)).decode()
            urls.append(line.rsplit(" at ", 1)[1].strip())
        yield urls
    finally:
        for child in children:
            if child.returncode is None:
                os.kill(child.pid, signal.SIGTERM)
        for child in children:
            try:
                await asyncio.wait_for(child.wait(), 10)
            except TimeoutError:
                os.kill(child.pid, signal.SIGKILL)
                await child.wait()


#: An objective the offline planner makes one step of that no agent can do: a run with no
#: delegation, whose time is the run's fixed cost (discovery, plan, answer, their checkpoints).
NOTHING = "bake a cake"


async def timed(run: Any) -> tuple[float, float, Any]:
    """Wall and CPU seconds (the whole process: the in-process agent and SQLite's thread too) of ``run``."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = await run
    return time.perf_counter() - wall, time.process_time() - cpu, result


async def bare_local(n: int, text: str) -> tuple[float, float]:
    """Wall and CPU seconds per message of a bare in-process client (the floor without network)."""
    async with local_client(load_example("echo_agent.py")) as client:
        async for _ in client.stream(text):
            pass

        async def send_all() -> None:
            for _ in range(n):
                async for _ in client.stream(text):
                    pass

        wall, cpu, _ = await timed(send_all())
    return wall / n, cpu / n


def spread(values: list[float]) -> str:
    """min / median, in ms."""
    return f"{min(values) * 1e3:5.2f} / {statistics.median(values) * 1e3:5.2f}"


async def bare_client(url: str, n: int, text: str) -> tuple[float, float]:
    """Wall and CPU seconds per message of a bare streamed send (the floor)."""
    async with A2AClient(url, retry=RetryPolicy.none()) as client:
        await client.get_card()
        async for _ in client.stream(text):
            pass

        async def send_all() -> None:
            for _ in range(n):
                async for _ in client.stream(text):
                    pass

        wall, cpu, _ = await timed(send_all())
    return wall / n, cpu / n


async def supervised(agents: list[Any], n: int, text: str, **settings: Any) -> tuple[float, float]:
    """Wall and CPU seconds per item when the supervisor runs ``n`` items (``text`` each) one by one."""
    objective = "\n".join(text for _ in range(n))
    async with Supervisor(agents, max_steps=10 * n, **settings) as sup:
        await sup.run(text)
        wall, cpu, result = await timed(sup.run(objective))
    assert result.status == "completed", result.final[-500:]
    return wall / n, cpu / n


#: What each item asks the echo agent: a plain message back, or a task that streams 2 chunks.
SHAPES = {"message reply": "work on an item", "task (2 chunks)": "stream:2"}


async def overhead(n: int, rounds: int, tmp: Path) -> None:
    """Per item over HTTP (the agent in its own process) and in-process, minus the bare client's
    median; wall and the supervisor process's CPU, min / median of ``rounds``."""
    print(f"\n1. Overhead per delegation ({n} items, one after another, offline planner, echo agent)")
    print("   (min / median of rounds, ms per item: overhead wall | overhead CPU of this process)")
    async with echo_agents(1) as (url,):
        for shape, text in SHAPES.items():
            floors = [await bare_client(url, n, text) for _ in range(rounds)]
            floor_wall, floor_cpu = (statistics.median(f[i] for f in floors) for i in (0, 1))
            print(
                f"   [{shape}] bare A2AClient.stream over HTTP: {floor_wall * 1e3:5.2f} ms wall, "
                f"{floor_cpu * 1e3:5.2f} CPU"
            )
            for label in ("memory", "sqlite"):
                runs = []
                for r in range(rounds):
                    checkpoint: dict[str, Any] = {"backend": label}
                    if label == "sqlite":
                        checkpoint["path"] = str(tmp / f"b{len(text)}-{r}.sqlite")
                    runs.append(
                        await supervised([echo_config(url)], n, text, strategy="sequential", checkpoint=checkpoint)
                    )
                print(
                    f"   [{shape}] supervisor over HTTP, {label:6} checkpoints: overhead "
                    f"{spread([w - floor_wall for w, _ in runs])} wall | {spread([c - floor_cpu for _, c in runs])} CPU"
                    f"  (load {os.getloadavg()[0]:.1f})"
                )
    for shape, text in SHAPES.items():
        floors = [await bare_local(n, text) for _ in range(rounds)]
        floor_wall, floor_cpu = (statistics.median(f[i] for f in floors) for i in (0, 1))
        runs = [
            await supervised([echo_config()], n, text, strategy="sequential", checkpoint={"backend": "memory"})
            for _ in range(rounds)
        ]
        print(
            f"   [{shape}] in-process (bare {floor_wall * 1e3:4.2f} ms), memory checkpoints: overhead "
            f"{spread([w - floor_wall for w, _ in runs])} wall | {spread([c - floor_cpu for _, c in runs])} CPU"
        )


async def scaling(sizes: list[int], rounds: int, tmp: Path) -> None:
    """Overhead per delegation as the run grows (in-process echo agent: no network in the figure).

    Each round is a new ``Supervisor`` (warmed up by one run), then a run with no delegation (the
    run's fixed cost, T0) and the run of n items (Tn), repeated for small n (averages of about 100
    delegations). Overhead per delegation: (Tn - T0) / n minus
    a bare client call; per item of the whole run: Tn / n minus a bare client call. Wall time is
    what a user waits; CPU time (the process's, all threads) is what the supervisor costs, and is
    the steadier figure when other programs share the cores."""
    print(f"\n3. Overhead per delegation by run size (in-process echo agent, one after another): {sizes}")
    text = "work on an item"
    floors = [await bare_local(200, text) for _ in range(rounds)]
    floor_wall = statistics.median(f[0] for f in floors)
    floor_cpu = statistics.median(f[1] for f in floors)
    print(f"   bare in-process client: {floor_wall * 1e3:5.2f} ms wall, {floor_cpu * 1e3:5.2f} ms CPU per message")
    print(
        "   items  checkpoints  | overhead per delegation, ms (min / median of rounds) | per item of the whole run,"
        " wall | fixed cost per run, wall / CPU | load"
    )
    print("                        |    wall        CPU")
    for label in ("memory", "sqlite"):
        for n in sizes:
            wall, cpu, whole, fixed_wall, fixed_cpu, loads = [], [], [], [], [], []
            for r in range(rounds):
                checkpoint: dict[str, Any] = {"backend": label}
                if label == "sqlite":
                    checkpoint["path"] = str(tmp / f"scale{n}-{r}.sqlite")
                # Small runs are repeated (a run with no delegation, then one of n items, in turn)
                # until a round holds about 100 delegations: one run of 1 item is all noise.
                reps = max(1, 100 // n)
                w = c = w0 = c0 = 0.0
                async with Supervisor(
                    [echo_config()], max_steps=10 * n + 10, strategy="sequential", checkpoint=checkpoint
                ) as sup:
                    await sup.run(text)
                    for _ in range(reps):
                        w0_, c0_, _ = await timed(sup.run(NOTHING))
                        w_, c_, result = await timed(sup.run("\n".join(text for _ in range(n))))
                        assert result.status == "completed", result.final[-500:]
                        assert len(result.delegations) == n, len(result.delegations)
                        w, c, w0, c0 = w + w_ / reps, c + c_ / reps, w0 + w0_ / reps, c0 + c0_ / reps
                wall.append((w - w0) / n - floor_wall)
                cpu.append((c - c0) / n - floor_cpu)
                whole.append(w / n - floor_wall)
                fixed_wall.append(w0)
                fixed_cpu.append(c0)
                loads.append(os.getloadavg()[0])
            print(
                f"   {n:5}  {label:11}  |  {spread(wall)}  {spread(cpu)}  |  {spread(whole)}  |"
                f"  {statistics.median(fixed_wall) * 1e3:5.1f} / {statistics.median(fixed_cpu) * 1e3:5.1f} ms"
                f"  |  {min(loads):.1f}-{max(loads):.1f}"
            )


async def fanout(items: int, agents: int, tmp: Path) -> None:
    print(f"\n2. Fan-out: {items} independent items over {agents} echo agents (strategy parallel)")
    async with echo_agents(agents) as urls:
        for concurrency in (agents, items):
            for label, checkpoint in (
                ("memory", {"backend": "memory"}),
                ("sqlite", {"backend": "sqlite", "path": str(tmp / f"fan{concurrency}.sqlite")}),
            ):
                objective = "\n".join(f"work on item {i}" for i in range(items))
                agents = [echo_config(u, f"echo{i}") for i, u in enumerate(urls)]
                async with Supervisor(
                    agents,
                    strategy="parallel",
                    max_concurrency=concurrency,
                    max_steps=10 * items,
                    checkpoint=checkpoint,
                ) as sup:
                    # Warmed up by one item per agent (each opens its connection first).
                    await sup.run("\n".join(f"work on warm-up item {i}" for i in range(len(agents))))
                    began = time.perf_counter()
                    result = await sup.run(objective)
                    wall = time.perf_counter() - began
                assert result.status == "completed", result.final[-500:]
                spread = sorted(Counter(d.agent for d in result.delegations).values())
                print(
                    f"   max_concurrency {concurrency:3}, {label:6} checkpoints: {wall:6.2f} s wall, "
                    f"{items / wall:6.1f} items/s, items per agent {spread[0]}..{spread[-1]}"
                )


def _conversation_model(turns: int, sent: list[int]) -> Any:
    """A scripted model: ``turns`` delegations of 3,000-character tasks, then ``finish``; it records
    the size of every prompt it is sent (text, tool calls' names and arguments)."""
    from tests.fakes import Reply, ToolCalls, call

    done = [0]

    def step(body: dict[str, Any]) -> Any:
        size = 0
        for message in body["messages"]:
            size += len(message.get("content") or "")
            calls = message.get("tool_calls") or []
            size += sum(len(c["function"]["arguments"]) + len(c["function"]["name"]) for c in calls)
        sent.append(size)
        if not body.get("tools"):
            return Reply(f"parts 1 to {done[0]} were delegated to echo and answered")
        done[0] += 1
        if done[0] > turns:
            return ToolCalls(call("finish", answer="done"))
        task = f"work on part {done[0]} " + "t" * 3000
        return ToolCalls(call("delegate", agent="echo", task=task, description="part"))

    return step


async def prompt_size(turns: int, budget: int = 3000) -> None:
    from tests.fakes import FakeOpenAI

    print(f"\n4. Prompt size: a conversational run of {turns} delegations, messages_tokens {budget}")
    for summaries in ("rules", "model"):
        sent: list[int] = []
        async with FakeOpenAI([_conversation_model(turns, sent)] * (3 * turns)) as fake:
            os.environ["BENCH_FAKE_KEY"] = fake.api_key
            sup = Supervisor(
                [{"name": "echo", "module": ECHO, "skills": ECHO_SKILLS}],
                mode="conversational",
                model={"model": fake.model, "base_url": fake.base_url, "api_key_env": "BENCH_FAKE_KEY"},
                messages_tokens=budget,
                summaries=summaries,
                max_steps=4 * turns,
                checkpoint={"backend": "memory"},
            )
            began = time.perf_counter()
            result = await sup.run(f"do {turns} parts")
            wall = time.perf_counter() - began
        assert result.status == "completed", result.error or result.final[-500:]
        m = result.metrics
        whole = turns * 2 * 3000
        print(
            f"   summaries {summaries:5}: largest prompt {max(sent):,} chars = {m.prompt_tokens_max:,} tokens "
            f"(budget {m.prompt_budget:,}; the whole conversation would be > {whole:,} chars), "
            f"{m.summaries} summaries, {m.prompts_cut} prompts cut, {wall:.2f} s"
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=200, help="items for the overhead measurement")
    parser.add_argument("--fanout", type=int, default=100, help="items for the fan-out")
    parser.add_argument("--agents", type=int, default=10, help="agents for the fan-out")
    parser.add_argument("--sizes", default="1,10,100,1000", help="run sizes for the scaling figures")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each overhead figure (min / median shown)")
    parser.add_argument("--turns", type=int, default=100, help="delegations of the prompt-size run")
    parser.add_argument("--only", choices=["overhead", "scaling", "fanout", "prompt"], help="run one part only")
    args = parser.parse_args()
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        if args.only in (None, "overhead"):
            await overhead(args.items, args.rounds, Path(tmp))
        if args.only in (None, "scaling"):
            await scaling([int(n) for n in args.sizes.split(",")], args.rounds, Path(tmp))
        if args.only in (None, "fanout"):
            await fanout(args.fanout, args.agents, Path(tmp))
        if args.only in (None, "prompt"):
            await prompt_size(args.turns)


if __name__ == "__main__":
    asyncio.run(main())
