"""Structured logs: one JSON object per line, for ``a2a serve --log-format json``.

Every record has ``ts`` (UTC, ISO 8601 with milliseconds), ``level``, ``logger`` and
``message``; attributes a call added with ``extra=`` are members too (the access log's
``http_method``, ``path``, ``status``, ``duration_ms``, ``operation``, ``binding``,
``principal``, ``remote``), and an exception is ``exc_type`` plus ``exc`` (the formatted
traceback, one string). A value JSON cannot hold is written as its ``str``.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

import msgspec

__all__ = ["JsonFormatter"]

#: What every LogRecord has: anything else on a record came from ``extra=``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.datetime.fromtimestamp(record.created, tz=datetime.UTC)
        entry: dict[str, Any] = {
            "ts": stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and key not in entry:
                entry[key] = value
        if record.exc_info:
            entry["exc_type"] = record.exc_info[0].__name__ if record.exc_info[0] else None
            entry["exc"] = self.formatException(record.exc_info)
        return msgspec.json.encode(entry, enc_hook=str).decode()
