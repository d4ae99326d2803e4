"""Batch reads of committed ranges over JDBC: :func:`read_committed`.

The range is fixed when the call starts (``txnq.spark.ranges``): per partition
the upper bound is the max read offset of that moment. Spark then reads it in
parallel, one JDBC query per piece of the range (``predicates``: each names a
txnq partition and an offset interval of it, so each is an index range scan of
``txnq.committed_messages``). The pieces run at different times in different
tasks, and still read one consistent range: rows at or below a max read offset
never change, while producers and transactions keep appending above it.

Through a cluster's proxy (docs/cluster.md) the range is fixed the same way
(each partition's bounds from its owner), and each piece is read on the shard
that owns its partition (``txnq.database.shards``): one JDBC relation per shard,
unioned, so the tasks read the shards directly and in parallel.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from txnq import errors
from txnq.client import Client
from txnq.database.shards import partition_dsns as lookup_partition_dsns
from txnq.spark.environment import jdbc_target, require_jdbc_driver
from txnq.spark.ranges import Bound, CommittedRange, check_bound, resolve, split

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# The view Spark reads, and the columns of every DataFrame of txnq.spark
# (read_committed, ingest, and the data source's SCHEMA_DDL alike).
VIEW = "txnq.committed_messages"
COLUMNS = (
    "topic",
    "partition",
    "offset",
    "batch_index",
    "key",
    "properties",
    "payload",
    "publish_time",
    "event_time",
    "txn_id",
)
SCHEMA_DDL = (
    "topic string, partition int, offset bigint, batch_index int, key binary, "
    "properties map<string,string>, payload binary, publish_time timestamp, "
    "event_time timestamp, txn_id string"
)
JDBC_FETCH_SIZE = 2000

#: A message's properties, the jsonb column as JSON text (as Spark's JDBC
#: reader gives it), as a ``map<string,string>``; NULL stays NULL. Two paths,
#: both native expressions in generated JVM code (no Python, no UDF):
#:
#: - one property, nothing escaped: the text is exactly ``{"K": "V"}`` with K
#:   and V free of ``"`` and ``\``. jsonb escapes every ``"`` inside a string
#:   with a backslash, so with no backslash in the text the key ends at the
#:   first ``"`` after ``{"``, which must start ``": "``, and the value at the
#:   next ``"``, which must be the one before the closing ``}``; K and V are
#:   then the strings themselves. ``map(K, V)`` from substrings costs Spark's
#:   tasks about a third of ``from_json`` (task CPU of a 200,000-row read:
#:   0.29 s against 0.54 s; the plain JDBC read 0.19 s). One property or none
#:   is the common case, as with Kafka's headers and Pulsar's properties; the
#:   ``", "`` test comes first so that texts of several properties leave the
#:   fast path at once (checked last, it cost them 0.1 s more than
#:   ``from_json``; now they cost the same);
#: - anything else: ``parse_json`` and a cast of its VARIANT, no dearer than
#:   ``from_json`` (with three properties the whole expression takes 0.59 s
#:   of task CPU against ``from_json``'s 0.60 s). ``from_json`` is evaluated interpreted and
#:   opens a Jackson reader per row: it took the benchmark's read from 73% of
#:   a plain JDBC read of the same rows to 29%. ``TRY_CAST`` gives NULL for a
#:   value that is not a JSON object, as ``from_json`` did (properties are
#:   validated objects of strings since revision 0015; older rows written by
#:   raw SQL may hold anything), and a non-string value becomes its JSON text.
#:
#: Splitting the jsonb into two text arrays in SQL for ``map_from_arrays``
#: was slower: ``jsonb_each_text`` per message costs PostgreSQL about 2 µs,
#: more than the whole JVM side (docs/benchmarks.md#spark).
PROPERTIES_AS_MAP = r"""CASE
    WHEN instr(properties, '", "') = 0 AND instr(properties, '\\') = 0
     AND startswith(properties, '{"') AND endswith(properties, '"}')
     AND locate('"', properties, 3) = instr(properties, '": "')
     AND locate('"', properties, instr(properties, '": "') + 4) = length(properties) - 1
    THEN map(substring(properties, 3, instr(properties, '": "') - 3),
             substring(properties, instr(properties, '": "') + 4,
                       length(properties) - instr(properties, '": "') - 5))
    ELSE TRY_CAST(parse_json(properties) AS MAP<STRING, STRING>)
END"""


def _message_columns(properties: str) -> tuple[str, ...]:
    # Constant Spark SQL expressions over the view's columns, no user text.
    return (
        "topic",
        "CAST(`partition` AS INT) AS `partition`",
        "CAST(entry_offset AS BIGINT) AS `offset`",
        "CAST(batch_index AS INT) AS batch_index",
        "key",
        f"{properties} AS properties",
        "payload",
        "publish_time",
        "event_time",
        "txn_id",
    )


#: The view's columns as the DataFrame columns (COLUMNS), properties as a map
#: or (``parse_properties=False``) as the view's JSON text.
MESSAGE_COLUMNS = _message_columns(PROPERTIES_AS_MAP)
MESSAGE_COLUMNS_JSON = _message_columns("properties")


def committed_range(
    topic: str,
    start: Bound = "earliest",
    end: Bound = "latest",
    *,
    dsn: str | None = None,
    client: Client | None = None,
) -> CommittedRange:
    """The range a read of ``topic`` from ``start`` to ``end`` covers, fixed
    now (see ``txnq.spark.ranges`` for the bounds)."""
    start = check_bound(start, "start")
    end = check_bound(end, "end")
    own = client is None
    client = client if client is not None else Client(dsn)
    try:
        info = client.admin.get_topic(topic)
        with client.connection() as conn:
            return resolve(conn, info.name, info.topic_id, start, end)
    finally:
        if own:
            client.close()


def read_committed(
    spark: SparkSession,
    topic: str,
    start: Bound = "earliest",
    end: Bound = "latest",
    *,
    dsn: str | None = None,
    parallelism: int | None = None,
    parse_properties: bool = True,
) -> DataFrame:
    """The committed messages of ``topic`` in a range fixed now, as a DataFrame
    with the columns topic, partition, offset, batch_index, key (binary),
    properties (map<string,string>), payload (binary), publish_time,
    event_time, txn_id ("tc:seq" or null) — one row per message.

    ``start``/``end``: "earliest", "latest", ``{partition: offset}`` (start
    inclusive, end exclusive) or a timezone-aware datetime (publish time).
    ``parallelism``: how many JDBC queries (Spark partitions) to cut the range
    into; default the session's default parallelism. ``dsn`` default: the
    TXNQ_DSN setting (it must reach PostgreSQL over TCP).
    ``parse_properties=False`` leaves properties as JSON text (the map is
    parsed in the JVM, see ``PROPERTIES_AS_MAP``).
    """
    client = Client(dsn)
    try:
        committed = committed_range(topic, start, end, client=client)
        with client.connection() as conn:
            dsns = lookup_partition_dsns(
                conn, client.dsn, committed.topic_id, partition_count(committed)
            )
        return read_range(
            spark,
            committed,
            client.dsn,
            parallelism=parallelism,
            parse_properties=parse_properties,
            partition_dsns=dsns,
        )
    finally:
        client.close()


def read_range(
    spark: SparkSession,
    committed: CommittedRange,
    dsn: str,
    *,
    parallelism: int | None = None,
    parse_properties: bool = True,
    partition_dsns: Mapping[int, str] | None = None,
) -> DataFrame:
    """A DataFrame of a range resolved before (ingestions reread a planned one).

    ``partition_dsns``: per partition the DSN of the shard that owns it, when
    ``dsn`` is a cluster's proxy (:func:`txnq.database.shards.partition_dsns`;
    empty: everything is at ``dsn``); None looks it up at ``dsn``."""
    if parallelism is not None and (
        isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1
    ):
        raise errors.InvalidArgumentError(
            f"parallelism must be a positive int, not {parallelism!r}"
        )
    require_jdbc_driver(spark)
    if partition_dsns is None:
        from txnq.database.connections import connect

        with connect(dsn, application_name="txnq-spark") as conn:
            partition_dsns = lookup_partition_dsns(
                conn, dsn, committed.topic_id, partition_count(committed)
            )
    slices = parallelism or int(spark.sparkContext.defaultParallelism)
    # Every number below is an int of our own (topic id, offsets), formatted
    # with :d: the predicates carry no user text. Grouped by the server that
    # holds the partition: one server, or each partition's shard.
    by_server: dict[str, list[str]] = {}
    for partition, lo, hi in split(committed, slices):
        by_server.setdefault(partition_dsns.get(partition, dsn), []).append(
            f"topic_id = {committed.topic_id:d} AND partition = {partition:d}"
            f" AND entry_offset >= {lo:d} AND entry_offset < {hi:d}"
        )
    if not by_server:  # an empty range: a query of no rows (on a shard: a proxy has no messages)
        by_server[next(iter(partition_dsns.values()), dsn)] = ["false"]
    frame: DataFrame | None = None
    for server, predicates in by_server.items():
        target = jdbc_target(server)
        properties = {**target.properties, "fetchsize": str(JDBC_FETCH_SIZE)}
        piece = spark.read.jdbc(target.url, VIEW, predicates=predicates, properties=properties)
        frame = piece if frame is None else frame.union(piece)
    assert frame is not None
    return to_messages(frame, parse_properties=parse_properties)


def partition_count(committed: CommittedRange) -> int:
    """How many partitions a range's topic had when it was fixed."""
    return max(committed.offsets, default=-1) + 1


def to_messages(frame: DataFrame, *, parse_properties: bool = True) -> DataFrame:
    """The view's columns as this module's DataFrame columns.

    One ``selectExpr`` of constant expressions: building the same projection
    from ``F.col(...)`` objects took about 50 py4j round trips, 15 to 80 ms
    per read on the benchmark (docs/benchmarks.md#spark)."""
    return frame.selectExpr(*(MESSAGE_COLUMNS if parse_properties else MESSAGE_COLUMNS_JSON))
