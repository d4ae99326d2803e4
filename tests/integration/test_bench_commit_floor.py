"""bench/commit_floor.py runs end to end in a tiny run, so it cannot rot.

It asserts what the run produced (latencies for every operation, every
transaction it opened committed with its marker, its schema gone), never how
fast anything was."""

from __future__ import annotations

import psycopg

from bench import commit_floor
from tests.helpers import sql


def test_a_tiny_run_times_every_operation_and_commits_what_it_opened(dsn: str) -> None:
    figures = commit_floor.measure(dsn, clients=2, rounds=2, seconds=0.2)

    assert list(figures) == list(commit_floor.OPERATIONS)
    for op, figure in figures.items():
        assert 0 < figure["p50_ms"] <= figure["p99_ms"], op
        assert figure["cycles_per_s"] > 0, op
    assert sql(dsn, "SELECT 1 FROM pg_namespace WHERE nspname = %s", (commit_floor.SCHEMA,)) == []
    with psycopg.connect(dsn, autocommit=True) as conn:
        # Both commit paths left what a commit leaves: every transaction of
        # the run COMMITTED, one COMMIT marker after each one's entry, and
        # each partition readable to its end (no transaction left ongoing).
        rows = conn.execute(
            "SELECT h.partition, h.next_offset, h.max_read_offset, h.ongoing_txns, "
            "count(e.*) FILTER (WHERE e.marker = 1), count(e.*) FILTER (WHERE e.marker IS NULL), "
            "count(DISTINCT t.state) FILTER (WHERE t.state IS NOT NULL), "
            "min(t.state) FROM txnq.partitions h JOIN txnq.topics tp USING (topic_id) "
            "LEFT JOIN txnq.entries e ON e.topic_id = h.topic_id AND e.partition = h.partition "
            "LEFT JOIN txnq.transactions t ON t.tc_id = e.txn_tc AND t.txn_seq = e.txn_seq "
            "WHERE tp.name LIKE 'commit-floor-%%' GROUP BY 1, 2, 3, 4"
        ).fetchall()
        assert len(rows) == 2
        for _, next_offset, max_read, ongoing, markers, data, states, state in rows:
            assert markers == data > 0
            assert next_offset == markers + data and max_read == next_offset - 1
            assert ongoing == 0 and states == 1 and state == "COMMITTED"
