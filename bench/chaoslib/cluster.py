"""The processes a chaos run owns and bounces: a PostgreSQL server of its own
(or a sharded cluster of its own), txnq's workers and the copiers.

The server is the embedded PostgreSQL 18 (``txnq.database.embedded``) in a temporary
home, listening on a free 127.0.0.1 port: the run may restart it (``pg_ctl
restart -m fast`` keeps the port, so every client's DSN stays valid) whatever
server the rest of the test suite uses. :class:`OwnedCluster` is the same for
a cluster (docs/cluster.md): a PL/Proxy proxy and N shards on throwaway
servers of the machine's PostgreSQL 15 (``txnq.cluster.servers``); the clients
use the proxy, and a restart is one shard's, in turn.

Both answer what the harness needs of "the database": ``dsn`` (what clients
and the coordinator workers use), ``direct_dsns`` (where txnq's tables are
read to check the run: the one server, or every shard), ``scheduler_dsns``
(one scheduler each: the lifecycle runs per shard) and ``restart()``.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COPIER = Path(__file__).resolve().parent / "copier.py"


def _free_port() -> int:
    """A port nothing holds now: the run's server must not take the fixed
    default port (5477) of the developer's own embedded server."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class OwnedServer:
    """An embedded PostgreSQL this run starts, restarts and stops."""

    def __init__(self) -> None:
        from txnq.database.embedded import EmbeddedServer

        self.home = tempfile.mkdtemp(prefix="txnq-chaos-pg-")
        self.server = EmbeddedServer(home=self.home, port=_free_port())
        self.dsn = ""

    def start(self) -> str:
        self.dsn = self.server.start()
        subprocess.run(
            [sys.executable, "-m", "txnq.cli", "migrate", "--dsn", self.dsn],
            check=True,
            capture_output=True,
            timeout=300,
        )
        return self.dsn

    def restart(self) -> float:
        """``pg_ctl restart -m fast`` (sessions are cut, the port stays); seconds it took."""
        started = time.monotonic()
        self.server._pg_ctl(
            ["-m", "fast", "-w", "-t", "60", "-l", str(self.server.log_path), "restart"]
        )
        return time.monotonic() - started

    def stop(self) -> None:
        try:
            self.server.stop()
        finally:
            shutil.rmtree(self.home, ignore_errors=True)

    @property
    def direct_dsns(self) -> list[str]:
        return [self.dsn]

    @property
    def scheduler_dsns(self) -> list[str]:
        return [self.dsn]

    def describe(self) -> str:
        return f"server {self.dsn}"


class OwnedCluster:
    """A proxy and ``shards`` shard servers this run starts, restarts and stops."""

    def __init__(self, shards: int = 2) -> None:
        from txnq.cluster.servers import ThrowawayServers

        self.servers = ThrowawayServers(shards)
        self.dsn = ""
        self._restarts = 0

    def start(self) -> str:
        from txnq.cluster.setup import init

        self.servers.start()
        assert self.servers.proxy is not None
        init(self.servers.proxy.dsn, self.direct_dsns)
        self.dsn = self.servers.proxy.dsn
        return self.dsn

    def restart(self) -> float:
        """A fast restart of one shard server (the next one each time); seconds it took."""
        shard = self.servers.shards[self._restarts % len(self.servers.shards)]
        self._restarts += 1
        started = time.monotonic()
        self.servers.restart(shard)
        return time.monotonic() - started

    def stop(self) -> None:
        self.servers.stop()

    @property
    def direct_dsns(self) -> list[str]:
        return [shard.dsn for shard in self.servers.shards]

    @property
    def scheduler_dsns(self) -> list[str]:
        return self.direct_dsns

    def describe(self) -> str:
        return f"cluster: proxy {self.dsn}, shards {', '.join(self.direct_dsns)}"


@dataclass
class Managed:
    """A child process the supervisor keeps running (restarts it when it dies)."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0
    kills: int = 0
    crashes: int = 0  # exits the harness did not cause (restarted all the same)
    exit_codes: list[int] = field(default_factory=list)

    def start(self) -> None:
        with open(self.log_path, "ab") as out:
            self.process = subprocess.Popen(
                self.argv, env=self.env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT
            )
        self.starts += 1

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL, as a crash: no cleanup, open transactions left behind."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)
            self.kills += 1

    def stop(self, timeout: float = 10.0) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)

    def check(self) -> bool:
        """Restart it if it exited on its own; True when it did."""
        if self.process is None or self.process.poll() is None:
            return False
        self.exit_codes.append(self.process.returncode)
        self.crashes += 1
        self.start()
        return True


def child_env(dsn: str, **settings: str) -> dict[str, str]:
    env = dict(os.environ)
    env["TXNQ_DSN"] = dsn
    env.pop("TXNQ_CONFIG", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    for name, value in settings.items():
        env[f"TXNQ_{name.upper()}"] = value
    return env


def worker(name: str, kind: str, dsn: str, env: dict[str, str], log_dir: Path) -> Managed:
    return Managed(
        name,
        [sys.executable, "-m", "txnq.cli", "worker", kind, "--dsn", dsn],
        env,
        log_dir / f"{name}.log",
    )


def copier(name: str, dsn: str, env: dict[str, str], log_dir: Path, *extra: str) -> Managed:
    return Managed(
        name,
        [
            sys.executable,
            str(COPIER),
            *("--dsn", dsn, "--name", name, "--log", str(log_dir / f"{name}.jsonl")),
            *extra,
        ],
        env,
        log_dir / f"{name}.log",
    )
