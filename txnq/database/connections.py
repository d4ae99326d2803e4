"""Storage: the engine and connections to PostgreSQL, and how its errors
become txnq errors.

SQLAlchemy owns the engine and its pool (DESIGN.md); the data path uses the
psycopg connection underneath directly (binary parameters, automatic prepared
statements, pipelines, LISTEN/NOTIFY). Connections are in autocommit mode: one
data-path call is one statement is one round trip.
"""

from __future__ import annotations

import select
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from sqlalchemy import URL, Engine, create_engine, event, exc, make_url

from txnq import errors

# SQLSTATEs raised by the txnq SQL functions (class "TQ"), mapped to the error
# a Python caller sees. The SQL function headers list which one each raises.
SQLSTATE_ERRORS: dict[str, type[errors.TxnqError]] = {
    "TQ001": errors.TopicNotFoundError,
    "TQ002": errors.ProducerFencedError,
    "TQ003": errors.OutOfOrderSequenceError,
    "TQ004": errors.MessageTooLargeError,
    "TQ005": errors.InvalidArgumentError,
    "TQ006": errors.SubscriptionNotFoundError,
    "TQ007": errors.ConsumerBusyError,
    "TQ008": errors.SubscriptionTypeMismatchError,
    "TQ009": errors.ConsumerExpiredError,
    "TQ010": errors.TopicExistsError,
    "TQ011": errors.TopicBusyError,
    "TQ012": errors.TransactionConflictError,
    "TQ013": errors.TransactionEndedError,
    "TQ014": errors.TransactionNotFoundError,
    "TQ015": errors.TransactionTimedOutError,
    "TQ016": errors.BacklogQuotaExceededError,  # policy producer_error
    "TQ017": errors.BacklogQuotaExceededError,  # policy producer_hold: the producer waits first
    "TQ018": errors.PermissionDeniedError,  # no grant on the topic, or another role's transaction
    "TQ020": errors.GcBusyError,  # compaction's swap could not lock txnq.entries in time
    "TQ030": errors.NotSupportedThroughProxyError,  # a cluster proxy does not route it yet
    "TQ031": errors.ClusterInconsistentError,  # the shards of a cluster answered differently
    # PostgreSQL's own "permission denied" (no EXECUTE on a function, no
    # privilege on a table): the role is in none of the txnq roles that may.
    "42501": errors.PermissionDeniedError,
}

#: Appended to PostgreSQL's own permission errors (42501), which say what was
#: denied but not what to do.
INSUFFICIENT_PRIVILEGE_HINT = (
    "the role is not in the txnq role that may do this (txnq_client for applications, "
    "txnq_worker for coordinators, txnq_scheduler for the scheduler): see docs/security.md"
)


def sqlalchemy_url(dsn: str) -> URL:
    """A SQLAlchemy URL (psycopg 3 driver) for a libpq URL or keyword DSN."""
    if dsn.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        url = make_url(dsn.replace("postgres://", "postgresql://", 1))
        return url.set(drivername="postgresql+psycopg")
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        raise errors.ConfigurationError(
            f"DSN is neither a postgresql:// URL nor a libpq keyword string: {exc}"
        ) from None
    text = {k: str(v) for k, v in params.items()}
    port = text.pop("port", None)
    return URL.create(
        "postgresql+psycopg",
        username=text.pop("user", None),
        password=text.pop("password", None),
        host=text.pop("host", None),
        port=int(port) if port else None,
        database=text.pop("dbname", None),
        query=text,
    )


def libpq_dsn(dsn: str) -> str:
    """The DSN as libpq understands it (SQLAlchemy driver prefixes removed)."""
    return sqlalchemy_url(dsn).set(drivername="postgresql").render_as_string(False)


def create_engine_for(dsn: str, *, pool_size: int = 5, application_name: str = "txnq") -> Engine:
    url = sqlalchemy_url(dsn)
    if "application_name" not in url.query:
        url = url.update_query_dict({"application_name": application_name})
    engine = create_engine(
        url,
        isolation_level="AUTOCOMMIT",
        pool_size=pool_size,
        max_overflow=pool_size * 4,
        pool_recycle=3600,
    )
    event.listen(engine, "checkout", _refuse_dead_connection)
    return engine


def _refuse_dead_connection(dbapi_connection: Any, record: Any, proxy: Any) -> None:
    """The pool's check at checkout, instead of SQLAlchemy's ``pool_pre_ping``.

    A pre-ping is a round trip (``SELECT 1``) before every pooled call: with a
    transaction's open and commit on the pool, it was a fifth of ``commit()``'s
    client time (issue 23, docs/benchmarks.md). A connection idle in the pool
    sends nothing and receives nothing, unless the server ended it: a
    terminated backend, a server restart or an idle-session timeout send an
    error and close the socket, and a dead socket reads as closed. So a socket
    that has something to read, or a connection psycopg knows is closed, is
    thrown away (``DisconnectionError``: the pool connects anew, up to three
    times) before the caller gets it, with no round trip. What this cannot see
    (a peer that vanished without closing, e.g. a cut network) a pre-ping
    would only see after its own timeout too; the calls' retries cover it.
    """
    conn = getattr(dbapi_connection, "driver_connection", dbapi_connection)
    try:
        dead = conn.closed or conn.broken or _readable(conn.fileno())
    except (OSError, ValueError, psycopg.Error):
        dead = True
    if dead:
        raise exc.DisconnectionError("the pooled connection was closed by the server")


def _readable(fd: int) -> bool:
    """Whether the socket ``fd`` has data or an end to read now (no wait).
    poll() where there is one: select() refuses descriptors past 1024."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLPRI)
        return bool(poller.poll(0))
    return bool(select.select([fd], [], [], 0)[0])


def connect(dsn: str, *, application_name: str = "txnq") -> psycopg.Connection[Any]:
    """A dedicated autocommit connection, for a producer, consumer or listener."""
    try:
        return psycopg.connect(
            libpq_dsn(dsn), autocommit=True, application_name=application_name, connect_timeout=10
        )
    except psycopg.OperationalError as exc:
        raise errors.ServerUnavailableError(
            f"cannot connect to PostgreSQL: {exc}".strip()
            + " — check TXNQ_DSN / --dsn and that the server is running"
        ) from exc


def scalar(conn: psycopg.Connection[Any], sql: str, params: Any = None) -> Any:
    """The first column of the first row of ``sql``; a query that returns no row
    is a bug in the caller's SQL, so it raises."""
    row = conn.execute(sql, params).fetchone()
    if row is None:
        raise RuntimeError(f"query returned no row: {sql.strip().splitlines()[0]}")
    return row[0]


def translate(exc: psycopg.Error) -> errors.TxnqError | None:
    """The txnq error for a PostgreSQL error raised by a txnq function, else None."""
    diag = exc.diag
    kind = SQLSTATE_ERRORS.get(exc.sqlstate or "")
    if kind is None:
        return None
    message = diag.message_primary or str(exc)
    if diag.message_hint:
        message = f"{message} ({diag.message_hint})"
    elif exc.sqlstate == "42501":
        message = f"{message} ({INSUFFICIENT_PRIVILEGE_HINT})"
    return kind(message)


#: SQLSTATEs of a session PostgreSQL ended (admin or crash shutdown, cannot connect now).
_SESSION_ENDED = ("57P01", "57P02", "57P03")


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` means PostgreSQL could not be reached (a lost or refused
    connection, a server shutting down), as opposed to one statement failing
    on what it found: background work stops its run and tries again later
    instead of recording a failure of one topic or transaction."""
    if isinstance(exc, errors.ServerUnavailableError | psycopg.InterfaceError):
        return True
    if isinstance(exc, psycopg.OperationalError):
        state = exc.sqlstate or ""
        return not state or state.startswith("08") or state in _SESSION_ENDED
    return False


@contextmanager
def translated_errors() -> Iterator[None]:
    """Re-raise PostgreSQL errors of txnq functions as their txnq errors."""
    try:
        yield
    except psycopg.Error as exc:
        mapped = translate(exc)
        if mapped is None:
            raise
        raise mapped from None
