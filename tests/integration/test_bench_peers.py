"""The side-by-side benchmark runs end to end in smoke mode, so it cannot rot.

It asserts what the run produced (figures for raw PostgreSQL and txnq, a
reason for every peer or operation left out, storage, its own databases gone),
never how fast anything was."""

from __future__ import annotations

import json

import psycopg
import pytest

from bench.peers import runner
from bench.peers.common import DATABASE_PREFIX, OPERATIONS

# Its own database names: a benchmark run on the same server (txnq_peer_<peer>)
# is never disturbed by the test, nor the test by it.
PREFIX = DATABASE_PREFIX + "smoke_"


def peer_databases(server_dsn: str) -> list[str]:
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE %s", (PREFIX + "%",)
        ).fetchall()
    return [r[0] for r in rows]


def test_smoke_run_reports_every_peer(
    pg_server_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = peer_databases(pg_server_dsn)
    assert (
        runner.main(["--smoke", "--json", "--dsn", pg_server_dsn, "--database-prefix", PREFIX]) == 0
    )
    report = json.loads(capsys.readouterr().out)

    assert report["runs"] == 1
    assert report["errors"] == {}
    assert report["server"]["server_version"]
    for key in ("copy", "insert_100", "insert_1000", "single_1", "single_4", "read_ack"):
        assert report["raw"][key] > 0, key

    operations = report["operations"]
    assert [op.key for op in OPERATIONS] == list(operations)
    for op in OPERATIONS:
        assert operations[op.key]["limit"]["msgs_per_s"] > 0, op.key
    # txnq measures every operation, or says why not (shared subscriptions
    # are refused by builds without them).
    for op in OPERATIONS:
        cell = operations[op.key]["txnq"]
        if cell["msgs_per_s"] is None:
            assert cell["skipped"], op.key
        else:
            assert cell["msgs_per_s"] > 0 and cell["ratio"] > 0, op.key
    for key in (
        "send_single",
        "send_batch",
        "consume_ack",
        "txn_produce",
        "txn_produce_in_flight",
        "ctp",
    ):
        assert operations[key]["txnq"]["msgs_per_s"] is not None, key

    # Commit latencies of txnq next to raw INSERT + COMMIT, from the same run.
    transactions = report["transactions"]
    for key in ("commit_ms", "raw_commit_ms"):
        assert transactions[key]["count"] > 0, key
        assert 0 < transactions[key]["p50"] <= transactions[key]["p99"], key
    assert transactions["txn_produce_of_send_batch"] > 0
    assert transactions["txn_produce_in_flight_of_send_batch"] > 0

    # Every peer either ran (its sends and consume measured, storage taken
    # after it consumed what it was sent) or is reported skipped with a reason.
    for peer in runner.COMPARED:
        if peer.name in report["skipped"]:
            assert report["skipped"][peer.name].strip()
            continue
        for key in ("send_single", "send_batch", "consume_ack"):
            assert operations[key][peer.name]["msgs_per_s"] > 0, (peer.name, key)
        storage = report["storage"][peer.name]
        assert storage["consumed"] >= runner.SMOKE.messages, peer.name
        assert storage["table_bytes"] > 0, peer.name
    assert report["storage"]["raw"]["consumed"] == runner.SMOKE.messages

    # The runner drops what it created and nothing else.
    assert peer_databases(pg_server_dsn) == before


def test_bad_arguments_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        runner.main(["--peers", "nosuchqueue"])
    assert exc.value.code == 2
    assert "unknown peers" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        runner.main(["--messages", "0"])
    with pytest.raises(SystemExit):
        runner.main(["--database-prefix", "postgres"])  # could name other databases
    assert "txnq_peer_" in capsys.readouterr().err
