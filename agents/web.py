"""The web agent: ``fetch`` a page as markdown, ``search`` (Tavily), ``scrape`` (Firecrawl).

Serve it with ``a2a serve agents.web:agent``; ``make_agent(settings)`` builds one in code. It is a
``ToolAgent`` (see ``agents._tools``): structured input is a data part
``{"tool": "fetch", "arguments": {"url": "https://example.com"}}``. A plain-text message goes
first to ``WebAgent.route_text``: by default a message that is a single URL is fetched; any other
text goes to the natural-language mode (a model, when one is configured; otherwise the task fails
with an explanation of both ways to use the agent).

Tools:

- ``fetch`` ``{"url", "max_bytes"?}``: the page's main content as markdown (``text/markdown``),
  through the SSRF guard of ``a2a.ssrf``: public addresses only unless allow-listed, redirects
  followed by hand (5 at most) and each hop re-checked, the body cut at the size limit (the
  result says so: a note in the text and ``truncated`` in the artifact's metadata), a time limit;
- ``search`` ``{"query", "max_results"=5}``: Tavily results as JSON data plus a markdown list;
- ``scrape`` ``{"url"}``: Firecrawl's markdown of the page (the URL passes the guard first).

Environment (read at each call, unless ``make_agent`` was given settings):

- ``A2A_WEB_ALLOW``: comma-separated CIDRs and host names the guard admits (default: none);
- ``A2A_WEB_MAX_BYTES`` (default 2 MiB), ``A2A_WEB_TIMEOUT`` seconds per call (default 30);
- ``TAVILY_API_KEY`` and ``A2A_TAVILY_URL`` (default ``https://api.tavily.com``);
- ``FIRECRAWL_API_KEY`` and ``A2A_FIRECRAWL_URL`` (default ``https://api.firecrawl.dev``).

Outcomes: a URL the guard refuses outright (scheme, credentials, a forbidden address) or a bad
argument ends the task REJECTED; a failure along the way (a redirect to a forbidden address, an
HTTP error, a time-out, a missing API key) ends it FAILED; the message says which and why.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
from bs4 import BeautifulSoup, Tag
from markdownify import MarkdownConverter
from pydantic import BaseModel, ConfigDict, Field

from a2a import RequestContext
from a2a.ssrf import (
    ForbiddenTargetError,
    GuardedClient,
    GuardError,
    InvalidTargetError,
    OutboundPolicy,
    Resolver,
    check_url,
    stream_following_redirects,
    system_resolver,
)
from a2a.types import UNSET, Part

from ._tools import ArgumentError, Output, Tool, ToolAgent, ToolCall, ToolError, ToolResult, human_size

__all__ = [
    "MISSING_FIRECRAWL",
    "MISSING_TAVILY",
    "FetchedPage",
    "TextRouter",
    "WebAgent",
    "WebSettings",
    "agent",
    "fetch_page",
    "firecrawl_scrape",
    "html_to_markdown",
    "make_agent",
    "make_tools",
    "read_limited",
    "single_url_call",
    "tavily_search",
]

DEFAULT_MAX_BYTES = 2 * 1024 * 1024
DEFAULT_TIMEOUT = 30.0
MAX_REDIRECTS = 5
#: Replies from Tavily and Firecrawl are read up to this size.
API_MAX_BYTES = 8 * 1024 * 1024
DEFAULT_TAVILY_URL = "https://api.tavily.com"
DEFAULT_FIRECRAWL_URL = "https://api.firecrawl.dev"
USER_AGENT = "a2a-net-web-agent/0.1"
MARKDOWN = "text/markdown"


# ---- settings ----------------------------------------------------------------------------


def _env_number(env: Mapping[str, str], name: str, default: float, kind: type[int] | type[float]) -> Any:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise ToolError(f"{name}={raw!r} is not a {kind.__name__}; fix the agent's environment") from None
    if value <= 0:
        raise ToolError(f"{name} must be positive, got {raw}")
    return value


@dataclass(frozen=True, slots=True)
class WebSettings:
    policy: OutboundPolicy = field(default_factory=OutboundPolicy)
    max_bytes: int = DEFAULT_MAX_BYTES
    timeout: float = DEFAULT_TIMEOUT
    max_redirects: int = MAX_REDIRECTS
    tavily_key: str | None = None
    tavily_url: str = DEFAULT_TAVILY_URL
    firecrawl_key: str | None = None
    firecrawl_url: str = DEFAULT_FIRECRAWL_URL

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, resolver: Resolver = system_resolver) -> WebSettings:
        env = os.environ if env is None else env
        try:
            policy = OutboundPolicy.from_allow_list(env.get("A2A_WEB_ALLOW"), resolver=resolver)
        except ValueError as exc:
            raise ToolError(f"A2A_WEB_ALLOW: {exc}") from exc
        return cls(
            policy=policy,
            max_bytes=_env_number(env, "A2A_WEB_MAX_BYTES", DEFAULT_MAX_BYTES, int),
            timeout=_env_number(env, "A2A_WEB_TIMEOUT", DEFAULT_TIMEOUT, float),
            tavily_key=env.get("TAVILY_API_KEY") or None,
            tavily_url=env.get("A2A_TAVILY_URL") or DEFAULT_TAVILY_URL,
            firecrawl_key=env.get("FIRECRAWL_API_KEY") or None,
            firecrawl_url=env.get("A2A_FIRECRAWL_URL") or DEFAULT_FIRECRAWL_URL,
        )


# ---- fetch -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FetchedPage:
    url: str
    final_url: str
    status: int
    content_type: str
    title: str | None
    markdown: str
    bytes_read: int
    truncated: bool
    limit: int
    redirects: list[str]

    def metadata(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "finalUrl": self.final_url,
            "status": self.status,
            "contentType": self.content_type,
            "bytes": self.bytes_read,
            "truncated": self.truncated,
            "limitBytes": self.limit,
            "redirects": self.redirects,
        }


async def read_limited(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """Read a streamed body up to ``limit`` bytes; ``True`` if there was more (and it was cut)."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        room = limit - len(body)
        if len(chunk) > room:
            body += chunk[:room]
            return bytes(body), True
        body += chunk
    return bytes(body), False


def _describe(exc: httpx.HTTPError) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


async def fetch_page(url: str, settings: WebSettings, *, max_bytes: int | None = None) -> FetchedPage:
    """Fetch ``url`` through the SSRF guard and convert it to markdown.

    Raises ``ToolError`` (HTTP errors, content it cannot convert) and the guard's ``GuardError``.
    """
    limit = settings.max_bytes if max_bytes is None else max(1, min(max_bytes, settings.max_bytes))
    headers = {
        "User-Agent": USER_AGENT,
        "Accept": "text/html,application/xhtml+xml,text/markdown,text/plain;q=0.9,*/*;q=0.5",
        # Compressed bodies would be inflated chunk by chunk past the limit before we could cut.
        "Accept-Encoding": "identity",
    }
    async with GuardedClient(settings.policy, timeout=settings.timeout, headers=headers) as client:
        try:
            async with stream_following_redirects(client, url, max_redirects=settings.max_redirects) as response:
                if response.status_code >= 400:
                    raise ToolError(f"{response.url} answered HTTP {response.status_code} {response.reason_phrase}")
                _check_convertible(response.headers.get("content-type", ""), str(response.url))
                body, truncated = await read_limited(response, limit)
        except httpx.HTTPError as exc:
            raise ToolError(f"could not fetch {url}: {_describe(exc)}") from exc
    content_type = response.headers.get("content-type", "")
    final_url = str(response.url)
    # Parsing up to max_bytes of HTML takes a while: off the event loop.
    title, markdown = await asyncio.to_thread(to_markdown, body, content_type, response.charset_encoding, final_url)
    return FetchedPage(
        url=url,
        final_url=final_url,
        status=response.status_code,
        content_type=content_type,
        title=title,
        markdown=markdown,
        bytes_read=len(body),
        truncated=truncated,
        limit=limit,
        redirects=[str(r.url) for r in response.history],
    )


def _decode(body: bytes, charset: str | None) -> str:
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:  # an unknown charset name in the header
        return body.decode("utf-8", errors="replace")


def _looks_like_html(body: bytes) -> bool:
    head = body[:1024].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html")) or b"<body" in head


def _media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def _is_json(media: str) -> bool:
    return media in ("application/json", "application/ld+json") or media.endswith("+json")


def _is_text(media: str) -> bool:
    return (
        media.startswith("text/") or media in ("", "application/xhtml+xml", "application/xml") or media.endswith("+xml")
    )


def _check_convertible(content_type: str, url: str) -> None:
    """Refuse (before reading the body) content that fetch cannot turn into markdown."""
    media = _media_type(content_type)
    if not (_is_text(media) or _is_json(media)):
        raise ToolError(f"{url} is {media}, which fetch does not convert; it handles HTML, text and JSON pages")


def to_markdown(body: bytes, content_type: str, charset: str | None, base_url: str) -> tuple[str | None, str]:
    """``(title, markdown)`` for a fetched body; raises ``ToolError`` for content it cannot convert."""
    _check_convertible(content_type, base_url)
    media = _media_type(content_type)
    if media in ("text/html", "application/xhtml+xml") or (media == "" and _looks_like_html(body)):
        return html_to_markdown(body, base_url=base_url, encoding=charset)
    if _is_json(media):
        return None, f"```json\n{_decode(body, charset)}\n```"
    return None, _decode(body, charset)


# Page chrome and things that are not content. header/footer go only when they belong to the
# page, not to an article or section (an article's header holds its title).
_NOISE_TAGS = [
    "script", "style", "noscript", "template", "iframe", "svg", "canvas", "nav", "aside",
    "form", "button", "dialog", "object", "embed",
]  # fmt: skip
_NOISE_ROLES = re.compile(r"^(navigation|banner|contentinfo|complementary|search|dialog)$", re.I)


def _remove_noise(soup: BeautifulSoup) -> None:
    for tag in soup.find_all(_NOISE_TAGS):
        tag.decompose()
    for tag in soup.find_all(["header", "footer"]):
        if tag.find_parent(["article", "main", "section"]) is None:
            tag.decompose()
    for tag in soup.find_all(True, attrs={"role": _NOISE_ROLES}):
        tag.decompose()
    for tag in soup.find_all(True, attrs={"aria-hidden": "true"}):
        tag.decompose()
    for tag in soup.find_all(hidden=True):
        tag.decompose()


def _main_content(soup: BeautifulSoup) -> Tag | BeautifulSoup:
    for candidate in (soup.find("main"), soup.find(True, attrs={"role": "main"})):
        if isinstance(candidate, Tag):
            return candidate
    articles = [a for a in soup.find_all("article") if isinstance(a, Tag)]
    if articles:
        return max(articles, key=lambda a: len(a.get_text(strip=True)))
    return soup.body if isinstance(soup.body, Tag) else soup


def _clean_links(root: Tag | BeautifulSoup, base_url: str) -> None:
    """Drop script and data URLs; make the other links absolute (when the page's URL is known)."""
    base = httpx.URL(base_url) if base_url else None
    for tag in root.find_all(["a", "img"]):
        attribute = "href" if tag.name == "a" else "src"
        value = tag.get(attribute)
        if not isinstance(value, str):
            continue
        if value.strip().lower().startswith(("javascript:", "data:", "vbscript:")):
            if tag.name == "img":
                tag.decompose()
            else:
                del tag[attribute]
            continue
        if base is None:
            continue
        try:
            tag[attribute] = str(base.join(value))
        except (httpx.InvalidURL, ValueError):
            del tag[attribute]


_CONVERTER = MarkdownConverter(heading_style="ATX", bullets="-")


def html_to_markdown(html: bytes | str, *, base_url: str = "", encoding: str | None = None) -> tuple[str | None, str]:
    """``(title, markdown)`` of a page's main content: ``<main>``, else the largest ``<article>``,
    else ``<body>``; navigation, scripts and page header/footer are dropped, links made absolute."""
    if ("<" not in html) if isinstance(html, str) else (b"<" not in html):
        return None, _decode(html, encoding) if isinstance(html, bytes) else html  # no markup at all
    if isinstance(html, bytes):
        soup = BeautifulSoup(html, "html.parser", from_encoding=encoding)
    else:
        soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else None
    _remove_noise(soup)
    root = _main_content(soup)
    _clean_links(root, base_url)
    markdown = _CONVERTER.convert_soup(root)
    markdown = re.sub(r"\n{3,}", "\n\n", markdown).strip()
    if title and not re.match(r"#\s", markdown):
        markdown = f"# {title}\n\n{markdown}" if markdown else f"# {title}"
    return title or None, markdown


# ---- search and scrape (hosted services) -------------------------------------------------

MISSING_TAVILY = (
    "needs a Tavily API key; set TAVILY_API_KEY in the web agent's environment "
    "(keys at https://tavily.com). fetch works without one."
)
MISSING_FIRECRAWL = (
    "needs a Firecrawl API key; set FIRECRAWL_API_KEY in the web agent's environment "
    "(keys at https://firecrawl.dev). fetch works without one."
)


async def _post_json(service: str, url: str, key: str, payload: dict[str, Any], timeout: float) -> Any:
    """POST to a configured service (a trusted endpoint, not a caller's URL) and decode its JSON."""
    headers = {"Authorization": f"Bearer {key}", "User-Agent": USER_AGENT}
    try:
        async with (
            httpx.AsyncClient(timeout=timeout, follow_redirects=False) as client,
            client.stream("POST", url, json=payload, headers=headers) as response,
        ):
            body, truncated = await read_limited(response, API_MAX_BYTES)
    except httpx.HTTPError as exc:
        raise ToolError(f"{service} at {url} could not be reached: {_describe(exc)}") from exc
    if response.status_code in (401, 403):
        raise ToolError(f"{service} refused the API key (HTTP {response.status_code}); check the key")
    if response.status_code >= 400:
        detail = body[:300].decode("utf-8", errors="replace")
        raise ToolError(f"{service} answered HTTP {response.status_code}: {detail}")
    if truncated:
        raise ToolError(f"{service}'s reply is larger than {API_MAX_BYTES} bytes; not read")
    try:
        return json.loads(body)
    except ValueError as exc:
        raise ToolError(f"{service} answered with something that is not JSON") from exc


async def tavily_search(query: str, settings: WebSettings, *, max_results: int = 5) -> dict[str, Any]:
    """``{"query", "answer", "results": [{"title", "url", "content", "score"}]}`` from Tavily."""
    if not settings.tavily_key:
        raise ToolError(MISSING_TAVILY)
    payload = {"query": query, "max_results": max_results, "search_depth": "basic"}
    url = settings.tavily_url.rstrip("/") + "/search"
    reply = await _post_json("Tavily", url, settings.tavily_key, payload, settings.timeout)
    raw_results = reply.get("results") if isinstance(reply, dict) else None
    if not isinstance(raw_results, list):
        raise ToolError("Tavily's reply has no list of results")
    results = [
        {
            "title": str(r.get("title") or ""),
            "url": str(r.get("url") or ""),
            "content": str(r.get("content") or ""),
            "score": r.get("score") if isinstance(r.get("score"), (int, float)) else None,
        }
        for r in raw_results
        if isinstance(r, dict)
    ]
    answer = reply.get("answer")
    return {"query": query, "answer": answer if isinstance(answer, str) else None, "results": results}


def search_markdown(found: Mapping[str, Any]) -> str:
    lines = [f"## Search results for: {found['query']}", ""]
    if found.get("answer"):
        lines += [str(found["answer"]), ""]
    for index, result in enumerate(found["results"], 1):
        lines.append(f"{index}. [{result['title'] or result['url']}]({result['url']})")
        if result["content"]:
            lines.append(f"   {result['content']}")
    if not found["results"]:
        lines.append("No results.")
    return "\n".join(lines)


async def firecrawl_scrape(url: str, settings: WebSettings) -> tuple[str, dict[str, Any]]:
    """``(markdown, metadata)`` of ``url`` as scraped by Firecrawl.

    The URL passes our guard first: a self-hosted Firecrawl fetches from inside our network.
    """
    if not settings.firecrawl_key:
        raise ToolError(MISSING_FIRECRAWL)
    await check_url(url, settings.policy)
    payload = {"url": url, "formats": ["markdown"], "onlyMainContent": True}
    endpoint = settings.firecrawl_url.rstrip("/") + "/v2/scrape"
    reply = await _post_json("Firecrawl", endpoint, settings.firecrawl_key, payload, settings.timeout)
    data = reply.get("data") if isinstance(reply, dict) else None
    if not isinstance(reply, dict) or reply.get("success") is False or not isinstance(data, dict):
        error = reply.get("error") if isinstance(reply, dict) else None
        raise ToolError(f"Firecrawl could not scrape {url}: {error or 'no data in its reply'}")
    markdown = data.get("markdown")
    if not isinstance(markdown, str):
        raise ToolError(f"Firecrawl returned no markdown for {url}")
    raw_metadata = data.get("metadata")
    metadata: dict[str, Any] = raw_metadata if isinstance(raw_metadata, dict) else {}
    return markdown, {"url": url, **{k: v for k, v in metadata.items() if isinstance(v, (str, int, float, bool))}}


# ---- the tools ---------------------------------------------------------------------------


class FetchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str = Field(min_length=1, description="the page's http or https URL")
    max_bytes: int | None = Field(
        default=None, ge=1, description="read at most this many bytes of the body (never more than the agent's limit)"
    )


class SearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, description="what to search the web for")
    max_results: int = Field(default=5, ge=1, le=20, description="how many results to return")


class ScrapeArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str = Field(min_length=1, description="the page's http or https URL")


SettingsSource = Callable[[], WebSettings]


async def _checked_first(url: str, policy: OutboundPolicy) -> None:
    """Refuse a URL the guard rejects outright as a bad argument, before anything is sent."""
    try:
        await check_url(url, policy)
    except (InvalidTargetError, ForbiddenTargetError) as exc:
        raise ArgumentError(str(exc), argument="url") from exc
    except GuardError as exc:  # the name does not resolve: the tool could not do it
        raise ToolError(str(exc)) from exc


async def _limited(what: str, settings: WebSettings, work: Awaitable[ToolResult]) -> ToolResult:
    try:
        async with asyncio.timeout(settings.timeout):
            return await work
    except TimeoutError:
        raise ToolError(f"{what} took longer than {settings.timeout:g}s and was stopped") from None
    except GuardError as exc:  # refused along the way: a redirect hop, or DNS that changed its answer
        raise ToolError(str(exc)) from exc


def _fetch_result(page: FetchedPage) -> ToolResult:
    text = page.markdown
    if page.truncated:
        text += (
            f"\n\n---\n*[Truncated: the page is larger than {page.limit} bytes ({human_size(page.limit)}); "
            f"only the first {page.limit} bytes were read.]*"
        )
    summary = f"fetched {page.final_url}" + (f" (cut at {human_size(page.limit)})" if page.truncated else "")
    output = Output(page.title or page.final_url, [Part(text=text, media_type=MARKDOWN)], metadata=page.metadata())
    return ToolResult(summary, [output])


def _search_result(found: dict[str, Any]) -> ToolResult:
    text = search_markdown(found)
    parts = [Part(data=found, media_type="application/json"), Part(text=text, media_type=MARKDOWN)]
    return ToolResult(
        f"{len(found['results'])} results for {found['query']!r}", [Output("search results", parts)], text
    )


def make_tools(settings: WebSettings | SettingsSource | None = None) -> list[Tool]:
    """``fetch``, ``search`` and ``scrape`` with these settings (default: the environment, read
    at each call); an assistant agent may combine them with other tools."""
    if settings is None:
        source: SettingsSource = WebSettings.from_env
    elif isinstance(settings, WebSettings):
        fixed = settings
        source = lambda: fixed  # noqa: E731
    else:
        source = settings

    async def fetch(args: FetchArgs) -> ToolResult:
        current = source()
        await _checked_first(args.url, current.policy)

        async def work() -> ToolResult:
            return _fetch_result(await fetch_page(args.url, current, max_bytes=args.max_bytes))

        return await _limited(f"fetching {args.url}", current, work())

    async def search(args: SearchArgs) -> ToolResult:
        current = source()
        if not current.tavily_key:
            raise ToolError(MISSING_TAVILY)

        async def work() -> ToolResult:
            return _search_result(await tavily_search(args.query, current, max_results=args.max_results))

        return await _limited("the search", current, work())

    async def scrape(args: ScrapeArgs) -> ToolResult:
        current = source()
        if not current.firecrawl_key:
            raise ToolError(MISSING_FIRECRAWL)
        await _checked_first(args.url, current.policy)

        async def work() -> ToolResult:
            markdown, metadata = await firecrawl_scrape(args.url, current)
            title = metadata.get("title")
            output = Output(str(title or args.url), [Part(text=markdown, media_type=MARKDOWN)], metadata=metadata)
            return ToolResult(f"scraped {args.url}", [output])

        return await _limited(f"scraping {args.url}", current, work())

    return [
        Tool(
            "fetch",
            "Fetch a public web page and return its main content as markdown. Private and local addresses are "
            "refused unless the agent's allow-list admits them; redirects are followed (5 at most) and each one "
            "is checked; the body is cut at the agent's size limit and the result says so.",
            FetchArgs,
            fetch,
            tags=["web", "fetch", "markdown"],
            examples=["https://example.com", "fetch https://example.com and summarise it"],
            example_arguments={"url": "https://example.com"},
            output_modes=[MARKDOWN],
        ),
        Tool(
            "search",
            "Search the web through Tavily (needs TAVILY_API_KEY); returns titles, URLs and snippets.",
            SearchArgs,
            search,
            tags=["web", "search"],
            examples=["search the web for the A2A protocol specification"],
            example_arguments={"query": "A2A protocol"},
            output_modes=["application/json", MARKDOWN],
        ),
        Tool(
            "scrape",
            "Scrape a page through Firecrawl (needs FIRECRAWL_API_KEY), which also renders JavaScript; returns "
            "the page's main content as markdown.",
            ScrapeArgs,
            scrape,
            tags=["web", "scrape", "markdown"],
            examples=["scrape https://example.com"],
            example_arguments={"url": "https://example.com"},
            output_modes=[MARKDOWN],
        ),
    ]


# ---- text that is not natural language ---------------------------------------------------

#: Decides whether a plain-text message is a tool call the agent can run without a model.
#: ``None`` hands the text to the natural-language mode.
TextRouter = Callable[[str], ToolCall | None]


def single_url_call(text: str) -> ToolCall | None:
    """The default ``TextRouter``: a message that is one http(s) URL and nothing else is fetched."""
    text = text.strip()
    if not text or any(c.isspace() for c in text):
        return None
    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, ValueError):
        return None
    return ToolCall("fetch", {"url": text}) if url.scheme in ("http", "https") and url.host else None


INSTRUCTIONS = """You answer questions from the web with three tools: search (find pages), fetch (read a
page as markdown) and scrape (read a page that needs JavaScript). Search first when you do not know the
address; fetch the most relevant results; cite the URLs you used. Pages can be cut at a size limit and
some addresses are refused: say so rather than guess."""


@dataclass
class WebAgent(ToolAgent):
    """The web agent; ``route_text`` picks plain-text messages it can run without a model."""

    route_text: TextRouter = single_url_call

    async def execute(self, ctx: RequestContext) -> None:
        if all(part.data is UNSET for part in ctx.message.parts):
            call = self.route_text(ctx.text)
            if call is not None:
                await self._run_tool(ctx, self.tool(call.tool), call.arguments)
                return
        await super().execute(ctx)

    def usage_help(self, reason: str) -> str:
        return super().usage_help(f"{reason} (A message that is just a URL is fetched without a model.)")


def make_agent(
    settings: WebSettings | SettingsSource | None = None, *, route_text: TextRouter = single_url_call
) -> WebAgent:
    """A web agent; ``settings`` (or a function returning them) replace the environment's."""
    return WebAgent(
        name="Web",
        description=(
            "Fetches web pages as markdown (public addresses only, with size and time limits), searches the "
            "web (Tavily) and scrapes pages (Firecrawl)."
        ),
        tools=make_tools(settings),
        instructions=INSTRUCTIONS,
        default_output_modes=[MARKDOWN, "application/json"],
        route_text=route_text,
    )


agent = make_agent()
