"""The connection bindings: JSON-RPC over one long-lived connection, a WebSocket (``ws``) or a
process's stdin and stdout (``stdio``). ``rpc_connection`` runs the calls of one connection
(``call_slots`` bounds how many run at once), whichever channel carries them."""
