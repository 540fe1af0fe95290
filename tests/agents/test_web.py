"""The web agent through the A2A server over HTTP (both bindings), against loopback servers only.

Pages come from a local aiohttp site (reached only when ``A2A_WEB_ALLOW`` admits loopback);
Tavily and Firecrawl are fakes on loopback (``A2A_TAVILY_URL``, ``A2A_FIRECRAWL_URL``). No
real DNS lookup is made (``no_real_dns``), and nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from ipaddress import ip_address
from typing import Any

import pytest
from aiohttp import web

from a2a import A2AClient, A2AServer, RetryPolicy, ServerConfig
from a2a.types import Message, Part, Task, TaskState
from agents import web as web_agent
from agents._tools import ToolCall
from agents.web import MISSING_FIRECRAWL, MISSING_TAVILY, html_to_markdown, make_agent

ENV = [
    "A2A_MODEL",
    "A2A_MODEL_BASE_URL",
    "A2A_MODEL_API_KEY",
    "OPENAI_API_KEY",
    "A2A_WEB_ALLOW",
    "A2A_WEB_MAX_BYTES",
    "A2A_WEB_TIMEOUT",
    "TAVILY_API_KEY",
    "A2A_TAVILY_URL",
    "FIRECRAWL_API_KEY",
    "A2A_FIRECRAWL_URL",
]

ARTICLE = """<!doctype html>
<html><head><title>Test Article</title><script>var tracking = 1;</script></head>
<body>
<header><nav><a href="/">Home</a> <a href="/about">About</a></nav><p>Site banner</p></header>
<main>
  <article>
    <header><h1>The Article Title</h1></header>
    <p>First paragraph with <strong>bold</strong> text and <a href="/next">a relative link</a>.</p>
    <h2>Section</h2>
    <ul><li>alpha</li><li>beta</li></ul>
  </article>
</main>
<aside>Advertisement</aside>
<footer>Copyright footer</footer>
</body></html>
"""


@pytest.fixture(autouse=True)
def no_real_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.getaddrinfo

    def only_literals(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None:
            name = host.decode() if isinstance(host, bytes) else str(host)
            try:
                ip_address(name.split("%", 1)[0])
            except ValueError:
                raise AssertionError(f"the test tried a real DNS lookup of {name!r}") from None
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", only_literals)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


@dataclass
class Site:
    url: str
    hits: list[str] = field(default_factory=list)
    posts: list[dict[str, Any]] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)


async def _serve(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


@pytest.fixture
async def pages() -> AsyncIterator[Site]:
    """Local pages: an article, redirects (to allowed and to forbidden places), a big page."""
    site = Site(url="")

    def route(handler: Any) -> Any:
        async def counted(request: web.Request) -> web.StreamResponse:
            site.hits.append(request.path)
            result: web.StreamResponse = await handler(request)
            return result

        return counted

    async def article(request: web.Request) -> web.Response:
        return web.Response(text=ARTICLE, content_type="text/html", charset="utf-8")

    async def to_metadata(request: web.Request) -> web.Response:
        raise web.HTTPFound("http://169.254.169.254/latest/meta-data/")

    async def to_loopback_v6(request: web.Request) -> web.Response:
        raise web.HTTPFound("http://[::1]:9/")

    async def to_article(request: web.Request) -> web.Response:
        raise web.HTTPFound("/article")

    async def loop(request: web.Request) -> web.Response:
        raise web.HTTPFound("/loop")

    async def big(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain; charset=utf-8"})
        await response.prepare(request)
        line = b"0123456789abcdef" * 4 + b"\n"
        for _ in range(16):  # 16 x 64 KiB = 1 MiB
            await response.write(line * 1024)
        await response.write_eof()
        return response

    async def image(request: web.Request) -> web.Response:
        return web.Response(body=b"\x89PNG\r\n\x1a\n", content_type="image/png")

    async def missing(request: web.Request) -> web.Response:
        raise web.HTTPNotFound()

    async def stall(request: web.Request) -> web.Response:
        await site.release.wait()  # released at teardown; the agent's time limit fires first
        return web.Response(text="late")

    app = web.Application()
    for path, handler in {
        "/article": article,
        "/to-metadata": to_metadata,
        "/to-loopback-v6": to_loopback_v6,
        "/to-article": to_article,
        "/loop": loop,
        "/big": big,
        "/image": image,
        "/missing": missing,
        "/stall": stall,
    }.items():
        app.router.add_get(path, route(handler))
    runner, site.url = await _serve(app)
    try:
        yield site
    finally:
        site.release.set()
        await runner.cleanup()


@pytest.fixture
async def services() -> AsyncIterator[Site]:
    """Fake Tavily (POST /search) and Firecrawl (POST /v2/scrape) on one loopback port."""
    site = Site(url="")

    async def search(request: web.Request) -> web.Response:
        body = await request.json()
        site.posts.append({"path": request.path, "auth": request.headers.get("Authorization"), "body": body})
        if request.headers.get("Authorization") != "Bearer tvly-test":
            return web.json_response({"detail": {"error": "Unauthorized"}}, status=401)
        return web.json_response(
            {
                "query": body["query"],
                "answer": None,
                "results": [
                    {"title": "A2A Protocol", "url": "https://a2a.example/", "content": "Agents talk.", "score": 0.9},
                    {"title": "Second", "url": "https://second.example/", "content": "More.", "score": 0.5},
                ][: body.get("max_results", 5)],
            }
        )

    async def scrape(request: web.Request) -> web.Response:
        body = await request.json()
        site.posts.append({"path": request.path, "auth": request.headers.get("Authorization"), "body": body})
        return web.json_response(
            {
                "success": True,
                "data": {
                    "markdown": f"# Scraped\n\nContent of {body['url']}",
                    "metadata": {"title": "Scraped Page", "sourceURL": body["url"], "statusCode": 200},
                },
            }
        )

    app = web.Application()
    app.router.add_post("/search", search)
    app.router.add_post("/v2/scrape", scrape)
    runner, site.url = await _serve(app)
    try:
        yield site
    finally:
        await runner.cleanup()


@pytest.fixture
async def client(binding: str) -> AsyncIterator[A2AClient]:
    async with A2AServer(web_agent.agent, config=ServerConfig(port=0)) as server:
        assert server.url is not None
        async with A2AClient(server.url, binding=binding, retry=RetryPolicy.none(), timeout=30) as c:
            yield c


def call(tool: str, **arguments: Any) -> list[Part]:
    return [Part(data={"tool": tool, "arguments": arguments})]


async def run(client: A2AClient, content: str | Message | list[Part]) -> Task:
    result = await client.send(content)
    assert isinstance(result, Task), result
    return result


def status_text(task: Task) -> str:
    message = task.status.message
    assert isinstance(message, Message)
    return message.text


def only_artifact_text(task: Task) -> tuple[str, dict[str, Any]]:
    assert task.status.state == TaskState.COMPLETED, status_text(task)
    assert task.artifacts is not None and len(task.artifacts) == 1
    artifact = task.artifacts[0]
    part = artifact.parts[0]
    assert part.media_type == "text/markdown"
    assert isinstance(part.text, str)
    return part.text, artifact.metadata or {}


# ---- fetch -------------------------------------------------------------------------------


async def test_card_lists_the_tools(client: A2AClient) -> None:
    card = await client.get_card()
    assert [s.id for s in card.skills] == ["fetch", "search", "scrape"]
    assert all(s.description and "Arguments:" in s.description and s.examples for s in card.skills)
    assert "text/markdown" in card.default_output_modes


async def test_loopback_fetch_refused_without_allow_list(client: A2AClient, pages: Site) -> None:
    task = await run(client, call("fetch", url=pages.url + "/article"))
    assert task.status.state == TaskState.REJECTED
    text = status_text(task)
    assert text.startswith("fetch: refusing outbound request to 127.0.0.1")
    assert "127.0.0.0/8" in text and "loopback" in text and "allow-list" in text
    assert pages.hits == []


async def test_fetch_with_allow_list_returns_markdown(
    client: A2AClient, pages: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("A2A_WEB_ALLOW", "127.0.0.1/32")
    task = await run(client, call("fetch", url=pages.url + "/article"))
    text, metadata = only_artifact_text(task)
    assert text.startswith("# The Article Title")
    assert "**bold**" in text
    assert f"[a relative link]({pages.url}/next)" in text
    assert "- alpha\n- beta" in text
    for chrome in ("Home", "Site banner", "Advertisement", "Copyright", "tracking"):
        assert chrome not in text
    assert metadata["truncated"] is False
    assert metadata["status"] == 200
    assert metadata["finalUrl"] == pages.url + "/article"
    assert task.artifacts is not None and task.artifacts[0].name == "Test Article"


async def test_plain_text_url_is_fetched(client: A2AClient, pages: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2A_WEB_ALLOW", "127.0.0.1")
    text, _ = only_artifact_text(await run(client, f"  {pages.url}/article \n"))
    assert "The Article Title" in text


async def test_plain_text_that_is_not_a_url_fails_with_an_explanation(client: A2AClient) -> None:
    task = await run(client, "what is the weather in Paris?")
    assert task.status.state == TaskState.FAILED
    text = status_text(task)
    assert "No model is configured" in text
    assert '"tool": "fetch"' in text and "just a URL is fetched" in text


async def test_redirect_from_allowed_page_to_forbidden_address_refused(
    client: A2AClient, pages: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("A2A_WEB_ALLOW", "127.0.0.1/32")
    for path, forbidden in (("/to-metadata", "169.254.0.0/16"), ("/to-loopback-v6", "::1/128")):
        task = await run(client, call("fetch", url=pages.url + path))
        assert task.status.state == TaskState.FAILED
        text = status_text(task)
        assert forbidden in text and f"redirected from {pages.url}{path}" in text
    assert pages.hits == ["/to-metadata", "/to-loopback-v6"]


async def test_redirects_are_followed_and_reported(
    client: A2AClient, pages: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("A2A_WEB_ALLOW", "127.0.0.1/32")
    text, metadata = only_artifact_text(await run(client, call("fetch", url=pages.url + "/to-article")))
    assert "The Article Title" in text
    assert metadata["redirects"] == [pages.url + "/to-article"]
    assert metadata["finalUrl"] == pages.url + "/article"


async def test_redirect_loop_stops_at_five(client: A2AClient, pages: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2A_WEB_ALLOW", "127.0.0.1/32")
    task = await run(client, call("fetch", url=pages.url + "/loop"))
    assert task.status.state == TaskState.FAILED
    assert "more than 5 redirects" in status_text(task)
    assert len(pages.hits) == 6


async def test_oversize_page_is_cut_at_the_limit_and_marked(
    client: A2AClient, pages: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("A2A_WEB_ALLOW", "127.0.0.1/32")
    monkeypatch.setenv("A2A_WEB_MAX_BYTES", str(64 * 1024))
    text, metadata = only_artifact_text(await run(client, call("fetch", url=pages.url + "/big")))
    assert metadata["truncated"] is True
    assert metadata["bytes"] == 64 * 1024
    assert "Truncated" in text and str(64 * 1024) in text
    assert len(text) < 64 * 1024 + 500
    # a caller may ask for less than the agent's limit, never for more
    text, metadata = only_artifact_text(await run(client, call("fetch", url=pages.url + "/big", max_bytes=1000)))
    assert metadata["bytes"] == 1000 and metadata["truncated"] is True
    _, metadata = only_artifact_text(await run(client, call("fetch", url=pages.url + "/big", max_bytes=10**9)))
    assert metadata["limitBytes"] == 64 * 1024 and metadata["bytes"] == 64 * 1024


async def test_default_limit_is_two_mebibytes() -> None:
    settings = web_agent.WebSettings.from_env({})
    assert settings.max_bytes == 2 * 1024 * 1024
    assert settings.policy.allow_networks == () and settings.policy.allow_hosts == frozenset()


async def test_time_limit(client: A2AClient, pages: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2A_WEB_ALLOW", "127.0.0.1/32")
    monkeypatch.setenv("A2A_WEB_TIMEOUT", "0.5")
    task = await run(client, call("fetch", url=pages.url + "/stall"))
    assert task.status.state == TaskState.FAILED
    assert "timed out" in status_text(task) or "longer than 0.5s" in status_text(task)


@pytest.mark.parametrize(("path", "expected"), [("/image", "image/png"), ("/missing", "HTTP 404")])
async def test_unusable_responses_fail_clearly(
    client: A2AClient, pages: Site, monkeypatch: pytest.MonkeyPatch, path: str, expected: str
) -> None:
    monkeypatch.setenv("A2A_WEB_ALLOW", "127.0.0.1/32")
    task = await run(client, call("fetch", url=pages.url + path))
    assert task.status.state == TaskState.FAILED
    assert expected in status_text(task)


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        (call("fetch"), "'url' is required"),
        (call("browse", url="http://x"), "unknown tool 'browse'"),
        (call("fetch", url="ftp://127.0.0.1/"), "scheme must be http or https"),
        (call("fetch", url="http://user:secret@127.0.0.1/"), "credentials in the URL"),
        (call("fetch", url="http://0x7f.1/"), "127.0.0.0/8"),
        (call("search", query="x", max_results=99), "max_results"),
        ([Part(data={"tool": "fetch", "arguments": "http://x"})], "'arguments' must be a JSON object"),
    ],
)
async def test_bad_structured_input_is_rejected_clearly(client: A2AClient, parts: list[Part], expected: str) -> None:
    task = await run(client, parts)
    assert task.status.state == TaskState.REJECTED
    assert expected in status_text(task)
    assert "secret" not in status_text(task)


async def test_bad_allow_list_is_reported(client: A2AClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("A2A_WEB_ALLOW", "10.0.0.0/8, not a host")
    task = await run(client, call("fetch", url="http://10.0.0.1/"))
    assert task.status.state == TaskState.FAILED
    assert "A2A_WEB_ALLOW" in status_text(task) and "not a host" in status_text(task)


# ---- search and scrape -------------------------------------------------------------------


async def test_search_through_tavily(client: A2AClient, services: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
    monkeypatch.setenv("A2A_TAVILY_URL", services.url)
    task = await run(client, call("search", query="A2A protocol", max_results=2))
    assert task.status.state == TaskState.COMPLETED
    assert task.artifacts is not None
    data_part, text_part = task.artifacts[0].parts
    assert data_part.data["query"] == "A2A protocol"
    assert [r["url"] for r in data_part.data["results"]] == ["https://a2a.example/", "https://second.example/"]
    assert text_part.media_type == "text/markdown"
    assert isinstance(text_part.text, str) and "[A2A Protocol](https://a2a.example/)" in text_part.text
    assert services.posts[0]["auth"] == "Bearer tvly-test"
    assert services.posts[0]["body"]["max_results"] == 2


async def test_search_with_a_rejected_key(client: A2AClient, services: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-wrong")
    monkeypatch.setenv("A2A_TAVILY_URL", services.url)
    task = await run(client, call("search", query="x"))
    assert task.status.state == TaskState.FAILED
    assert "Tavily refused the API key (HTTP 401)" in status_text(task)
    assert "tvly-wrong" not in status_text(task)


async def test_scrape_through_firecrawl(client: A2AClient, services: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIRECRAWL_API_KEY", "fc-test")
    monkeypatch.setenv("A2A_FIRECRAWL_URL", services.url)
    url = "https://93.184.215.14/page"  # a public literal: checked by the guard, fetched only by the fake
    text, metadata = only_artifact_text(await run(client, call("scrape", url=url)))
    assert text == f"# Scraped\n\nContent of {url}"
    assert metadata["title"] == "Scraped Page"
    assert services.posts == [
        {
            "path": "/v2/scrape",
            "auth": "Bearer fc-test",
            "body": {"url": url, "formats": ["markdown"], "onlyMainContent": True},
        }
    ]


async def test_scrape_of_a_private_target_refused_before_firecrawl(
    client: A2AClient, services: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FIRECRAWL_API_KEY", "fc-test")
    monkeypatch.setenv("A2A_FIRECRAWL_URL", services.url)
    task = await run(client, call("scrape", url="http://169.254.169.254/latest/meta-data/"))
    assert task.status.state == TaskState.REJECTED
    assert "169.254.0.0/16" in status_text(task)
    assert services.posts == []


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        (call("search", query="anything"), "search: " + MISSING_TAVILY),
        (call("scrape", url="https://93.184.215.14/"), "scrape: " + MISSING_FIRECRAWL),
    ],
)
async def test_missing_keys_give_a_clear_message(
    client: A2AClient, services: Site, monkeypatch: pytest.MonkeyPatch, parts: list[Part], expected: str
) -> None:
    monkeypatch.setenv("A2A_TAVILY_URL", services.url)
    monkeypatch.setenv("A2A_FIRECRAWL_URL", services.url)
    task = await run(client, parts)
    assert task.status.state == TaskState.FAILED
    assert status_text(task) == expected
    assert services.posts == []


# ---- the seam for natural language, and the converter on its own -------------------------


async def test_text_router_can_be_replaced(services: Site, monkeypatch: pytest.MonkeyPatch) -> None:
    """The seam for text: a router turns some texts into tool calls; the rest go to the model."""
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
    monkeypatch.setenv("A2A_TAVILY_URL", services.url)

    def route(text: str) -> ToolCall | None:
        return ToolCall("search", {"query": text[2:]}) if text.startswith("? ") else None

    custom = make_agent(route_text=route)
    async with A2AServer(custom, config=ServerConfig(port=0)) as server:
        assert server.url is not None
        async with A2AClient(server.url, retry=RetryPolicy.none(), timeout=30) as c:
            task = await run(c, "? agent protocols")
            assert task.status.state == TaskState.COMPLETED
            task = await run(c, "https://example.com")  # no longer routed: no model, so it fails
            assert task.status.state == TaskState.FAILED
    assert [p["body"]["query"] for p in services.posts] == ["agent protocols"]


async def test_settings_given_in_code(pages: Site) -> None:
    from a2a.ssrf import OutboundPolicy

    settings = web_agent.WebSettings(policy=OutboundPolicy.from_allow_list("127.0.0.1/32"), max_bytes=100)
    agent = make_agent(settings)
    result = await agent.call("fetch", {"url": pages.url + "/big"})
    assert result.outputs[0].metadata is not None and result.outputs[0].metadata["bytes"] == 100
    assert "cut at 100 bytes" in result.summary


def test_html_to_markdown_prefers_main_then_article_then_body() -> None:
    title, markdown = html_to_markdown(ARTICLE, base_url="http://site.test/dir/")
    assert title == "Test Article"
    assert markdown.startswith("# The Article Title")
    _, body_only = html_to_markdown("<html><body><nav>menu</nav><p>Just a body</p></body></html>")
    assert body_only == "Just a body"
    _, biggest = html_to_markdown(
        "<body><article><p>short</p></article><article><p>the longer one</p></article></body>"
    )
    assert biggest == "the longer one"
    _, plain = html_to_markdown(b"no markup at all")
    assert plain == "no markup at all"
    _, links = html_to_markdown('<main><a href="javascript:alert(1)">x</a><img src="data:image/png;base64,AA"></main>')
    assert "javascript" not in links and "data:" not in links
