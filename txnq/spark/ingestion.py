"""Incremental ingestion with a stored offset: :func:`ingest`.

A named ingestion reads a topic from where its last run stopped to the max
read offsets of now, hands that DataFrame to a sink, and records the new
position only after the sink returned. A run has three durable steps, like
Spark's own offset log and commit log:

1. **plan** — the range (committed position → max read offsets now) and the
   next run number are written to ``txnq.spark_ingestions``;
2. **sink** — ``sink(df, run)`` writes the range;
3. **commit** — the plan becomes the committed position.

A crash before 1 leaves nothing; a crash after 1 (during or after the sink)
leaves the plan, and the next run writes *exactly the same range under the
same run number* again before it plans anything new. So a sink that
overwrites by run number (:func:`parquet_sink`) or upserts by message id ends
with every message once: no duplicates, and no gaps, since each plan starts
where the committed one ended. One run of an ingestion at a time: a session
advisory lock on its name (:class:`IngestionBusyError` otherwise).

Through a cluster's proxy the same steps run unchanged: the proxy keeps the
position on every shard (each shard the offsets of the partitions it owns,
``sql/proxy/spark.sql``) and settles a run that died between two shards, and
the range is read on the shards directly (``txnq.database.shards``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from txnq.client import Client
from txnq.database.queries import QUERIES
from txnq.database.shards import partition_dsns
from txnq.errors import IngestionBusyError, InvalidArgumentError
from txnq.failpoints import failpoint
from txnq.names import validate_name
from txnq.spark.ranges import CommittedRange, resolve
from txnq.spark.read import partition_count, read_range

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class IngestRun:
    """One run of an ingestion: its number (1, 2, ...; a rerun after a crash
    has the number of the run it repeats), its range, and whether it repeats
    a run that did not commit."""

    name: str
    run: int
    range: CommittedRange
    replayed: bool

    @property
    def topic(self) -> str:
        return self.range.topic


Sink = Callable[["DataFrame", IngestRun], None]


def ingest(
    spark: SparkSession,
    topic: str,
    name: str,
    sink: Sink,
    *,
    dsn: str | None = None,
    parallelism: int | None = None,
) -> IngestRun:
    """Run ingestion ``name`` of ``topic`` once: see the module docstring.

    ``sink(df, run)`` must be idempotent per ``run.run`` (overwrite what an
    earlier attempt of the same run wrote, or upsert by (topic, partition,
    offset, batch_index)); :func:`parquet_sink` is one. The first run starts
    at the earliest retained offsets. Returns the run, also when its range is
    empty (the sink is called then too, with an empty DataFrame).
    """
    name = validate_name(name, "ingestion")
    if not callable(sink):
        raise InvalidArgumentError(
            f"sink must be a callable sink(df, run), not {type(sink).__name__}"
        )
    client = Client(dsn)
    try:
        info = client.admin.get_topic(topic)
        with client.connection() as lock_conn:
            if not lock_conn.execute(
                QUERIES["spark_ingestion_try_lock"], {"name": name}
            ).fetchone()[0]:  # type: ignore[index]
                raise IngestionBusyError(
                    f"ingestion {name!r} is running elsewhere (it holds its advisory lock): "
                    "wait for it to finish; runs of one ingestion never overlap"
                )
            try:
                return _run(
                    spark, client, lock_conn, info.name, info.topic_id, name, sink, parallelism
                )
            finally:
                lock_conn.execute(QUERIES["spark_ingestion_unlock"], {"name": name})
    finally:
        client.close()


def _run(
    spark: SparkSession,
    client: Client,
    conn: Any,
    topic: str,
    topic_id: int,
    name: str,
    sink: Sink,
    parallelism: int | None,
) -> IngestRun:
    conn.execute(QUERIES["spark_ingestion_create"], {"name": name, "topic_id": topic_id})
    state = conn.execute(QUERIES["spark_ingestion_get"], {"name": name}).fetchone()
    _, stored_topic_id, _, committed_offsets, planned_run, planned_offsets, _ = state
    if stored_topic_id != topic_id:
        raise InvalidArgumentError(
            f"ingestion {name!r} reads another topic (topic id {stored_topic_id}, maybe a "
            f"deleted one), not {topic!r}: pick another name, or drop it with "
            "txnq.spark.drop_ingestion()"
        )
    committed = _by_partition(committed_offsets)
    if planned_run is not None:
        # A run planned and not committed: repeat exactly its range.
        planned = _by_partition(planned_offsets)
        starts = {p: committed.get(p, -1) + 1 for p in planned}
        offsets = {p: (starts[p], max(starts[p], planned[p] + 1)) for p in planned}
        run = IngestRun(name, int(planned_run), CommittedRange(topic, topic_id, offsets), True)
    else:
        fresh = resolve(conn, topic, topic_id, "earliest", "latest")
        offsets = {}
        for partition, (earliest, end) in fresh.offsets.items():
            start = max(committed.get(partition, -1) + 1, earliest)
            offsets[partition] = (start, max(start, end))
        # The plan stores, per partition, the last offset the run covers.
        ends = [offsets[p][1] - 1 for p in sorted(offsets)]
        row = conn.execute(
            QUERIES["spark_ingestion_plan"], {"name": name, "planned_offsets": ends}
        ).fetchone()
        if row is None:  # cannot happen under the advisory lock; say so if it does
            raise IngestionBusyError(f"ingestion {name!r} was planned by another run meanwhile")
        run = IngestRun(name, int(row[0]), CommittedRange(topic, topic_id, offsets), False)
    failpoint("spark_ingest_after_plan")
    dsns = partition_dsns(conn, client.dsn, topic_id, partition_count(run.range))
    frame = read_range(spark, run.range, client.dsn, parallelism=parallelism, partition_dsns=dsns)
    sink(frame, run)
    failpoint("spark_ingest_after_sink")
    conn.execute(QUERIES["spark_ingestion_commit"], {"name": name, "run": run.run})
    return run


def _by_partition(offsets: list[int] | None) -> dict[int, int]:
    return {partition: int(offset) for partition, offset in enumerate(offsets or [])}


def ingestion_offsets(name: str, *, dsn: str | None = None) -> dict[str, Any] | None:
    """The stored state of ingestion ``name``: committed run and offsets (the
    last offset delivered per partition, -1 none), the pending plan if a run
    did not commit; None if there is no such ingestion."""
    name = validate_name(name, "ingestion")
    with Client(dsn) as client:
        rows = client.query("spark_ingestion_get", {"name": name})
    if not rows:
        return None
    row = rows[0]
    return {
        "name": row["name"],
        "committed_run": row["committed_run"],
        "committed_offsets": _by_partition(row["committed_offsets"]),
        "planned_run": row["planned_run"],
        "planned_offsets": _by_partition(row["planned_offsets"]),
        "updated_at": row["updated_at"],
    }


def list_ingestions(*, dsn: str | None = None) -> list[dict[str, Any]]:
    """Every ingestion with its topic, committed run and offsets, and pending
    plan (a run that did not commit: the next run repeats it)."""
    with Client(dsn) as client:
        rows = client.query("spark_ingestion_list", {})
    return [
        {
            **row,
            "committed_offsets": _by_partition(row["committed_offsets"]),
            "planned_offsets": _by_partition(row["planned_offsets"]),
        }
        for row in rows
    ]


def drop_ingestion(name: str, *, dsn: str | None = None) -> bool:
    """Forget ingestion ``name`` (its next run starts at the earliest offsets);
    True if it existed."""
    name = validate_name(name, "ingestion")
    with Client(dsn) as client:
        return bool(client.query("spark_ingestion_delete", {"name": name}))


def parquet_sink(path: str, *, column: str = "ingest_run") -> Sink:
    """A sink that writes each run to ``<path>/<column>=<run>`` in overwrite
    mode: a repeated run replaces what an interrupted attempt left, and
    ``spark.read.parquet(path)`` reads every run (with the run as a column)."""
    if not isinstance(path, str) or not path:
        raise InvalidArgumentError("path must be a non-empty str (a directory for the runs)")
    validate_name(column, "column")

    def write(frame: DataFrame, run: IngestRun) -> None:
        frame.write.mode("overwrite").parquet(f"{path.rstrip('/')}/{column}={run.run}")

    return write
