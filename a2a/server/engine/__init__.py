"""The engine: the protocol's operations, independent of any binding or host. The request handler
and a run's execution, the event log and bus, run locks and latches, cancel and lease
coordination, admission, authentication, limits, ids and tracing; ``serving`` opens a handler
with its backend."""
