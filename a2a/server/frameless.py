"""Doing something once an awaited thing ends, without a coroutine frame waiting for it.

An open SSE stream waits, for its whole life, inside every coroutine on its way: the layer that
writes the access log's line, the skill that publishes what its function returns. Each holds
a frame (its locals and its value stack: 250 to 300 bytes) only to do its part at the end. A
layer can hand back one of these instead: a small object that is itself what the awaiting
coroutine iterates (``__await__`` returns it), drives the awaited thing's steps, and does its
part when the thing returns or raises. Everything else passes through unchanged: values sent
in, futures yielded out, exceptions thrown in (a cancellation), ``close``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Iterator
from types import CoroutineType
from typing import Any, Generic, TypeVar

__all__ = ["Then", "Watched"]

T = TypeVar("T")
C = TypeVar("C")
R = TypeVar("R")


def _steps(awaitable: Awaitable[Any]) -> Any:
    # A coroutine is driven as it is (it has send, throw and close); anything else through the
    # iterator its ``__await__`` gives. (A type check: an ABC's isinstance costs far more.)
    return awaitable if type(awaitable) is CoroutineType else awaitable.__await__()


class _Driver(Generic[T]):
    """Drives ``_step`` (an awaitable's steps); subclasses say what its end leads to."""

    __slots__ = ("_step",)

    _step: Iterator[Any]

    def __await__(self) -> Generator[Any, Any, T]:
        return self  # type: ignore[return-value]  # it is one: send, throw, close

    def __iter__(self) -> _Driver[T]:
        return self

    def __next__(self) -> Any:
        return self.send(None)

    def send(self, value: Any) -> Any:
        try:
            return self._step.send(value)  # type: ignore[attr-defined]
        except StopIteration as stop:
            return self._returned(stop.value)
        except BaseException as exc:
            self._raised(exc)
            raise

    def throw(self, *exc_info: Any) -> Any:
        try:
            return self._step.throw(*exc_info)  # type: ignore[attr-defined]
        except StopIteration as stop:
            return self._returned(stop.value)
        except BaseException as exc:
            self._raised(exc)
            raise

    def close(self) -> None:
        close = getattr(self._step, "close", None)
        if close is not None:
            close()

    def _returned(self, value: Any) -> Any:
        """The awaited thing returned ``value``: the next step's yield, or ``StopIteration``."""
        raise StopIteration(value)

    def _raised(self, exc: BaseException) -> None:
        """The awaited thing raised ``exc`` (raised on from here once this returns)."""


class Then(_Driver[R]):
    """``await Then(first, after, context)`` is ``await after(context, await first)`` (the
    context given here rather than bound in a ``partial``: that would be three objects more)."""

    __slots__ = ("_after", "_context")

    def __init__(self, first: Awaitable[T], after: Callable[[C, T], Awaitable[R]], context: C) -> None:
        self._step = _steps(first)
        self._after: Callable[[Any, Any], Awaitable[R]] | None = after
        self._context: Any = context

    def _returned(self, value: Any) -> Any:
        after, self._after = self._after, None
        if after is None:  # the second one returned: so does this
            raise StopIteration(value)
        context, self._context = self._context, None
        self._step = _steps(after(context, value))
        return self.send(None)


class Watched(_Driver[T]):
    """``await Watched(awaitable, ended)`` is ``await awaitable``, with ``ended(result, None)``
    called when it returns and ``ended(None, exc)`` when it raises (or is closed unfinished:
    ``GeneratorExit``), exactly once, before the result or the exception goes on."""

    __slots__ = ("_ended",)

    def __init__(self, awaitable: Awaitable[T], ended: Callable[[T | None, BaseException | None], None]) -> None:
        self._step = _steps(awaitable)
        self._ended: Callable[[Any, BaseException | None], None] | None = ended

    def _end(self, value: Any, exc: BaseException | None) -> None:
        ended, self._ended = self._ended, None
        if ended is not None:
            ended(value, exc)

    def _returned(self, value: Any) -> Any:
        self._end(value, None)
        raise StopIteration(value)

    def _raised(self, exc: BaseException) -> None:
        self._end(None, exc)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._end(None, GeneratorExit())
