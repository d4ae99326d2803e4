"""How txnq's processes log: one line per record, JSON when standard error is
not a terminal (docker logs, systemd's journal, a file: what a log collector
reads), readable text on a terminal; and never a password.

``LOG_FORMAT`` (``TXNQ_LOG_FORMAT``) chooses: ``auto`` (the default: JSON
unless standard error is a terminal), ``json`` or ``text``. A JSON line has
``ts`` (UTC, ISO 8601 with milliseconds), ``level``, ``logger``, ``msg``,
``pid``, the worker's ``worker`` name when it set one, and ``exc`` with the
traceback when there is one.

Secrets: every record passes through :func:`redact`, which masks the password
of a PostgreSQL URL (``postgresql://user:***@host``) and of a ``key=value``
DSN (``password=***``), whatever code logged it (ours, psycopg's, SQLAlchemy's).
:func:`mask_dsn` does the same for a DSN shown on purpose (``txnq config
show``, a worker's start line).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from datetime import UTC, datetime
from typing import Any, Literal

LogFormat = Literal["auto", "json", "text"]
LOG_FORMATS: tuple[str, ...] = ("auto", "json", "text")

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
MASK = "***"

# scheme://user:password@host -> scheme://user:***@host (any scheme: a
# postgresql+psycopg:// URL too); password=... in a conninfo string, quoted or not.
_URL_PASSWORD = re.compile(
    r"(?P<head>\b[a-z][a-z0-9+.-]*://[^\s:/@]*:)(?P<pw>[^\s@]*)(?P<tail>@)", re.I
)
_KV_PASSWORD = re.compile(r"(?P<head>\bpassword\s*=\s*)(?P<pw>'(?:[^'\\]|\\.)*'|[^\s'&]+)", re.I)


def redact(text: str) -> str:
    """``text`` with the password of every DSN in it masked."""
    if "password" not in text.lower() and "@" not in text:
        return text
    text = _URL_PASSWORD.sub(lambda m: f"{m['head']}{MASK}{m['tail']}", text)
    return _KV_PASSWORD.sub(lambda m: f"{m['head']}{MASK}", text)


def mask_dsn(dsn: str | None) -> str | None:
    """A DSN fit to print: its password (if any) masked."""
    return None if dsn is None else redact(dsn)


class RedactingFilter(logging.Filter):
    """Masks passwords in a record's message (after %-formatting) and arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: leave it to the formatter to report
            return True
        cleaned = redact(message)
        if cleaned != message or record.args:
            record.msg, record.args = cleaned, None
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": redact(record.getMessage()),
            "pid": record.process,
        }
        worker = getattr(record, "worker", None)
        if worker is not None:
            data["worker"] = worker
        if record.exc_info:
            data["exc"] = redact(self.formatException(record.exc_info))
        return json.dumps(data, ensure_ascii=False, default=str)


def wants_json(log_format: str, stream: Any = None) -> bool:
    """Whether ``log_format`` means JSON on ``stream`` (default: standard error)."""
    if log_format == "json":
        return True
    if log_format == "text":
        return False
    stream = sys.stderr if stream is None else stream
    try:
        return not (hasattr(stream, "isatty") and stream.isatty())
    except ValueError:  # a closed stream
        return True


def configure(
    level: str = "INFO",
    log_format: str | None = None,
    *,
    loggers: tuple[str, ...] = ("txnq",),
    text_handler: logging.Handler | None = None,
) -> logging.Handler:
    """Send ``loggers`` to standard error in ``log_format`` (default: the
    TXNQ_LOG_FORMAT environment variable, else ``auto``) at ``level``; APScheduler
    at WARNING. ``text_handler`` replaces the plain text handler (the CLI's rich
    one on a terminal). Idempotent: a second call replaces the first's handler.
    """
    chosen = (log_format or os.environ.get("TXNQ_LOG_FORMAT") or "auto").lower()
    if chosen not in LOG_FORMATS:
        from txnq.errors import ConfigurationError

        raise ConfigurationError(
            f"LOG_FORMAT (env TXNQ_LOG_FORMAT) must be one of {', '.join(LOG_FORMATS)}, "
            f"not {chosen!r}"
        )
    handler: logging.Handler
    if wants_json(chosen):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonFormatter())
    elif text_handler is not None:
        handler = text_handler
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    handler.addFilter(RedactingFilter())
    handler.set_name("txnq-log")
    for name, logger_level in (*((n, level.upper()) for n in loggers), ("apscheduler", "WARNING")):
        logger = logging.getLogger(name)
        for old in [h for h in logger.handlers if h.get_name() == "txnq-log"]:
            logger.removeHandler(old)
        logger.addHandler(handler)
        logger.setLevel(logger_level)
        logger.propagate = False
    return handler
