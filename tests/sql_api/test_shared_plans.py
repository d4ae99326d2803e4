"""Shared and key_shared claims and acks stay linear in the batch when the
claims table's statistics say it is empty (revision 0013, docs/subscriptions.md
"From SQL"): an ANALYZE that finds every claim acknowledged is common, and
claim_v1 / ack_shared_v2 were then planned as nested loops comparing every
claim with every message named (an ack of 1000: 500,000 comparisons).

The plans are read with auto_explain, sent to this session as LOG messages:
the rows every plan node filtered out, over all its loops, must stay within a
small multiple of the messages handled."""

from __future__ import annotations

import re

import psycopg
import pytest

import txnq

MESSAGES = 1000
NODE = re.compile(r"\(actual time=[\d.]+\.\.[\d.]+ rows=\d+ loops=(\d+)\)")
REMOVED = re.compile(r"Rows Removed by (?:Join )?Filter: (\d+)")


def removed_rows(plans: list[str]) -> int:
    """The largest number of rows one plan node filtered out, over its loops."""
    return worst_plan(plans)[0]


def worst_plan(plans: list[str]) -> tuple[int, str]:
    """(rows filtered out by the worst node over its loops, that node's plan)."""
    worst, where = 0, ""
    for plan in plans:
        loops = 1
        for line in plan.splitlines():
            node = NODE.search(line)
            if node:
                loops = int(node.group(1))
            removed = REMOVED.search(line)
            if removed and int(removed.group(1)) * loops > worst:
                worst, where = int(removed.group(1)) * loops, plan
    return worst, where


@pytest.mark.parametrize("subscription_type", ["shared", "key_shared"])
def test_claim_nack_and_ack_filter_no_more_than_the_batch(dsn: str, subscription_type: str) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("jobs", partitions=1)
        with client.producer(
            "jobs", batching_max_messages=MESSAGES, batching_max_delay="1s"
        ) as producer:
            for i in range(2 * MESSAGES):
                producer.send_async(b"x", key=f"k{i % 7}")
            producer.flush()
    with psycopg.connect(dsn, autocommit=True) as conn:
        topic = conn.execute("SELECT topic_id FROM txnq.topics WHERE name = 'jobs'").fetchone()
        assert topic is not None
        topic_id = topic[0]
        row = conn.execute(
            "SELECT txnq.subscribe_v1(%s, 'workers', %s, 'read_committed', 'earliest')",
            (topic_id, subscription_type),
        ).fetchone()
        assert row is not None
        subscription_id = row[0]
        row = conn.execute(
            "SELECT txnq.register_consumer_v1(%s, 'c', 0, 60)", (subscription_id,)
        ).fetchone()
        assert row is not None
        consumer_id = row[0]
        conn.execute("ANALYZE txnq.claims")  # empty: the statistics of a drained subscription
        try:
            conn.execute("LOAD 'auto_explain'")
        except psycopg.Error as exc:
            pytest.skip(f"auto_explain is not available on this server: {exc}")
        for setting in (
            "auto_explain.log_min_duration = 0",
            "auto_explain.log_nested_statements = on",
            "auto_explain.log_analyze = on",
            "auto_explain.log_timing = off",
            "client_min_messages = log",
        ):
            conn.execute(f"SET {setting}")
        plans: list[str] = []
        conn.add_notice_handler(lambda diag: plans.append(diag.message_primary or ""))

        def claim() -> list[tuple[int, int]]:
            return [
                (r[0], r[1])
                for r in conn.execute(
                    "SELECT entry_offset, batch_index FROM txnq.claim_v2(%s, %s, %s, %s)",
                    (topic_id, subscription_id, consumer_id, MESSAGES),
                )
            ]

        first = claim()
        assert len(first) == MESSAGES
        # Back at once, and claimed again: the redelivery path marks them.
        conn.execute(
            "SELECT txnq.nack_shared_v1(%s, 0, %s, %s, %s, %s, %s)",
            (
                topic_id,
                subscription_id,
                consumer_id,
                [o for o, _ in first],
                [i for _, i in first],
                [0.0] * len(first),
            ),
        )
        again = claim()
        assert sorted(again) == sorted(first)
        row = conn.execute(
            "SELECT txnq.ack_shared_v3(%s, 0, %s, %s, %s)",
            (topic_id, subscription_id, [o for o, _ in again], [i for _, i in again]),
        ).fetchone()
        assert row is not None and row[0] == MESSAGES
        conn.execute("SET client_min_messages = notice")
    assert any("ack_shared_v3" in plan or "claims" in plan for plan in plans), plans[:3]
    removed, where = worst_plan(plans)
    assert removed <= 5 * MESSAGES, where
