"""The backends: where tasks, events, idempotency records, push configs and coordination live.
``base`` opens a backend from its URL (``memory:``, ``sqlite://``, ``redis://``) and
``store`` defines the ``TaskStore`` interface and the in-memory store. Each durable backend is
one folder (``sqlite``, ``redis``) holding everything it provides."""
