"""Protocol version negotiation (``A2A-Version``)."""

from __future__ import annotations

from ..errors import VersionNotSupportedError

__all__ = ["LEGACY_VERSION", "PROTOCOL_VERSION", "SUPPORTED_VERSIONS", "VERSION_HEADER", "check_version", "is_legacy"]

PROTOCOL_VERSION = "1.0"
SUPPORTED_VERSIONS = frozenset({"1.0"})
#: The older version served beside 1.0 where a binding offers it (JSON-RPC over HTTP, see
#: ``v03``); a request without ``A2A-Version`` means it, as the 1.0 specification says.
LEGACY_VERSION = "0.3"
VERSION_HEADER = "A2A-Version"
EXTENSIONS_HEADER = "A2A-Extensions"


def check_version(value: str | None) -> str:
    """Accept ``1.0`` (and ``1.0.x``); anything else, missing included, is -32009."""
    if value == PROTOCOL_VERSION:  # what every request of a current client says
        return value
    if not value:
        raise VersionNotSupportedError(
            "Missing A2A-Version (a missing version means 0.3, which this server does not serve): "
            "send the header or query parameter A2A-Version: 1.0"
        )
    candidate = value.strip()
    major_minor = ".".join(candidate.split(".")[:2])
    if major_minor not in SUPPORTED_VERSIONS:
        raise VersionNotSupportedError(f"A2A-Version {candidate!r} is not supported: send A2A-Version: 1.0")
    return major_minor


def is_legacy(value: str | None) -> bool:
    """Whether a request's ``A2A-Version`` asks for 0.3: missing (which means 0.3) or ``0.3[.x]``."""
    if value == PROTOCOL_VERSION:  # what every request of a current client says
        return False
    if not value or not value.strip():
        return True
    return ".".join(value.strip().split(".")[:2]) == LEGACY_VERSION
