"""What an agent's ``execute`` receives: the request, and the means to publish results."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...metadata import USAGE_KEY, usage_entry
from ...types import INTERRUPTED_STATES, TERMINAL_STATES, UNSET, Artifact, Message, Part, Role, Task, TaskState
from ..engine.ids import new_id

if TYPE_CHECKING:
    from ..engine.execution import Run

__all__ = ["Content", "RequestContext", "agent_message", "to_parts"]

#: What agents may pass wherever content is expected: text, one part, parts, or JSON data.
Content = str | Part | Sequence[Part] | dict[str, Any] | list[Any]


def to_parts(content: Content, *, media_type: str | None = None) -> list[Part]:
    if isinstance(content, str):
        return [Part(text=content, media_type=media_type)]
    if isinstance(content, Part):
        return [content]
    if isinstance(content, (list, tuple)) and content and all(isinstance(p, Part) for p in content):
        return list(content)
    return [Part(data=content, media_type=media_type or "application/json")]


def agent_message(content: Content, *, task_id: str | None = None, context_id: str | None = None) -> Message:
    """A message from the agent (role ``ROLE_AGENT``) with a fresh id."""
    return Message(
        message_id=new_id(),
        role=Role.AGENT,
        # Text, the usual content, made here (what ``to_parts`` makes of it): one call fewer.
        parts=[Part(text=content)] if isinstance(content, str) else to_parts(content),
        task_id=task_id,
        context_id=context_id,
    )


class RequestContext:
    """One execution of an agent for one incoming message.

    Publish with ``working``, ``artifact``, ``complete``, ``fail``, ``reject``,
    ``require_input``, ``require_auth`` or ``reply``. Cancellation arrives as
    ``asyncio.CancelledError`` inside ``execute``: clean up and re-raise.
    """

    def __init__(self, run: Run, message: Message, task: Task | None, skill_id: str | None, principal: str | None):
        self._run = run
        #: The message that started this execution.
        self.message = message
        #: The task as it stood when this message arrived (``None`` for a new task).
        self.task = task
        self.skill_id = skill_id
        #: Who sent the request (``None`` when the agent needs no authentication).
        self.principal = principal

    @property
    def task_id(self) -> str:
        return self._run.task_id

    @property
    def context_id(self) -> str:
        return self._run.context_id

    @property
    def text(self) -> str:
        return self.message.text

    @property
    def data(self) -> Any:
        """The first data part's value, or ``None``."""
        for part in self.message.parts:
            if part.data is not UNSET:
                return part.data
        return None

    @property
    def state(self) -> TaskState:
        return self._run.task.status.state

    @property
    def finished(self) -> bool:
        """True once this execution has given its answer (terminal, interrupted, or a reply)."""
        run = self._run
        if run.reply is not None:  # a plain reply, the usual quick answer: the task is not read
            return True
        state = run.record.task.status.state
        return state in TERMINAL_STATES or state in INTERRUPTED_STATES

    @property
    def history(self) -> list[Message]:
        """Earlier messages of this task (empty for a new task)."""
        return list(self.task.history or []) if self.task else []

    def set_task_metadata(self, key: str, value: Any) -> None:
        """Put ``key`` in the task's metadata; it is saved with the next event (and
        ``a2a-net/usage`` also travels in the metadata of every later status event)."""
        task = self._run.task
        task.metadata = {**(task.metadata or {}), key: value}

    def report_usage(
        self, input_tokens: int, output_tokens: int, *, cost_usd: float | None = None, model: str | None = None
    ) -> None:
        """Add model use to the task's ``a2a-net/usage`` metadata (totals across calls)."""
        current = dict((self._run.task.metadata or {}).get(USAGE_KEY) or {})
        cost = current.get("costUsd")
        if cost_usd is not None:
            cost = float(cost or 0.0) + cost_usd
        self.set_task_metadata(
            USAGE_KEY,
            usage_entry(
                int(current.get("inputTokens", 0)) + input_tokens,
                int(current.get("outputTokens", 0)) + output_tokens,
                cost,
                model or current.get("model"),
            ),
        )

    async def working(self, content: Content | None = None) -> None:
        await self.update(TaskState.WORKING, content)

    async def update(self, state: TaskState, content: Content | None = None) -> None:
        message = None if content is None else self._message(content)
        await self._run.publish_status(state, message)

    async def artifact(
        self,
        content: Content,
        *,
        name: str | None = None,
        artifact_id: str | None = None,
        append: bool = False,
        last_chunk: bool = False,
        media_type: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """Publish an artifact (or, with ``append``, a chunk of one); returns its id."""
        artifact = Artifact(
            artifact_id=artifact_id or new_id(),
            parts=to_parts(content, media_type=media_type),
            name=name,
            metadata=metadata,
        )
        await self._run.publish_artifact(artifact, append=append, last_chunk=last_chunk)
        return artifact.artifact_id

    async def complete(self, content: Content | None = None) -> None:
        await self.update(TaskState.COMPLETED, content)

    async def fail(self, content: Content) -> None:
        await self.update(TaskState.FAILED, content)

    async def reject(self, content: Content) -> None:
        await self.update(TaskState.REJECTED, content)

    async def require_input(self, content: Content) -> None:
        """Pause the task until the client sends another message with this task's id."""
        await self.update(TaskState.INPUT_REQUIRED, content)

    async def require_auth(self, content: Content) -> None:
        await self.update(TaskState.AUTH_REQUIRED, content)

    async def reply(self, content: Content | Message) -> None:
        """Answer with a plain message. Before any task event this is the whole answer (no task)."""
        message = content if isinstance(content, Message) else self._message(content)
        await self._run.publish_message(message)

    def _message(self, content: Content) -> Message:
        run = self._run  # the run's ids read directly, not through two properties each
        return agent_message(content, task_id=run.task_id, context_id=run.record.task.context_id or "")
