"""The embedded PostgreSQL: a real PostgreSQL 18 on 127.0.0.1, reused while it runs.

These tests start their own servers in temporary homes, whichever server the
rest of the session uses, each on a free port of its own (the fixed default
port belongs to the developer's ./.txnq).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from ipaddress import ip_address
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from tests.conftest import free_tcp_port
from txnq.database import embedded
from txnq.database.embedded import DEFAULT_PORT, EmbeddedServer
from txnq.errors import ServerUnavailableError


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """A fresh home whose server, if any test started one, is stopped afterwards."""
    home = tmp_path / "txnq-home"
    yield home
    EmbeddedServer(home).stop()


@pytest.fixture
def port() -> int:
    return free_tcp_port()


def test_start_serves_postgresql_18_over_tcp_on_localhost(home: Path, port: int) -> None:
    server = EmbeddedServer(home, port=port)

    dsn = server.start()

    params = conninfo_to_dict(dsn)
    assert params["host"] == "127.0.0.1"
    assert params["dbname"] == "txnq"
    with psycopg.connect(dsn) as conn:
        version = conn.execute("SHOW server_version").fetchone()
        address = conn.execute("SELECT inet_server_addr()").fetchone()
        socket_dirs = conn.execute("SHOW unix_socket_directories").fetchone()
        fsync = conn.execute("SHOW fsync").fetchone()
    assert version is not None and str(version[0]).startswith("18")
    assert address is not None and address[0] == ip_address("127.0.0.1")  # NULL over a socket
    assert socket_dirs == ("",)  # TCP is the only way in
    assert fsync == ("on",)


def test_status_reports_the_running_server_and_the_stopped_one(home: Path, port: int) -> None:
    server = EmbeddedServer(home, port=port)
    assert server.is_running() is False
    assert server.dsn is None

    dsn = server.start()

    status = server.status()
    assert status["running"] is True
    assert server.is_running() is True
    assert server.dsn == dsn == status["dsn"]
    assert str(status["port"]) == conninfo_to_dict(dsn)["port"]
    assert isinstance(status["pid"], int)
    assert status["data_dir"] == str(home / "pgdata")
    assert str(status["version"]).startswith("PostgreSQL 18")
    state = json.loads((home / "server.json").read_text())
    assert (state["port"], state["pid"], state["dsn"]) == (status["port"], status["pid"], dsn)

    server.stop()

    stopped = server.status()  # the port and DSN it will have again
    assert (stopped["running"], stopped["pid"], stopped["port"], stopped["dsn"]) == (
        False,
        None,
        status["port"],
        dsn,
    )
    assert server.is_running() is False
    assert server.dsn is None
    assert not (home / "server.json").exists()


def test_a_second_server_object_on_the_same_home_reuses_the_running_server(
    home: Path, port: int
) -> None:
    first = EmbeddedServer(home, port=port)
    dsn = first.start()

    second = EmbeddedServer(str(home), port=port)

    assert second.start() == dsn
    assert second.status()["pid"] == first.status()["pid"]
    assert second.status()["port"] == first.status()["port"]


def test_concurrent_starts_initialize_and_start_one_server(home: Path, port: int) -> None:
    starter = (
        "import sys\n"
        "from txnq.database.embedded import EmbeddedServer\n"
        "server = EmbeddedServer(sys.argv[1], port=int(sys.argv[2]))\n"
        "print(server.start(), server.status()['pid'])\n"
    )
    repository = Path(embedded.__file__).resolve().parents[2]
    environment = {**os.environ, "PYTHONPATH": str(repository)}
    starters = [
        subprocess.Popen(
            [sys.executable, "-c", starter, str(home), str(port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=environment,
        )
        for _ in range(2)
    ]
    results = [process.communicate(timeout=120) for process in starters]

    assert [process.returncode for process in starters] == [0, 0], results
    outputs = {stdout.strip() for stdout, _ in results}
    assert len(outputs) == 1, outputs  # the same DSN and the same postmaster pid
    log = (home / "postgres.log").read_text()
    assert log.count("starting PostgreSQL") == 1


def test_stop_then_start_keeps_the_data(home: Path, port: int) -> None:
    server = EmbeddedServer(home, port=port)
    with psycopg.connect(server.start(), autocommit=True) as conn:
        conn.execute("CREATE TABLE survivor (note text)")
        conn.execute("INSERT INTO survivor VALUES ('written before the restart')")

    server.stop()
    server.stop()  # stopping a stopped server is fine
    assert server.is_running() is False

    with psycopg.connect(server.start()) as conn:
        rows = conn.execute("SELECT note FROM survivor").fetchall()
    assert rows == [("written before the restart",)]


def test_home_is_resolved_against_the_working_directory_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    server = EmbeddedServer()

    monkeypatch.chdir("/")
    assert server.home == tmp_path.resolve() / ".txnq"
    assert server.data_dir == tmp_path.resolve() / ".txnq" / "pgdata"


def test_a_restarted_server_listens_on_the_same_port_so_a_dsn_stays_valid(
    home: Path, port: int
) -> None:
    dsn = EmbeddedServer(home, port=port).start()
    EmbeddedServer(home).stop()

    restarted = EmbeddedServer(home)  # no port given: the one the home used

    assert restarted.port == port
    assert restarted.start() == dsn
    assert (home / "port").read_text().strip() == str(port)


def test_a_new_home_listens_on_the_fixed_default_port(tmp_path: Path) -> None:
    server = EmbeddedServer(tmp_path / "fresh")

    assert server.port == DEFAULT_PORT
    assert server.status()["port"] == DEFAULT_PORT
    assert str(server.status()["dsn"]).endswith(f":{DEFAULT_PORT}/txnq")


def test_a_port_another_program_holds_is_an_error_that_says_how_to_choose_another(
    home: Path, port: int
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        with pytest.raises(ServerUnavailableError) as refused:
            EmbeddedServer(home, port=port).start()

    message = str(refused.value)
    assert f"port {port} on 127.0.0.1 is taken by another program" in message
    assert "TXNQ_EMBEDDED_PORT" in message
    assert "--port" in message
    assert not EmbeddedServer(home).is_running()


def test_asking_a_running_server_for_another_port_says_to_stop_it_first(
    home: Path, port: int
) -> None:
    EmbeddedServer(home, port=port).start()

    with pytest.raises(ServerUnavailableError, match="already runs on port") as refused:
        EmbeddedServer(home, port=free_tcp_port()).start()

    assert "txnq server stop" in str(refused.value)


def test_a_port_outside_the_tcp_range_is_refused(tmp_path: Path) -> None:
    from txnq.errors import InvalidArgumentError

    for bad in (0, 70000, -1):
        with pytest.raises(InvalidArgumentError, match="TCP port from 1 to 65535"):
            EmbeddedServer(tmp_path, port=bad)
