"""Metadata keys that a2a-net defines on top of A2A (documented in protocol.md, "Metadata keys").

A2A lets any object carry a free ``metadata`` map; these are the keys our agents, clients and
the supervisor agree on. They are namespaced so they never clash with anyone else's.
"""

from __future__ import annotations

__all__ = [
    "DEPTH_KEY",
    "FETCHED_FROM_KEY",
    "FETCH_NOTE_KEY",
    "OWNER_SKILL_KEY",
    "SKILL_ARGUMENTS_EXTENSION",
    "SKILL_KEY",
    "TOOLS_KEY",
    "USAGE_KEY",
    "usage_entry",
]

#: Message metadata: the id of the skill to run (when an agent has several).
SKILL_KEY = "skillId"
#: Card extension (not metadata, but a2a-net's too) whose ``params.skills`` maps a skill id to the
#: JSON Schema of its arguments.
SKILL_ARGUMENTS_EXTENSION = "https://a2a-net.dev/extensions/skill-arguments/v1"
#: Task metadata: the id of the skill that owns the task (set when it is created); follow-ups go to it.
OWNER_SKILL_KEY = "a2a-net/skill"
#: Task metadata: model use of the agent for this task,
#: ``{"inputTokens": int, "outputTokens": int, "costUsd": float, "model": str}``.
USAGE_KEY = "a2a-net/usage"
#: Message metadata: how many delegation hops led to this message (0 = sent by a person).
DEPTH_KEY = "a2a-net/depth"
#: Message metadata: the tools (or tool sets) the agent may use for this request, a list of names;
#: an agent that honours it says so in its card (the built-in assistant does).
TOOLS_KEY = "a2a-net/tools"
#: File part metadata: the URL an agent returned the file by, which the supervisor fetched (the
#: part now carries the bytes).
FETCHED_FROM_KEY = "a2a-net/fetchedFrom"
#: File part metadata, on a part still given by ``url``: why the supervisor did not fetch it.
FETCH_NOTE_KEY = "a2a-net/fetchNote"


def usage_entry(
    input_tokens: int, output_tokens: int, cost_usd: float | None = None, model: str | None = None
) -> dict[str, object]:
    entry: dict[str, object] = {"inputTokens": input_tokens, "outputTokens": output_tokens}
    if cost_usd is not None:
        entry["costUsd"] = cost_usd
    if model:
        entry["model"] = model
    return entry
