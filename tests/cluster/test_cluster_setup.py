"""Setting a cluster up and reading its state (docs/cluster.md): `txnq cluster
init` / `status` / `routing`, the documented placement of partitions, the
routing table that covers every function of the proxy, and the checks that
refuse a wrong layout or shards that disagree."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import psycopg
import pytest
from typer.testing import CliRunner

import txnq
from tests.cluster.conftest import Cluster
from txnq import errors
from txnq.cli import app
from txnq.cluster.setup import ROUTED_VIEWS, init, status
from txnq.database.migrate import head_revision

#: The functions of sql/queries the slice's client paths call (admin, produce,
#: exclusive, failover, shared and key_shared consume, delayed delivery):
#: each must be routed, not refused.
CLIENT_FUNCTIONS = {
    "schema_revision_v1", "create_topic_v2", "add_partitions_v2", "delete_topic_v2",
    "topic_by_name_v1", "topic_partition_count_v1", "list_topics_v1", "topic_partitions_v1",
    "backlog_quota_info_v1", "list_subscriptions_v1", "subscription_by_name_v1",
    "subscription_cursors_v1", "subscription_consumers_v1", "set_backlog_quota_v1",
    "set_topic_policy_v1", "register_producer_v2", "append_v5", "subscribe_v2", "unsubscribe_v2",
    "register_consumer_v2", "heartbeat_consumer_v2", "close_consumer_v1", "register_waiters_v1",
    "cursor_positions_v1", "fetch_v4", "ack_v3", "cursor_generation_v1", "seek_v2",
    "claim_v6", "ack_shared_v5", "nack_shared_v3", "release_claims_v3", "next_visible_claim_v2",
    "append_delayed_v2",
}  # fmt: skip


def test_init_migrated_every_shard_and_status_shows_them_healthy(cluster: Cluster) -> None:
    shards = status(cluster.proxy)

    assert [s.shard for s in shards] == [0, 1]
    assert all(s.healthy and s.schema_revision == head_revision() for s in shards), shards
    assert all(s.server_version and s.server_version.startswith("15") for s in shards)


def test_partitions_go_round_the_shards_by_the_documented_hash(cluster: Cluster) -> None:
    with cluster.proxy_conn() as proxy, cluster.shard_conn(0) as shard:
        for topic_id in (1, 2, 3, 17, 1000, 2**31 - 1):
            hashed = shard.execute("SELECT hashint4(%s)", (topic_id,)).fetchone()
            assert hashed is not None
            for partition in range(8):
                expected = ((hashed[0] & 0x7FFFFFFF) + partition) & 0x7FFFFFFF & (2 - 1)
                row = proxy.execute(
                    "SELECT txnq_cluster.shard_of(%s, %s)", (topic_id, partition)
                ).fetchone()
                assert row == (expected,), (topic_id, partition)
                # Consecutive partitions of a topic alternate between the two shards.
                nxt = proxy.execute(
                    "SELECT txnq_cluster.shard_of(%s, %s)", (topic_id, partition + 1)
                ).fetchone()
                assert nxt == (1 - expected,)


def test_every_function_of_the_proxy_has_one_routing_rule(cluster: Cluster) -> None:
    with cluster.proxy_conn() as conn:
        functions = {
            row[0]
            for row in conn.execute(
                "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                "WHERE n.nspname = 'txnq'"
            )
        }
        rules = dict(conn.execute("SELECT function_name, rule FROM txnq_cluster.routing"))

    # The views the proxy answers over the whole cluster have their rule too.
    assert functions | set(ROUTED_VIEWS) == set(rules)
    assert {name for name in CLIENT_FUNCTIONS if rules.get(name) in (None, "refused")} == set()
    refused = ("claim_v5", "send_at_commit_v2", "ack_shared_v4")
    assert {rules[name] for name in refused} == {"refused"}
    assert {rules[name] for name in ("open_txn_v3", "end_txn_v3", "complete_txn_v2")} == {"txn"}


def test_status_counts_each_partition_on_its_owner_once(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("status")
    with txnq.Client(cluster.proxy) as client:
        client.admin.create_topic(name, partitions=8)
        with client.producer(name, name="p") as producer:
            for i in range(16):
                producer.send(b"x", partition=i % 8)
        topics = client.admin.list_topics()
        entries = {t.name: t for t in topics}
    shards = status(cluster.proxy)

    assert sum(s.partitions for s in shards) == sum(t.partitions for t in topics)
    assert all(s.partitions > 0 for s in shards)
    assert all(s.topics == len(topics) for s in shards)
    assert name in entries
    assert sum(s.entries for s in shards) >= 16


def test_the_cli_sets_a_cluster_up_and_shows_it(cluster: Cluster) -> None:
    # A second cluster on the same servers: databases of its own on each.
    urls = [cluster.proxy, *cluster.shards]
    for url in urls:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS cli_cluster")
            conn.execute("CREATE DATABASE cli_cluster")
    proxy, *shards = (re.sub(r"/postgres$", "/cli_cluster", url) for url in urls)
    runner = CliRunner(env={"COLUMNS": "120", "TXNQ_DSN": None, "TXNQ_CONFIG": None})
    shard_args = [arg for shard in shards for arg in ("--shard", shard)]

    done = runner.invoke(app, ["cluster", "init", "--proxy", proxy, *shard_args, "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert report["revision"] == head_revision() and report["routed"] >= len(CLIENT_FUNCTIONS)

    shown = runner.invoke(app, ["cluster", "status", "--dsn", proxy, "--json"])
    assert shown.exit_code == 0, shown.output
    assert [(s["shard"], s["healthy"]) for s in json.loads(shown.stdout)] == [(0, True), (1, True)]
    table = runner.invoke(app, ["cluster", "status", "--proxy", proxy])
    assert table.exit_code == 0, table.output
    assert "Cluster of 2 shard(s)" in table.stdout and table.stdout.count(" up ") == 2
    routing = runner.invoke(app, ["cluster", "routing", "--proxy", proxy])
    assert routing.exit_code == 0 and "append_v5" in routing.stdout, routing.output

    # Run again: the same cluster, nothing broken.
    again = runner.invoke(app, ["cluster", "init", "--proxy", proxy, *shard_args, "--json"])
    assert again.exit_code == 0, again.output


def test_init_refuses_a_shard_count_that_is_not_a_power_of_two(cluster: Cluster) -> None:
    with pytest.raises(errors.InvalidArgumentError, match="power of two"):
        init(cluster.proxy, [*cluster.shards, cluster.shards[0] + "?application_name=third"])


def test_init_refuses_a_proxy_database_that_is_a_shard(cluster: Cluster) -> None:
    with pytest.raises(errors.ConfigurationError, match="routing and cluster metadata only"):
        init(cluster.shards[0], [cluster.shards[1]])


def test_shards_that_disagree_fail_with_tq031(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("diverged")
    with txnq.Client(cluster.proxy) as client:
        topic = client.admin.create_topic(name, partitions=2)
    # A subscription made on shard 1 alone (not through the proxy) has an id
    # the other shard does not know: the proxy notices, it does not guess.
    with cluster.shard_conn(1) as conn:
        for subscription in ("burns-an-id", "sideways"):
            conn.execute(
                "SELECT txnq.subscribe_v2(%s, %s, 'exclusive', 'read_committed', 'earliest')",
                (topic.topic_id, subscription),
            )
    with cluster.proxy_conn() as conn, pytest.raises(psycopg.Error) as raised:
        conn.execute(
            "SELECT txnq.subscribe_v2(%s, 'sideways', 'exclusive', 'read_committed', 'earliest')",
            (topic.topic_id,),
        )
    assert raised.value.sqlstate == "TQ031"
    with txnq.Client(cluster.proxy) as client, pytest.raises(errors.ClusterInconsistentError):
        client.subscribe(name, "sideways")


def test_a_forced_entry_log_roll_through_the_proxy_rolls_every_shard(cluster: Cluster) -> None:
    def newest() -> list[int]:
        found = []
        for shard in range(len(cluster.shards)):
            with cluster.shard_conn(shard) as conn:
                row = conn.execute("SELECT max(entry_log_id) FROM txnq.entry_logs").fetchone()
            assert row is not None
            found.append(int(row[0]))
        return found

    before = newest()
    with cluster.proxy_conn() as conn:
        row = conn.execute("SELECT txnq.roll_entry_log_v3(true)").fetchone()
    after = newest()

    assert all(a > b for a, b in zip(after, before, strict=True)), (before, after)
    assert row == (max(after),)


def test_ids_given_on_a_shard_directly_are_skipped_by_the_proxy(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    stray, proper = topic_name("stray"), topic_name("proper")
    with cluster.shard_conn(0) as conn:
        row = conn.execute(
            "SELECT txnq.create_topic_v2(%s, 1, 0, -1, NULL, 1048576)", (stray,)
        ).fetchone()
    assert row is not None
    try:
        with txnq.Client(cluster.proxy) as client:
            created = client.admin.create_topic(proper, partitions=2)
            with client.producer(proper, name="p") as producer:
                producer.send(b"x", partition=0)
                producer.send(b"y", partition=1)
        assert created.topic_id > row[0]
        for shard in range(len(cluster.shards)):
            with cluster.shard_conn(shard) as conn:
                found = conn.execute(
                    "SELECT topic_id FROM txnq.topics WHERE name = %s", (proper,)
                ).fetchone()
            assert found == (created.topic_id,), shard
    finally:
        # Put the shared cluster back: the stray topic goes.
        with cluster.shard_conn(0) as conn:
            conn.execute("SELECT txnq.delete_topic_v2(%s, true)", (row[0],))


def test_init_refuses_other_shards_for_a_cluster_that_holds_topics(cluster: Cluster) -> None:
    with pytest.raises(errors.ConfigurationError, match="moves partitions"):
        init(cluster.proxy, list(reversed(cluster.shards)))
    assert [s.healthy for s in status(cluster.proxy)] == [True, True]
