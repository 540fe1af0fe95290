"""What every way of serving an agent sets up alike: the request handler over a backend, push
notifications included, and the agent card it publishes (HTTP and WebSocket by ``A2AServer``,
stdio by ``serve_stdio``)."""

from __future__ import annotations

from collections.abc import Sequence

from ...ssrf import OutboundPolicy
from ...telemetry import tracing
from ...types import AgentCard, AgentInterface
from ..authoring.agent import Agent
from ..backends.base import Backend, BackendError
from ..push import PushNotifier
from .auth import Authenticator
from .handler import RequestHandler
from .observe import Observer

__all__ = ["open_handler", "served_card"]


def open_handler(
    agent: Agent,
    backend: Backend,
    *,
    push: PushNotifier | bool = False,
    push_allow: str | Sequence[str] | None = None,
    authenticates: bool = False,
) -> RequestHandler:
    """The handler serving ``agent`` over ``backend``. ``push=True``: push notifications, their
    configs in the backend's push store (an error if it has none: never a store that forgets
    what the tasks remember); webhooks to private addresses only where ``push_allow`` lists
    them. A ``PushNotifier`` may be given instead. ``authenticates``: the bindings check their
    callers' credentials (the extended agent card is served only then)."""
    handler = RequestHandler(
        agent,
        backend.tasks,
        backend.events,
        _notifier(backend, push, push_allow),
        backend.coordination,
        authenticates=authenticates,
    )
    traced = tracing()  # None unless OpenTelemetry is installed: then no observer, no cost
    if traced is not None:
        handler.observer = Observer(traced, None, agent=agent.name)
    return handler


def _notifier(backend: Backend, push: PushNotifier | bool, allow: str | Sequence[str] | None) -> PushNotifier | None:
    if isinstance(push, PushNotifier):
        return push
    if not push:
        return None
    if backend.push is None:
        raise BackendError(
            f"push notifications need a push store beside the tasks, and this {type(backend.tasks).__name__} "
            "comes without one: open the store by URL (open_backend), give push=PushNotifier(...), or turn push off"
        )
    guard = OutboundPolicy.from_allow_list(allow) if allow else None
    return PushNotifier(backend.push, guard=guard)


def served_card(handler: RequestHandler, authenticator: Authenticator, interfaces: list[AgentInterface]) -> AgentCard:
    """The card of the agent ``handler`` serves, reached through ``interfaces`` behind
    ``authenticator`` (its schemes are the card's security), push notifications as offered."""
    schemes, requirements = authenticator.card_fields()
    return handler.agent.build_card(
        interfaces,
        security_schemes=schemes,
        security_requirements=requirements,
        push_notifications=handler.push is not None,
        extended_agent_card=handler.offers_extended_card,
    )
