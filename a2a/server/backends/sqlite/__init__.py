"""The SQLite backend: tasks (``tasks``, which opens it from a ``sqlite://`` URL), idempotency
records (``idempotency``, with ``key_filter``), push configs and deliveries (``push``), and the
one thread that writes to the database (``worker``)."""
