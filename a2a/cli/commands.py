"""The client commands: card, send, get, list, cancel, subscribe and push."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shlex
import signal
import sys
from collections.abc import AsyncIterator
from typing import Any

import msgspec

from ..client import A2AClient, RetryPolicy, credentials_from_env
from ..errors import RequestTimeoutError
from ..transport.targets import STDIO_PREFIX, stdio_argv
from ..types import Artifact, Message, Part, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState
from .live import StreamView
from .options import UsageError
from .output import print_json, show

__all__ = ["client_command"]


def _client(args: argparse.Namespace) -> A2AClient:
    if args.url.startswith(STDIO_PREFIX):
        try:
            stdio_argv(args.url)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    try:
        credentials = credentials_from_env(args.token, args.api_key)
    except ValueError as exc:  # a token that cannot be sent in a header
        raise UsageError(str(exc)) from None
    retry = RetryPolicy(max_attempts=max(1, args.retries))
    return A2AClient(
        args.url,
        credentials=credentials,
        retry=retry,
        timeout=args.timeout,
        binding=args.binding,
        max_response_bytes=args.max_response_bytes,
        idle_timeout=args.idle_timeout or None,
    )


def _state(value: str | None) -> TaskState | None:
    if value is None:
        return None
    name = "TASK_STATE_" + value.upper().replace("-", "_").removeprefix("TASK_STATE_")
    try:
        return TaskState(name)
    except ValueError:
        known = ", ".join(s.value.removeprefix("TASK_STATE_").lower().replace("_", "-") for s in TaskState)
        raise UsageError(f"unknown state {value!r}; use one of: {known}") from None


def _data(args: argparse.Namespace) -> Any:
    """The JSON of --data (``None`` without it)."""
    if args.data is None:
        return None
    try:
        return json.loads(args.data)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--data is not valid JSON: {exc}") from None


def _content(text: str, args: argparse.Namespace, data: Any) -> str | list[Part]:
    """The message: the text, plus a data part when --data gives JSON (without --skill)."""
    if data is None or args.skill is not None:
        return text
    parts = [Part(text=text)] if text else []
    return [*parts, Part(data=data, media_type="application/json")]


def _arguments(args: argparse.Namespace, data: Any) -> dict[str, Any] | None:
    """With --skill, --data is the skill's arguments: a JSON object."""
    if args.skill is None or data is None:
        return None
    if not isinstance(data, dict):
        raise UsageError("with --skill, --data must be a JSON object of the skill's arguments")
    return data


def _exit_for(result: Any) -> int:
    """Non-zero when the task ended badly, so that scripts can tell."""
    status = getattr(result, "status", None)
    state = status.state if status is not None else None
    return 1 if state in (TaskState.FAILED, TaskState.REJECTED, TaskState.CANCELED) else 0


def _interactive(args: argparse.Namespace) -> bool:
    """Ask for a task's missing input here: only a person at a terminal, and not asked not to."""
    return not (args.json or args.no_prompt) and sys.stdin.isatty() and sys.stdout.isatty()


async def _answer() -> str:
    """The person's answer to the question just shown (with the task's status)."""
    try:
        return (await asyncio.to_thread(input, "your answer (empty to stop): ")).strip()
    except EOFError:
        return ""


#: Why no later command can reach a task of a ``stdio:`` target: the agent runs as this
#: command's child, and stops with it.
_STDIO_TASK_GONE = (
    "a stdio: agent runs as this command's child and stops with it, so a later a2a command starts "
    "a new agent that does not know the task (unless the agent keeps its tasks in a durable --store)"
)


def _over_stdio(args: argparse.Namespace) -> bool:
    return str(args.url).startswith(STDIO_PREFIX)


def _how_to_answer(args: argparse.Namespace, task_id: str) -> None:
    if _over_stdio(args):
        print(
            f"the task waits for input; {_STDIO_TASK_GONE}: answer it at a terminal, where a2a send asks "
            "for the answer, or serve the agent over HTTP",
            file=sys.stderr,
        )
        return
    flags = " --stream" if args.stream else ""
    print(
        f'the task waits for input; answer with: a2a send {shlex.quote(args.url)} "..." --task-id {task_id}{flags}',
        file=sys.stderr,
    )


async def _send(client: A2AClient, args: argparse.Namespace) -> int:
    data = _data(args)
    arguments = _arguments(args, data)
    text, task_id, context_id = str(args.text), args.task_id, args.context_id
    while True:
        content = _content(text, args, data)
        if args.stream:
            result, task_id, context_id = await _stream_send(client, args, content, task_id, context_id, arguments)
        else:
            result = await _send_once(client, args, content, task_id, context_id, arguments)
            (print_json if args.json else show)(result)
            task_id = getattr(result, "id", task_id)
            context_id = getattr(result, "context_id", context_id)
        state = getattr(getattr(result, "status", None), "state", None)
        if state != TaskState.INPUT_REQUIRED or task_id is None or args.json:
            return _exit_for(result)
        if not _interactive(args):
            _how_to_answer(args, task_id)
            return 0
        text = await _answer()
        if not text:
            _how_to_answer(args, task_id)
            return 0
        data = arguments = None  # the answer is text


#: The exit status of a blocking ``a2a send`` whose task outlasted ``--timeout``: the task goes
#: on, and its id and the commands that follow it are on stderr (124, as timeout(1) exits).
EXIT_STILL_RUNNING = 124


class _StillRunning(Exception):
    """A blocking send's task outlasted --timeout."""

    def __init__(self, task_id: str) -> None:
        super().__init__(task_id)
        self.task_id = task_id


async def _send_once(
    client: A2AClient,
    args: argparse.Namespace,
    content: str | list[Part],
    task_id: str | None,
    context_id: str | None,
    arguments: dict[str, Any] | None,
) -> Any:
    """What a send answers: the agent's message, or its task (as it stands, with --no-wait).

    Waiting for a task that may outlast --timeout, the CLI must know the task's id before the
    answer comes, to say how to reach the task afterwards: an agent that streams is therefore
    followed as a stream (its first event names the task), and the task is fetched when the
    stream ends. An agent that does not stream is sent a plain blocking SendMessage.
    """
    card = await client.get_card()
    if args.no_wait or not card.capabilities.streaming:
        try:
            return await client.send(
                content,
                task_id=task_id,
                context_id=context_id,
                return_immediately=args.no_wait,
                skill=args.skill,
                arguments=arguments,
            )
        except RequestTimeoutError as exc:
            raise RequestTimeoutError(
                f"{exc}; the task goes on if the agent made one (send with --no-wait to get its id at once)"
            ) from exc
    events = client.stream(content, task_id=task_id, context_id=context_id, skill=args.skill, arguments=arguments)
    named: str | None = task_id
    last: Any = None
    streamed: dict[str, Artifact] = {}
    try:
        async with asyncio.timeout(args.timeout):
            async for event in events:
                last = event.payload
                named = _task_id_of(last) or named
                _collect_artifacts(streamed, last)
    except TimeoutError:
        if named is None:
            raise RequestTimeoutError(f"the agent named no task within {args.timeout}s") from None
        raise _StillRunning(named) from None
    finally:
        await events.aclose()  # type: ignore[attr-defined]
    if named is None or (isinstance(last, Message) and last.task_id is None):
        return last  # a plain reply: no task
    task = await client.get_task(named)
    if not task.artifacts and streamed:
        # A server that streams artifacts but does not keep them on the task (LangGraph
        # Server's GetTask): what the stream delivered is the answer.
        task = msgspec.structs.replace(task, artifacts=list(streamed.values()))
    return task


def _collect_artifacts(streamed: dict[str, Artifact], payload: Any) -> None:
    """Fold a stream event's artifacts into ``streamed`` (by id; ``append`` extends the parts)."""
    if isinstance(payload, Task):
        for artifact in payload.artifacts or ():
            streamed[artifact.artifact_id] = artifact
    elif isinstance(payload, TaskArtifactUpdateEvent):
        artifact = payload.artifact
        known = streamed.get(artifact.artifact_id)
        if payload.append and known is not None:
            artifact = msgspec.structs.replace(known, parts=[*known.parts, *artifact.parts])
        streamed[artifact.artifact_id] = artifact


def _task_id_of(payload: Any) -> str | None:
    if isinstance(payload, Task):
        return payload.id
    found = getattr(payload, "task_id", None)
    return found if isinstance(found, str) and found else None


def _still_running(args: argparse.Namespace, task_id: str) -> int:
    if _over_stdio(args):
        print(
            f"a2a: task {task_id} did not finish within --timeout {args.timeout:g}s; {_STDIO_TASK_GONE}",
            file=sys.stderr,
        )
        return EXIT_STILL_RUNNING
    url = shlex.quote(args.url)
    print(
        f"a2a: task {task_id} did not finish within --timeout {args.timeout:g}s and goes on: "
        f"a2a get {url} {task_id} shows it, a2a subscribe {url} {task_id} follows it, "
        f"a2a cancel {url} {task_id} cancels it",
        file=sys.stderr,
    )
    return EXIT_STILL_RUNNING


class _Interrupted(Exception):
    """Ctrl-C while watching a stream."""


async def _watch(events: AsyncIterator[StreamResponse], view: StreamView | None) -> Any:
    """Show the events (``view``; ``None``: wire JSON) until the stream ends or Ctrl-C; the
    last payload. A Ctrl-C stops the watching, not the process: the caller says what next."""
    loop = asyncio.get_running_loop()
    me = asyncio.current_task()
    interrupted = False

    def interrupt() -> None:
        nonlocal interrupted
        interrupted = True
        if me is not None:
            me.cancel()

    installed = False
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, interrupt)
        installed = True
    ticker = asyncio.ensure_future(view.tick()) if view is not None else None
    last: Any = None
    try:
        async for event in events:
            if view is None:
                print_json(event)
            else:
                view.show(event)
            last = event.payload
    except asyncio.CancelledError:
        if not interrupted:
            raise
        if me is not None:
            me.uncancel()
        raise _Interrupted from None
    finally:
        if ticker is not None:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker
        if view is not None:
            view.stop_ticking()
            view.finish()
        if installed:
            loop.remove_signal_handler(signal.SIGINT)
        with contextlib.suppress(Exception):
            await events.aclose()  # type: ignore[attr-defined]
    return last


def _task_of(last: Any, view: StreamView | None) -> tuple[str | None, str | None]:
    if view is not None and view.task_id is not None:
        return view.task_id, view.context_id
    task_id = getattr(last, "task_id", None) or getattr(last, "id", None)
    return task_id, getattr(last, "context_id", None)


async def _stream_send(
    client: A2AClient,
    args: argparse.Namespace,
    content: str | list[Part],
    task_id: str | None,
    context_id: str | None,
    arguments: dict[str, Any] | None,
) -> tuple[Any, str | None, str | None]:
    events = client.stream(content, task_id=task_id, context_id=context_id, skill=args.skill, arguments=arguments)
    view = None if args.json else StreamView(sys.stdout, ticker=sys.stdout.isatty())
    try:
        last = await _watch(events, view)
    except _Interrupted:
        await _interrupted(client, args, view.task_id if view is not None else task_id)
        raise
    new_task, new_context = _task_of(last, view)
    return last, new_task or task_id, new_context or context_id


async def _interrupted(client: A2AClient, args: argparse.Namespace, task_id: str | None) -> None:
    """After Ctrl-C: cancel the task when asked to, else say how to."""
    url = shlex.quote(args.url)
    if task_id is None:
        print("a2a: interrupted before the agent named a task", file=sys.stderr)
    elif getattr(args, "cancel_on_interrupt", False):
        task = await client.cancel_task(task_id)
        print(f"a2a: task {task_id} {_state_word(task.status.state)}", file=sys.stderr)
    elif _over_stdio(args):
        print(f"a2a: stopped watching task {task_id}; {_STDIO_TASK_GONE}", file=sys.stderr)
    else:
        print(
            f"a2a: stopped watching task {task_id}, which goes on: a2a cancel {url} {task_id} cancels it, "
            f"a2a subscribe {url} {task_id} follows it again",
            file=sys.stderr,
        )


def _state_word(state: TaskState) -> str:
    return str(state.value).removeprefix("TASK_STATE_").lower().replace("_", "-")


async def _subscribe(client: A2AClient, args: argparse.Namespace) -> int:
    view = None if args.json else StreamView(sys.stdout, ticker=sys.stdout.isatty())
    return _exit_for(await _watch(client.follow(args.task_id), view))


async def _push(client: A2AClient, args: argparse.Namespace) -> int:
    out = print_json if args.json else show
    action = args.push_command
    if action == "create":
        out(
            await client.create_push_config(
                args.task_id, args.webhook, token=args.webhook_token, config_id=args.config_id
            )
        )
    elif action == "list":
        out(await client.list_push_configs(args.task_id, page_size=args.page_size, page_token=args.page_token))
    elif action == "get":
        out(await client.get_push_config(args.task_id, args.config_id))
    else:
        await client.delete_push_config(args.task_id, args.config_id)
        if not args.json:
            print(f"deleted push config {args.config_id} of task {args.task_id}")
    return 0


async def client_command(args: argparse.Namespace) -> int:
    try:
        return await _command(args)
    except _Interrupted:
        return 130
    except _StillRunning as still:
        return _still_running(args, still.task_id)


async def _command(args: argparse.Namespace) -> int:
    async with _client(args) as client:
        if args.command == "send":
            return await _send(client, args)
        if args.command == "subscribe":
            return await _subscribe(client, args)
        if args.command == "push":
            return await _push(client, args)
        result: Any
        if args.command == "card":
            result = await client.get_card()
        elif args.command == "get":
            result = await client.get_task(args.task_id, history_length=args.history)
        elif args.command == "cancel":
            result = await client.cancel_task(args.task_id)
        else:
            result = await client.list_tasks(
                context_id=args.context_id,
                status=_state(args.state),
                page_size=args.page_size,
                page_token=args.page_token,
            )
        (print_json if args.json else show)(result)
        return 0
