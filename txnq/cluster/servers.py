"""Throwaway PostgreSQL 15 servers for a cluster: one proxy and N shards.

The cluster tests (tests/cluster) and a developer trying a cluster out need
separate servers on one machine: each is its own ``initdb`` of the machine's
PostgreSQL 15 (``/usr/lib/postgresql/15/bin``, where Debian's
``postgresql-15-plproxy`` installs PL/Proxy), in a temporary directory, trust
authentication, listening on 127.0.0.1 and a Unix socket in that directory
only, on a free port. :meth:`ThrowawayServers.stop` stops every server and
removes the directory; nothing outlives it.

PostgreSQL refuses to run as root: as root, the binaries run as the system
user ``postgres`` (the one the Debian package creates), which gets the
temporary directory.

Run as a script (``python -m txnq.cluster.servers --shards 2``) it starts
the servers, prints their DSNs and waits for Ctrl-C, then removes them.
"""

from __future__ import annotations

import argparse
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from txnq.errors import ServerUnavailableError

#: Where Debian (and PGDG) install PostgreSQL 15's server binaries.
PG15_BIN = Path("/usr/lib/postgresql/15/bin")
#: PL/Proxy's extension control file for PostgreSQL 15 (postgresql-15-plproxy).
PLPROXY_CONTROL = Path("/usr/share/postgresql/15/extension/plproxy.control")
#: The system user the servers run as when we are root.
SYSTEM_USER = "postgres"
HOST = "127.0.0.1"
#: Seconds initdb and pg_ctl may take for one server.
START_TIMEOUT_SECONDS = 60
#: The most shards a throwaway cluster gets (the machine has few cores).
MAX_SHARDS = 16
#: Small settings: a test cluster shares a small machine with other work.
#: fsync off survives a server crash (the OS keeps what was written), not an
#: OS crash; synchronous_commit stays on, so a crashed shard (pause with mode
#: immediate) keeps every commit it acknowledged.
SERVER_SETTINGS = {
    "shared_buffers": "32MB",
    "max_connections": "60",
    "fsync": "off",
    "full_page_writes": "off",
    "max_prepared_transactions": "10",
}


def missing_requirements() -> list[str]:
    """What must be installed before a throwaway cluster can start (empty: nothing)."""
    missing = []
    if not (PG15_BIN / "initdb").exists():
        missing.append(f"PostgreSQL 15 server binaries in {PG15_BIN} (Debian: postgresql-15)")
    if not PLPROXY_CONTROL.exists():
        missing.append(
            "PL/Proxy for PostgreSQL 15 (Debian: postgresql-15-plproxy; `make install-plproxy`)"
        )
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SYSTEM_USER)
        except KeyError:
            missing.append(f"the system user {SYSTEM_USER!r} to run PostgreSQL as (we are root)")
    return missing


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Server:
    """One throwaway PostgreSQL server: its role, data directory and port."""

    role: str
    data_dir: Path
    port: int
    started: bool = False

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@{HOST}:{self.port}/postgres"

    @property
    def libpq_dsn(self) -> str:
        """The same DSN as libpq key=value words (PL/Proxy's partition strings)."""
        return f"host={HOST} port={self.port} dbname=postgres user=postgres"


@dataclass
class ThrowawayServers:
    """A proxy server and ``shard_count`` shard servers, started by :meth:`start`."""

    shard_count: int
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="txnq-cluster-")))
    proxy: Server | None = None
    shards: list[Server] = field(default_factory=list)

    def __post_init__(self) -> None:
        count = self.shard_count
        if count < 1 or count > MAX_SHARDS or count & (count - 1):
            raise ValueError(
                f"a cluster has a power of two shards (1 to {MAX_SHARDS}), not {count}"
            )

    def __enter__(self) -> ThrowawayServers:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    @property
    def servers(self) -> list[Server]:
        return ([self.proxy] if self.proxy else []) + self.shards

    def start(self) -> None:
        """initdb and start every server; on any failure stop what started and raise."""
        missing = missing_requirements()
        if missing:
            raise ServerUnavailableError(
                "cannot start a test cluster: install " + "; ".join(missing)
            )
        entry = pwd.getpwnam(SYSTEM_USER) if os.geteuid() == 0 else None
        self.root.chmod(0o755)
        if entry is not None:
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        try:
            self.proxy = self._start_one("proxy", entry)
            for number in range(self.shard_count):
                self.shards.append(self._start_one(f"shard{number}", entry))
        except BaseException:
            self.stop()
            raise

    def _start_one(self, role: str, entry: pwd.struct_passwd | None) -> Server:
        server = Server(role, self.root / role, free_port())
        _run(
            "initdb",
            [
                *("-D", str(server.data_dir), "--auth=trust", "--username=postgres"),
                *("--encoding=UTF8", "--no-locale", "--no-instructions"),
            ],
            entry,
            cwd=self.root,
        )
        settings = {**SERVER_SETTINGS, "listen_addresses": HOST, "port": str(server.port)}
        settings["unix_socket_directories"] = str(server.data_dir)
        with (server.data_dir / "postgresql.auto.conf").open("a", encoding="utf-8") as conf:
            conf.writelines(f"{name} = '{value}'\n" for name, value in settings.items())
        log = server.data_dir / "server.log"
        try:
            _run(
                "pg_ctl",
                [
                    *("-D", str(server.data_dir), "-w", "-t", str(START_TIMEOUT_SECONDS)),
                    *("-l", str(log), "start"),
                ],
                entry,
                cwd=self.root,
            )
        except ServerUnavailableError as error:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise ServerUnavailableError(f"{error}\n{tail}") from error
        server.started = True
        return server

    def stop(self) -> None:
        """Stop every started server (fast shutdown) and remove the directory."""
        entry = pwd.getpwnam(SYSTEM_USER) if os.geteuid() == 0 else None
        for server in self.servers:
            if not server.started:
                continue
            try:
                _run(
                    "pg_ctl",
                    ["-D", str(server.data_dir), "-m", "fast", "-w", "-t", "30", "stop"],
                    entry,
                    cwd=self.root,
                )
            except ServerUnavailableError:
                _run(
                    "pg_ctl",
                    ["-D", str(server.data_dir), "-m", "immediate", "-w", "-t", "30", "stop"],
                    entry,
                    cwd=self.root,
                    check=False,
                )
            server.started = False
        shutil.rmtree(self.root, ignore_errors=True)

    def restart(self, server: Server) -> None:
        """Restart one server in place (same port and data): for crash tests."""
        self.pause(server)
        self.resume(server)

    def pause(self, server: Server, *, mode: str = "fast") -> None:
        """Stop one server, keeping its data and port (``mode``: fast or immediate,
        a crash): a shard outage. :meth:`resume` starts it again."""
        entry = pwd.getpwnam(SYSTEM_USER) if os.geteuid() == 0 else None
        _run(
            "pg_ctl",
            ["-D", str(server.data_dir), "-m", mode, "-w", "-t", "30", "stop"],
            entry,
            cwd=self.root,
        )
        server.started = False

    def resume(self, server: Server) -> None:
        """Start a server :meth:`pause` stopped, on its port and data."""
        entry = pwd.getpwnam(SYSTEM_USER) if os.geteuid() == 0 else None
        log = server.data_dir / "server.log"
        _run(
            "pg_ctl",
            [
                *("-D", str(server.data_dir), "-w", "-t", str(START_TIMEOUT_SECONDS)),
                *("-l", str(log), "start"),
            ],
            entry,
            cwd=self.root,
        )
        server.started = True


def _run(
    program: str,
    args: list[str],
    entry: pwd.struct_passwd | None,
    *,
    cwd: Path,
    check: bool = True,
) -> None:
    """Run a PostgreSQL 15 binary (as ``entry``'s user when given), bounded in time."""
    command = [str(PG15_BIN / program), *args]
    # Output to a file, not a pipe: pg_ctl start's server child holds the pipe open.
    with tempfile.TemporaryFile("w+b") as output_file:
        try:
            completed = subprocess.run(
                command,
                stdin=subprocess.DEVNULL,
                stdout=output_file,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                timeout=START_TIMEOUT_SECONDS + 30,
                check=False,
                user=entry.pw_uid if entry is not None else None,
                group=entry.pw_gid if entry is not None else None,
                extra_groups=[] if entry is not None else None,
            )
        except subprocess.TimeoutExpired as error:
            raise ServerUnavailableError(f"{program} did not finish: {command}") from error
        output_file.seek(0)
        output = output_file.read().decode(errors="replace")
    if check and completed.returncode != 0:
        raise ServerUnavailableError(f"{program} failed ({completed.returncode}): {output}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--shards", type=int, default=2, help="number of shards (a power of two)")
    parser.add_argument(
        "--seconds", type=float, default=3600, help="stop after this long (default 3600)"
    )
    args = parser.parse_args(argv)
    with ThrowawayServers(args.shards) as servers:
        assert servers.proxy is not None
        print(f"proxy  {servers.proxy.dsn}")
        for shard in servers.shards:
            print(f"{shard.role} {shard.dsn}")
        print(f"Stopping and removing {servers.root} after {args.seconds:.0f} s or Ctrl-C.")
        deadline = time.monotonic() + args.seconds
        try:
            while time.monotonic() < deadline:
                time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
