"""A long analytics query holds the xmin horizon back while the queue runs at
a steady rate: the queue keeps up (≥ 70% of the rate before), and once the
query ends the hot tables' dead tuples come back down (vacuum_hot_tables)."""

from __future__ import annotations

import pytest

from bench.chaoslib.workloads import held_xmin

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(300)]


def test_a_held_snapshot_neither_stalls_the_queue_nor_leaves_bloat(dsn: str) -> None:
    result = held_xmin(dsn, phase_seconds=6, hold_seconds=20, target_rate=600)
    assert result.lost == 0
    assert result.rate_before > 0
    # A steady offered load (600 msg/s, far below capacity) is still carried.
    assert result.ratio >= 0.7, result
    # The held snapshot kept dead tuples from being reclaimed...
    assert result.dead_peak >= result.dead_before, result
    # ...and once it ended, the vacuum job brought them back down.
    assert result.dead_after <= max(1000, result.dead_peak // 5), result
