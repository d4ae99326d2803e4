"""txnq as a PySpark Python Data Source: ``spark.read.format("txnq")``,
``spark.readStream.format("txnq")`` and ``df.write.format("txnq")``.

Register it once per session with :func:`register` (``spark_session()`` does).
Python data sources run in Spark's Python workers and talk to PostgreSQL with
psycopg (no JDBC driver needed); :func:`txnq.spark.read_committed` is the JDBC
path.

Options (all strings, as Spark passes them):

- ``dsn`` (default: TXNQ_DSN), ``topic`` (or ``.load("topic")``/``.save("topic")``);
- read: ``startingOffsets`` / ``endingOffsets``: ``earliest``, ``latest`` or
  JSON ``{"0": 12, "1": 40}`` (start inclusive, end exclusive, as Kafka's);
  ``startingTimestamp`` (ISO 8601 with zone); ``parallelism`` (pieces of the
  range, default 2 per txnq partition);
- write: ``transactionalId`` (default: a fresh one per write),
  ``transactionTimeout`` (default: the server's TXN_MAX_TIMEOUT).

**Streaming offsets** are per-partition offsets ``{"<partition>": <next
offset>}``: ``latestOffset`` is the max read offset + 1 of each partition, so
every micro-batch is an immutable committed range, and Structured Streaming's
checkpoint (offset log, then commit log) replays exactly the same range after a
restart: with an idempotent sink (the file sink, ``foreachBatch`` keyed by
batch id) the result is exactly once.

**Writes** land all rows or none: the driver opens one transaction through a
:class:`~txnq.spark.two_phase_commit.TwoPhaseCommitSink`, every task appends
into it (idempotently, so a retried task adds nothing twice), and the job's
commit commits it; a failed job aborts it. The DataFrame needs a ``value`` (or
``payload``) column of binary or string; ``key`` (string/binary),
``properties`` (map<string,string>), ``event_time`` (timestamp) and
``partition`` (int) are optional.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from txnq.errors import InvalidArgumentError
from txnq.spark.ranges import Bound, CommittedRange, check_bound, split
from txnq.spark.read import SCHEMA_DDL

NAME = "txnq"


def register(spark: Any) -> None:
    """Make ``format("txnq")`` available in ``spark``."""
    spark.dataSource.register(TxnqDataSource)


def _topic(options: dict[str, str]) -> str:
    topic = options.get("topic") or options.get("path")
    if not topic:
        raise InvalidArgumentError(
            'name the topic: .option("topic", "orders") or .load("orders") / .save("orders")'
        )
    return topic


def _bound(options: dict[str, str], name: str, default: str) -> Bound:
    raw = options.get(name, default)
    if raw in ("earliest", "latest"):
        return raw
    try:
        parsed = json.loads(raw)
    except ValueError:
        raise InvalidArgumentError(
            f'option {name} must be earliest, latest or JSON such as {{"0": 12}}, not {raw!r}'
        ) from None
    return check_bound(parsed, name)


def _resolve(options: dict[str, str], start: Bound, end: Bound) -> CommittedRange:
    from txnq.spark.read import committed_range

    return committed_range(_topic(options), start, end, dsn=options.get("dsn"))


def _resolve_with_shards(
    options: dict[str, str], start: Bound, end: Bound
) -> tuple[CommittedRange, dict[int, str]]:
    """The range, and per partition the DSN of its shard through a cluster's
    proxy (empty on one server: every piece reads at the option's DSN)."""
    from txnq.client import Client
    from txnq.database.shards import partition_dsns
    from txnq.spark.read import committed_range, partition_count

    with Client(options.get("dsn")) as client:
        committed = committed_range(_topic(options), start, end, client=client)
        with client.connection() as conn:
            dsns = partition_dsns(conn, client.dsn, committed.topic_id, partition_count(committed))
    return committed, dsns


def _with_dsn(options: dict[str, str]) -> dict[str, str]:
    """The options with the DSN resolved on the driver (TXNQ_DSN, or the
    embedded server's), so Python workers connect to the same server."""
    if options.get("dsn"):
        return options
    from txnq.client import Client

    with Client() as client:
        return {**options, "dsn": client.dsn}


@dataclass
class RangePiece(InputPartition):  # type: ignore[misc, unused-ignore]
    """One Spark partition: an offset interval of one txnq partition."""

    dsn: str | None
    topic_id: int
    partition: int
    start: int
    end: int


def _read_piece(piece: RangePiece) -> Iterator[tuple[Any, ...]]:
    import psycopg

    from txnq.database.queries import QUERIES
    from txnq.messages import decode_properties

    assert piece.dsn is not None  # resolved on the driver (_with_dsn)
    with psycopg.connect(piece.dsn) as conn, conn.cursor(name="txnq_spark_read") as cursor:
        cursor.itersize = 2000
        cursor.execute(
            QUERIES["spark_read_range"],
            {
                "topic_id": piece.topic_id,
                "partition": piece.partition,
                "start_offset": piece.start,
                "end_offset": piece.end,
            },
        )
        for row in cursor:
            topic, partition, offset, batch_index, key, props, payload, published, event, txn = row
            yield (
                topic,
                partition,
                offset,
                batch_index,
                None if key is None else bytes(key),
                None if props is None else decode_properties(props),
                bytes(payload),
                published,
                event,
                txn,
            )


def _parallelism(options: dict[str, str], default: int) -> int:
    raw = options.get("parallelism")
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise InvalidArgumentError(f"option parallelism must be a positive int, not {raw!r}")
    return value


def _pieces(
    committed: CommittedRange, dsn: str | None, slices: int, dsns: dict[int, str]
) -> list[RangePiece]:
    """The pieces of the range, each read at the DSN of its partition's shard
    (``dsns``, through a cluster's proxy) or at ``dsn``."""
    return [
        RangePiece(dsns.get(partition, dsn), committed.topic_id, partition, lo, hi)
        for partition, lo, hi in split(committed, slices)
    ]


class TxnqReader(DataSourceReader):  # type: ignore[misc, unused-ignore]
    """A batch read of a committed range, fixed when the query is planned."""

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        start: Bound = _bound(options, "startingOffsets", "earliest")
        if options.get("startingTimestamp"):
            start = check_bound(
                datetime.fromisoformat(options["startingTimestamp"]), "startingTimestamp"
            )
        end = _bound(options, "endingOffsets", "latest")
        self.range, self.dsns = _resolve_with_shards(options, start, end)

    def partitions(self) -> Sequence[InputPartition]:
        slices = _parallelism(self.options, 2 * max(1, len(self.range.offsets)))
        return _pieces(self.range, self.options.get("dsn"), slices, self.dsns) or [
            RangePiece(None, self.range.topic_id, 0, 0, 0)
        ]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, RangePiece)
        if partition.end <= partition.start:
            return iter(())
        return _read_piece(partition)


class TxnqStreamReader(DataSourceStreamReader):  # type: ignore[misc, unused-ignore]
    """Micro-batches of committed ranges; offsets are ``{"<partition>": next offset}``."""

    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        self.dsn = options.get("dsn")

    def initialOffset(self) -> dict[str, int]:
        start = _bound(self.options, "startingOffsets", "earliest")
        committed = _resolve(self.options, start, start)
        return {str(p): s for p, (s, _) in committed.offsets.items()}

    def latestOffset(
        self, start: dict[str, int] | None = None, limit: Any = None
    ) -> dict[str, int]:
        # The max read offsets of now (+1); never behind ``start`` (a
        # partition added since the last batch starts at its earliest offset).
        committed = _resolve(self.options, "earliest", "latest")
        latest = {str(p): e for p, (_, e) in committed.offsets.items()}
        for key, value in (start or {}).items():
            latest[key] = max(latest.get(key, value), value)
        return latest

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        topic, dsns = _resolve_with_shards(self.options, "latest", "latest")
        offsets = {
            int(p): (int(start.get(p, 0)), int(e))
            for p, e in end.items()
            if int(e) > int(start.get(p, 0))
        }
        committed = CommittedRange(topic.topic, topic.topic_id, offsets)
        slices = _parallelism(self.options, 2 * max(1, len(offsets)))
        return _pieces(committed, self.dsn, slices, dsns)

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, RangePiece)
        return _read_piece(partition)

    def commit(self, end: dict[str, int]) -> None:
        """Nothing to do: Spark's checkpoint holds the position."""


@dataclass
class WrittenPiece(WriterCommitMessage):  # type: ignore[misc, unused-ignore]
    rows: int


class TxnqWriter(DataSourceWriter):  # type: ignore[misc, unused-ignore]
    """One atomic write: one transaction for the whole job (see the module docstring)."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        from txnq.spark.two_phase_commit import TwoPhaseCommitSink

        names = set(schema.fieldNames())
        self.value_column = "value" if "value" in names else "payload"
        if self.value_column not in names:
            raise InvalidArgumentError(
                "writing to txnq needs a 'value' (or 'payload') column of binary or string; "
                f"the DataFrame has {sorted(names)}"
            )
        self.columns = {c: c in names for c in ("key", "properties", "event_time", "partition")}
        transactional_id = options.get("transactionalId") or f"spark-write-{uuid.uuid4().hex[:16]}"
        sink = TwoPhaseCommitSink(
            _topic(options),
            transactional_id,
            dsn=options.get("dsn"),
            transaction_timeout=options.get("transactionTimeout"),
        )
        try:
            # A stable id settles a write that died half-way: nothing of it
            # was committed (a write commits at its very end), so abort it.
            self.epoch = sink.recover(None).epoch
            txn = sink.begin_transaction()
            self.dsn = sink.dsn
            self.topic = sink.topic
            self.topic_id = sink.topic_id
            self.partitions = sink._topic_partitions()
        finally:
            sink.close()
        self.transactional_id = transactional_id
        self.txn = (txn.txn_id.tc_id, txn.txn_id.seq)
        self.timeout_at = txn.timeout_at

    def _sink(self) -> tuple[Any, Any]:
        """The sink and transaction again (commit and abort run in a Python
        worker of the driver, on a copy of this object)."""
        from txnq.spark.two_phase_commit import SinkTransaction, TwoPhaseCommitSink
        from txnq.transaction import TxnId

        sink = TwoPhaseCommitSink(self.topic, self.transactional_id, dsn=self.dsn)
        sink.epoch = self.epoch
        return sink, SinkTransaction(TxnId(*self.txn), self.timeout_at)

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        import psycopg
        from pyspark import TaskContext

        from txnq.spark.appender import TxnAppender

        context = TaskContext.get()
        task = context.partitionId() if context is not None else 0
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            appender = TxnAppender(
                conn,
                self.topic_id,
                self.partitions,
                f"{self.transactional_id}.{self.txn[0]}.{self.txn[1]}.t{task}",
                self.txn,
                round_robin_start=task,
            )
            for row in iterator:
                appender.add(
                    row[self.value_column],
                    row["key"] if self.columns["key"] else None,
                    row["properties"] if self.columns["properties"] else None,
                    row["event_time"] if self.columns["event_time"] else None,
                    row["partition"] if self.columns["partition"] else None,
                )
            appender.flush()
            return WrittenPiece(appender.written)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        sink, txn = self._sink()
        with sink:
            sink.pre_commit(txn, 0)
            sink.commit(txn)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        sink, txn = self._sink()
        with sink:
            sink.abort(txn)


class TxnqDataSource(DataSource):  # type: ignore[misc, unused-ignore]
    """``format("txnq")``: see the module docstring."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return SCHEMA_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        return TxnqReader(_with_dsn(dict(self.options)))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return TxnqStreamReader(_with_dsn(dict(self.options)))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise InvalidArgumentError(
                "a txnq topic is append-only: use mode('append') (the default is 'errorifexists', "
                "which txnq treats as append)"
            )
        return TxnqWriter(dict(self.options), schema)


def write_dataframe(
    df: Any,
    topic: str,
    *,
    dsn: str | None = None,
    transactional_id: str | None = None,
    transaction_timeout: str | None = None,
) -> None:
    """Land ``df`` in ``topic`` atomically (all rows or none); the helper
    spelling of ``df.write.format("txnq").mode("append").save(topic)``."""
    register(df.sparkSession)
    writer = df.write.format(NAME).mode("append").option("topic", topic)
    if dsn is not None:
        writer = writer.option("dsn", dsn)
    if transactional_id is not None:
        writer = writer.option("transactionalId", transactional_id)
    if transaction_timeout is not None:
        writer = writer.option("transactionTimeout", transaction_timeout)
    writer.save()
