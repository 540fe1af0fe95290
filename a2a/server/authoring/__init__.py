"""The authoring API: what an agent's author writes against. ``Agent`` and its skills, the
``RequestContext`` a handler gets for one request, and ``graph_agent`` for serving a LangGraph
graph as an agent. Nothing here knows about HTTP, stores or hosts."""
