"""The hosts: each adapts one web framework to the bindings. ``aiohttp`` serves the core on an
aiohttp application (the default of ``a2a serve``), ``asgi`` as an ASGI application; the aiohttp
host's connection guard (``connections``, with ``deadline_sweep``) bounds each connection's
phases and the number of connections."""
