"""The floor benchmarks' command line (bench/floor_runs.py) refuses bad
arguments with a usage error before measuring anything, and prints what
``measure`` returned for each client count, as JSON or through ``show``."""

from __future__ import annotations

import json
import sys

import pytest

from bench import floor_runs


def _main(monkeypatch: pytest.MonkeyPatch, *args: str) -> list[tuple[str, int, int, float]]:
    calls: list[tuple[str, int, int, float]] = []

    def measure(dsn: str, clients: int, rounds: int, seconds: float) -> dict[str, dict[str, float]]:
        calls.append((dsn, clients, rounds, seconds))
        return {"op": {"rate": float(clients)}}

    def show(results: dict[str, dict[str, dict[str, float]]], rounds: int) -> None:
        print(f"table of {sorted(results)} over {rounds} rounds")

    monkeypatch.setattr(sys, "argv", ["floor", "--dsn", "postgresql://x/y", *args])
    assert floor_runs.main("A floor.\n\nMore.", measure, show) == 0
    return calls


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--clients", "1,x"], "--clients takes client counts separated by commas"),
        (["--clients", "0"], "must be positive"),
        (["--rounds", "0"], "must be positive"),
        (["--seconds", "-1"], "must be positive"),
    ],
)
def test_bad_arguments_are_a_usage_error_and_measure_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        _main(monkeypatch, *args)
    assert exited.value.code == 2
    assert says in capsys.readouterr().err


def test_every_client_count_is_measured_and_shown(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = _main(monkeypatch, "--clients", "1,4", "--rounds", "2", "--seconds", "0.5")
    assert calls == [("postgresql://x/y", 1, 2, 0.5), ("postgresql://x/y", 4, 2, 0.5)]
    assert capsys.readouterr().out.strip() == "table of ['1', '4'] over 2 rounds"

    _main(monkeypatch, "--clients", "2", "--json")
    assert json.loads(capsys.readouterr().out) == {"2": {"op": {"rate": 2.0}}}
