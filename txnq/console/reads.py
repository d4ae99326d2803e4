"""What the console's page shows: named queries of ``sql/queries/console.sql``
over the inspection views and public txnq functions, never the tables, made
ready for JSON. A console run as a member of ``txnq_reader`` reads all of it
but payloads (the message browser reads ``txnq.committed_messages``, which
that role may not)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import psycopg
from psycopg.rows import dict_row

from txnq import errors
from txnq.database.connections import connect, translated_errors
from txnq.database.queries import QUERIES
from txnq.names import validate_name
from txnq.settings import Settings

#: The most rows one table of the page shows (transactions, ledgers, runs, actions).
ROW_LIMIT = 200
#: The most messages the browser reads at a time.
MAX_MESSAGES = 500
#: The bytes of a payload the browser shows (the rest is cut, and said so).
PAYLOAD_PREVIEW_BYTES = 4096
#: The most unfinished transactions whose partitions and pending acks are
#: listed with them (two small function calls each, on one connection).
DETAILED_TRANSACTIONS = 20
#: SQLSTATEs of a role that may not describe a transaction (a reader, or a
#: client role that did not open it): the page shows its counts only.
_NOT_PERMITTED = ("42501", "TQ018")
#: The shortest chart window: rates need two samples.
MIN_WINDOW_SECONDS = 60.0


class ConsoleDatabase:
    """The console's connection to txnq: a short autocommit connection per
    request (the page polls every few seconds; no pool to keep or leak), the
    named queries run with PostgreSQL errors raised as txnq errors. Also a
    :class:`txnq.admin.NamedQueryRunner`, for the sampling job's tests."""

    def __init__(self, dsn: str, settings: Settings) -> None:
        self.dsn = dsn
        self.settings = settings

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        with connect(self.dsn, application_name="txnq-console") as conn, translated_errors():
            yield conn

    def query(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        with self.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            cur.execute(QUERIES[name], params)
            return cur.fetchall() if cur.description else []

    def execute(self, name: str, params: dict[str, Any]) -> None:
        with self.connection() as conn:
            conn.execute(QUERIES[name], params)

    def describe_transactions(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """The partitions and subscriptions (with pending acks) of each
        transaction ``tc:seq`` of ``ids``, on one connection; a transaction
        the role may not describe is left out."""
        found: dict[str, dict[str, Any]] = {}
        with self.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            for txn_id in ids:
                tc_id, _, seq = txn_id.partition(":")
                params = {"txn_tc": int(tc_id), "txn_seq": int(seq)}
                try:
                    cur.execute(QUERIES["txn_describe_partitions"], params)
                    partitions = cur.fetchall()
                    cur.execute(QUERIES["txn_describe_subscriptions"], params)
                    subscriptions = cur.fetchall()
                except psycopg.Error as exc:
                    if exc.sqlstate in _NOT_PERMITTED:
                        continue
                    raise
                found[txn_id] = {"partition_list": partitions, "ack_list": subscriptions}
        return found


def jsonable(value: Any) -> Any:
    """A value of a row as JSON has it: times as ISO 8601, numerics as numbers."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, bytes | memoryview):
        return bytes(value).hex()
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def _rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: jsonable(v) for k, v in row.items()} for row in rows]


def payload_views(payload: bytes | None) -> dict[str, Any]:
    """A payload as the browser shows it: text (when it is UTF-8), JSON (when
    it parses), hex; at most PAYLOAD_PREVIEW_BYTES of it."""
    data = b"" if payload is None else bytes(payload)
    shown = data[:PAYLOAD_PREVIEW_BYTES]
    text: str | None
    try:
        text = shown.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    pretty: str | None = None
    if text is not None and len(data) <= PAYLOAD_PREVIEW_BYTES:
        try:
            pretty = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            pretty = None
    return {
        "size": len(data),
        "truncated": len(data) > PAYLOAD_PREVIEW_BYTES,
        "text": text,
        "json": pretty,
        "hex": shown.hex(" "),
    }


class ConsoleReads:
    """One method per part of the page; each returns a dict ready for JSON."""

    def __init__(self, database: ConsoleDatabase) -> None:
        self._db = database

    def whoami(self) -> dict[str, Any]:
        row = self._db.query("console_role", {})[0]
        return {
            "role": row["role"],
            "may_administer": bool(row["may_administer"]),
            "revision": row["revision"],
            "sample_interval_seconds": self._db.settings.console_sample_interval_seconds,
        }

    def _window(self, seconds: float | None) -> float:
        history = self._db.settings.console_history_seconds
        if seconds is None:
            return min(3600.0, history)
        if not MIN_WINDOW_SECONDS <= seconds <= history:
            raise errors.InvalidArgumentError(
                f"window must be from {MIN_WINDOW_SECONDS:g} to {history:g} seconds "
                f"(CONSOLE_HISTORY_SECONDS), not {seconds:g}"
            )
        return seconds

    def topics(self, window_seconds: float | None = None) -> dict[str, Any]:
        window = self._window(window_seconds)
        return {
            "window_seconds": window,
            "topics": _rows(self._db.query("console_topics", {})),
            "partitions": _rows(self._db.query("console_partitions", {})),
            "history": _rows(self._db.query("console_topic_history", {"seconds": window})),
        }

    def subscriptions(self) -> dict[str, Any]:
        return {
            "subscriptions": _rows(self._db.query("console_subscriptions", {})),
            "cursors": _rows(self._db.query("console_cursors", {})),
        }

    def transactions(self) -> dict[str, Any]:
        params = {"seconds": self._db.settings.console_history_seconds, "limit": ROW_LIMIT}
        rows = self._db.query("console_transactions", params)
        unfinished = [r["id"] for r in rows if r["state"] in ("OPEN", "COMMITTING", "ABORTING")]
        details = self._db.describe_transactions(unfinished[:DETAILED_TRANSACTIONS])
        for row in rows:
            row.update(details.get(row["id"], {"partition_list": None, "ack_list": None}))
        return {"transactions": _rows(rows)}

    def storage(self, window_seconds: float | None = None) -> dict[str, Any]:
        window = self._window(window_seconds)
        settings = self._db.settings
        return {
            "window_seconds": window,
            "history": _rows(self._db.query("console_storage_history", {"seconds": window})),
            "ledgers": _rows(self._db.query("console_ledgers", {"limit": ROW_LIMIT})),
            "gc_runs": _rows(self._db.query("console_gc_history", {"limit": ROW_LIMIT})),
            "failures": _rows(self._db.query("console_job_failures", {})),
            "topics": _rows(self._db.query("console_topics", {})),
            # The schedules as this process's settings say (the scheduler's may differ).
            "schedules": {
                "ttl": settings.ttl_check_interval_seconds,
                "retention": settings.retention_check_interval_seconds,
                "gc": settings.gc_minor_interval_seconds,
                "backlog_quota": settings.backlog_quota_check_interval_seconds,
            },
        }

    def actions(self) -> dict[str, Any]:
        return {"actions": _rows(self._db.query("console_actions", {"limit": ROW_LIMIT}))}

    def messages(
        self,
        topic: str,
        partition: int,
        *,
        offset: int | None = None,
        since: datetime | None = None,
        limit: int = 50,
    ) -> dict[str, Any]:
        """Committed messages of one partition from ``offset`` or from the
        publish time ``since`` (one of them; neither: from offset 0)."""
        validate_name(topic, "topic")
        if partition < 0:
            raise errors.InvalidArgumentError(f"partition must be 0 or more, not {partition}")
        if not 1 <= limit <= MAX_MESSAGES:
            raise errors.InvalidArgumentError(
                f"limit must be from 1 to {MAX_MESSAGES}, not {limit}"
            )
        if offset is not None and since is not None:
            raise errors.InvalidArgumentError("give an offset or a time, not both")
        params: dict[str, Any] = {"topic": topic, "partition": partition, "limit": limit}
        if since is not None:
            params["time"] = since if since.tzinfo else since.replace(tzinfo=UTC)
            name = "console_messages_from_time"
        else:
            if offset is not None and offset < 0:
                raise errors.InvalidArgumentError(f"offset must be 0 or more, not {offset}")
            params["offset"] = offset or 0
            name = "console_messages_from_offset"
        try:
            rows = self._db.query(name, params)
        except errors.PermissionDeniedError:
            raise errors.PermissionDeniedError(
                "permission denied: this console's role may not read payloads "
                "(txnq.committed_messages; txnq_reader shows how the queue is doing, not what "
                "it carries): run the console as a member of txnq_admin to browse messages"
            ) from None
        messages = []
        for row in rows:
            key = row["key"]
            messages.append(
                {
                    "partition": row["partition"],
                    "offset": row["entry_offset"],
                    "batch_index": row["batch_index"],
                    "key": key
                    if key is None or isinstance(key, str)
                    else bytes(key).decode("utf-8", errors="backslashreplace"),
                    "properties": jsonable(row["properties"]),
                    "publish_time": jsonable(row["publish_time"]),
                    "txn_id": row["txn_id"],
                    "payload": payload_views(row["payload"]),
                }
            )
        return {"topic": topic, "partition": partition, "messages": messages}
