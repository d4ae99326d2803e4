"""bench/cluster.py runs end to end with tiny counts on two shards, so it cannot rot.

It starts servers of its own (not the session's cluster), and asserts what the
run produced (every measurement on every side, a ratio for each proxy
figure), never how fast anything was.
"""

from __future__ import annotations

import json

import pytest

from bench import cluster as bench_cluster
from bench import cluster_calls
from txnq.cluster.servers import missing_requirements


def test_smoke_run_measures_direct_and_proxy(capsys: pytest.CaptureFixture[str]) -> None:
    missing = missing_requirements()
    if missing:
        pytest.skip("cluster tests need " + "; ".join(missing))
    argv = ["--shards", "2", "--messages", "400", "--single", "8", "--rounds", "1", "--json"]
    assert bench_cluster.main(argv) == 0
    report = json.loads(capsys.readouterr().out)

    assert report["messages"] == 400
    assert report["single"] == 8
    seen = {(f["phase"], f["side"]) for f in report["figures"]}
    txnq_phases = ("batched", "single", "consume", "txn")
    sides = ("direct", "proxy", "hop")  # hop: every call through PL/Proxy
    expected = {(phase, side) for phase in txnq_phases for side in sides}
    assert seen == {("raw", "limit"), *expected}
    for figure in report["figures"]:
        assert figure["shards"] == 2
        assert figure["msgs_per_s"] > 0
        assert (figure["ratio"] is not None) == (figure["side"] in ("proxy", "hop"))
        assert (figure["target"] is not None) == (
            figure["side"] == "proxy" and figure["phase"] in ("batched", "consume")
        )
    assert set(report["median_ratio"]) == {"proxy", "hop"}
    for ratios in report["median_ratio"].values():
        assert set(ratios) == set(txnq_phases)


def test_smoke_run_times_each_call_three_ways(capsys: pytest.CaptureFixture[str]) -> None:
    """bench/cluster_calls.py: every call timed direct, packed and through the text routes."""
    missing = missing_requirements()
    if missing:
        pytest.skip("cluster tests need " + "; ".join(missing))
    assert cluster_calls.main(["--calls", "1", "--rounds", "1", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)

    assert set(figures) == {"append", "single", "fetch"}
    for per_way in figures.values():
        assert set(per_way) == {"direct", "packed", "text"}
        assert all(ms > 0 for ms in per_way.values())
