"""Configuration (txnq/settings.py, ``txnq config show``) and what the workers
print about it (txnq/logs.py): precedence flag > TXNQ_* variable > config
file > default, an unusable value refused at start with the setting's name,
and no password in any output. No database needed.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from txnq import logs
from txnq.cli import app
from txnq.errors import ConfigurationError
from txnq.settings import load_settings, resolve_settings

TXNQ = str(Path(sys.executable).with_name("txnq"))
SECRET = "Sup3r-Secret-pw"
SECRET_DSN = f"postgresql://alice:{SECRET}@db.example.com:5432/txnq"


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """No TXNQ_* variable and no ./txnq.toml: a directory of the test's own."""
    for name in list(os.environ):
        if name.startswith("TXNQ_"):
            monkeypatch.delenv(name)
    # `txnq --config FILE` sets TXNQ_CONFIG in this process (CliRunner runs the
    # app in process): record it as unset, so it is unset again afterwards.
    monkeypatch.setenv("TXNQ_CONFIG", "")
    monkeypatch.delenv("TXNQ_CONFIG")
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def show(*args: str, env: dict[str, str] | None = None) -> Any:
    runner = CliRunner(env={"COLUMNS": "200", **(env or {})})
    result = runner.invoke(app, [*args, "config", "show", "--json"])
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return json.loads(result.stdout)["settings"]


def test_flags_beat_environment_beat_the_file_beat_defaults(clean_env: Path) -> None:
    (clean_env / "settings.toml").write_text(
        "[txnq]\ntc_count = 4\nmetrics_port = 9000\nlog_format = 'text'\n"
    )
    env = {
        "TXNQ_CONFIG": str(clean_env / "settings.toml"),
        "TXNQ_METRICS_PORT": "9100",
        "TXNQ_LOG_FORMAT": "json",
    }
    shown = CliRunner(env={"COLUMNS": "200", **env}).invoke(
        app, ["config", "show", "--json", "--log-format", "text"]
    )
    assert shown.exit_code == 0, shown.stderr
    settings = json.loads(shown.stdout)["settings"]
    assert settings["tc_count"] == {
        "value": 4,
        "source": f"file {env['TXNQ_CONFIG']}",
        "env": "TXNQ_TC_COUNT",
    }
    assert settings["metrics_port"]["value"] == 9100
    assert settings["metrics_port"]["source"] == "env TXNQ_METRICS_PORT"
    assert settings["log_format"] == {"value": "text", "source": "flag", "env": "TXNQ_LOG_FORMAT"}
    assert settings["poll_interval_seconds"] == {
        "value": 1.0,
        "source": "default",
        "env": "TXNQ_POLL_INTERVAL_SECONDS",
    }
    # txnq --config FILE is TXNQ_CONFIG.
    by_flag = show("--config", str(clean_env / "settings.toml"))
    assert by_flag["tc_count"]["value"] == 4


def test_config_show_masks_the_password_of_the_dsn(clean_env: Path) -> None:
    settings = show(env={"TXNQ_DSN": SECRET_DSN})
    assert settings["dsn"]["value"] == "postgresql://alice:***@db.example.com:5432/txnq"
    table = CliRunner(env={"COLUMNS": "200", "TXNQ_DSN": SECRET_DSN}).invoke(
        app, ["config", "show"]
    )
    assert table.exit_code == 0
    assert "alice:***@db.example.com" in table.stdout
    assert SECRET not in table.stdout + table.stderr
    for flag_dsn in (SECRET_DSN, f"host=db user=alice password={SECRET}"):
        shown = CliRunner().invoke(app, ["config", "show", "--json", "--dsn", flag_dsn])
        assert SECRET not in shown.stdout, shown.stdout


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("TXNQ_TC_COUNT", "many", "TC_COUNT"),
        ("TXNQ_METRICS_PORT", "70000", "METRICS_PORT"),
        ("TXNQ_LOG_FORMAT", "xml", "LOG_FORMAT"),
        ("TXNQ_SHUTDOWN_TIMEOUT_SECONDS", "0", "SHUTDOWN_TIMEOUT_SECONDS"),
        ("TXNQ_COORDINATOR_LEASE_SECONDS", "0.5", "COORDINATOR_LEASE_SECONDS"),
    ],
)
def test_an_unusable_setting_is_refused_with_its_name(
    clean_env: Path, variable: str, value: str, named: str
) -> None:
    result = CliRunner(env={variable: value}).invoke(app, ["config", "show"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and named in result.stderr, result.stderr
    with pytest.raises(ConfigurationError, match=named):
        os.environ[variable] = value
        try:
            load_settings()
        finally:
            del os.environ[variable]


def test_a_worker_with_an_unusable_setting_stops_at_start_naming_it(clean_env: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TXNQ_")}
    for kind in ("coordinator", "scheduler"):
        result = subprocess.run(
            [TXNQ, "worker", kind],
            env={**env, "TXNQ_DSN": SECRET_DSN, "TXNQ_TC_COUNT": "zero"},
            capture_output=True,
            text=True,
            timeout=60,
            cwd=clean_env,
        )
        assert result.returncode == 1, (result.stdout, result.stderr)
        assert "TC_COUNT" in result.stderr and "TXNQ_TC_COUNT" in result.stderr
        assert SECRET not in result.stdout + result.stderr


def test_unknown_keys_in_the_config_file_are_named(clean_env: Path) -> None:
    (clean_env / "txnq.toml").write_text("tc_cuont = 4\n")
    with pytest.raises(ConfigurationError, match="tc_cuont"):
        resolve_settings()


def test_help_never_shows_a_dsn_from_the_environment(clean_env: Path) -> None:
    runner = CliRunner(env={"COLUMNS": "200", "TXNQ_DSN": SECRET_DSN, "PGPASSWORD": SECRET})
    for argv in (
        [],
        ["worker", "coordinator"],
        ["worker", "scheduler"],
        ["migrate"],
        ["config", "show"],
        ["topics", "list"],
    ):
        result = runner.invoke(app, [*argv, "--help"])
        assert result.exit_code == 0, argv
        assert SECRET not in result.stdout and "db.example.com" not in result.stdout, argv


# -- log lines --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (SECRET_DSN, "postgresql://alice:***@db.example.com:5432/txnq"),
        (
            f"postgresql+psycopg://alice:{SECRET}@h/db?sslmode=require",
            "postgresql+psycopg://alice:***@h/db?sslmode=require",
        ),
        (
            f"host=h user=alice password={SECRET} dbname=d",
            "host=h user=alice password=*** dbname=d",
        ),
        (f"host=h password='{SECRET} x' dbname=d", "host=h password=*** dbname=d"),
        ("postgresql://alice@h:5432/db", "postgresql://alice@h:5432/db"),
        ("no dsn here: user@example.com", "no dsn here: user@example.com"),
    ],
)
def test_redact_masks_passwords_and_leaves_the_rest(text: str, expected: str) -> None:
    assert logs.redact(text) == expected


def test_json_log_lines_carry_the_record_and_never_the_password() -> None:
    record = logging.LogRecord(
        "txnq.workers.coordinator",
        logging.WARNING,
        __file__,
        1,
        "lost PostgreSQL at %s",
        (SECRET_DSN,),
        None,
    )
    logs.RedactingFilter().filter(record)
    line = logs.JsonFormatter().format(record)
    data = json.loads(line)
    assert data["level"] == "WARNING" and data["logger"] == "txnq.workers.coordinator"
    assert data["msg"] == "lost PostgreSQL at postgresql://alice:***@db.example.com:5432/txnq"
    assert data["ts"].endswith("+00:00") and isinstance(data["pid"], int)
    assert SECRET not in line


def test_auto_means_json_off_a_terminal(tmp_path: Path) -> None:
    with open(tmp_path / "log", "w") as file:
        assert logs.wants_json("auto", file)
        assert not logs.wants_json("text", file)
    assert logs.wants_json("json", sys.stdout)
