"""Agent card discovery and the choice of interface."""

from __future__ import annotations

from collections.abc import Sequence

import httpx
import msgspec

from ..errors import CardResolutionError, InvalidResponseError
from ..protocol import v03
from ..protocol.card import CARD_PATH
from ..protocol.codec import decoder_for, encode
from ..transport.base import DEFAULT_MAX_RESPONSE_BYTES
from ..transport.http import exchange, http_error
from ..types import AgentCard, AgentInterface

__all__ = ["card_url", "choose_interface", "decode_card", "fetch_card", "is_v03"]


def card_url(url: str) -> str:
    """The card's address for a base URL (a URL that already names a ``.json`` is kept)."""
    if url.endswith(".json"):
        return url
    return url.rstrip("/") + CARD_PATH


async def fetch_card(
    client: httpx.AsyncClient, url: str, *, timeout: float | None, max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
) -> AgentCard:
    """The card at ``url`` (a base URL or the card's own), read within ``timeout`` seconds and
    ``max_bytes``: the first contact with an agent is as bounded as every later call."""
    address = card_url(url)
    request = client.build_request("GET", address)
    response, body = await exchange(client, request, timeout=timeout, max_bytes=max_bytes)
    if response.status_code != 200:
        raise http_error(response, body)
    return decode_card(address, body)


def decode_card(address: str, body: bytes) -> AgentCard:
    """The card in ``body`` (fetched from ``address``): a 1.0 card, or a 0.3 one read as the 1.0
    card whose interfaces say 0.3; an older one, or one that is neither, is refused saying why.
    Every reader of cards (the client, the supervisor's registry) decodes them here."""
    try:
        card: AgentCard = decoder_for(AgentCard).decode(body)
        return card
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        older = _older_card(address, body)
        if older is not None:
            return older
        raise InvalidResponseError(f"{address} is not a valid A2A 1.0 agent card: {exc}") from exc


def _older_card(address: str, body: bytes) -> AgentCard | None:
    """A card of an agent that speaks A2A before 1.0 (no ``supportedInterfaces``): 0.3's, read
    as the 1.0 card whose interfaces say 0.3 (``v03``); older ones refused, saying so."""
    try:
        plain = msgspec.json.decode(body)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None
    if not isinstance(plain, dict) or not v03.is_v03_card(plain):
        return None
    version = v03.card_protocol_version(plain)
    if version != v03.LEGACY_VERSION:
        raise CardResolutionError(
            f"{address}: this agent speaks A2A {version}: not supported (this client speaks 1.x and 0.3)",
            unsupported_version=version,
        )
    try:
        card: AgentCard = decoder_for(AgentCard).decode(encode(v03.card_from_v03(plain)))
        return card
    except (v03.V03Error, msgspec.ValidationError) as exc:
        raise InvalidResponseError(f"{address} is not a valid A2A 0.3 agent card: {exc}") from exc


#: The bindings this client speaks in A2A 0.3 (``transport.http.JsonRpcV03Transport``,
#: ``RestV03Transport``).
V03_BINDINGS = frozenset({"JSONRPC", "HTTP+JSON"})


def is_v03(interface: AgentInterface) -> bool:
    return ".".join((interface.protocol_version or "").split(".")[:2]) == v03.LEGACY_VERSION


def _version_ok(interface: AgentInterface) -> bool:
    version = interface.protocol_version or "1.0"
    return version.split(".")[0] == "1" or (is_v03(interface) and interface.protocol_binding in V03_BINDINGS)


def choose_interface(card: AgentCard, supported: Sequence[str], preferred: str | None = None) -> AgentInterface:
    """The first interface (card order, or the ``preferred`` binding) that this client speaks:
    a 1.x one before a 0.3 one."""
    usable = [i for i in card.supported_interfaces if i.protocol_binding in supported and _version_ok(i)]
    usable.sort(key=is_v03)  # stable: card order within each version
    if preferred is not None:
        usable = [i for i in usable if i.protocol_binding == preferred]
    if not usable:
        offered = ", ".join(f"{i.protocol_binding} {i.protocol_version}" for i in card.supported_interfaces)
        wanted = preferred or " or ".join(supported)
        raise CardResolutionError(
            f"Agent {card.name!r} offers no interface this client can use "
            f"(wanted {wanted} 1.x or JSONRPC/HTTP+JSON 0.3; offered: {offered or 'none'})"
        )
    return usable[0]
