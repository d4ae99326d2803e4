"""What the sync and asyncio clients share: settings, the checks of their
arguments, and the plans that open transactions and start transactional
sessions. A client is one per process and database, the factory of
producers, consumers and transactions, and the owner of the connections."""

from __future__ import annotations

import contextlib
import itertools
import random
from datetime import datetime
from typing import LiteralString, Protocol

import psycopg

from txnq import errors
from txnq.database.plans import Call, Plan
from txnq.database.queries import QUERIES
from txnq.durations import Duration, parse_duration
from txnq.settings import Settings
from txnq.transaction.base import TxnId


def is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def named_query(name: object) -> LiteralString:
    """The text of a named query (sql/queries/*.sql)."""
    text = QUERIES.get(name) if isinstance(name, str) else None
    if text is None:
        raise errors.InvalidArgumentError(
            f"{name!r} is no named query of txnq: see sql/queries/*.sql for the names"
        )
    return text


class Closeable(Protocol):
    def close(self) -> None: ...


class ClientBase:
    """What the sync and asyncio clients share: settings, and the plans that
    open transactions and start transactional sessions (txnq.database.plans)."""

    settings: Settings
    #: Whether the DSN is a txnq cluster's proxy: looked up once, at the first
    #: subscribe (txnq.database.shards), never on a client that only produces.
    _cluster_proxy: bool | None = None

    def _init_transactions(self) -> None:
        # Coordinators are picked round-robin from a random start, so many
        # clients spread over them; the server's limits are read once.
        self._tc_cycle = itertools.count(random.randrange(1 << 16))
        self._txn_limits: tuple[int, float] | None = None

    def _open_txn_plan(self, timeout: Duration | None) -> Plan[tuple[TxnId, float, datetime]]:
        seconds = parse_duration(
            self.settings.txn_default_timeout if timeout is None else timeout,
            what="timeout",
            allow_zero=False,
        )
        tc_count, max_timeout = yield from self._limits_plan()
        if seconds > max_timeout:
            raise errors.InvalidArgumentError(
                f"a transaction timeout of {seconds:g}s is above the server maximum of "
                f"{max_timeout:g}s: shorten it, or raise TXNQ_TXN_MAX_TIMEOUT and run txnq migrate"
            )
        tc_id = next(self._tc_cycle) % tc_count
        # Unflushed: the open, appends and acks of the transaction commit
        # without waiting for the WAL flush; its decision waits for them all.
        row = yield Call("open_txn_unflushed", {"tc_id": tc_id, "timeout_seconds": seconds})
        assert row is not None
        return TxnId(row[0], row[1]), seconds, row[2]

    @staticmethod
    def _check_dsn(dsn: object, settings: object = None) -> None:
        if dsn is not None and not isinstance(dsn, str):
            raise errors.InvalidArgumentError(
                f"dsn must be a str such as 'postgresql://user@host/db', not {type(dsn).__name__}"
            )
        if isinstance(dsn, str) and ("\x00" in dsn or not is_utf8(dsn)):
            raise errors.InvalidArgumentError(
                "dsn holds characters no DSN has (NUL, a lone surrogate): give a DSN such as "
                "'postgresql://user@host/db'"
            )
        if settings is not None and not isinstance(settings, Settings):
            raise errors.InvalidArgumentError(
                "settings must be a txnq.Settings (e.g. txnq.load_settings(...)), "
                f"not {type(settings).__name__}"
            )

    @staticmethod
    def _no_attach_timeout(timeout: object) -> None:
        if timeout is not None:
            raise errors.InvalidArgumentError(
                "an application transaction lasts as long as the connection's own "
                "transaction: set a timeout there (e.g. SET LOCAL "
                "idle_in_transaction_session_timeout), not here"
            )

    def _limits_plan(self) -> Plan[tuple[int, float]]:
        """(coordinator count, TXN_MAX_TIMEOUT seconds), read once."""
        if self._txn_limits is None:
            row = yield Call("txn_limits", {})
            assert row is not None
            self._txn_limits = (int(row[0]), float(row[1]))
        return self._txn_limits

    def _cluster_proxy_plan(self) -> Plan[bool]:
        """Whether this client's database is a cluster's proxy, read once (one
        catalog lookup): its consumers then LISTEN on the shards."""
        if self._cluster_proxy is None:
            self._cluster_proxy = bool((yield Call("cluster_is_proxy", {}, "value")))
        return self._cluster_proxy

    def _init_transactional_id_plan(self, transactional_id: str) -> Plan[int]:
        """Start a new session of a transactional id for one producer (Kafka's
        ``initTransactions``); returns its epoch. Every producer created with
        the id starts its own, in this client as in any other: the older
        sessions are fenced and the transactions they left open are aborted
        (reason fenced). Sharing one session between the producers of a client
        would let the older producer's open transaction commit."""
        row = yield Call("init_transactional_id", {"transactional_id": transactional_id})
        assert row is not None
        epoch = int(row[0])
        # The fenced transactions are decided (ABORTING); finish them now, as
        # Kafka's initTransactions does, so the new session starts clean. A
        # coordinator worker finishes any this cannot.
        for tc_id, txn_seq in zip(row[1], row[2], strict=True):
            with contextlib.suppress(errors.TxnqError, psycopg.Error):
                yield Call("complete_txn", {"txn_tc": tc_id, "txn_seq": txn_seq})
        return epoch
