"""bench/single_send_floor.py runs end to end in a tiny run, so it cannot rot.

It asserts what the run produced (a rate for every operation, server time for
the functions, its schema gone, the producers' sequences still usable by
append_v6), never how fast anything was."""

from __future__ import annotations

import psycopg

from bench import single_send_floor
from tests.helpers import sql


def test_a_tiny_run_measures_every_operation_and_leaves_append_usable(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        pgq = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'pgq'").fetchone()

    figures = single_send_floor.measure(dsn, clients=2, rounds=2, seconds=0.2)

    expected = [op for op in single_send_floor.OPERATIONS if pgq or not op.startswith("PgQ")]
    assert list(figures) == expected
    for op, figure in figures.items():
        assert figure["msgs_per_s"] > 0, op
    for op in (
        "txnq append_v6",
        "floor: the three writes only",
        "floor: two writes, dedup from entries",
        "floor: one write, advisory lock",
    ):
        assert figures[op]["server_us"] > 0, op
    assert (
        sql(dsn, "SELECT 1 FROM pg_namespace WHERE nspname = %s", (single_send_floor.SCHEMA,)) == []
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        # The floor kept each producer's sequence row in step with what it
        # wrote: append_v6 takes the next sequence and refuses a gap.
        rows = conn.execute(
            "SELECT s.topic_id, s.partition, s.producer_id, p.epoch, s.last_sequence "
            "FROM txnq.producer_sequences s JOIN txnq.producers p USING (producer_id) "
            "JOIN txnq.topics t ON t.topic_id = s.topic_id WHERE t.name LIKE 'single-floor-%%'"
        ).fetchall()
        assert len(rows) == 4  # a row per producer and partition (register_producer_v2)
        for topic_id, partition, producer_id, epoch, last in rows:
            row = conn.execute(
                "SELECT entry_offset, duplicate FROM txnq.append_v6(%s, %s, %s, %s, %s, "
                "ARRAY['y'::bytea])",
                (topic_id, partition, producer_id, epoch, last + 1),
            ).fetchone()
            assert row is not None and row[1] is False
            head = conn.execute(
                "SELECT next_offset, max_read_offset FROM txnq.partitions "
                "WHERE topic_id = %s AND partition = %s",
                (topic_id, partition),
            ).fetchone()
            assert head == (row[0] + 1, row[0])
