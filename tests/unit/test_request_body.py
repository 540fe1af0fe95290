"""Reading a request body: whole (in one chunk or many), refused over the limit, and not kept
in the request afterwards (a request lives as long as its answer: a stream's whole life)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from aiohttp import ClientSession, web
from aiohttp.test_utils import TestServer

from a2a.errors import PayloadTooLargeError
from a2a.server.request_body import read_request_body

LIMIT = 1000


async def _serve(read_first: bool = False) -> tuple[TestServer, list[Any]]:
    seen: list[Any] = []

    async def handle(request: web.Request) -> web.Response:
        if read_first:  # what a middleware may do before the binding reads
            await request.read()
        try:
            body = await read_request_body(request, LIMIT)
        except PayloadTooLargeError as exc:
            seen.append(exc)
            return web.Response(status=413)
        seen.append((body, request._read_bytes))
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/", handle)
    server = TestServer(app)
    await server.start_server()
    return server, seen


async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def test_a_body_is_read_whole_and_not_kept_in_the_request() -> None:
    server, seen = await _serve()
    try:
        async with ClientSession() as session:
            await (await session.post(server.make_url("/"), data=b'{"a": 1}')).read()
            await (await session.post(server.make_url("/"), data=_chunks(b"x" * 300, b"y" * 300))).read()
    finally:
        await server.close()
    assert seen[0] == (b'{"a": 1}', None)
    assert seen[1] == (b"x" * 300 + b"y" * 300, None)


async def test_a_chunked_body_over_the_limit_is_refused() -> None:
    server, seen = await _serve()
    try:
        async with ClientSession() as session:
            response = await session.post(server.make_url("/"), data=_chunks(b"x" * 600, b"y" * 600))
            assert response.status == 413
    finally:
        await server.close()
    assert isinstance(seen[0], PayloadTooLargeError)


async def test_a_body_read_before_is_still_the_body() -> None:
    server, seen = await _serve(read_first=True)
    try:
        async with ClientSession() as session:
            await (await session.post(server.make_url("/"), data=b"hello")).read()
    finally:
        await server.close()
    assert seen[0] == (b"hello", b"hello")
