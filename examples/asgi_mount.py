"""An A2A agent mounted in an existing FastAPI application, served by any ASGI server.

    uvicorn examples.asgi_mount:app --port 8000
    granian --interface asgi examples.asgi_mount:app --port 8000

The agent answers under ``/agents/echo`` (its card at
``/agents/echo/.well-known/agent-card.json``, with URLs under the mount), beside the
application's own routes. The application's lifespan starts and stops the agent's server (open
runs end CANCELED on shutdown); mounted without it, the agent starts on its first request.
"""

from __future__ import annotations

from fastapi import FastAPI

from a2a import A2AServer, Agent

agent = Agent("Echo", "Echoes text back", version="1.0.0")


@agent.skill(tags=["echo"], examples=["hello"])
async def echo(text: str) -> str:
    return f"echo: {text}"


agent_app = A2AServer(agent).asgi()
app = FastAPI(lifespan=agent_app.lifespan)


@app.get("/status")
async def status() -> dict[str, str]:
    """One of the application's own routes."""
    return {"status": "ok"}


app.mount("/agents/echo", agent_app)
