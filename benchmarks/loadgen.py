"""The Python load generator (aiohttp client on uvloop): SendMessage requests/s and SSE events/s.

Used for SSE always (wrk cannot count SSE events), and for SendMessage when wrk is missing or
``--loadgen python`` is asked for. Runs as its own process (run.py pins it to its own CPU) and
prints one JSON object on stdout.

    python benchmarks/loadgen.py send --url URL --connections 32 --warmup 2 --duration 8
    python benchmarks/loadgen.py sse  --url URL --streams 4 --chunks 2000 --warmup 2 --duration 8
    python benchmarks/loadgen.py hold --url URL     (commands on stdin: see run_hold)

Every loop is bounded: workers stop at the deadline (they are cancelled if a read hangs), each
request has a timeout, and the request count is capped.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
import uuid

import aiohttp

HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}
MAX_REQUESTS = 10_000_000
MAX_LATENCY_SAMPLES = 1_000_000
#: The "task" case: the echo agent creates a task, adds one artifact chunk, completes it, and
#: SendMessage answers with the completed task.
TASK_TEXT = "stream:1"


def _body(method: str, text: str, prefix: bytes, n: int, ids: str = "counter") -> bytes:
    # A fresh messageId per request: our server is idempotent by messageId. "uuid": a random
    # UUID, what the A2A SDKs' clients send; "counter": PREFIX-N (ids in the order they are
    # sent, which a store indexes at its end: cheaper than real ids).
    message_id = str(uuid.uuid4()).encode() if ids == "uuid" else b"%s-%d" % (prefix, n)
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"%s","params":{"message":{"messageId":"%s",'
        b'"role":"ROLE_USER","parts":[{"text":"%s"}]}}}' % (n, method.encode(), message_id, text.encode())
    )


class Window:
    """The measurement window [start, end) after the warm-up."""

    def __init__(self, warmup: float, duration: float) -> None:
        self.t0 = time.monotonic()
        self.start = self.t0 + warmup
        self.end = self.start + duration

    def inside(self, t: float) -> bool:
        return self.start <= t < self.end


def _percentile(sorted_values: list[float], q: float) -> float | None:
    if not sorted_values:
        return None
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


async def run_send(
    url: str, connections: int, warmup: float, duration: float, timeout: float, text: str = "hello", ids: str = "uuid"
) -> dict:
    window = Window(warmup, duration)
    prefix = uuid.uuid4().hex[:12].encode()
    counter = iter(range(1, MAX_REQUESTS + 1))
    ok = errors = 0
    all_ok = all_errors = 0
    latencies: list[float] = []
    first_error: str | None = None
    connector = aiohttp.TCPConnector(limit=connections)
    client_timeout = aiohttp.ClientTimeout(total=timeout)

    async with aiohttp.ClientSession(
        connector=connector, timeout=client_timeout, skip_auto_headers=["User-Agent"]
    ) as s:

        async def worker() -> None:
            nonlocal ok, errors, all_ok, all_errors, first_error
            for n in counter:
                start = time.monotonic()
                if start >= window.end:
                    return
                good = False
                try:
                    async with s.post(url, data=_body("SendMessage", text, prefix, n, ids), headers=HEADERS) as resp:
                        payload = await resp.read()
                        good = resp.status == 200 and b'"result"' in payload
                        # A task case must come back completed (with its artifact).
                        good = good and (text == "hello" or b"TASK_STATE_COMPLETED" in payload)
                        if not good and first_error is None:
                            first_error = f"HTTP {resp.status}: {payload[:200]!r}"
                except (TimeoutError, aiohttp.ClientError) as exc:
                    if first_error is None:
                        first_error = repr(exc)
                done = time.monotonic()
                if good:
                    all_ok += 1
                else:
                    all_errors += 1
                if window.inside(done):
                    if good:
                        ok += 1
                        if len(latencies) < MAX_LATENCY_SAMPLES:
                            latencies.append(done - start)
                    else:
                        errors += 1

        tasks = [asyncio.create_task(worker()) for _ in range(connections)]
        await _finish(tasks, window.end + timeout)

    latencies.sort()
    return {
        "mode": "send" if text == "hello" else "task",
        "loadgen": "python",
        "connections": connections,
        "duration_s": duration,
        "requests": ok,
        "errors": errors,
        "requests_per_s": ok / duration,
        "latency_ms_p50": _ms(_percentile(latencies, 0.50)),
        "latency_ms_p99": _ms(_percentile(latencies, 0.99)),
        "total_requests_incl_warmup": all_ok,
        "total_errors_incl_warmup": all_errors,
        "first_error": first_error,
    }


async def run_sse(url: str, streams: int, chunks: int, warmup: float, duration: float, timeout: float) -> dict:
    window = Window(warmup, duration)
    prefix = uuid.uuid4().hex[:12].encode()
    counter = iter(range(1, MAX_REQUESTS + 1))
    events = 0
    all_events = 0
    completed = 0
    errors = 0
    stream_seconds: list[float] = []
    events_per_stream: list[int] = []
    first_error: str | None = None
    connector = aiohttp.TCPConnector(limit=streams)
    # No total timeout (a long stream is fine); a stall between reads is not.
    client_timeout = aiohttp.ClientTimeout(total=None, sock_read=timeout)

    async with aiohttp.ClientSession(
        connector=connector, timeout=client_timeout, skip_auto_headers=["User-Agent"]
    ) as s:

        async def worker() -> None:
            nonlocal events, all_events, completed, errors, first_error
            for n in counter:
                start = time.monotonic()
                if start >= window.end:
                    return
                body = _body("SendStreamingMessage", f"stream:{chunks}", prefix, n)
                seen = 0
                carry = b""
                tail = b""
                try:
                    async with s.post(url, data=body, headers=HEADERS) as resp:
                        if resp.status != 200 or not resp.headers.get("Content-Type", "").startswith(
                            "text/event-stream"
                        ):
                            raise RuntimeError(f"HTTP {resp.status}: {(await resp.read())[:200]!r}")
                        async for chunk in resp.content.iter_any():
                            # Count "data:" fields; keep 4 bytes so a field split across reads counts once.
                            buf = carry + chunk
                            found = buf.count(b"data:")
                            carry = buf[-4:]
                            tail = buf[-400:]
                            seen += found
                            all_events += found
                            if window.inside(time.monotonic()):
                                events += found
                    if b"TASK_STATE_COMPLETED" in tail:
                        completed += 1
                        stream_seconds.append(time.monotonic() - start)
                        events_per_stream.append(seen)
                    else:
                        raise RuntimeError(f"stream ended without COMPLETED after {seen} events: {tail[-200:]!r}")
                except (TimeoutError, aiohttp.ClientError, RuntimeError) as exc:
                    errors += 1
                    if first_error is None:
                        first_error = repr(exc)
                    await asyncio.sleep(0.05)  # do not spin on a failing server

        tasks = [asyncio.create_task(worker()) for _ in range(streams)]
        # Streams still open at the deadline are cut: only events inside the window count anyway.
        await _finish(tasks, window.end)

    stream_seconds.sort()
    return {
        "mode": "sse",
        "loadgen": "python",
        "streams": streams,
        "chunks": chunks,
        "duration_s": duration,
        "events": events,
        "events_per_s": events / duration,
        "streams_completed": completed,
        "stream_errors": errors,
        "events_per_stream": events_per_stream[0] if events_per_stream else None,
        "stream_seconds_p50": _percentile(stream_seconds, 0.5),
        "total_events_incl_warmup": all_events,
        "first_error": first_error,
    }


#: Streams being opened at once in ``hold`` mode: more would overflow the server's listen backlog
#: and pay SYN retries (seconds), which says nothing about memory.
HOLD_OPENING = 64


async def run_hold(url: str, timeout: float) -> None:
    """Open SSE streams that stay open, on command, for stream_memory.py (which reads the
    server's memory in between). One command per line on stdin, one JSON line answered for each:

    - ``warm K S``: K concurrent ``hold:S`` streams, each read to its end (a warm-up);
    - ``open K S``: K more ``hold:S`` streams, answered once each has received its first event
      (or failed); they stay open, still read, until ``close``;
    - ``subscribe K S``: one ``hold:S`` stream (its task), then K ``SubscribeToTask`` streams of
      that task, answered once each has received its first event; they stay open like ``open``;
    - ``close``: close every open stream, answer, and exit.
    """
    prefix = uuid.uuid4().hex[:12].encode()
    counter = iter(range(1, MAX_REQUESTS + 1))
    loop = asyncio.get_running_loop()
    held: list[asyncio.Task[None]] = []
    tally = {"open": 0, "first_events": 0, "ended_early": 0, "errors": 0}
    first_error: list[str] = []
    # A held stream may be silent for a long time (the SDK sends no heartbeat): no read timeout.
    client_timeout = aiohttp.ClientTimeout(total=None, sock_connect=timeout, sock_read=None)
    opening = asyncio.Semaphore(HOLD_OPENING)

    async def stream(
        seconds: float, first: asyncio.Future[bytes | None], to_end: bool, task_id: str | None = None
    ) -> None:
        if task_id is None:
            body = _body("SendStreamingMessage", f"hold:{seconds:g}", prefix, next(counter))
        else:
            body = b'{"jsonrpc":"2.0","id":%d,"method":"SubscribeToTask","params":{"id":"%s"}}' % (
                next(counter),
                task_id.encode(),
            )
        is_open = False
        try:
            async with opening:
                resp = await s.post(url, data=body, headers=HEADERS)
            async with resp:
                if resp.status != 200 or not resp.headers.get("Content-Type", "").startswith("text/event-stream"):
                    raise RuntimeError(f"HTTP {resp.status}: {(await resp.read())[:200]!r}")
                buf = b""
                while not _event_complete(buf):
                    chunk = await asyncio.wait_for(resp.content.readany(), timeout)
                    if not chunk:
                        raise RuntimeError(f"stream ended before its first event: {buf[-200:]!r}")
                    buf += chunk
                is_open = not to_end
                tally["open"] += is_open
                first.set_result(buf)
                async for _chunk in resp.content.iter_any():
                    pass
            tally["ended_early"] += not to_end
        except (TimeoutError, aiohttp.ClientError, RuntimeError) as exc:
            tally["errors"] += 1
            if not first_error:
                first_error.append(repr(exc))
        finally:
            tally["open"] -= is_open
            if not first.done():
                first.set_result(None)

    async def start(
        count: int, seconds: float, to_end: bool, task_id: str | None = None
    ) -> tuple[list[asyncio.Task[None]], list[bytes | None]]:
        firsts: list[asyncio.Future[bytes | None]] = [loop.create_future() for _ in range(count)]
        tasks = [asyncio.create_task(stream(seconds, f, to_end, task_id)) for f in firsts]
        return tasks, list(await asyncio.gather(*firsts))

    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0), timeout=client_timeout, skip_auto_headers=["User-Agent"]
    ) as s:
        while True:
            line = (await loop.run_in_executor(None, sys.stdin.readline)).split()
            started = time.monotonic()
            if not line or line[0] == "close":
                for task in held:
                    task.cancel()
                await asyncio.gather(*held, return_exceptions=True)
                print(json.dumps({"closed": len(held), **tally, "first_error": first_error[:1]}), flush=True)
                return
            count, seconds = int(line[1]), float(line[2])
            if line[0] == "warm":
                tasks, got = await start(count, seconds, True)
                await asyncio.gather(*tasks)
                answer: dict[str, object] = {"warmed": sum(g is not None for g in got)}
            else:
                task_id = None
                if line[0] == "subscribe":
                    # The task the subscribers follow: itself held open by one stream.
                    task_stream, got = await start(1, seconds, False)
                    held += task_stream
                    tally["first_events"] += got[0] is not None
                    task_id = _task_id(got[0])
                tasks, got = await start(count, seconds, False, task_id)
                held += tasks
                opened = sum(g is not None for g in got)
                tally["first_events"] += opened
                answer = {"opened": opened, "task_id": task_id}
            answer.update(tally, seconds=round(time.monotonic() - started, 3), first_error=first_error[:1])
            print(json.dumps(answer), flush=True)


def _event_complete(buf: bytes) -> bool:
    """Whether ``buf`` holds a whole first event (a ``data:`` field and the blank line after)."""
    at = buf.find(b"data:")
    return at >= 0 and (b"\n\n" in buf[at:] or b"\r\n\r\n" in buf[at:])


def _task_id(first: bytes | None) -> str:
    """The task id in a stream's first event (a task, or a status update)."""
    if first is None:
        raise SystemExit("hold: the task stream got no first event")
    data = first.replace(b"\r\n", b"\n").split(b"data:", 1)[1].split(b"\n", 1)[0]
    result = json.loads(data)["result"]
    return str(result["task"]["id"] if "task" in result else result["statusUpdate"]["taskId"])


async def _finish(tasks: list[asyncio.Task], deadline: float) -> None:
    """Wait for the workers until ``deadline``, then cancel whatever is left."""
    await asyncio.wait(tasks, timeout=max(0.0, deadline - time.monotonic()))
    for task in tasks:
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait(tasks, timeout=5.0)


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["send", "task", "sse", "hold"])
    parser.add_argument("--url", required=True)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--streams", type=int, default=4)
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--timeout", type=float, default=30.0, help="per request (send) or per read (sse)")
    parser.add_argument("--message-ids", choices=["uuid", "counter"], default="uuid", help="send and task modes")
    args = parser.parse_args()
    if not args.url.startswith(("http://127.0.0.1", "http://localhost", "http://[::1]")):
        sys.exit("loadgen: refusing a non-loopback URL")
    if args.mode == "hold":
        try:
            import uvloop

            uvloop.run(run_hold(args.url, args.timeout))
        except ImportError:
            asyncio.run(run_hold(args.url, args.timeout))
        return
    if args.mode in ("send", "task"):
        text = "hello" if args.mode == "send" else TASK_TEXT
        coro = run_send(args.url, args.connections, args.warmup, args.duration, args.timeout, text, args.message_ids)
    else:
        coro = run_sse(args.url, args.streams, args.chunks, args.warmup, args.duration, args.timeout)
    try:
        import uvloop

        result = uvloop.run(coro)
        result["client_loop"] = "uvloop"
    except ImportError:
        result = asyncio.run(coro)
        result["client_loop"] = "asyncio"
    result["cpu_affinity"] = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
