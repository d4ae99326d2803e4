"""Spark and txnq (docs/spark.md): read committed ranges over JDBC, ingest
incrementally with a stored offset, read and write through the ``txnq``
Python data source, and let external engines write exactly once through a
two-phase-commit sink.

PySpark is the ``spark`` extra (``pip install 'txnq[spark]'``); this package
imports it only where it is used, so the sink and the range helpers work
without it.
"""

from __future__ import annotations

from typing import Any

from txnq.spark.environment import (
    check_java,
    find_jdbc_jar,
    jdbc_jar_config,
    jdbc_target,
    spark_session,
)
from txnq.spark.ingestion import (
    IngestRun,
    drop_ingestion,
    ingest,
    ingestion_offsets,
    list_ingestions,
    parquet_sink,
)
from txnq.spark.ranges import CommittedRange
from txnq.spark.read import committed_range, read_committed
from txnq.spark.two_phase_commit import RecoveryReport, SinkTransaction, TwoPhaseCommitSink

__all__ = [
    "CommittedRange",
    "IngestRun",
    "RecoveryReport",
    "SinkTransaction",
    "TwoPhaseCommitSink",
    "check_java",
    "committed_range",
    "drop_ingestion",
    "find_jdbc_jar",
    "ingest",
    "ingestion_offsets",
    "jdbc_jar_config",
    "jdbc_target",
    "list_ingestions",
    "parquet_sink",
    "read_committed",
    "register",
    "spark_session",
    "write_dataframe",
]


def __getattr__(name: str) -> Any:
    # The data source module imports PySpark: load it on first use.
    if name in ("register", "write_dataframe", "TxnqDataSource"):
        from txnq.spark import datasource

        return getattr(datasource, name)
    raise AttributeError(f"module 'txnq.spark' has no attribute {name!r}")
