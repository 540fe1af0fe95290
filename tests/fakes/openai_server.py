"""A fake OpenAI-compatible chat endpoint on loopback, scripted step by step.

Each ``POST /v1/chat/completions`` takes the next step of the script:

- ``ToolCalls(call("write", path="a.txt", content="hi"))``: the model asks for tool calls;
- ``Reply("done")``: the model answers with text;
- ``Failure(503)``: the endpoint fails once (with ``retry-after-ms`` so client retries are quick);
- a function ``(request_body) -> step`` (or ``async``): decide from what the model was shown,
  or hold the call open until the test releases it.

Every response carries ``usage`` token counts (per step, or the server's default). Requests are
recorded (``server.requests``) so tests can assert what the model was shown and offered. When
the script runs out, the server answers 500 and says so (a test expecting fewer calls fails
loudly). ``stream: true`` is answered as server-sent events, as OpenAI does.

Use it as an async context manager::

    async with FakeOpenAI([ToolCalls(call("list")), Reply("nothing here")]) as model:
        monkeypatch.setenv("A2A_MODEL", model.model)   # or: model.env() / model.settings()
        monkeypatch.setenv("A2A_MODEL_BASE_URL", model.base_url)
"""

from __future__ import annotations

import inspect
import itertools
import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from agents.llm import ModelSettings

__all__ = ["Failure", "FakeOpenAI", "Recorded", "Reply", "Step", "ToolCall", "ToolCalls", "call"]


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    #: Send these raw characters as the arguments instead (to test malformed JSON).
    raw_arguments: str | None = None


def call(name: str, /, **arguments: Any) -> ToolCall:
    return ToolCall(name, arguments)


@dataclass(frozen=True, init=False)
class ToolCalls:
    """One model turn that asks for one or more tool calls (and optionally says something)."""

    calls: tuple[ToolCall, ...]
    text: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None

    def __init__(
        self,
        *calls: ToolCall,
        text: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
    ) -> None:
        object.__setattr__(self, "calls", calls)
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "input_tokens", input_tokens)
        object.__setattr__(self, "output_tokens", output_tokens)


@dataclass(frozen=True)
class Reply:
    """A final text answer."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclass(frozen=True)
class Failure:
    """An HTTP error instead of an answer (OpenAI's error body shape)."""

    status: int = 503
    message: str = "the fake endpoint is overloaded"
    retry_after_ms: int | None = 5


Answer = ToolCalls | Reply | Failure
#: A scripted answer, or a function of the request body that returns one (or an awaitable of one,
#: e.g. to hold the model call open until the test says so).
Step = Answer | Callable[[dict[str, Any]], Answer | Awaitable[Answer]]


@dataclass
class Recorded:
    """One request the fake endpoint received."""

    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools the model was offered."""
        return [t["function"]["name"] for t in self.body.get("tools", [])]

    def last_message(self) -> dict[str, Any]:
        return self.messages[-1]


@dataclass
class FakeOpenAI:
    """The fake endpoint; ``async with`` starts it on a free loopback port."""

    script: list[Step] = field(default_factory=list)
    model: str = "fake-model"
    api_key: str = "fake-key"
    input_tokens: int = 11
    output_tokens: int = 7
    requests: list[Recorded] = field(default_factory=list)
    base_url: str = ""

    def __post_init__(self) -> None:
        self.script = list(self.script)
        self._runner: web.AppRunner | None = None
        self._ids = itertools.count(1)

    def add(self, *steps: Step) -> None:
        self.script.extend(steps)

    @property
    def remaining(self) -> int:
        return len(self.script)

    def env(self) -> dict[str, str]:
        """Environment variables that point ``agents.llm.ModelSettings.from_env`` here."""
        return {"A2A_MODEL": self.model, "A2A_MODEL_BASE_URL": self.base_url, "A2A_MODEL_API_KEY": self.api_key}

    def settings(self, **overrides: Any) -> ModelSettings:
        """``agents.llm.ModelSettings`` for this endpoint (no retries unless overridden)."""
        from agents.llm import ModelSettings

        values: dict[str, Any] = {"model": self.model, "base_url": self.base_url, "api_key": self.api_key}
        values.setdefault("max_retries", 0)
        return ModelSettings(**(values | overrides))

    # ---- lifecycle ---------------------------------------------------------------------

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.base_url = f"http://{host}:{port}/v1"
        return self.base_url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeOpenAI:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # ---- handlers ----------------------------------------------------------------------

    async def _models(self, _request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": self.model, "object": "model"}]})

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return _error(401, "invalid API key (the fake expects its api_key)", "invalid_api_key")
        body = await request.json()
        self.requests.append(Recorded(body, dict(request.headers)))
        if not self.script:
            return _error(500, f"the fake model's script is used up (request {len(self.requests)})", "script_done")
        step = await _answer(self.script.pop(0), body)
        if isinstance(step, Failure):
            headers = {"retry-after-ms": str(step.retry_after_ms)} if step.retry_after_ms is not None else {}
            return _error(step.status, step.message, "fake_failure", headers)
        completion = self._completion(step)
        if body.get("stream"):
            return await self._stream(request, completion, body)
        return web.json_response(completion)

    def _completion(self, step: ToolCalls | Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": step.text}
        if isinstance(step, ToolCalls):
            message["tool_calls"] = [
                {
                    "id": f"call_{next(self._ids)}",
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.raw_arguments or json.dumps(c.arguments)},
                }
                for c in step.calls
            ]
        prompt = self.input_tokens if step.input_tokens is None else step.input_tokens
        completion = self.output_tokens if step.output_tokens is None else step.output_tokens
        return {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if isinstance(step, ToolCalls) else "stop",
                    "logprobs": None,
                }
            ],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }

    async def _stream(
        self, request: web.Request, completion: dict[str, Any], body: dict[str, Any]
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for chunk in _chunks(completion, include_usage=bool((body.get("stream_options") or {}).get("include_usage"))):
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


async def _answer(step: Step, body: dict[str, Any]) -> Answer:
    if not callable(step):
        return step
    answer = step(body)
    return await answer if inspect.isawaitable(answer) else answer


def _chunks(completion: dict[str, Any], *, include_usage: bool) -> Iterable[dict[str, Any]]:
    """The completion as OpenAI streams it: a delta with everything, a finish, then usage."""
    choice = completion["choices"][0]
    delta = dict(choice["message"])
    if "tool_calls" in delta:
        delta["tool_calls"] = [{"index": i, **tc} for i, tc in enumerate(delta["tool_calls"])]
    base = {k: completion[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    yield base | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    yield base | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]}
    if include_usage:
        yield base | {"choices": [], "usage": completion["usage"]}


def _error(status: int, message: str, code: str, headers: dict[str, str] | None = None) -> web.Response:
    body = {"error": {"message": message, "type": "fake_error", "param": None, "code": code}}
    return web.json_response(body, status=status, headers=headers)
