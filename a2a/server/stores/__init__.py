"""The durable task stores, one module per backend (``sqlite``, ``redis``); each module also
opens its backend from a URL (see ``a2a.server.backend``)."""
