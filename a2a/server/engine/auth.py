"""Server-side authentication: the schemes an agent declares in its card, and their checks.

Credentials come from the environment or a file, never from code or the card. Each entry maps
a secret to the principal it authenticates (``principal:secret``, one per line in a file, or
comma-separated in an environment variable). Presented secrets are hashed and compared with
every known digest in constant time; no secret is ever logged.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import AuthenticationRequiredError
from ...types import APIKeySecurityScheme, HTTPAuthSecurityScheme, SecurityRequirement, SecurityScheme, StringList

__all__ = ["ApiKeyAuth", "Authenticator", "BearerAuth", "load_credentials"]


def _digest(secret: str) -> bytes:
    # surrogateescape: a presented header that is not UTF-8 (aiohttp keeps its bytes as
    # surrogates) digests too, and then matches nothing (401) instead of raising.
    return hashlib.sha256(secret.encode("utf-8", "surrogateescape")).digest()


def _parse_entries(text: str, source: str) -> dict[str, str]:
    """``principal:secret`` entries separated by newlines or commas; ``#`` starts a comment line."""
    entries: dict[str, str] = {}
    for raw in text.replace(",", "\n").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        principal, sep, secret = line.partition(":")
        if not sep or not principal.strip() or not secret.strip():
            raise ValueError(f"{source}: each entry must be 'principal:secret' (got an entry without both parts)")
        entries[secret.strip()] = principal.strip()
    return entries


def load_credentials(*, env: str | None = None, file: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """Secrets → principals, from a file and/or an environment variable (both merged)."""
    found: dict[str, str] = {}
    if file is not None:
        path = Path(file)
        try:
            found.update(_parse_entries(path.read_text(encoding="utf-8"), str(path)))
        except OSError as exc:
            raise ValueError(f"cannot read credentials file {path}: {exc.strerror}") from exc
    if env is not None and os.environ.get(env):
        found.update(_parse_entries(os.environ[env], f"${env}"))
    return found


@dataclass
class _Scheme:
    """Common part of the schemes: a name in the card, and the known secrets' digests."""

    name: str
    credentials: Mapping[str, str] = field(default_factory=dict, repr=False)
    env: str | None = None
    file: str | None = None
    _digests: list[tuple[bytes, str]] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        secrets = dict(self.credentials) or load_credentials(env=self.env, file=self.file)
        self._digests = [(_digest(secret), principal) for secret, principal in secrets.items()]
        self.credentials = {}  # only the digests are kept

    @property
    def configured(self) -> bool:
        return bool(self._digests)

    def principal_for(self, presented: str) -> str | None:
        digest = _digest(presented)
        found: str | None = None
        for known, principal in self._digests:  # no early exit: the time taken reveals nothing
            if hmac.compare_digest(known, digest):
                found = principal
        return found

    @property
    def header_name(self) -> str:
        """The header the credential comes in."""
        raise NotImplementedError

    def extract(self, headers: Mapping[str, str]) -> str | None:
        raise NotImplementedError

    def card_scheme(self) -> SecurityScheme:
        raise NotImplementedError

    def challenge(self) -> str:
        raise NotImplementedError


@dataclass
class BearerAuth(_Scheme):
    """``Authorization: Bearer <token>``; tokens from ``$A2A_BEARER_TOKENS`` by default."""

    name: str = "bearer"
    env: str | None = "A2A_BEARER_TOKENS"

    @property
    def header_name(self) -> str:
        return "Authorization"

    def extract(self, headers: Mapping[str, str]) -> str | None:
        value = headers.get("Authorization", "")
        scheme, _, token = value.partition(" ")
        return token.strip() if scheme.lower() == "bearer" and token.strip() else None

    def card_scheme(self) -> SecurityScheme:
        return SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer"))

    def challenge(self) -> str:
        return 'Bearer realm="a2a"'


@dataclass
class ApiKeyAuth(_Scheme):
    """An API key in a header (``X-API-Key`` by default); keys from ``$A2A_API_KEYS`` by default."""

    name: str = "apiKey"
    header: str = "X-API-Key"
    env: str | None = "A2A_API_KEYS"

    @property
    def header_name(self) -> str:
        return self.header

    def extract(self, headers: Mapping[str, str]) -> str | None:
        value = headers.get(self.header, "").strip()
        return value or None

    def card_scheme(self) -> SecurityScheme:
        return SecurityScheme(api_key_security_scheme=APIKeySecurityScheme(location="header", name=self.header))

    def challenge(self) -> str:
        return f'ApiKey realm="a2a", header="{self.header}"'


class Authenticator:
    """Any one of the configured schemes admits a caller (the card lists them as alternatives)."""

    def __init__(self, schemes: list[BearerAuth | ApiKeyAuth]) -> None:
        for scheme in schemes:
            if not scheme.configured:
                where = " or ".join(filter(None, [f"${scheme.env}" if scheme.env else None, scheme.file]))
                raise ValueError(
                    f"security scheme {scheme.name!r} has no credentials: set {where or 'its credentials'}"
                )
        self.schemes = schemes

    @property
    def enabled(self) -> bool:
        return bool(self.schemes)

    def authenticate(self, headers: Mapping[str, str]) -> str | None:
        """The caller's principal; ``None`` when no scheme is configured; 401 otherwise.

        A credential header sent twice is refused (401) rather than one of them read: a proxy
        and a client that each add one would otherwise decide, by their order, who calls."""
        if not self.schemes:
            return None
        repeated: frozenset[str] = getattr(headers, "repeated", frozenset())
        if repeated:
            for name in dict.fromkeys(scheme.header_name for scheme in self.schemes):
                if name.lower() in repeated:
                    raise AuthenticationRequiredError(f"The {name} header is sent more than once: send it once")
        for scheme in self.schemes:
            presented = scheme.extract(headers)
            if presented is not None:
                principal = scheme.principal_for(presented)
                if principal is not None:
                    return principal
        raise AuthenticationRequiredError()

    def challenges(self) -> list[str]:
        # A 401 must carry a challenge even when no scheme is declared (GetExtendedAgentCard
        # always needs a caller the server knows): a generic bearer one.
        return [scheme.challenge() for scheme in self.schemes] or ['Bearer realm="a2a"']

    def card_fields(self) -> tuple[dict[str, SecurityScheme] | None, list[SecurityRequirement] | None]:
        if not self.schemes:
            return None, None
        schemes = {s.name: s.card_scheme() for s in self.schemes}
        requirements = [SecurityRequirement(schemes={s.name: StringList(list=[])}) for s in self.schemes]
        return schemes, requirements
