"""Built-in specialist agents; each one is servable on its own (``a2a serve agents.NAME:agent``,
add ``--stdio`` for the stdio binding).

Every built-in agent is a set of tools with one contract (``agents._tools``): each tool is one
skill of the card. A data part ``{"tool": "<name>", "arguments": {...}}`` runs one tool with no
model: REJECTED for invalid arguments (the message names the argument), FAILED when the tool
cannot do it, COMPLETED with the results as artifacts. Plain text runs a LangGraph ReAct loop over
the same tools with the OpenAI-compatible model set by ``A2A_MODEL``, ``A2A_MODEL_BASE_URL`` and
``A2A_MODEL_API_KEY`` (or ``OPENAI_API_KEY``; see ``agents.llm`` for the rest); its token use and
cost go to the task's ``a2a-net/usage`` metadata. Without a model, text ends FAILED with an
explanation, never a made-up answer.

- ``agents.files``: read, write, edit, list, delete inside one workspace directory.
- ``agents.code``: run Python in a separate process with time, CPU, memory and output limits.
"""

from a2a.extras import require

# Every built-in agent needs the agents extra (pydantic for its tools' arguments, and more): say
# so in one line when an agent module is imported without it.
require("the built-in agents", "agents")
