"""Statements of protocol.md that no other test pins: the order of the checks every request
goes through (§2), and the card's security declaration exactly as it is sent (§7)."""

from __future__ import annotations

import pytest

from a2a import A2AServer, ApiKeyAuth, BearerAuth

from .conftest import OpenRaw, StartServer
from .helpers import Raw, expect_error, load_module


@pytest.fixture
async def secured(serve: StartServer) -> A2AServer:
    agent = load_module("echo_agent.py").agent
    return await serve(agent, auth=[BearerAuth(credentials={"tok": "alice"}), ApiKeyAuth(credentials={"key": "bob"})])


@pytest.fixture
def sraw(secured: A2AServer, open_raw: OpenRaw) -> Raw:
    return open_raw(secured)


@pytest.mark.parametrize("credentials", [{}, {"Authorization": "Bearer wrong"}], ids=["none", "wrong"])
async def test_the_version_is_checked_before_the_credentials(sraw: Raw, credentials: dict[str, str]) -> None:
    """§2: a request without a version is VersionNotSupported (400) whatever its credentials."""
    expect_error(await sraw.call("ListTasks", {}, version=False, headers=credentials), -32009)


async def test_with_the_version_the_credentials_are_checked(sraw: Raw) -> None:
    expect_error(await sraw.call("ListTasks", {}), -32000, http_status=401)
    assert (await sraw.call("ListTasks", {}, headers={"X-API-Key": "key"})).status == 200


async def test_the_card_declares_each_scheme_as_one_alternative_without_scopes(sraw: Raw, secured: A2AServer) -> None:
    """§7: ``securityRequirements`` is a list of alternatives, each ``{"schemes": {name: {}}}``:
    a2a.proto's SecurityRequirement maps a scheme name to a StringList of scopes, and an empty
    ``list`` is left out, as ProtoJSON leaves out every empty repeated field."""
    card = (await sraw.http.get(f"{secured.url}/.well-known/agent-card.json")).json()
    assert card["securityRequirements"] == [{"schemes": {"bearer": {}}}, {"schemes": {"apiKey": {}}}]
    # The 1.0 oneof fields (the 0.3 ``type`` form sits beside them: ``v03.card_to_v03``).
    assert {
        name: {k: v for k, v in s.items() if k.endswith("SecurityScheme")}
        for name, s in card["securitySchemes"].items()
    } == {
        "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}},
        "apiKey": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}},
    }
