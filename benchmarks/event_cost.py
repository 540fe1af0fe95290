#!/usr/bin/env python
"""The cost of one more event on a task, by the task's size: does it grow with the task?

In one process, the real ``RequestHandler`` over the store under test (default: a SQLite file
opened as ``a2a serve`` opens it). An agent first streams ``N`` artifact chunks into its task
(the task's size), then publishes ``EVENTS`` more events of each kind, timed:

- ``status``: a WORKING status update with a short message (always saved before it is seen);
- ``chunk``: one more artifact chunk appended to the big artifact.

Prints CPU microseconds per event (process CPU time, so other load on the machine hardly moves
it) for each size, and the ratio largest/smallest: 1.0 means the cost does not grow with the task.

    .venv/bin/python benchmarks/event_cost.py                  # sizes 10 and 10000, SQLite
    .venv/bin/python benchmarks/event_cost.py --store memory:
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from a2a import Agent, RequestContext
from a2a.server.backends.base import open_backend
from a2a.server.engine.handler import CallContext, RequestHandler
from a2a.types import Message, Part, Role, SendMessageRequest


def make_agent(size: int, events: int, timings: dict[str, float]) -> Agent:
    agent = Agent("Sizes", "Grows a task, then times more events", version="1.0.0")

    @agent.skill()
    async def grow(ctx: RequestContext) -> None:
        for i in range(size):
            await ctx.artifact(f"chunk {i}", artifact_id="big", append=i > 0)
        await asyncio.sleep(0.3)  # past the chunk save interval: every timed chunk is alike
        start = time.process_time()
        for i in range(events):
            await ctx.working(f"step {i}")
        timings["status"] = (time.process_time() - start) / events
        start = time.process_time()
        for i in range(events):
            await ctx.artifact(f"more {i}", artifact_id="big", append=True)
        timings["chunk"] = (time.process_time() - start) / events
        await ctx.complete()

    return agent


async def measure(store_url: str, size: int, events: int) -> dict[str, float]:
    timings: dict[str, float] = {}
    backend = open_backend(store_url, exclusive=True)
    handler = RequestHandler(make_agent(size, events, timings), backend.tasks)
    await handler.start()
    try:
        message = Message(message_id=f"m-{size}-{time.time_ns()}", role=Role.USER, parts=[Part(text="go")])
        await handler.send_message(SendMessageRequest(message=message), CallContext())
    finally:
        await handler.shutdown()  # closes the store
        if backend.push is not None:
            await backend.push.close()
    return {kind: round(seconds * 1e6, 1) for kind, seconds in timings.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default="sqlite", help="sqlite (a fresh file), sqlite-full, memory:, or a URL")
    parser.add_argument("--sizes", default="10,10000", help="artifact chunks before the timed events")
    parser.add_argument("--events", type=int, default=300)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="a2a-event-cost-") as scratch:
        for size in sizes:
            url = args.store
            if url in ("sqlite", "sqlite-full"):
                url = f"sqlite:///{scratch}/size-{size}.db" + ("?durability=full" if url == "sqlite-full" else "")
            results[size] = asyncio.run(measure(url, size, args.events))
    print(f"store {args.store}: CPU microseconds per event, by the task's artifact chunks before it")
    print(f"{'chunks':>8}{'status':>10}{'chunk':>10}")
    for size, cost in results.items():
        print(f"{size:>8}{cost['status']:>10.1f}{cost['chunk']:>10.1f}")
    small, large = results[sizes[0]], results[sizes[-1]]
    ratios = {kind: round(large[kind] / small[kind], 2) for kind in ("status", "chunk")}
    print(f"largest / smallest: status {ratios['status']}x, chunk {ratios['chunk']}x")
    print("JSON " + json.dumps({"store": args.store, "events": args.events, "results": results, "ratios": ratios}))


if __name__ == "__main__":
    main()
