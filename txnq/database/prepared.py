"""The hottest calls, run as statements prepared once per connection and
executed through libpq directly.

A single ``send()`` is one call of ``txnq.append_v6`` (and a consumer's
acknowledgement outside a transaction one of ``txnq.ack_v3``). Through a
psycopg cursor that call cost about 60 us of client CPU more than the statement
itself on the machine of docs/benchmarks.md (about a third of the producer's
CPU per send): the cursor, the prepared-statement cache's bookkeeping, the
per-call choice of a dumper for each parameter, psycopg's generator-driven
wait. Here the statement is prepared once per connection with the types
spelled out in its text (``$1::int4``, ...), its parameters are encoded by
type with no lookup (integers as text, :class:`~txnq.database.arrays.ByteaArray`
in binary, anything else through psycopg's own text dumpers) and
``PQexecPrepared`` runs it, releasing the GIL while it waits.

What this gives up, knowingly: the call waits inside libpq, so a Ctrl-C
reaches Python once the server answers (psycopg's own wait can be
interrupted sooner). Everything else is psycopg's: the connection and its
lock, its error classes (``psycopg.errors.error_from_result``), its text
dumpers and result loaders (``psycopg.adapt.Transformer``).

Only sync connections in autocommit or inside a transaction block take this
path, and only outside pipeline mode; :func:`txnq.database.plans` falls back
to a cursor otherwise. A statement the server no longer knows (``DISCARD
ALL``, ``DEALLOCATE``) is prepared again and the call repeated once: the
server ran nothing the first time.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import pq
from psycopg.adapt import PyFormat, Transformer
from psycopg.errors import error_from_result

from txnq.database.arrays import ByteaArray, ByteaArrayBinaryDumper
from txnq.database.queries import QUERIES

#: SQLSTATE invalid_sql_statement_name: the prepared statement is gone.
_STATEMENT_GONE = b"26000"
_TEXT = 0
_BINARY = 1
_RESULT_OK = (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK)
_USABLE = (pq.TransactionStatus.IDLE, pq.TransactionStatus.INTRANS)
_BYTEA_ARRAY = ByteaArrayBinaryDumper(ByteaArray)


class PreparedStatement:
    """A named query of ``sql/queries/prepared.sql`` (``$n`` parameters with
    their types cast in the text) run in place of the cursor query
    ``instead_of``. A cursor query called with named parameters names them in
    ``keys``, in the order of ``$1``, ``$2``, ...; one called with a tuple
    has none."""

    __slots__ = ("instead_of", "keys", "name", "statement_name", "text")

    def __init__(self, name: str, instead_of: str, keys: tuple[str, ...] | None = None) -> None:
        self.name = name
        self.instead_of = instead_of
        self.keys = keys
        self.statement_name = f"txnq_{name}".encode()  # the name PostgreSQL knows it by
        self.text = QUERIES[name].encode()

    def positional(self, params: Any) -> Sequence[Any] | None:
        """``params`` in ``$n`` order, or None when they do not fit this
        statement (the cursor query runs instead)."""
        if self.keys is None:
            return None if isinstance(params, dict) else params
        if not isinstance(params, dict) or len(params) != len(self.keys):
            return None
        try:
            return [params[key] for key in self.keys]
        except KeyError:
            return None


#: The cursor queries that have a prepared form, by the cursor query's name.
PREPARED: dict[str, PreparedStatement] = {
    s.instead_of: s
    for s in (
        PreparedStatement("append_prepared", "append_positional"),
        PreparedStatement("ack_lazy_prepared", "ack_lazy_positional"),
        PreparedStatement("append_prepared_unflushed", "append_positional_unflushed"),
        # A client transaction's open and its commit: two of the three calls of
        # a one-message transaction (the cursor's ~60 us of client CPU each,
        # which with several clients in one process is GIL time the others wait for).
        PreparedStatement("open_txn_prepared", "open_txn_unflushed", ("tc_id", "timeout_seconds")),
        PreparedStatement(
            "end_and_complete_txn_prepared",
            "end_and_complete_txn",
            ("txn_tc", "txn_seq", "commit", "reason"),
        ),
    )
}

#: The statements prepared on each connection (forgotten with the connection).
_prepared_on: weakref.WeakKeyDictionary[psycopg.Connection[Any], set[bytes]] = (
    weakref.WeakKeyDictionary()
)


def usable(conn: psycopg.Connection[Any]) -> bool:
    """Whether ``conn`` can run a prepared statement directly now: not in
    pipeline mode, not in a failed or busy transaction."""
    pgconn = conn.pgconn
    return pgconn.pipeline_status == pq.PipelineStatus.OFF and pgconn.transaction_status in _USABLE


def execute(
    conn: psycopg.Connection[Any], statement: PreparedStatement, params: Sequence[Any]
) -> list[tuple[Any, ...]]:
    """Run ``statement`` with ``params`` on ``conn`` (see :func:`usable`);
    its rows. Errors are psycopg's, as a cursor would raise them."""
    values, formats = _encode(conn, params)
    name = statement.statement_name
    known = _prepared_on.get(conn)
    if known is None:
        known = _prepared_on[conn] = set()
    with conn.lock:
        for attempt in (1, 2):
            if name not in known:
                _check(conn, conn.pgconn.prepare(name, statement.text))
                known.add(name)
            result = conn.pgconn.exec_prepared(name, values, formats, _TEXT)
            if result.status in _RESULT_OK:
                break
            if (
                attempt == 1
                and result.error_field(pq.DiagnosticField.SQLSTATE) == _STATEMENT_GONE
                # Outside a transaction block: nothing ran, and nothing failed with it.
                and conn.pgconn.transaction_status == pq.TransactionStatus.IDLE
            ):
                known.discard(name)
                continue
            _check(conn, result)
    transformer = Transformer(conn)
    transformer.set_pgresult(result)
    return transformer.load_rows(0, result.ntuples, tuple)


def _encode(conn: psycopg.Connection[Any], params: Sequence[Any]) -> tuple[list[Any], list[int]]:
    """Each parameter in the format its type is cheapest in; the statement's
    text names the types, so the server needs no OIDs."""
    values: list[Any] = []  # bytes, or None for NULL (libpq's own convention)
    formats: list[int] = []
    transformer: Any = None  # made only for a value of another type
    for value in params:
        if value is None:
            values.append(None)
            formats.append(_TEXT)
        elif value.__class__ is int:
            values.append(b"%d" % value)
            formats.append(_TEXT)
        elif value.__class__ is ByteaArray:
            values.append(_BYTEA_ARRAY.dump(value))
            formats.append(_BINARY)
        else:
            if transformer is None:
                transformer = Transformer(conn)
            dumped = transformer.get_dumper(value, PyFormat.TEXT).dump(value)
            values.append(None if dumped is None else bytes(dumped))
            formats.append(_TEXT)
    return values, formats


def _check(conn: psycopg.Connection[Any], result: pq.abc.PGresult) -> None:
    """Raise the error of a failed ``result`` as psycopg would."""
    if result.status in _RESULT_OK:
        return
    encoding = _encoding(conn)
    if conn.pgconn.status == pq.ConnStatus.BAD:
        # What psycopg raises for a lost connection: the plan reconnects.
        raise psycopg.OperationalError(
            f"the connection was lost: {conn.pgconn.get_error_message(encoding)}"
        )
    raise error_from_result(result, encoding=encoding)


def _encoding(conn: psycopg.Connection[Any]) -> str:
    try:
        return conn.info.encoding
    except psycopg.Error:  # a connection already gone has none to tell
        return "utf-8"
