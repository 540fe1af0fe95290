"""Client transports: one interface (``ClientTransport``), one module per binding."""

from .base import ClientTransport, StreamItem
from .http import JsonRpcTransport, RestTransport

__all__ = ["ClientTransport", "JsonRpcTransport", "RestTransport", "StreamItem"]
