"""The one SparkSession of a test session, for the tests that need Spark.

Spark tests are few and share this session (local[2], UI off, 127.0.0.1):
starting a JVM costs seconds. Where Spark cannot run — no Java 17+, no
PostgreSQL JDBC driver, no PySpark — they skip and name what to install.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from typing import Any

import pytest

from txnq.spark.environment import INSTALL_HINT, MIN_JAVA, find_jdbc_jar, java_version


def spark_missing() -> str | None:
    """Why Spark cannot run here, or None."""
    if importlib.util.find_spec("pyspark") is None or importlib.util.find_spec("pyarrow") is None:
        return "PySpark is not installed: pip install -e '.[spark]' (make test does)"
    version = java_version()
    if version is None or version < MIN_JAVA:
        return (
            f"Spark needs Java {MIN_JAVA}+ (found {version}): "
            "apt-get install openjdk-17-jre-headless"
        )
    if find_jdbc_jar() is None:
        return f"no PostgreSQL JDBC jar: {INSTALL_HINT}"
    return None


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    reason = spark_missing()
    if reason is not None:
        pytest.skip(reason)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from txnq.spark import spark_session

    session = spark_session(
        "txnq-tests",
        "local[2]",
        {
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.driver.memory": "768m",
            "spark.python.worker.reuse": "true",
            # Short jobs: the C1 compiler alone and a serial GC start faster
            # and spend less of two shared cores on compiling.
            "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
            "spark.sql.adaptive.enabled": "false",
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
