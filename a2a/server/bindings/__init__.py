"""The HTTP bindings over a framework-free request and reply (``messages``): JSON-RPC, REST,
SSE streams and their heartbeat, and ``routing``, which sends a request to its binding or to an
operations route. A host turns its framework's request into a ``messages.HttpRequest`` and
writes back what the binding answers."""
