"""The web console with its DSN at a two-shard cluster's proxy
(docs/console.md, docs/cluster.md): every page's endpoint answers over the
whole cluster, the actions run (each through the proxy's routes) and are
recorded once, and the chart history is sampled on every shard."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

import txnq
from tests.cluster.conftest import Cluster
from tests.helpers import console_caller
from txnq.console.samples import sample_history
from txnq.console.server import ConsoleServer
from txnq.settings import load_settings

Call = Callable[..., tuple[int, Any]]


@pytest.fixture
def console(cluster: Cluster) -> Iterator[Call]:
    server = ConsoleServer(cluster.proxy, load_settings(), port=0).start()

    try:
        yield console_caller(server.url)
    finally:
        server.stop()


def test_every_page_and_action_works_through_the_proxy(
    cluster: Cluster, topic_name: Callable[[str], str], console: Call
) -> None:
    name = topic_name("console")
    status, body = console("/api/whoami")
    assert status == 200 and body["may_administer"] is True, body
    status, body = console("/api/actions/create_topic", {"topic": name, "partitions": 4})
    assert status == 200, body
    written = {}
    for i in range(4):
        status, body = console(
            "/api/actions/produce", {"topic": name, "payload": f'{{"m": {i}}}', "key": f"k{i}"}
        )
        assert status == 200, body
        written[(body["result"]["partition"], body["result"]["offset"])] = i
    with txnq.Client(cluster.proxy) as client:
        with client.subscribe(name, "watch", initial_position="earliest") as consumer:
            message = consumer.receive(timeout=10)
            assert message is not None
        txn = client.new_transaction()
        with client.producer(name) as producer:
            producer.send(b"open", partition=0, txn=txn)
    for path in ("whoami", "topics", "subscriptions", "transactions", "storage", "actions"):
        status, body = console(f"/api/{path}")
        assert status == 200, (path, body)
    status, body = console("/api/topics")
    shown = {t["topic"]: t for t in body["topics"]}
    assert shown[name]["partitions"] == 4
    status, body = console("/api/transactions")
    open_ids = [t["id"] for t in body["transactions"]]
    assert str(txn.txn_id) in open_ids, body
    read = {}
    for partition in range(4):
        status, body = console(f"/api/messages?topic={name}&partition={partition}")
        assert status == 200, body
        for m in body["messages"]:
            if m["txn_id"] is None:
                read[(partition, m["offset"])] = json.loads(m["payload"]["json"])["m"]
    assert read == written
    status, body = console(
        "/api/actions/seek_subscription", {"topic": name, "subscription": "watch", "to": "latest"}
    )
    assert status == 200, body
    status, body = console("/api/actions/abort_transaction", {"txn_id": str(txn.txn_id)})
    assert status == 200, body
    status, body = console("/api/actions/delete_topic", {"topic": name, "force": True})
    assert status == 200, body
    # Recorded once each, on shard 0, and read back through the proxy.
    status, body = console("/api/actions")
    mine = [a for a in body["actions"] if name in a["target"] or a["target"] == str(txn.txn_id)]
    assert sorted(a["action"] for a in mine) == sorted(
        ["create_topic", *["produce"] * 4, "seek_subscription", "abort_transaction", "delete_topic"]
    ), mine
    assert all(a["succeeded"] for a in mine), mine


def test_the_chart_history_is_sampled_on_every_shard(cluster: Cluster) -> None:
    with txnq.Client(cluster.proxy) as client:
        sampled = sample_history(client, keep_seconds=3600)
    assert sampled >= 0
    for shard in range(len(cluster.shards)):
        with psycopg.connect(cluster.shards[shard], autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM txnq.storage_samples"
                " WHERE sampled_at > now() - interval '1 minute'"
            ).fetchone()
        assert row is not None and row[0] > 0, shard
