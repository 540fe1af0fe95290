"""A file an agent returns by URL is fetched by the supervisor (``supervisor.file_urls``) through
the SSRF guard, within a size bound, so the next agent gets it inline; a fetch refused or failed
leaves the URL and a note, and never fails the run."""

from __future__ import annotations

import asyncio
import base64
import sys
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

from a2a import Agent, RequestContext
from a2a.types import Part
from agents import code
from supervisor import RunResult, Supervisor
from supervisor.config import FileUrlsConfig, SupervisorSettings
from supervisor.file_urls import UrlFetcher
from supervisor.workspace import FETCH_NOTE, FETCHED_FROM, listing
from tests.fakes import FakeOpenAI, ToolCalls, call
from tests.supervisor.agents import WAIT
from tests.supervisor.test_model import model_settings
from tests.supervisor.test_shared_files import SCRIPT, spy_messages, system_prompt

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the code agent needs POSIX process groups")

BIG = 5000


@dataclass
class FileServer:
    url: str
    hits: Counter[str] = field(default_factory=Counter)


@pytest.fixture
async def server() -> AsyncIterator[FileServer]:
    served = FileServer("")
    bodies = {"/primes.py": SCRIPT.encode(), "/big.bin": b"x" * BIG}

    async def handle(request: web.Request) -> web.Response:
        served.hits[request.path] += 1
        if request.path == "/slow.txt":
            await asyncio.sleep(2.0)  # far past the 0.3 s the test allows
        if request.path == "/moved.txt":  # to the same server by its address, not its name
            raise web.HTTPFound(f"http://127.0.0.1:{request.url.port}/primes.py")
        if request.path not in bodies:
            return web.Response(status=404)
        return web.Response(body=bodies[request.path], content_type="application/octet-stream")

    app = web.Application()
    app.router.add_get("/{name}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    served.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield served
    finally:
        await runner.cleanup()


def maker(url: str, filename: str, media_type: str = "text/x-python") -> Agent:
    """An agent that answers with a file given by URL only."""
    agent = Agent("Maker", "Makes files and returns them by URL")

    @agent.skill("make", tags=["make", "file"], description="Makes a file, returned by URL")
    async def make(ctx: RequestContext) -> None:
        await ctx.artifact([Part(url=url, filename=filename, media_type=media_type)], name=f"file:{filename}")
        await ctx.complete()

    return agent


def delegate(agent: str, skill: str, task: str, **extra: Any) -> Any:
    return call("delegate", agent=agent, skill=skill, task=task, description=task, **extra)


async def run(agent: Agent, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, **options: Any) -> RunResult:
    sup = Supervisor(
        [agent, code.make_agent()],
        mode="conversational",
        model=model_settings(fake, monkeypatch, max_retries=0),
        checkpoint={"backend": "memory"},
        **options,
    )
    return await asyncio.wait_for(sup.run("Make primes.py, then run it"), WAIT)


def made_part(result: RunResult) -> dict[str, Any]:
    record = next(d for d in result.delegations if d.agent == "Maker")
    part: dict[str, Any] = record.artifacts[0]["parts"][0]
    return part


def make_then_run(bodies: list[dict[str, Any]]) -> list[Any]:
    def run_it(body: dict[str, Any]) -> Any:
        bodies.append(body)
        return ToolCalls(delegate("Code", "run_python", "run primes.py", arguments={"file": "primes.py"}))

    return [
        ToolCalls(delegate("Maker", "make", "make primes.py")),
        run_it,
        ToolCalls(call("finish", answer="done")),
    ]


async def test_a_file_given_by_url_is_fetched_and_sent_inline(
    server: FileServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = spy_messages(monkeypatch)
    bodies: list[dict[str, Any]] = []
    url = f"{server.url}/primes.py"
    async with FakeOpenAI(make_then_run(bodies)) as fake:
        result = await run(maker(url, "primes.py"), fake, monkeypatch, file_urls={"allow": ["127.0.0.1/32"]})
    assert result.status == "completed", result.final
    assert server.hits["/primes.py"] == 1
    part = made_part(result)
    assert base64.b64decode(part["raw"]) == SCRIPT.encode() and "url" not in part
    assert part["metadata"] == {FETCHED_FROM: url} and part["mediaType"] == "text/x-python"
    # The model saw it as a file of the run, with its size; the code agent got the bytes and ran them.
    assert f"- primes.py (text/x-python, {len(SCRIPT)} bytes; from item c1)" in system_prompt(bodies[0])
    to_code = [p for m in sent for p in m.parts if p.filename == "primes.py"]
    assert [p.raw for p in to_code] == [SCRIPT.encode()]
    assert "primes: [2, 3, 5, 7, 11, 13, 17, 19]" in (result.items[-1].result or "")


async def test_a_file_over_the_bound_is_not_fetched_and_noted(
    server: FileServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = spy_messages(monkeypatch)
    bodies: list[dict[str, Any]] = []
    script = [
        ToolCalls(delegate("Maker", "make", "make big.bin")),
        lambda body: (
            bodies.append(body)
            or ToolCalls(
                delegate("Code", "run_python", "use big.bin", arguments={"code": "print(1)"}, files=["big.bin"])
            )
        ),
        ToolCalls(call("finish", answer="done")),
    ]
    url = f"{server.url}/big.bin"
    async with FakeOpenAI(script) as fake:
        result = await run(
            maker(url, "big.bin", "application/octet-stream"),
            fake,
            monkeypatch,
            file_urls={"allow": ["127.0.0.1/32"], "max_bytes": 1000},
        )
    assert result.status == "completed", result.final  # the run goes on
    part = made_part(result)
    note = part["metadata"][FETCH_NOTE]
    assert part["url"] == url and "raw" not in part
    assert f"{url} announced a body of {BIG} bytes, over this client's limit of 1000 bytes" in note
    assert "(supervisor.file_urls.max_bytes)" in note
    assert f"- big.bin (application/octet-stream, by URL {url}, not fetched: {url} announced" in system_prompt(
        bodies[0]
    )
    # The next agent is sent the URL as it is, and its text says why it is not inline.
    to_code = next(m for m in sent if any(p.filename == "big.bin" for p in m.parts))
    assert [p.url for p in to_code.parts if p.filename] == [url]
    assert "Files sent by URL only, the supervisor could not fetch them: big.bin: " in (to_code.parts[0].text or "")


async def test_a_loopback_url_is_refused_without_an_allowance(
    server: FileServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = [ToolCalls(delegate("Maker", "make", "make primes.py")), ToolCalls(call("finish", answer="done"))]
    url = f"{server.url}/primes.py"
    async with FakeOpenAI(script) as fake:
        result = await run(maker(url, "primes.py"), fake, monkeypatch)
    assert result.status == "completed", result.final
    assert server.hits["/primes.py"] == 0  # no request went out
    part = made_part(result)
    note = part["metadata"][FETCH_NOTE]
    assert part["url"] == url
    assert note.startswith("refusing outbound request to 127.0.0.1") and "loopback" in note.lower()
    assert note.endswith("(supervisor.file_urls.allow)")


async def test_fetching_can_be_turned_off(server: FileServer, monkeypatch: pytest.MonkeyPatch) -> None:
    script = [ToolCalls(delegate("Maker", "make", "make primes.py")), ToolCalls(call("finish", answer="done"))]
    async with FakeOpenAI(script) as fake:
        result = await run(
            maker(f"{server.url}/primes.py", "primes.py"),
            fake,
            monkeypatch,
            file_urls={"fetch": False, "allow": ["127.0.0.1/32"]},
        )
    assert server.hits["/primes.py"] == 0 and "metadata" not in made_part(result)


def test_a_bad_allow_entry_is_a_config_error() -> None:
    with pytest.raises(ValueError, match="neither a network"):
        SupervisorSettings.model_validate({"file_urls": {"allow": ["not a network!"]}})


def test_the_listing_is_bounded_and_never_shows_content() -> None:
    files = {f"f{n}.txt": (f"c{n}", {"text": "secret " * n, "filename": f"f{n}.txt"}) for n in range(30)}
    text = listing(files)
    lines = text.splitlines()
    assert len(lines) == 21 and lines[0].startswith("- f29.txt (application/octet-stream, 203 bytes; from item c29)")
    assert lines[-1] == "(10 older file(s) not listed; they can still be named)"
    assert "secret" not in text


# ---- the fetcher alone: every failure is a note, none is raised, none hangs ----------------------


async def fetch_one(url: str, **config: Any) -> dict[str, Any]:
    fetcher = UrlFetcher.from_config(FileUrlsConfig.model_validate(config))
    assert fetcher is not None
    artifacts = [{"artifactId": "a", "parts": [{"url": url, "filename": "f.txt"}, {"text": "kept"}]}]
    fetched = await asyncio.wait_for(fetcher.inline(artifacts), WAIT)
    assert fetched[0]["parts"][1] == {"text": "kept"}
    part: dict[str, Any] = fetched[0]["parts"][0]
    return part


async def test_a_url_that_does_not_answer_in_time_is_noted(server: FileServer) -> None:
    part = await fetch_one(f"{server.url}/slow.txt", allow=["127.0.0.1/32"], timeout=0.3)
    assert part["metadata"][FETCH_NOTE] == (
        f"{server.url}/slow.txt did not answer in full within supervisor.file_urls.timeout (0.3s)"
    )


async def test_an_http_error_is_noted(server: FileServer) -> None:
    part = await fetch_one(f"{server.url}/missing.txt", allow=["127.0.0.1/32"])
    assert part["metadata"][FETCH_NOTE] == f"{server.url}/missing.txt answered HTTP 404 Not Found"


async def test_a_redirect_is_checked_again(server: FileServer) -> None:
    # "localhost" is admitted by its name; the redirect to 127.0.0.1 is not.
    url = f"{server.url.replace('127.0.0.1', 'localhost')}/moved.txt"
    part = await fetch_one(url, allow=["localhost"])
    assert server.hits["/moved.txt"] == 1 and server.hits["/primes.py"] == 0
    assert "refusing outbound request to 127.0.0.1 (redirected from" in part["metadata"][FETCH_NOTE]
    followed = await fetch_one(url, allow=["localhost", "127.0.0.1/32"])
    assert base64.b64decode(followed["raw"]) == SCRIPT.encode()
    assert followed["mediaType"] == "application/octet-stream"  # the server's type, none was given


async def test_the_bound_is_for_all_of_one_delegations_files(server: FileServer) -> None:
    fetcher = UrlFetcher.from_config(FileUrlsConfig(allow=["127.0.0.1/32"], max_bytes=100))
    assert fetcher is not None
    url = f"{server.url}/primes.py"
    artifacts = [{"artifactId": "a", "parts": [{"url": url, "filename": "one.py"}, {"url": url, "filename": "two.py"}]}]
    one, two = (await asyncio.wait_for(fetcher.inline(artifacts), WAIT))[0]["parts"]
    assert base64.b64decode(one["raw"]) == SCRIPT.encode()
    left = 100 - len(SCRIPT)
    assert two["url"] == url and two["metadata"][FETCH_NOTE] == (
        f"{url} announced a body of {len(SCRIPT)} bytes, over this client's limit of {left} bytes "
        "(supervisor.file_urls.max_bytes 100, less this delegation's other files)"
    )
