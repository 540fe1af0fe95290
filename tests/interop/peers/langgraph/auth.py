"""LangGraph Server's own custom auth (``langgraph.json`` ``auth``), for the bearer-token test.

The ``secure`` graph's assistant (``/a2a/<its id>``) requires ``Authorization: Bearer
<$A2A_NET_LANGGRAPH_TOKEN>``, its card excepted (public, as A2A cards are); every other path is
open, so the other tests use the ``echo`` assistant without credentials. A graph's default assistant id is what
langgraph-api derives from the graph id (uuid5 in its graph namespace); the test checks that
the assistant it finds by search has this id, so a change there fails loudly.
"""

from __future__ import annotations

import hmac
import os
from uuid import UUID, uuid5

from langgraph_sdk import Auth

#: langgraph-api's namespace for the ids of graphs' default assistants.
NAMESPACE_GRAPH = UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
SECURE_ASSISTANT = str(uuid5(NAMESPACE_GRAPH, "secure"))
TOKEN = os.environ.get("A2A_NET_LANGGRAPH_TOKEN", "")

auth = Auth()


@auth.authenticate
async def authenticate(path: str, authorization: str | None) -> Auth.types.MinimalUserDict:
    if not path.startswith(f"/a2a/{SECURE_ASSISTANT}") or path.endswith("/.well-known/agent-card.json"):
        return {"identity": "anonymous"}
    scheme, _, token = (authorization or "").partition(" ")
    if not TOKEN or scheme.lower() != "bearer" or not hmac.compare_digest(token.encode(), TOKEN.encode()):
        raise Auth.exceptions.HTTPException(status_code=401, detail="a bearer token is required")
    return {"identity": "tester"}
