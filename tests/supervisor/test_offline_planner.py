"""The offline planner on five everyday objectives, against the built-in agents (files, web, code).

Each test checks the side effects (the files the files agent wrote, with their content) or the
precise report of what could not be done; none of them may claim a success it did not have.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from agents import code, files
from agents import web as web_agent
from supervisor import RunResult, Supervisor
from supervisor.offline import split_objective
from tests.supervisor.agents import WAIT, Probe, worker

PAGES = {
    "/one.html": "<html><body><main><h1>Apples</h1><p>Apples are red or green.</p></main></body></html>",
    "/two.html": "<html><body><main><h1>Pears</h1><p>Pears are yellow.</p></main></body></html>",
}


@dataclass
class Agents:
    workspace: Path
    site: str

    def supervisor(self) -> Supervisor:
        settings = web_agent.WebSettings.from_env({"A2A_WEB_ALLOW": "127.0.0.1/32"})
        return Supervisor(
            [files.make_agent(self.workspace), web_agent.make_agent(settings), code.make_agent()],
            checkpoint={"backend": "memory"},
        )


def sent(result: RunResult, item_id: str) -> Any:
    """The structured arguments the item's (first) delegation carried."""
    return next(d.arguments for d in result.delegations if d.item_id == item_id)


@pytest.fixture
async def agents(tmp_path: Path) -> AsyncIterator[Agents]:
    async def page(request: web.Request) -> web.Response:
        return web.Response(text=PAGES[request.path], content_type="text/html")

    app = web.Application()
    for path in PAGES:
        app.router.add_get(path, page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    try:
        yield Agents(workspace, f"http://127.0.0.1:{port}")
    finally:
        await runner.cleanup()


async def test_fetch_summarise_save_says_summarising_needs_a_model(agents: Agents) -> None:
    result = await asyncio.wait_for(
        agents.supervisor().run(f"Fetch {agents.site}/one.html, summarise it, then save the summary to summary.txt."),
        WAIT,
    )
    fetch, summarise, save = result.items
    assert (fetch.agent, fetch.skill, fetch.status) == ("Web", "fetch", "done")  # no trailing comma in the URL
    assert "Apples are red or green" in (fetch.result or "")
    assert summarise.status == "failed" and summarise.agent is None
    assert summarise.error is not None
    assert "no available agent offers a skill to summarise (this needs a model" in summarise.error
    assert save.status == "skipped" and "depends on item 2" in (save.error or "")
    assert result.status == "partial"
    assert "could not do this step: no available agent offers a skill to summarise" in result.final
    assert not (agents.workspace / "summary.txt").exists()


async def test_compute_with_code_then_save_writes_the_programs_output(agents: Agents) -> None:
    objective = "Compute 2**10 with Python: ```python\nx = 2 ** 10\nprint(x)\n```\nThen save the result to result.txt"
    result = await asyncio.wait_for(agents.supervisor().run(objective), WAIT)
    assert result.status == "completed", result.final
    compute, save = result.items
    assert (compute.agent, compute.skill) == ("Code", "run_python")
    assert sent(result, "1") == {"code": "x = 2 ** 10\nprint(x)"}  # the fenced block, whole
    assert (save.agent, save.skill, save.depends_on) == ("Files", "write", ["1"])
    assert (agents.workspace / "result.txt").read_text() == "1024\n"


async def test_edit_then_read_back_changes_the_file(agents: Agents) -> None:
    (agents.workspace / "settings.txt").write_text("name=x\nmode=dev\n")
    result = await asyncio.wait_for(
        agents.supervisor().run("In settings.txt change 'mode=dev' to 'mode=prod', then read settings.txt back"),
        WAIT,
    )
    assert result.status == "completed", result.final
    edit, read = result.items
    assert (edit.agent, edit.skill) == ("Files", "edit")
    assert sent(result, "1") == {"path": "settings.txt", "old_text": "mode=dev", "new_text": "mode=prod"}
    assert (read.agent, read.skill) == ("Files", "read")
    assert (agents.workspace / "settings.txt").read_text() == "name=x\nmode=prod\n"
    assert "mode=prod" in (read.result or "")


async def test_fetch_two_pages_and_compare_says_comparing_needs_a_model(agents: Agents) -> None:
    result = await asyncio.wait_for(
        agents.supervisor().run(f"Fetch {agents.site}/one.html and fetch {agents.site}/two.html, then compare them."),
        WAIT,
    )
    one, two, compare = result.items
    assert one.status == two.status == "done"
    assert "Apples" in (one.result or "") and "Pears" in (two.result or "")
    assert compare.status == "failed" and compare.depends_on == ["1", "2"]
    assert "no available agent offers a skill to compare" in (compare.error or "")
    assert result.status == "partial"


async def test_compute_two_values_and_save_both(agents: Agents) -> None:
    objective = "\n".join(
        [
            "Compute with Python: ```print(6 * 7)```",
            "Compute with Python: ```print(2 ** 5)```",
            "Save both results to values.txt",
        ]
    )
    result = await asyncio.wait_for(agents.supervisor().run(objective), WAIT)
    assert result.status == "completed", result.final
    assert [i.agent for i in result.items] == ["Code", "Code", "Files"]
    assert (agents.workspace / "values.txt").read_text() == "42\n32\n"


def test_urls_lose_the_punctuation_of_the_sentence() -> None:
    steps = split_objective("Fetch https://example.com/page.html, then fetch (https://example.com/a_(b)).")
    assert steps[0].text == "Fetch https://example.com/page.html"
    assert "https://example.com/a_(b)" in steps[1].text


def test_a_fenced_block_of_several_lines_stays_in_one_step() -> None:
    objective = "1. Run this with Python:\n```python\nfor i in range(3):\n    print(i)\n```\n2. then list the files"
    steps = split_objective(objective)
    assert [s.text for s in steps] == [
        "Run this with Python:\n```python\nfor i in range(3):\n    print(i)\n```",
        "list the files",
    ]


async def test_a_write_without_content_fails_honestly(agents: Agents) -> None:
    result = await asyncio.wait_for(agents.supervisor().run("Write a poem about the sea to sea.txt"), WAIT)
    (write,) = result.items
    assert (write.agent, write.skill, write.status) == ("Files", "write", "failed")
    assert result.status == "failed"
    assert not (agents.workspace / "sea.txt").exists()


async def test_a_search_without_its_key_fails_with_the_agents_reason(agents: Agents) -> None:
    result = await asyncio.wait_for(agents.supervisor().run("Search the web for the A2A protocol"), WAIT)
    (search,) = result.items
    assert (search.agent, search.skill, search.status) == ("Web", "search", "failed")
    assert "TAVILY_API_KEY" in (search.error or "")
    assert result.status == "failed"


async def test_write_a_program_then_run_it_across_the_files_and_code_agents(agents: Agents) -> None:
    script = "print('primes:', [n for n in range(2, 20) if all(n % d for d in range(2, n))])"
    objective = f"Write primes.py to the workspace: {script}\nRun primes.py with Python"
    result = await asyncio.wait_for(agents.supervisor().run(objective), WAIT)
    assert result.status == "completed", result.final
    write, run = result.items
    assert (write.agent, run.agent) == ("Files", "Code")
    assert run.depends_on == ["1"]  # it names the file the first step writes
    assert sent(result, "2") == {"file": "primes.py"}  # the file itself goes as a part of the message
    assert (agents.workspace / "primes.py").read_text() == script
    assert "primes: [2, 3, 5, 7, 11, 13, 17, 19]" in (run.result or "")


async def test_fetch_a_and_b_fetches_both(agents: Agents) -> None:
    """The fetch skill takes one URL: a step naming two is made two steps, not half done."""
    result = await asyncio.wait_for(
        agents.supervisor().run(f"Fetch {agents.site}/one.html and {agents.site}/two.html, then save them to both.txt"),
        WAIT,
    )
    assert result.status == "completed", result.final
    one, two, save = result.items
    assert sent(result, one.id) == {"url": f"{agents.site}/one.html"}
    assert sent(result, two.id) == {"url": f"{agents.site}/two.html"}
    assert "Apples" in (one.result or "") and "Pears" in (two.result or "")
    assert save.depends_on == [one.id, two.id]  # "them": the results of both fetches
    saved = (agents.workspace / "both.txt").read_text()
    assert "Apples" in saved and "Pears" in saved


async def test_every_missing_step_is_named_with_its_reason() -> None:
    """A run stopped by max_steps: the final answer names each step not done and why."""
    sup = Supervisor([worker("A"), worker("B", skill="paint", tags=("paint",))], offline=True, max_steps=1)
    result = await asyncio.wait_for(sup.run("work on x\nwork on y\ndance a waltz"), WAIT)
    assert result.status == "partial"
    assert "- 2. work on y (A): pending: not started before the run ended" in result.final
    assert "- 3. dance a waltz: failed: could not do this step: no available agent offers a skill to dance" in (
        result.final
    )


async def test_a_step_no_skill_matches_goes_to_the_only_agent() -> None:
    probe = Probe()
    sup = Supervisor([worker("Solo", probe, skill="work", tags=("work",))], offline=True)
    result = await asyncio.wait_for(sup.run("Dance a waltz"), WAIT)
    assert result.status == "completed", result.final
    assert probe.started == ["Dance a waltz"]
    assert result.items[0].agent == "Solo"
