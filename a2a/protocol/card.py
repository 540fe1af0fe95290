"""Where an agent publishes its card (A2A 1.0, "Agent Discovery": the well-known URI)."""

from __future__ import annotations

__all__ = ["CARD_PATH"]

#: The card's path under an agent's base URL.
CARD_PATH = "/.well-known/agent-card.json"
