"""A non-Python client interoperates: examples/node/exactly_once.js (Node.js,
the `pg` package from npm, the SQL API only) consumes what the Python producer
wrote, processes it exactly once in its own transactions, commits and aborts
txnq transactions — and Python consumers see exactly the committed result."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import txnq
from tests.helpers import assert_nothing_more, receive_messages, sql

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "node"
INPUTS = 25


@pytest.fixture(scope="module")
def node_example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example with its dependencies installed (npm ci) in a temporary copy."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip(
            "node and npm are not installed: the Node.js interoperability example needs them"
        )
    folder = tmp_path_factory.mktemp("node") / "example"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("node_modules"))
    installed = subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert installed.returncode == 0, installed.stderr
    return folder


def test_a_node_client_processes_python_messages_exactly_once(dsn: str, node_example: Path) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("node-in", partitions=2)
        client.admin.create_topic("node-out", partitions=2)
        with client.producer("node-in", batching_max_messages=4) as producer:
            for number in range(INPUTS):
                producer.send_async(f"{number}", key=f"{number}")
        with client.subscribe("node-in", "node", initial_position="earliest") as consumer:
            # Acknowledged by Python before Node starts: Node must skip these.
            consumer.acknowledge(receive_messages(consumer, 3))

        env = {**os.environ, "TXNQ_DSN": dsn}
        ran = subprocess.run(
            ["node", "exactly_once.js"],
            cwd=node_example,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert ran.returncode == 0, ran.stderr
        assert f"processed {INPUTS - 3}" in ran.stdout
        assert "COMMITTED" in ran.stdout and "ABORTED" in ran.stdout

        results = sql(dsn, "SELECT value FROM node_results ORDER BY value::int")
        assert len(results) == len(set(results)) == INPUTS - 3
        with client.subscribe(
            "node-out", "check", initial_position="earliest", poll_interval="200ms"
        ) as reader:
            received = receive_messages(reader, INPUTS - 3 + 1)
            values = sorted(m.value for m in received)
            assert values == sorted(
                [f"out {value}".encode() for (value,) in results]
                + [f"summary {INPUTS - 3}".encode()]
            )
            for message in received:  # routed by key as the Python producer routes
                if message.key is not None:
                    assert message.message_id.partition == txnq.producer.partition_for_key(
                        message.key_bytes or b"", 2
                    )
            assert_nothing_more(reader)
        with client.subscribe("node-in", "node", initial_position="earliest") as consumer:
            assert_nothing_more(consumer)  # every input acknowledged, exactly once
