"""Built-in specialist agents; each one is servable on its own (``a2a serve agents.NAME:agent``)."""
