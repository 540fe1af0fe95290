"""Client credentials: what a client sends to the one agent it talks to.

A provider turns the agent's card into request headers; a credential is only ever given to
the client of the agent it was configured for.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol

from ..types import AgentCard

__all__ = ["ApiKey", "BearerToken", "CredentialProvider", "credentials_from_env"]


class CredentialProvider(Protocol):
    def headers(self, card: AgentCard | None) -> dict[str, str]:
        """Headers that authenticate requests to the agent described by ``card``."""
        ...


@dataclass(frozen=True)
class BearerToken:
    token: str

    def __post_init__(self) -> None:
        _check_header_value("a token", self.token)

    def headers(self, card: AgentCard | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def __repr__(self) -> str:  # never show the secret
        return "BearerToken(***)"


@dataclass(frozen=True)
class ApiKey:
    key: str
    #: The header to use; by default the one the card's apiKey scheme names, else X-API-Key.
    header: str | None = None

    def __post_init__(self) -> None:
        _check_header_value("an API key", self.key)

    def headers(self, card: AgentCard | None) -> dict[str, str]:
        return {self.header or _card_api_key_header(card) or "X-API-Key": self.key}

    def __repr__(self) -> str:
        return f"ApiKey(header={self.header!r}, key=***)"


def _check_header_value(what: str, value: str) -> None:
    """HTTP header values are ASCII: say so here, not as a codec error deep in a transport."""
    if not value.isascii():
        raise ValueError(f"{what} must be ASCII")
    if any(c in value for c in "\r\n\0"):
        raise ValueError(f"{what} must be one line")


def _card_api_key_header(card: AgentCard | None) -> str | None:
    for scheme in (card.security_schemes or {}).values() if card else ():
        api_key = scheme.api_key_security_scheme
        if not isinstance(api_key, type(None)) and hasattr(api_key, "location") and api_key.location == "header":
            return api_key.name
    return None


def credentials_from_env(token: str | None = None, api_key: str | None = None) -> BearerToken | ApiKey | None:
    """Explicit values first, then ``$A2A_TOKEN`` / ``$A2A_API_KEY`` (what the CLI uses)."""
    token = token or os.environ.get("A2A_TOKEN")
    if token:
        return BearerToken(token)
    api_key = api_key or os.environ.get("A2A_API_KEY")
    if api_key:
        return ApiKey(api_key)
    return None
