"""The Redis backend, for replicas sharing one Redis: tasks (``tasks``, which opens it from a
``redis://`` URL), batched writes (``batch``), the event bus (``bus``), cancel requests and
leases (``coordination``), and push configs and deliveries (``push``)."""
