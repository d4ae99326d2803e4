"""Plans: the client's database logic written once, run by two faces.

The producer, consumer, transaction and client logic that talks to
PostgreSQL is written as *plans*: generators that yield steps (run this named
query, these in one PostgreSQL transaction, sleep, reconnect, wait for a
NOTIFY) and receive each step's result. They never touch a connection.
:func:`run` drives a plan on a blocking psycopg connection (``txnq.Client``),
:func:`arun` on an ``AsyncConnection`` (``txnq.aio.Client``), so the sync and
asyncio clients share every decision, retry and error mapping; only the
drivers, the waiting and the locks differ. (psycopg itself generates its sync
code from its async code; a plan gives the same single source without a code
generator.)

Errors: a step that fails is thrown into the plan at its ``yield``. A
PostgreSQL error of a txnq function arrives as its :class:`TxnqError` (see
``txnq.database.connections.translate``) unless the step says ``raw=True``; a lost
connection arrives as ``psycopg.OperationalError`` so the plan can reconnect
and retry.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import psycopg
from psycopg import pq

from txnq.database import prepared
from txnq.database.connections import translate
from txnq.database.queries import QUERIES
from txnq.messages import lenient_rows, use_message_loaders

T = TypeVar("T")

Result = Literal["one", "all", "value", "none"]


@dataclass(frozen=True)
class Call:
    """Run the named query (``txnq.database.queries.QUERIES``) with ``params``.

    ``result``: "one" (the first row as a tuple, or None), "all" (the rows),
    "value" (the first column of the first row, or None), "none".
    ``binary``: binary results (bytea payloads as bytes without parsing).
    ``raw``: throw the psycopg error into the plan as it is (the plan reads
    its SQLSTATE), not its txnq error.
    ``messages``: the rows are messages (fetch, claim): their properties are
    checked as they load, and when a value cannot be decoded the rows are
    loaded again with :class:`txnq.messages.Undecodable` in its place
    (:func:`txnq.messages.lenient_rows`, a ``LenientRows`` list) instead of
    failing the call: the plan decides message by message.
    ``shard_key``: (topic id, partition) of a call a cluster's proxy forwards
    unchanged to the shard owning that partition; a face with direct routes
    (txnq.database.routes) runs it on that shard's connection instead.
    """

    name: str
    params: dict[str, Any] | Sequence[Any]
    result: Result = "one"
    binary: bool = False
    raw: bool = False
    messages: bool = False
    shard_key: tuple[int, int] | None = None


@dataclass(frozen=True)
class Batch:
    """Several calls in one round trip: in one PostgreSQL transaction
    (``atomic``, all or nothing) or pipelined (``pipeline``). The result is
    the list of the calls' results. With ``atomic``, ``check(results)`` runs
    before the commit and may raise to roll the whole batch back. A
    ``pipeline`` on one autocommit connection ends in one sync, and the
    extended protocol runs everything up to a sync as one implicit
    transaction: one commit, and a failed call rolls back the calls before
    it and skips the rest (txnq.producer.decided counts on that; through a
    cluster's routes the calls of each shard are such a transaction)."""

    calls: Sequence[Call]
    atomic: bool = False
    pipeline: bool = False
    check: Callable[[list[Any]], None] | None = None


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Reconnect:
    """Replace the face's connection (it was lost). A failure to connect is
    thrown into the plan as ServerUnavailableError or OperationalError."""


@dataclass(frozen=True)
class Listen:
    """Wait up to ``timeout`` seconds for a NOTIFY on the face's connection
    (or for the face to be woken up)."""

    timeout: float


@dataclass(frozen=True)
class ListenOn:
    """From now on, let a :class:`Listen` also wait for NOTIFYs on these other
    databases, by number (a cluster's shards, ``{shard: dsn}``: the partitions'
    owners, where their appends notify), on connections of the face's own,
    LISTENing before this step returns; those no longer named are closed. A
    database that cannot be reached is left out (the poll covers it): this
    step never fails."""

    dsns: Mapping[int, str]


@dataclass(frozen=True)
class WaitRoom:
    """Wait up to ``timeout`` seconds for room in a consumer's receive queue
    (or for it to be closed); the face knows the queue."""

    timeout: float


Step = Call | Batch | Sleep | Reconnect | Listen | ListenOn | WaitRoom
Plan = Generator[Step, Any, T]


@dataclass
class SyncIO:
    """What :func:`run` needs of a sync face: the connection, and how to
    replace it, wait for a NOTIFY, wait for room and listen on other databases."""

    connection: Callable[[], psycopg.Connection[Any]]
    reconnect: Callable[[], None] = field(default=lambda: None)
    listen: Callable[[float], None] | None = None
    wait_room: Callable[[float], None] | None = None
    listen_on: Callable[[Mapping[int, str]], None] | None = None
    #: A keyed call's direct connection to its shard, or None (the face's own).
    routed: Callable[[tuple[int, int]], psycopg.Connection[Any] | None] | None = None


@dataclass
class AsyncIO:
    """What :func:`arun` needs of an asyncio face."""

    connection: Callable[[], Awaitable[psycopg.AsyncConnection[Any]]]
    reconnect: Callable[[], Awaitable[None]]
    listen: Callable[[float], Awaitable[None]] | None = None
    wait_room: Callable[[float], Awaitable[None]] | None = None
    listen_on: Callable[[Mapping[int, str]], Awaitable[None]] | None = None
    routed: Callable[[tuple[int, int]], Awaitable[psycopg.AsyncConnection[Any] | None]] | None = (
        None
    )


def _shape(rows: list[Any] | None, result: Result) -> Any:
    if result == "none":
        return None
    if result == "all":
        return rows or []
    first = rows[0] if rows else None
    if result == "one":
        return None if first is None else tuple(first)
    return None if first is None else first[0]


def _thrown(step: Step, exc: BaseException) -> BaseException:
    """The error the plan sees for a failed step."""
    raw = isinstance(step, Call) and step.raw
    if isinstance(exc, psycopg.Error) and not raw:
        mapped = translate(exc)
        if mapped is not None:
            mapped.__cause__ = None
            mapped.__suppress_context__ = True
            return mapped
    return exc


#: A call whose connection the server ended with "terminating connection due
#: to administrator command" (57P01: pg_terminate_backend, a restart, an
#: idle-session timeout) is run once more on a new connection: the server
#: sends that error instead of a result only for a statement it did not
#: commit (a backend ends between statements; one ended during a statement
#: rolls it back), so the call had no effect. The pool's check at checkout
#: (connections._refuse_dead_connection) catches a connection ended while
#: idle; this catches one ended just after it was checked out. Any other
#: lost connection is the plan's (and the caller's) to handle: its call may
#: have committed.
ended_before_it_ran = psycopg.errors.AdminShutdown


def run(plan: Plan[T], io: SyncIO) -> T:
    """Drive ``plan`` on a blocking connection; return what it returns."""
    outcome: Any = None
    failure: BaseException | None = None
    while True:
        try:
            step = plan.throw(failure) if failure is not None else plan.send(outcome)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        failure = None
        try:
            try:
                outcome = _step(step, io)
            except ended_before_it_ran:
                if not isinstance(step, Call):
                    raise
                io.reconnect()  # see ended_before_it_ran
                outcome = _step(step, io)
        except Exception as exc:
            failure = _thrown(step, exc)
            outcome = None


async def arun(plan: Plan[T], io: AsyncIO) -> T:
    """Drive ``plan`` on an asyncio connection; return what it returns."""
    outcome: Any = None
    failure: BaseException | None = None
    while True:
        try:
            step = plan.throw(failure) if failure is not None else plan.send(outcome)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        failure = None
        try:
            try:
                outcome = await _astep(step, io)
            except ended_before_it_ran:
                if not isinstance(step, Call):
                    raise
                await io.reconnect()  # see ended_before_it_ran
                outcome = await _astep(step, io)
        except Exception as exc:
            failure = _thrown(step, exc)
            outcome = None


def _connection_for(io: SyncIO, call: Call) -> psycopg.Connection[Any]:
    """The connection ``call`` runs on: its shard's direct one when the face
    has direct routes and the call a key (txnq.database.routes), else the face's."""
    if call.shard_key is not None and io.routed is not None:
        conn = io.routed(call.shard_key)
        if conn is not None:
            return conn
    return io.connection()


def _step(step: Step, io: SyncIO) -> Any:
    if isinstance(step, Call):
        return _call(_connection_for(io, step), step)
    if isinstance(step, Batch):
        conns = [_connection_for(io, call) for call in step.calls] if io.routed else []
        if len({id(c) for c in conns}) > 1:
            if step.atomic:
                # All or nothing needs one connection: through the proxy,
                # where the calls reach several shards as they always did.
                conns = []
            elif step.pipeline:
                return _split_pipeline(step.calls, conns)
            else:
                return [_call(conn, call) for conn, call in zip(conns, step.calls, strict=True)]
        conn = conns[0] if conns else io.connection()
        if step.atomic:
            # Pipelined: BEGIN and the calls go in one round trip, COMMIT (or
            # the ROLLBACK of a failed check) in a second, instead of one
            # each (a transactional cumulative ack: 4 round trips before).
            with conn.pipeline() as pipeline, conn.transaction():
                cursors = [_pipelined(conn, call) for call in step.calls]
                pipeline.sync()
                results = [
                    _shape(_rows(cur, c) if _returns_rows(cur) else None, c.result)
                    for cur, c in cursors
                ]
                if step.check is not None:
                    step.check(results)
            return results
        if step.pipeline:
            return _pipeline(conn, step.calls)
        return [_call(conn, call) for call in step.calls]
    if isinstance(step, Sleep):
        time.sleep(max(0.0, step.seconds))
        return None
    if isinstance(step, Reconnect):
        io.reconnect()
        return None
    if isinstance(step, Listen):
        if io.listen is not None:
            io.listen(step.timeout)
        return None
    if isinstance(step, WaitRoom):
        if io.wait_room is not None:
            io.wait_room(step.timeout)
        return None
    if isinstance(step, ListenOn):
        if io.listen_on is not None:
            io.listen_on(step.dsns)
        return None
    raise TypeError(f"not a plan step: {step!r}")


def _pipeline(conn: psycopg.Connection[Any], calls: Sequence[Call]) -> list[Any]:
    """``calls`` pipelined on ``conn`` (one round trip); their results."""
    cursors = []
    with conn.pipeline():
        for call in calls:
            cur = conn.cursor(binary=call.binary)
            if call.messages:
                use_message_loaders(cur)
            cur.execute(QUERIES[call.name], call.params)
            cursors.append((cur, call))
    return [_shape(_rows(cur, c) if _returns_rows(cur) else None, c.result) for cur, c in cursors]


def _split_pipeline(calls: Sequence[Call], conns: Sequence[psycopg.Connection[Any]]) -> list[Any]:
    """A pipelined batch whose calls run on several connections (shards):
    one pipeline per connection, the results in the calls' order."""
    groups: dict[int, list[int]] = {}
    for index, conn in enumerate(conns):
        groups.setdefault(id(conn), []).append(index)
    results: list[Any] = [None] * len(calls)
    for indexes in groups.values():
        for index, result in zip(
            indexes, _pipeline(conns[indexes[0]], [calls[i] for i in indexes]), strict=True
        ):
            results[index] = result
    return results


def _pipelined(conn: psycopg.Connection[Any], call: Call) -> tuple[psycopg.Cursor[Any], Call]:
    """Queue ``call`` on ``conn`` in pipeline mode; its cursor, read after a sync."""
    cur = conn.cursor(binary=call.binary)
    if call.messages:
        use_message_loaders(cur)
    cur.execute(QUERIES[call.name], call.params)
    return cur, call


def _call(conn: psycopg.Connection[Any], call: Call) -> Any:
    statement = prepared.PREPARED.get(call.name)
    if statement is not None and prepared.usable(conn):
        # The hot path (a single send): txnq.database.prepared says why.
        params = statement.positional(call.params)
        if params is not None:
            return _shape(prepared.execute(conn, statement, params), call.result)
    with conn.cursor(binary=call.binary) as cur:
        if call.messages:
            use_message_loaders(cur)
        cur.execute(QUERIES[call.name], call.params)
        return _shape(_rows(cur, call) if _returns_rows(cur) else None, call.result)


def _returns_rows(cur: psycopg.Cursor[Any] | psycopg.AsyncCursor[Any]) -> bool:
    """Whether the statement returned a result set: ``cur.description``'s
    test, without building its Column objects (about 5 us a call)."""
    res = cur.pgresult
    return res is not None and (res.nfields > 0 or res.status == pq.ExecStatus.TUPLES_OK)


def _rows(cur: psycopg.Cursor[Any], call: Call) -> list[Any]:
    if not call.messages:
        return cur.fetchall()
    try:
        return cur.fetchall()
    except psycopg.DataError:
        return lenient_rows(cur)  # the same result, loaded again value by value


async def _aconnection_for(io: AsyncIO, call: Call) -> psycopg.AsyncConnection[Any]:
    """As :func:`_connection_for`, for the asyncio face."""
    if call.shard_key is not None and io.routed is not None:
        conn = await io.routed(call.shard_key)
        if conn is not None:
            return conn
    return await io.connection()


async def _astep(step: Step, io: AsyncIO) -> Any:
    if isinstance(step, Call):
        return await _acall(await _aconnection_for(io, step), step)
    if isinstance(step, Batch):
        conns = [await _aconnection_for(io, call) for call in step.calls] if io.routed else []
        if len({id(c) for c in conns}) > 1:
            if step.atomic:
                conns = []  # as in _step: through the proxy
            elif step.pipeline:
                return await _asplit_pipeline(step.calls, conns)
            else:
                return [
                    await _acall(conn, call) for conn, call in zip(conns, step.calls, strict=True)
                ]
        conn = conns[0] if conns else await io.connection()
        if step.atomic:
            # Pipelined, as in _step.
            async with conn.pipeline() as pipeline, conn.transaction():
                cursors = []
                for call in step.calls:
                    cur = conn.cursor(binary=call.binary)
                    if call.messages:
                        use_message_loaders(cur)
                    await cur.execute(QUERIES[call.name], call.params)
                    cursors.append((cur, call))
                await pipeline.sync()
                results = [
                    _shape(await _arows(cur, c) if _returns_rows(cur) else None, c.result)
                    for cur, c in cursors
                ]
                if step.check is not None:
                    step.check(results)
            return results
        if step.pipeline:
            return await _apipeline(conn, step.calls)
        return [await _acall(conn, call) for call in step.calls]
    if isinstance(step, Sleep):
        await asyncio.sleep(max(0.0, step.seconds))
        return None
    if isinstance(step, Reconnect):
        await io.reconnect()
        return None
    if isinstance(step, Listen):
        if io.listen is not None:
            await io.listen(step.timeout)
        return None
    if isinstance(step, WaitRoom):
        if io.wait_room is not None:
            await io.wait_room(step.timeout)
        return None
    if isinstance(step, ListenOn):
        if io.listen_on is not None:
            await io.listen_on(step.dsns)
        return None
    raise TypeError(f"not a plan step: {step!r}")


async def _apipeline(conn: psycopg.AsyncConnection[Any], calls: Sequence[Call]) -> list[Any]:
    """As :func:`_pipeline`, for the asyncio face."""
    cursors = []
    async with conn.pipeline():
        for call in calls:
            cur = conn.cursor(binary=call.binary)
            if call.messages:
                use_message_loaders(cur)
            await cur.execute(QUERIES[call.name], call.params)
            cursors.append((cur, call))
    return [
        _shape(await _arows(cur, c) if _returns_rows(cur) else None, c.result) for cur, c in cursors
    ]


async def _asplit_pipeline(
    calls: Sequence[Call], conns: Sequence[psycopg.AsyncConnection[Any]]
) -> list[Any]:
    """As :func:`_split_pipeline`, for the asyncio face."""
    groups: dict[int, list[int]] = {}
    for index, conn in enumerate(conns):
        groups.setdefault(id(conn), []).append(index)
    results: list[Any] = [None] * len(calls)
    for indexes in groups.values():
        answers = await _apipeline(conns[indexes[0]], [calls[i] for i in indexes])
        for index, result in zip(indexes, answers, strict=True):
            results[index] = result
    return results


async def _acall(conn: psycopg.AsyncConnection[Any], call: Call) -> Any:
    async with conn.cursor(binary=call.binary) as cur:
        if call.messages:
            use_message_loaders(cur)
        await cur.execute(QUERIES[call.name], call.params)
        return _shape(await _arows(cur, call) if _returns_rows(cur) else None, call.result)


async def _arows(cur: psycopg.AsyncCursor[Any], call: Call) -> list[Any]:
    if not call.messages:
        return await cur.fetchall()
    try:
        return await cur.fetchall()
    except psycopg.DataError:
        return lenient_rows(cur)


def retried_once(step: Call | Batch) -> Plan[Any]:
    """``step`` for idempotent queries: on a lost connection, reconnect and
    run it once more (acks, seeks, nacks, registrations)."""
    for attempt in (1, 2):
        try:
            return (yield step)
        except psycopg.OperationalError:
            if attempt == 2:
                raise
            yield Reconnect()
    raise AssertionError("unreachable")


def single(call: Call) -> Plan[Any]:
    """A plan of one call."""
    return (yield call)
