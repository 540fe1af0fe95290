"""Files an agent returned by URL, fetched by the supervisor so later delegations get the bytes.

An agent may answer with a file part that carries only a ``url`` (A2A 1.0 ``Part.url``). The
agent that is sent the file next may not reach that URL (another network, no credentials), and
the built-in agents take inline files only. So when a delegation ends, each such part of its
artifacts is fetched once (``supervisor.file_urls``) and replaced by the same file inline
(``raw``, its metadata naming the URL under ``FETCHED_FROM``); later delegations are sent that
(``supervisor.workspace``).

The request is the project's guarded one: ``a2a.ssrf.GuardedClient`` (public addresses only,
unless ``file_urls.allow`` admits a network or a host, as ``--push-allow`` does for webhooks;
redirects followed by hand, each hop checked), the body read by ``a2a.transport.body.read_body``
within ``file_urls.max_bytes`` (for all of one delegation's files together: what a checkpoint
keeps stays bounded), and all of one delegation's fetches within ``file_urls.timeout``.
A fetch that is refused or fails never fails the delegation nor the run: the part stays a
``url`` part and its metadata says why (``FETCH_NOTE``), which the model's listing of the run's
files and the text of a later delegation that is sent it repeat.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import mimetypes
import time
from dataclasses import dataclass
from typing import Any

import httpx

from a2a.errors import InvalidResponseError
from a2a.ssrf import ForbiddenTargetError, GuardedClient, GuardError, OutboundPolicy, stream_following_redirects
from a2a.transport.body import ACCEPT_ENCODING, read_body

from .config import FileUrlsConfig
from .workspace import FETCH_NOTE, FETCHED_FROM

__all__ = ["UrlFetcher"]

log = logging.getLogger(__name__)

USER_AGENT = "a2a-net-supervisor"


class _NotFetched(Exception):
    """Why one file was not fetched (the note kept with its part)."""


@dataclass(slots=True)
class _Budget:
    """What is left for the files of one delegation."""

    deadline: float
    room: int


@dataclass(frozen=True, slots=True)
class UrlFetcher:
    """Fetches the ``url`` file parts of a finished delegation's artifacts (see the module)."""

    policy: OutboundPolicy
    max_bytes: int
    timeout: float

    @classmethod
    def from_config(cls, config: FileUrlsConfig) -> UrlFetcher | None:
        """The fetcher ``supervisor.file_urls`` describes; ``None`` when ``fetch`` is off."""
        if not config.fetch:
            return None
        return cls(OutboundPolicy.from_allow_list(config.allow), config.max_bytes, config.timeout)

    @staticmethod
    def wanted(artifacts: list[dict[str, Any]]) -> bool:
        """Some artifact has a file given by URL that was not tried yet."""
        return any(_to_fetch(part) for artifact in artifacts for part in artifact.get("parts") or [])

    async def inline(self, artifacts: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The artifacts with each file given by URL inline, or noted with why it is not."""
        budget = _Budget(time.monotonic() + self.timeout, self.max_bytes)
        async with GuardedClient(self.policy, timeout=self.timeout, headers=_HEADERS) as client:
            result = []
            for artifact in artifacts:
                parts = []
                for part in artifact.get("parts") or []:
                    if _to_fetch(part):
                        part = await self._one(client, part, budget)
                    parts.append(part)
                result.append({**artifact, "parts": parts})
        return result

    async def _one(self, client: GuardedClient, part: dict[str, Any], budget: _Budget) -> dict[str, Any]:
        url = str(part["url"])
        left = budget.deadline - time.monotonic()
        try:
            if left <= 0:
                raise _NotFetched(f"no time left within supervisor.file_urls.timeout ({self.timeout:g}s)")
            if budget.room <= 0:
                raise _NotFetched(
                    f"this delegation's other files used all of supervisor.file_urls.max_bytes ({self.max_bytes} bytes)"
                )
            try:
                async with asyncio.timeout(left):
                    body, content_type = await self._fetch(client, url, budget.room)
            except TimeoutError:
                raise _NotFetched(
                    f"{url} did not answer in full within supervisor.file_urls.timeout ({self.timeout:g}s)"
                ) from None
        except _NotFetched as exc:
            log.info("file %s not fetched: %s", part.get("filename"), exc)
            return {**part, "metadata": {**(part.get("metadata") or {}), FETCH_NOTE: str(exc)}}
        budget.room -= len(body)
        media_type = (
            part.get("mediaType")
            or content_type
            or mimetypes.guess_type(str(part.get("filename")))[0]
            or "application/octet-stream"
        )
        fetched = {k: v for k, v in part.items() if k not in ("url", "metadata", "mediaType")}
        metadata = {k: v for k, v in (part.get("metadata") or {}).items() if k != FETCH_NOTE}
        return {
            **fetched,
            "raw": base64.b64encode(body).decode("ascii"),  # the JSON form of Part.raw
            "mediaType": media_type,
            "metadata": {**metadata, FETCHED_FROM: url},
        }

    async def _fetch(self, client: GuardedClient, url: str, limit: int) -> tuple[bytes, str | None]:
        try:
            async with stream_following_redirects(client, url) as response:
                if response.status_code >= 400:
                    raise _NotFetched(f"{response.url} answered HTTP {response.status_code} {response.reason_phrase}")
                setting = "supervisor.file_urls.max_bytes" + (
                    "" if limit == self.max_bytes else f" {self.max_bytes}, less this delegation's other files"
                )
                body = await read_body(response, limit, setting=setting)
                content_type = response.headers.get("content-type", "").split(";")[0].strip() or None
                return body, content_type
        except ForbiddenTargetError as exc:
            raise _NotFetched(f"{exc} (supervisor.file_urls.allow)") from None
        except (GuardError, InvalidResponseError) as exc:
            raise _NotFetched(str(exc)) from None
        except (httpx.HTTPError, OSError) as exc:
            raise _NotFetched(f"{url}: {type(exc).__name__}" + (f": {exc}" if str(exc) else "")) from None


#: Identity or the codings ``read_body`` inflates in bounded steps, nothing else.
_HEADERS = {"User-Agent": USER_AGENT, "Accept-Encoding": ACCEPT_ENCODING}


def _to_fetch(part: dict[str, Any]) -> bool:
    """A file given by URL, not tried yet (a part already noted is not fetched again)."""
    return (
        bool(part.get("filename"))
        and isinstance(part.get("url"), str)
        and FETCH_NOTE not in (part.get("metadata") or {})
    )
