"""The chaos copier across shards (issue 19): Kafka's transactions_test on a
two-shard cluster. Copiers consume the input topic through the proxy,
transform, produce to the output topic and acknowledge in transactions that
span both shards (a third aborted on purpose), while copiers and coordinator
workers are SIGKILLed and restarted and each shard server is restarted once.
The output is exactly the input, once, in key order; a concurrent
read_committed consumer saw the same; every shard that holds a row of a
transaction ends it the same way.

The run owns its cluster (throwaway PostgreSQL 15 servers with PL/Proxy,
``bench.chaoslib.cluster.OwnedCluster``) whatever TXNQ_TEST_DSN says, so, as
tests/chaos/test_copier.py, it runs in the pass without TXNQ_TEST_DSN only
(``TXNQ_CHAOS_CLUSTER=1`` runs it in the other pass too). Where PL/Proxy or
PostgreSQL 15 is missing it skips and says what to install.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.chaoslib.workloads import CopierConfig, run_copier
from txnq.cluster.servers import missing_requirements

pytestmark = [
    pytest.mark.chaos,
    pytest.mark.timeout(600),
    pytest.mark.skipif(
        bool(os.environ.get("TXNQ_TEST_DSN")) and not os.environ.get("TXNQ_CHAOS_CLUSTER"),
        reason="the copier owns its cluster whatever TXNQ_TEST_DSN says, so the pass without "
        "TXNQ_TEST_DSN runs it; set TXNQ_CHAOS_CLUSTER=1 to run it here too",
    ),
]


def test_copier_output_is_its_input_exactly_once_across_shards_under_faults(
    tmp_path: Path,
) -> None:
    missing = missing_requirements()
    if missing:
        pytest.skip("the cluster chaos run needs " + "; ".join(missing))
    config = CopierConfig(
        messages=10_000,
        copiers=2,
        kills_per_copier=2,
        coordinators=2,
        coordinator_kills=2,
        postgres_restarts=2,  # one restart of each shard server, in turn
        subscription_type="failover",
        shards=2,
        timeout=420,
        log_dir=str(tmp_path / "logs"),
    )
    result = run_copier(config)
    detail = "\n".join(result.notes) + f"\nlogs in {result.log_dir}"
    assert result.faults == {"copier_kills": 4, "coordinator_kills": 2, "postgres_restarts": 2}, (
        detail
    )
    assert result.report.valid, result.report.summary() + "\n" + detail
    assert result.verifier_distinct == config.messages
    assert result.verifier_report.valid, result.verifier_report.summary() + "\n" + detail
    assert result.missing_outputs == 0 and result.extra_outputs == 0, detail
    assert result.output_count == result.output_distinct == config.messages, detail
    assert result.order_violations == 0, detail
    assert result.disagreeing_txns == 0, detail
    assert result.txns["committed"] > 0 and result.txns["aborted"] > 0, result.txns
    assert result.txns["unknown"] == 0, result.txns
