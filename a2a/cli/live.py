"""How ``a2a send --stream`` and ``a2a subscribe`` show a task as it happens, to a person.

Streamed text chunks flow on as one text (a chunk is not a line); a status update, a message
or a new artifact starts a line of its own. On a terminal, while the task is silent, a ticking
``[working 4s]`` follows the text, erased before the next output; elsewhere nothing but the
events is written, so that a pipe gets plain text.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
from typing import TextIO

from ..types import (
    UNSET,
    Message,
    Part,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)
from .output import part_text, state_name

__all__ = ["StreamView"]

#: Silence, in seconds, before the ticker shows, and between its updates.
TICK_AFTER = 1.0
TICK_EVERY = 0.5


class StreamView:
    """Writes events to ``out``; ``tick()`` (a task to run beside the stream) shows the silence."""

    def __init__(self, out: TextIO, *, ticker: bool) -> None:
        self.out = out
        self.ticker = ticker
        self.task_id: str | None = None
        self.context_id: str | None = None
        self.state: TaskState | None = None
        self._column = 0  # characters written since the last line break
        self._artifact: str | None = None  # the artifact whose text is flowing
        self._shown = 0  # length of the ticker on screen (0: none)
        self._start = time.monotonic()
        self._last = self._start

    # ---- writing ----------------------------------------------------------------------------

    def _write(self, text: str) -> None:
        self._erase()
        if not text:
            return
        self.out.write(text)
        last_break = text.rfind("\n")
        self._column = len(text) - last_break - 1 if last_break >= 0 else self._column + len(text)
        self.out.flush()

    def _line(self, text: str) -> None:
        """``text`` on a line of its own."""
        self._break()
        self._write(text + "\n")
        self._artifact = None

    def _break(self) -> None:
        if self._column:
            self._write("\n")

    def finish(self) -> None:
        """End the output with a line break (after flowing text)."""
        self._break()

    # ---- events -----------------------------------------------------------------------------

    def show(self, event: StreamResponse) -> None:
        self._last = time.monotonic()
        payload = event.payload
        if isinstance(payload, Task):
            self.task_id, self.context_id, self.state = payload.id, payload.context_id, payload.status.state
            self._line(f"task {payload.id}  {state_name(payload.status.state)}")
            # A task that has moved on already (``a2a subscribe`` to a running or ended one): what it has.
            if payload.status.message is not None and payload.status.state != TaskState.SUBMITTED:
                self._line(" ".join(part_text(p) for p in payload.status.message.parts))
            for artifact in payload.artifacts or []:
                self._line("".join(part_text(p) for p in artifact.parts))
        elif isinstance(payload, TaskStatusUpdateEvent):
            self.task_id, self.context_id, self.state = payload.task_id, payload.context_id, payload.status.state
            parts = payload.status.message.parts if payload.status.message else []
            note = " ".join(part_text(p) for p in parts)
            self._line(f"  {state_name(payload.status.state)}" + (f": {note}" if note else ""))
        elif isinstance(payload, TaskArtifactUpdateEvent):
            self._artifact_chunk(payload)
        elif isinstance(payload, Message):
            self._line("\n".join(part_text(p) for p in payload.parts))

    def _artifact_chunk(self, event: TaskArtifactUpdateEvent) -> None:
        artifact = event.artifact
        continues = self._artifact == artifact.artifact_id and event.append
        if not continues:
            self._break()
        self._artifact = artifact.artifact_id
        for part in artifact.parts:
            if _is_text(part):
                self._write(str(part.text))
            else:
                self._line(part_text(part))
                self._artifact = artifact.artifact_id

    # ---- the ticker -------------------------------------------------------------------------

    def _erase(self) -> None:
        if self._shown:
            # Back over the ticker and clear to the end of the line.
            self.out.write(f"\x1b[{self._shown}D\x1b[K")
            self._shown = 0

    def _tick_text(self) -> str:
        state = state_name(self.state) if self.state is not None else "waiting"
        return f"{' ' if self._column else ''}[{state} {time.monotonic() - self._start:.0f}s]"

    async def tick(self) -> None:
        """Until cancelled: after a silence, show the state and the time since the start."""
        if not self.ticker:
            return
        while True:
            await asyncio.sleep(TICK_EVERY)
            if time.monotonic() - self._last < TICK_AFTER:
                continue
            text = self._tick_text()
            self._erase()
            if self._column + len(text) >= shutil.get_terminal_size().columns:
                continue  # it would wrap, and could not be erased
            self.out.write(text)
            self.out.flush()
            self._shown = len(text)

    def stop_ticking(self) -> None:
        self._erase()
        with contextlib.suppress(ValueError, OSError):
            self.out.flush()


def _is_text(part: Part) -> bool:
    return part.text is not UNSET
