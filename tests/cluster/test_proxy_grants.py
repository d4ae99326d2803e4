"""Grants through a two-shard cluster's proxy (docs/cluster.md): `txnq topics
grant / revoke` and ``client.admin.grant / revoke`` reach every shard, are
idempotent, and converge after a call that failed on one shard."""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Callable, Iterator

import psycopg
import pytest
from psycopg import sql
from typer.testing import CliRunner

import txnq
from tests.cluster.conftest import Cluster
from txnq.cli import app


def _grants(cluster: Cluster, role: str) -> list[set[tuple[str, str]]]:
    """Per shard, the (resource, action) grants ``role`` holds there."""
    held = []
    for shard in range(len(cluster.shards)):
        with cluster.shard_conn(shard) as conn:
            rows = conn.execute(
                "SELECT resource, action FROM txnq.topic_permissions WHERE grantee = %s",
                (role,),
            ).fetchall()
        held.append({(resource, action) for resource, action in rows})
    return held


def _create_role(connect: Callable[[], psycopg.Connection[object]], role: str) -> None:
    with connect() as conn:
        conn.execute(sql.SQL("CREATE ROLE {}").format(sql.Identifier(role)))


def _drop_role(connect: Callable[[], psycopg.Connection[object]], role: str) -> None:
    """Drop the role, and its grants where the database holds txnq's tables."""
    with connect() as conn:
        if conn.execute("SELECT to_regclass('txnq.topic_permissions') IS NOT NULL").fetchone() == (
            True,
        ):
            conn.execute("DELETE FROM txnq.topic_permissions WHERE grantee = %s", (role,))
        conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


@pytest.fixture
def role(cluster: Cluster) -> Iterator[str]:
    """A role on the proxy's server and on shard 0's, not yet on shard 1's."""
    name = f"txnq_grantee_{uuid.uuid4().hex[:8]}"
    _create_role(cluster.proxy_conn, name)
    _create_role(functools.partial(cluster.shard_conn, 0), name)
    try:
        yield name
    finally:
        _drop_role(cluster.proxy_conn, name)
        for shard in range(len(cluster.shards)):
            _drop_role(functools.partial(cluster.shard_conn, shard), name)


def test_a_grant_reaches_every_shard_and_a_failed_one_converges_when_run_again(
    cluster: Cluster, topic_name: Callable[[str], str], role: str
) -> None:
    name = topic_name("granted")
    with txnq.Client(cluster.proxy) as client:
        client.admin.create_topic(name, partitions=4)
        # The role does not exist on shard 1's server: the shard's TQ005, and
        # shard 0 may have the grant already (each shard commits on its own).
        with pytest.raises(txnq.errors.InvalidArgumentError, match="does not exist"):
            client.admin.grant(role, topic=name, actions="produce")
        _create_role(functools.partial(cluster.shard_conn, 1), role)
        # Run again: the most any shard added (shard 1 adds it now).
        assert client.admin.grant(role, topic=name, actions="produce") == 1
        assert _grants(cluster, role) == [{(name, "produce")}] * 2
        assert client.admin.grant(role, topic=name, actions="produce") == 0  # idempotent
        assert client.admin.grant(role, prefix=name[:6], actions=["consume"]) == 1
        shown = {(p.resource, p.action) for p in client.admin.permissions(role=role)}
        assert shown == {(name, "produce"), (name[:6], "consume")}
        assert client.admin.revoke(role, topic=name) == 1
        assert client.admin.revoke(role, topic=name) == 0
        assert client.admin.revoke(role, prefix=name[:6]) == 1
    assert _grants(cluster, role) == [set(), set()]


def test_the_command_line_grants_and_revokes_through_the_proxy(
    cluster: Cluster, topic_name: Callable[[str], str], role: str
) -> None:
    _create_role(functools.partial(cluster.shard_conn, 1), role)
    name = topic_name("cli-granted")
    runner = CliRunner(env={"COLUMNS": "160", "TXNQ_DSN": cluster.proxy, "TXNQ_CONFIG": None})
    assert runner.invoke(app, ["topics", "create", name, "--partitions", "2"]).exit_code == 0
    granted = runner.invoke(
        app, ["topics", "grant", name, "--role", role, "-a", "produce", "-a", "consume", "--json"]
    )
    assert granted.exit_code == 0, granted.output
    shown = json.loads(granted.stdout)
    assert shown["added"] == 2
    assert {g["action"] for g in shown["grants"]} == {"produce", "consume"}
    assert _grants(cluster, role) == [{(name, "produce"), (name, "consume")}] * 2
    revoked = runner.invoke(app, ["topics", "revoke", name, "--role", role, "-a", "consume"])
    assert revoked.exit_code == 0, revoked.output
    assert _grants(cluster, role) == [{(name, "produce")}] * 2
