"""Prometheus metrics, served as text at ``GET /metrics`` when ``ServerConfig.metrics`` is on.

The exposition format (text 0.0.4) is written here, in a few lines, rather than taken from
``prometheus_client``: nothing to install, and recording a request is a couple of dictionary
updates. Off by default (``a2a serve --metrics`` turns it on); when off nothing is recorded and
the route does not exist.

What is measured (``protocol.md`` and the README list the names):

- ``a2a_requests_total{operation,binding,outcome}``: A2A operations served, by outcome (``ok``,
  or the error's ``ErrorInfo.reason`` such as ``TASK_NOT_FOUND``; ``CANCELLED`` for a caller
  that left);
- ``a2a_request_duration_seconds{operation,binding}``: a histogram; for a streaming operation,
  how long the stream stayed open;
- ``a2a_http_responses_total{code}``: every HTTP answer, including those refused before an
  operation was known (401, 404, 413 ...);
- ``a2a_open_streams{binding}``: streams being served now;
- ``a2a_tasks{state}``: tasks running in this process, by state (read when scraped);
- ``a2a_tasks_ended_total{state}``: runs that ended here, by the state they ended in;
- ``a2a_push_deliveries_total{outcome}``: webhook deliveries (``delivered`` / ``failed`` attempts);
- ``a2a_store_duration_seconds{operation}``: a histogram of task store calls.
"""

from __future__ import annotations

import asyncio
import bisect
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from ..backends.store import IdempotencyRecord, TaskPage, TaskQuery, TaskRecord, TaskStore
from ..bindings.messages import HttpRequest, Reply

__all__ = ["CONTENT_TYPE", "Counter", "Gauge", "Histogram", "Metrics", "TimedStore"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

#: Seconds: from a cache hit to a long blocking send.
REQUEST_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
STORE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)

Labels = tuple[str, ...]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(names: Sequence[str], values: Labels, extra: str = "") -> str:
    pairs = [f'{name}="{_escape(value)}"' for name, value in zip(names, values, strict=True)]
    if extra:
        pairs.append(extra)
    return "{" + ",".join(pairs) + "}" if pairs else ""


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class _Metric:
    kind = "untyped"

    def __init__(self, name: str, help_text: str, labels: Sequence[str] = ()) -> None:
        self.name = name
        self.help = help_text
        self.label_names = tuple(labels)

    def header(self) -> list[str]:
        return [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} {self.kind}"]

    def lines(self) -> list[str]:
        raise NotImplementedError


class Counter(_Metric):
    kind = "counter"

    def __init__(self, name: str, help_text: str, labels: Sequence[str] = ()) -> None:
        super().__init__(name, help_text, labels)
        self.values: dict[Labels, float] = {}

    def inc(self, labels: Labels = (), amount: float = 1.0) -> None:
        self.values[labels] = self.values.get(labels, 0.0) + amount

    def lines(self) -> list[str]:
        return [f"{self.name}{_labels(self.label_names, k)} {_number(v)}" for k, v in sorted(self.values.items())]


class Gauge(_Metric):
    """A value set as it changes, or read when scraped (``collect``)."""

    kind = "gauge"

    def __init__(
        self,
        name: str,
        help_text: str,
        labels: Sequence[str] = (),
        collect: Callable[[], Iterable[tuple[Labels, float]]] | None = None,
    ) -> None:
        super().__init__(name, help_text, labels)
        self.values: dict[Labels, float] = {}
        self.collect = collect

    def add(self, labels: Labels, amount: float) -> None:
        self.values[labels] = self.values.get(labels, 0.0) + amount

    def lines(self) -> list[str]:
        values = dict(self.collect()) if self.collect is not None else self.values
        return [f"{self.name}{_labels(self.label_names, k)} {_number(v)}" for k, v in sorted(values.items())]


class Histogram(_Metric):
    kind = "histogram"

    def __init__(self, name: str, help_text: str, labels: Sequence[str], buckets: Sequence[float]) -> None:
        super().__init__(name, help_text, labels)
        self.buckets = tuple(buckets)
        #: Per label set: the count in each bucket (not cumulative; summed when written), the sum.
        self.series: dict[Labels, tuple[list[int], list[float]]] = {}

    def observe(self, labels: Labels, value: float) -> None:
        series = self.series.get(labels)
        if series is None:
            series = self.series[labels] = ([0] * (len(self.buckets) + 1), [0.0])
        series[0][bisect.bisect_left(self.buckets, value)] += 1
        series[1][0] += value

    def lines(self) -> list[str]:
        out: list[str] = []
        for key, (counts, total) in sorted(self.series.items()):
            running = 0
            for bound, count in zip((*self.buckets, math.inf), counts, strict=True):
                running += count
                le = 'le="' + _number(bound) + '"'
                out.append(f"{self.name}_bucket{_labels(self.label_names, key, le)} {running}")
            out.append(f"{self.name}_sum{_labels(self.label_names, key)} {_number(total[0])}")
            out.append(f"{self.name}_count{_labels(self.label_names, key)} {running}")
        return out


class Metrics:
    """The server's metrics, and the text a scrape gets."""

    def __init__(self) -> None:
        self.requests = Counter(
            "a2a_requests_total", "A2A operations served, by outcome.", ("operation", "binding", "outcome")
        )
        self.duration = Histogram(
            "a2a_request_duration_seconds",
            "Time to serve an A2A operation (a stream: how long it stayed open).",
            ("operation", "binding"),
            REQUEST_BUCKETS,
        )
        self.http = Counter("a2a_http_responses_total", "HTTP answers, by status code.", ("code",))
        self.streams = Gauge("a2a_open_streams", "Streams being served now.", ("binding",))
        self.tasks = Gauge("a2a_tasks", "Tasks running in this process, by state.", ("state",))
        self.ended = Counter("a2a_tasks_ended_total", "Runs that ended in this process, by final state.", ("state",))
        self.push = Counter("a2a_push_deliveries_total", "Webhook delivery attempts, by outcome.", ("outcome",))
        self.store = Histogram("a2a_store_duration_seconds", "Time of task store calls.", ("operation",), STORE_BUCKETS)
        self._all: list[_Metric] = [
            self.requests,
            self.duration,
            self.http,
            self.streams,
            self.tasks,
            self.ended,
            self.push,
            self.store,
        ]

    def render(self) -> bytes:
        lines: list[str] = []
        for metric in self._all:
            lines += metric.header()
            lines += metric.lines()
        return ("\n".join(lines) + "\n").encode()

    def push_delivered(self, delivered: bool) -> None:
        self.push.inc(("delivered" if delivered else "failed",))

    async def serve(self, _request: HttpRequest) -> Reply:
        """``GET /metrics``."""
        return Reply(200, CONTENT_TYPE, self.render())


class TimedStore(TaskStore):
    """A task store whose every call is timed into ``a2a_store_duration_seconds`` (only put in
    front of the store when metrics are on: no cost otherwise)."""

    def __init__(self, inner: TaskStore, histogram: Histogram) -> None:
        self.inner = inner
        self._histogram = histogram

    def _done(self, operation: str, started: float) -> None:
        self._histogram.observe((operation,), time.perf_counter() - started)

    async def get(self, task_id: str) -> TaskRecord | None:
        started = time.perf_counter()
        try:
            return await self.inner.get(task_id)
        finally:
            self._done("get", started)

    async def save(self, record: TaskRecord) -> None:
        started = time.perf_counter()
        try:
            await self.inner.save(record)
        finally:
            self._done("save", started)

    async def list(self, query: TaskQuery) -> TaskPage:
        started = time.perf_counter()
        try:
            return await self.inner.list(query)
        finally:
            self._done("list", started)

    async def unfinished(self) -> Any:
        started = time.perf_counter()
        try:
            return await self.inner.unfinished()
        finally:
            self._done("unfinished", started)

    async def claim_message(self, key: tuple[str, str, str], record: IdempotencyRecord) -> IdempotencyRecord | None:
        started = time.perf_counter()
        try:
            return await self.inner.claim_message(key, record)
        finally:
            self._done("claim_message", started)

    async def get_message(self, key: tuple[str, str, str]) -> IdempotencyRecord | None:
        started = time.perf_counter()
        try:
            return await self.inner.get_message(key)
        finally:
            self._done("get_message", started)

    async def update_message(self, key: tuple[str, str, str], record: IdempotencyRecord) -> None:
        started = time.perf_counter()
        try:
            await self.inner.update_message(key, record)
        finally:
            self._done("update_message", started)

    def record_reply(self, key: tuple[str, str, str], record: IdempotencyRecord) -> Awaitable[object]:
        started = time.perf_counter()
        written = self.inner.record_reply(key, record)
        if isinstance(written, asyncio.Future):  # timed until it is durable
            written.add_done_callback(lambda _: self._done("update_message", started))
        else:
            self._done("update_message", started)
        return written

    async def ping(self) -> None:
        await self.inner.ping()

    async def close(self) -> None:
        await self.inner.close()

    def __getattr__(self, name: str) -> Any:
        # What a particular store offers beyond TaskStore (a test's hooks, a backend's extras).
        return getattr(self.inner, name)
