"""Hooks: a small middleware around each delegation and each model call.

A hook is an object with any of four async methods (``Hook`` has them all, doing nothing):

- ``before_delegation(request) -> request``: see what is about to be sent; return it unchanged,
  or changed (another ``text``, ``arguments`` or ``agent``), or raise ``Vetoed(reason)`` — the
  item then fails with ``vetoed: reason`` and nothing is sent.
- ``after_delegation(request, result) -> result``: see what came back; return it, or another
  ``DelegationResult`` (e.g. redacted text).
- ``before_model(purpose, messages) -> messages`` and ``after_model(purpose, response) -> response``
  around each call of the supervisor's own model (``purpose``: plan, reflect, converse, synthesize).

Hooks run in the order given, each seeing what the one before returned. They are given to
``Supervisor(hooks=[...])`` or in the YAML as import paths (``supervisor.hooks: ["pkg.mod:hook"]``;
a class or function there is called with no arguments to make the hook). A delegation that is
picked up again after a restart (it was already sent) does not pass ``before_delegation`` again.

``ApprovalHook(ask)`` is the built-in approval: before delegating to an agent configured with
``approval: true`` it awaits ``ask(request)``; anything but ``True`` vetoes the delegation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from a2a.loader import load_object

if TYPE_CHECKING:
    from langchain_core.messages import AIMessage, BaseMessage

__all__ = ["ApprovalHook", "DelegationRequest", "DelegationResult", "Hook", "Vetoed", "load_hooks"]


class Vetoed(Exception):
    """Raised by ``before_delegation``: this delegation must not happen (the message says why)."""


@dataclass(frozen=True)
class DelegationRequest:
    """A delegation about to be sent (``dataclasses.replace`` it to change it)."""

    run_id: str
    item_id: str
    description: str
    agent: str
    skill: str | None
    text: str
    arguments: dict[str, Any] | None
    #: The agent is configured with ``approval: true``.
    needs_approval: bool = False
    #: The agent's tools for it (sent as ``a2a-net/tools``); ``None``: not sent.
    tools: list[str] | None = None


@dataclass(frozen=True)
class DelegationResult:
    """What a delegation came back with: the item's status (done, failed, canceled), text, data, error."""

    status: str
    agent: str | None
    result: str | None
    data: Any
    error: str | None

    def replace(self, **changes: Any) -> DelegationResult:
        return dataclasses.replace(self, **changes)


class Hook:
    """Does nothing at every point; subclass it and override what you need."""

    async def before_delegation(self, request: DelegationRequest) -> DelegationRequest:
        return request

    async def after_delegation(self, request: DelegationRequest, result: DelegationResult) -> DelegationResult:
        return result

    async def before_model(self, purpose: str, messages: list[BaseMessage]) -> list[BaseMessage]:
        return messages

    async def after_model(self, purpose: str, response: AIMessage) -> AIMessage:
        return response


class ApprovalHook(Hook):
    """Asks before delegating to an agent that needs approval (``approval: true`` in its config)."""

    def __init__(self, ask: Callable[[DelegationRequest], Awaitable[bool]]) -> None:
        self.ask = ask

    async def before_delegation(self, request: DelegationRequest) -> DelegationRequest:
        if request.needs_approval and await self.ask(request) is not True:
            raise Vetoed(f"delegating to {request.agent} was not approved")
        return request


def load_hooks(specs: Sequence[str | Any]) -> list[Any]:
    """Hooks from import paths (a class or function there is called to make one) or objects."""
    hooks = []
    for spec in specs:
        obj = load_object(spec) if isinstance(spec, str) else spec
        if isinstance(obj, type) or (callable(obj) and not _is_hook(obj)):
            obj = obj()
        hooks.append(obj)
    return hooks


def _is_hook(obj: Any) -> bool:
    return any(hasattr(obj, name) for name in ("before_delegation", "after_delegation", "before_model", "after_model"))
