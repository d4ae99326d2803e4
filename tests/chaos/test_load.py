"""16 producers (a quarter of their batches in transactions, a third of those
aborted) and 8 consumers of a failover subscription for a bounded time: no
error, no deadlock, and the history is clean — nothing lost, duplicated,
skipped or read uncommitted. The p99 produce-to-consume latency is reported."""

from __future__ import annotations

import pytest

from bench.chaoslib.workloads import load

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(300)]


def test_many_producers_and_consumers_leave_a_clean_history(dsn: str) -> None:
    result = load(dsn, producers=16, consumers=8, seconds=10)
    assert result.errors == []
    assert result.deadlocks == 0
    assert result.report.valid, result.report.summary()
    assert result.sent > 1000
    print(
        f"load: {result.sent} sent, {result.received} received in {result.seconds:.1f}s, "
        f"p50 {result.latency_p50 * 1000:.1f} ms, p99 {result.latency_p99 * 1000:.1f} ms"
    )
