"""The kill test: ``a2a serve`` on a SQLite file is SIGKILLed 10 times while clients submit 1,000
tasks with retries. Afterwards every accepted task is found, none is duplicated, none is stuck.

Each kill comes at a random point of the clients' progress (a seeded RNG: set
``A2A_KILL_SEED`` to replay a run), plus a random fraction of a second; the server is restarted
on the same port and the same file each time. The clients resend with the same messageId
(``A2AClient``'s retries), so a message that reached the dead server must come back as the same
task, and one that did not must run once.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import pytest

from a2a import A2AClient, RetryPolicy
from a2a.client import user_message
from a2a.server.engine.handler import RESTART_NOTE
from a2a.types import Role, Task, TaskState
from tests.durability.conftest import ServeProcess, free_port, poll_until, serve_env

T = TypeVar("T")

TOTAL_TASKS = 1000
KILLS = 10
CLIENTS = 8
#: The whole test (clients, kills, restarts and the checks afterwards) gets this long.
TEST_BUDGET = 150.0
#: One call, all its retries included; a restart takes about a second.
CALL_DEADLINE = 45.0
BINDINGS = ["JSONRPC", "HTTP+JSON"]

#: New idempotency records indexed every 40 (``a2a.server.backends.sqlite.idempotency``), so that kills fall during
#: merges too, and each restart indexes the records that were not yet.
_SERVE_ENV = serve_env(A2A_TEST_SQLITE_MERGE_AT="40")

pytestmark = [pytest.mark.timeout(TEST_BUDGET + 60), pytest.mark.slow]  # kills `a2a serve` processes


@dataclass
class Stats:
    calls: int = 0
    attempts: int = 0
    retried_calls: int = 0

    @property
    def retries(self) -> int:
        return self.attempts - self.calls


class CountingRetry(RetryPolicy):
    """A generous RetryPolicy (many attempts, small backoff, a deadline, no budget) that counts."""

    def __init__(self, stats: Stats) -> None:
        super().__init__(max_attempts=500, initial_backoff=0.02, max_backoff=0.25, deadline=CALL_DEADLINE, budget=None)
        self.stats = stats

    async def run(self, attempt_fn: Callable[[], Awaitable[T]], *, what: str) -> T:
        tries = 0

        def counted() -> Awaitable[T]:
            nonlocal tries
            tries += 1
            self.stats.attempts += 1
            return attempt_fn()

        self.stats.calls += 1
        try:
            return await super().run(counted, what=what)
        finally:
            if tries > 1:
                self.stats.retried_calls += 1


@dataclass
class Sent:
    message_id: str
    text: str
    immediately: bool
    task: Task


@dataclass
class Killer:
    """Kills the server at the given progress points, and restarts it on the same port and file."""

    args: list[str]
    log_dir: Path
    rng: random.Random
    points: list[int]
    server: ServeProcess
    restarts: int = 0
    downtimes: list[float] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    def start(self) -> ServeProcess:
        log = self.log_dir / f"serve-{len(self.logs)}.err"
        self.logs.append(log)
        return ServeProcess(self.args, log_path=log, env=_SERVE_ENV)

    async def run(self, progress: Callable[[], int]) -> None:
        for point in self.points:

            async def reached(point: int = point) -> bool | None:
                return True if progress() >= point else None

            await poll_until(reached, timeout=TEST_BUDGET, interval=0.005, what=f"{point} answers")
            # A random moment: the progress point, then up to 0.15 s more of traffic.
            await asyncio.sleep(self.rng.uniform(0.0, 0.15))
            killed_at = time.monotonic()
            await asyncio.to_thread(self.server.kill)
            self.server = self.start()
            # Must succeed: the kernel released the dead server's lock on the SQLite file and its port.
            await asyncio.to_thread(self.server.wait_serving)
            self.downtimes.append(time.monotonic() - killed_at)
            self.restarts += 1


async def _client_loop(
    url: str, binding: str, stats: Stats, indexes: itertools.count[int], sent: dict[str, Sent], answered: list[int]
) -> None:
    async with A2AClient(url, binding=binding, retry=CountingRetry(stats), timeout=15.0) as client:
        while (i := next(indexes)) < TOTAL_TASKS:
            text = "hold:0.05" if i % 2 else "stream:2"
            immediately = i % 4 < 2
            message_id = f"kill-{i:04d}"
            result = await client.send(user_message(text, message_id=message_id), return_immediately=immediately)
            assert isinstance(result, Task), f"{message_id} ({text}) was answered with a message, not a task"
            sent[message_id] = Sent(message_id, text, immediately, result)
            answered[0] += 1


async def _all_tasks(client: A2AClient) -> tuple[list[Task], int]:
    """Every task, by paging ListTasks (100 a page), and the total it reports."""
    tasks: list[Task] = []
    token: str | None = None
    total = -1
    for _ in range(TOTAL_TASKS):  # more pages than that would be a paging bug
        page = await client.list_tasks(page_size=100, page_token=token, include_artifacts=True)
        tasks.extend(page.tasks)
        total = page.total_size
        token = page.next_page_token or None
        if token is None:
            return tasks, total
    raise AssertionError("ListTasks paging did not end")


async def _unsettled(client: A2AClient) -> int:
    counts = [
        (await client.list_tasks(status=state, page_size=1)).total_size
        for state in (TaskState.SUBMITTED, TaskState.WORKING)
    ]
    return sum(int(c or 0) for c in counts)


def _text(task: Task) -> str:
    message = task.status.message
    if message is None or not message.parts:
        return ""
    return "".join(part.text or "" for part in message.parts)


async def test_sigkill_ten_times_while_clients_submit_a_thousand_tasks(tmp_path: Path) -> None:
    seed = int(os.environ.get("A2A_KILL_SEED") or random.randrange(1 << 32))
    rng = random.Random(seed)
    port = free_port()
    store = f"sqlite:///{tmp_path / 'tasks.db'}"  # an absolute path: sqlite:////tmp/...
    args = ["examples/echo_agent.py:agent", "--port", str(port), "--store", store]
    points = sorted(rng.sample(range(30, TOTAL_TASKS - 40), KILLS))
    first = ServeProcess(args, log_path=tmp_path / "serve-0.err", env=_SERVE_ENV)
    killer = Killer(args, tmp_path, rng, points, first, logs=[first.log_path])
    url = await asyncio.to_thread(killer.server.wait_serving)
    assert url == f"http://127.0.0.1:{port}"
    stats = Stats()
    sent: dict[str, Sent] = {}
    answered = [0]
    indexes = itertools.count()
    started = time.monotonic()
    try:
        async with asyncio.timeout(TEST_BUDGET):
            clients = [
                asyncio.create_task(_client_loop(url, BINDINGS[n % 2], stats, indexes, sent, answered))
                for n in range(CLIENTS)
            ]
            kills = asyncio.create_task(killer.run(lambda: answered[0]))
            done = await asyncio.gather(*clients, kills, return_exceptions=True)
            errors = [r for r in done if isinstance(r, BaseException)]
            assert not errors, f"seed {seed}: {errors[0]!r}" + "".join(f"\n{e!r}" for e in errors[1:5])
            submitted = time.monotonic() - started
            assert killer.restarts == KILLS, f"seed {seed}: {killer.restarts} restarts, expected {KILLS}"
            assert len(sent) == TOTAL_TASKS

            async with A2AClient(url, retry=RetryPolicy.none(), timeout=15.0) as client:
                # The last tasks accepted with returnImmediately may still be holding: they settle
                # by themselves (anything still unsettled after this is stuck).
                async def settled() -> bool | None:
                    return True if await _unsettled(client) == 0 else None

                await poll_until(settled, timeout=15.0, interval=0.1, what="the last tasks to finish")
                counts = await _check_store(client, sent, seed, killer)
        code = await asyncio.to_thread(killer.server.terminate)
        assert code == 0, f"a2a serve exited {code} on SIGTERM: {killer.server.stderr_tail()}"
    finally:
        if killer.server.alive:
            await asyncio.to_thread(killer.server.kill)

    failed = sum(1 for s in sent.values() if s.task.status.state == TaskState.FAILED)
    print(
        f"\nkill test (seed {seed}): {TOTAL_TASKS} tasks accepted in {submitted:.1f}s over {KILLS} SIGKILLs "
        f"(restart downtime mean {sum(killer.downtimes) / KILLS:.2f}s, max {max(killer.downtimes):.2f}s); "
        f"{stats.retries} retries across {stats.retried_calls} of {stats.calls} calls; "
        f"{counts[TaskState.FAILED]} tasks FAILED by restarts ({failed} of them already FAILED in the "
        f"client's answer), {counts[TaskState.COMPLETED]} COMPLETED; kills at answers {points}"
    )


async def _check_store(client: A2AClient, sent: dict[str, Sent], seed: int, killer: Killer) -> dict[TaskState, int]:
    """Every accepted task found once, with its one message, finished; returns the count per state."""
    where = f"seed {seed}"
    by_task: dict[str, Sent] = {}
    for s in sent.values():
        other = by_task.setdefault(s.task.id, s)
        assert other is s, f"{where}: {other.message_id} and {s.message_id} were both answered with task {s.task.id}"

    tasks, total = await _all_tasks(client)
    ids = [task.id for task in tasks]
    assert len(ids) == len(set(ids)), f"{where}: ListTasks paging returned a task twice"
    assert total == len(tasks), f"{where}: ListTasks says {total} tasks but pages through {len(tasks)}"
    extra = set(ids) - set(by_task)
    missing = set(by_task) - set(ids)
    assert not extra, f"{where}: {len(extra)} tasks no client was answered with (a messageId ran twice?)"
    assert not missing, f"{where}: {len(missing)} accepted tasks are not listed: {sorted(missing)[:5]}"
    assert total == TOTAL_TASKS

    counts = {TaskState.COMPLETED: 0, TaskState.FAILED: 0}
    for task in tasks:
        s = by_task[task.id]
        users = [m for m in task.history or [] if m.role == Role.USER]
        assert [m.message_id for m in users] == [s.message_id], (
            f"{where}: task {task.id} holds user messages {[m.message_id for m in users]}, "
            f"expected exactly [{s.message_id}]"
        )
        state = task.status.state
        assert state in counts, f"{where}: task {task.id} ({s.message_id}, {s.text}) is {state.value}: {_text(task)}"
        counts[state] += 1
        if state == TaskState.FAILED:
            assert _text(task) == RESTART_NOTE, f"{where}: task {task.id} failed, not by a restart: {_text(task)!r}"
        elif s.text == "stream:2":
            parts = [p.text for a in task.artifacts or [] for p in a.parts]
            assert parts == ["chunk 0", "chunk 1"], f"{where}: task {task.id} completed with artifacts {parts}"
        else:
            assert _text(task) == "held for 0.05s", f"{where}: task {task.id} completed with {_text(task)!r}"
        if s.task.status.state.is_terminal:
            assert state == s.task.status.state, (
                f"{where}: task {task.id} was answered {s.task.status.state.value}, is now {state.value}"
            )

    # And each one by id, as a client that was answered would ask for it.
    async def get_all(chunk: list[str]) -> list[Task]:
        return [await client.get_task(task_id, history_length=1) for task_id in chunk]

    chunks = [list(by_task)[i::4] for i in range(4)]
    got = [task for part in await asyncio.gather(*(get_all(c) for c in chunks)) for task in part]
    assert sorted(task.id for task in got) == sorted(by_task)
    stuck = [task.id for task in got if not task.status.state.is_terminal]
    assert not stuck, f"{where}: GetTask shows {len(stuck)} tasks not finished: {stuck[:5]}"

    # A late retry (after all the restarts) still finds its task, and starts nothing new.
    for s in random.Random(seed).sample(list(sent.values()), 50):
        again = await client.send(user_message(s.text, message_id=s.message_id), return_immediately=s.immediately)
        assert isinstance(again, Task) and again.id == s.task.id, f"{where}: resending {s.message_id} gave a new task"
    assert (await client.list_tasks(page_size=1)).total_size == TOTAL_TASKS

    recovered = 0
    for log in killer.logs:
        for match in re.finditer(r"marked (\d+) task\(s\) FAILED", log.read_text(errors="replace")):
            recovered += int(match.group(1))
    assert recovered == counts[TaskState.FAILED], (
        f"{where}: the restarts reported {recovered} tasks marked FAILED, the store holds {counts[TaskState.FAILED]}"
    )
    return counts
