"""The WebSocket and stdio bindings: conformance over every binding, limits, lifecycle."""
