"""Group commit never answers before the commit: ``a2a serve`` on SQLite is SIGKILLed while its
writer holds batches that are queued but not committed (a test hook makes each commit wait),
then restarted. Every task id a client was given is then on disk (GetTask finds it), and every
plain reply a client was given is found again by resending its messageId (the idempotency
record with the reply was committed before the answer).
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from a2a import A2AClient, RetryPolicy
from a2a.client import user_message
from a2a.server.backends.sqlite.worker import COMMIT_DELAY_ENV
from a2a.types import Message, Task
from tests.durability.conftest import ServeProcess, free_port, serve_env

CLIENTS = 8
ROUNDS = 3
#: Seconds each batch waits between its last statement and its COMMIT: a kill at a random
#: moment then nearly always lands while some batch is queued or written but not committed.
COMMIT_DELAY = 0.2
TRAFFIC_SECONDS = 1.5

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]  # kills `a2a serve` processes


@dataclass
class Answers:
    tasks: dict[str, str] = field(default_factory=dict)  # task id -> messageId
    replies: dict[str, tuple[str, str]] = field(default_factory=dict)  # messageId -> (text, reply's messageId)
    failed_calls: int = 0


async def _client(url: str, n: int, stop: asyncio.Event, answers: Answers, rng: random.Random) -> None:
    async with A2AClient(url, retry=RetryPolicy.none(), timeout=10.0) as client:
        i = 0
        while not stop.is_set():
            i += 1
            message_id = f"gc-{n}-{i}-{rng.randrange(1 << 30)}"
            text = rng.choice(["stream:1", "hold:0.01", f"hello {message_id}"])
            try:
                result = await client.send(
                    user_message(text, message_id=message_id), return_immediately=rng.random() < 0.5
                )
            except Exception:  # noqa: BLE001 - the server died under this call: it was not answered
                answers.failed_calls += 1
                await asyncio.sleep(0.01)
                continue
            if isinstance(result, Task):
                answers.tasks[result.id] = message_id
            else:
                assert isinstance(result, Message)
                answers.replies[message_id] = (text, result.message_id)


async def _streaming_client(url: str, n: int, stop: asyncio.Event, answers: Answers, rng: random.Random) -> None:
    """SendStreamingMessage: a task id counts as given out from the first event that names it
    (a quick task's first save is queued and merged into its last; its events wait for that)."""
    async with A2AClient(url, retry=RetryPolicy.none(), timeout=10.0) as client:
        i = 0
        while not stop.is_set():
            i += 1
            message_id = f"gcs-{n}-{i}-{rng.randrange(1 << 30)}"
            text = rng.choice(["stream:1", "stream:3", "hold:0.01"])
            try:
                async for event in client.stream(user_message(text, message_id=message_id)):
                    if isinstance(event.task, Task):
                        answers.tasks[event.task.id] = message_id
            except Exception:  # noqa: BLE001 - the server died under this call
                answers.failed_calls += 1
                await asyncio.sleep(0.01)


# normal: the batch commits on the event loop's thread (the server holds the file alone);
# full: on the writer thread (its fsync must not block the loop), answered across threads.
# stream: SendStreamingMessage clients (a task id is given out by a stream's first event), on
# the writer thread: the loop serves streams while a batch waits for its commit.
@pytest.mark.parametrize(("durability", "mode"), [("normal", "send"), ("full", "send"), ("full", "stream")])
async def test_no_answer_before_its_commit(tmp_path: Path, durability: str, mode: str) -> None:
    rng = random.Random(1313)
    client = _client if mode == "send" else _streaming_client
    port = free_port()
    store = f"sqlite:///{tmp_path / 'tasks.db'}?durability={durability}"
    args = ["examples/echo_agent.py:agent", "--port", str(port), "--store", store]
    answers = Answers()
    for round_no in range(ROUNDS):
        slow = ServeProcess(
            args, log_path=tmp_path / f"slow-{round_no}.err", env=serve_env(**{COMMIT_DELAY_ENV: str(COMMIT_DELAY)})
        )
        try:
            url = await asyncio.to_thread(slow.wait_serving)
            stop = asyncio.Event()
            clients = [asyncio.create_task(client(url, n, stop, answers, rng)) for n in range(CLIENTS)]
            # Traffic, then a kill at a random moment of a commit's wait.
            await asyncio.sleep(TRAFFIC_SECONDS + rng.uniform(0.0, COMMIT_DELAY))
            killed_at = time.monotonic()
            await asyncio.to_thread(slow.kill)
            stop.set()
            async with asyncio.timeout(30):
                await asyncio.gather(*clients)
        finally:
            if slow.alive:
                slow.kill()
        assert time.monotonic() - killed_at < 30
    assert answers.tasks and (answers.replies or mode == "stream"), "no traffic was answered: the test proves nothing"
    assert answers.failed_calls, "no call was cut by a kill: the kills came between batches"

    server = ServeProcess(args, log_path=tmp_path / "check.err")
    try:
        url = await asyncio.to_thread(server.wait_serving)
        async with A2AClient(url, retry=RetryPolicy.none(), timeout=10.0) as checker:
            lost = []
            for task_id in answers.tasks:
                try:
                    await checker.get_task(task_id, history_length=0)
                except Exception as exc:  # noqa: BLE001 - collected and reported below
                    lost.append((task_id, answers.tasks[task_id], repr(exc)))
            assert not lost, f"{len(lost)} of {len(answers.tasks)} answered task ids are not on disk: {lost[:3]}"
            for message_id, (text, reply) in answers.replies.items():
                again = await checker.send(user_message(text, message_id=message_id))
                assert isinstance(again, Message), f"resending {message_id} made a task"
                # The recorded reply, not a new run (which would make a new reply id).
                assert again.message_id == reply, f"resending {message_id} ran it again: the reply was not on disk"
        assert server.terminate() == 0
    finally:
        if server.alive:
            server.kill()
    print(
        f"\ngroup commit kill test ({durability}, {mode}): {len(answers.tasks)} task ids and {len(answers.replies)} "
        f"replies answered over {ROUNDS} SIGKILLs (commit delayed {COMMIT_DELAY}s), "
        f"{answers.failed_calls} calls cut; all on disk"
    )
