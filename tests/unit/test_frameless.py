"""``Then`` and ``Watched``: awaiting through them is awaiting the thing itself (values, futures,
exceptions, cancellation), with their part done exactly once at its end."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

from a2a.server.frameless import Then, Watched


async def _later(value: Any) -> Any:
    await asyncio.sleep(0)
    await asyncio.get_running_loop().create_future() if value == "forever" else None
    return value


async def _fail() -> None:
    await asyncio.sleep(0)
    raise KeyError("boom")


async def _add(context: int, value: int) -> int:
    await asyncio.sleep(0)
    return value * 2 + context


async def test_then_awaits_the_first_then_what_follows_from_its_result() -> None:
    chained = Then(_later(21), _add, 0)
    assert not inspect.iscoroutine(chained)  # no frame of its own
    assert await chained == 42
    assert await Then(asyncio.sleep(0, 5), lambda c, v: asyncio.sleep(0, v + c), 1) == 6


async def test_then_raises_what_either_raises() -> None:
    with pytest.raises(KeyError):
        await Then(_fail(), _add, 0)
    with pytest.raises(KeyError):
        await Then(_later(1), lambda _c, _v: _fail(), None)


async def test_watched_reports_the_result_or_the_error_once() -> None:
    seen: list[tuple[Any, Any]] = []
    assert await Watched(_later("ok"), lambda r, e: seen.append((r, e))) == "ok"
    with pytest.raises(KeyError):
        await Watched(_fail(), lambda r, e: seen.append((r, type(e))))
    assert seen == [("ok", None), (None, KeyError)]


async def test_a_cancellation_reaches_the_awaited_thing_and_is_reported() -> None:
    seen: list[Any] = []
    cancelled = False

    async def waits() -> None:
        nonlocal cancelled
        try:
            await asyncio.get_running_loop().create_future()
        except asyncio.CancelledError:
            cancelled = True
            raise

    async def outer() -> None:
        await Watched(waits(), lambda r, e: seen.append(type(e)))

    task = asyncio.ensure_future(outer())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled and seen == [asyncio.CancelledError]


def test_closing_it_unfinished_closes_the_awaited_thing_and_reports_it() -> None:
    seen: list[Any] = []
    inner = _later("forever")
    watched = Watched(inner, lambda r, e: seen.append(type(e)))
    watched.send(None)  # started, waiting
    watched.close()
    assert inspect.getcoroutinestate(inner) == inspect.CORO_CLOSED
    assert seen == [GeneratorExit]
