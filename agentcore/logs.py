"""Log lines for people (``LOG_FORMAT=text``, the default) or for a log pipeline (``json``: one
JSON object per line), each tagged with the id of the HTTP request it was written in.

A JSON line holds ``time`` (UTC, ISO 8601, milliseconds), ``level``, ``logger``, ``message``,
``request_id`` when written while a request was served, the fields a call passed as ``extra``,
and for a record that carries an exception its ``exc_type`` and, as a string, ``exc_info`` (the
traceback). The service logs a traceback for a defect only: an outage or a refused call is one
line without one.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from agentcore.config import Settings

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_REQUEST_ID: ContextVar[str | None] = ContextVar("agentcore_request_id", default=None)

# What every LogRecord has; anything else on a record came from a call's ``extra`` (but
# uvicorn's ``color_message``, its message again with terminal colour codes).
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "request_id",
    "color_message",
}


def current_request_id() -> str | None:
    return _REQUEST_ID.get()


@contextlib.contextmanager
def request_id_bound(request_id: str) -> Iterator[None]:
    """Tag every record written in this context (tasks started in it included)."""
    token = _REQUEST_ID.set(request_id)
    try:
        yield
    finally:
        _REQUEST_ID.reset(token)


class RequestIdFilter(logging.Filter):
    """Puts the current request's id (or None) on each record as ``request_id``."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = _REQUEST_ID.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = getattr(record, "request_id", None) or _REQUEST_ID.get()
        if request_id is not None:
            entry["request_id"] = request_id
        entry.update((k, v) for k, v in vars(record).items() if k not in _STANDARD)
        if record.exc_info is not None and record.exc_info[0] is not None:
            entry["exc_type"] = record.exc_info[0].__name__
            entry["exc_info"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack_info"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def configure_logging(settings: Settings) -> None:
    """The root logger's handler on stderr, in ``LOG_FORMAT`` at ``LOG_LEVEL`` (as
    ``logging.basicConfig``: nothing changes when the root logger has a handler already).

    Alembic says only warnings: importing it logs a line per plugin it registers, and the
    schema's state at start is the one line ``agentcore.adapters.db.migrate`` writes."""
    handler = logging.StreamHandler()
    handler.addFilter(RequestIdFilter())
    json_lines = settings.log_format == "json"
    handler.setFormatter(JsonFormatter() if json_lines else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=settings.log_level, handlers=[handler])
    logging.getLogger("alembic").setLevel(logging.WARNING)
