"""The console's server: uvicorn on a socket this module binds (so a busy
port is a clear error, and port 0 means any free one), in a thread of its
own, so ``txnq standalone`` runs it beside the workers and ``txnq console``
in the foreground."""

from __future__ import annotations

import socket
import threading
import time

import uvicorn

from txnq import errors
from txnq.console.actions import ConsoleActions
from txnq.console.app import create_app
from txnq.console.reads import ConsoleDatabase, ConsoleReads
from txnq.settings import Settings

#: How long start() waits for uvicorn to serve.
START_TIMEOUT_SECONDS = 10.0


class ConsoleServer:
    """The console of one database, served on ``host:port`` (``url``)."""

    def __init__(
        self, dsn: str, settings: Settings, *, host: str | None = None, port: int | None = None
    ) -> None:
        self.host = host or settings.console_host
        self._requested_port = settings.console_port if port is None else port
        database = ConsoleDatabase(dsn, settings)
        self.actions = ConsoleActions(database)
        self.app = create_app(ConsoleReads(database), self.actions)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = self._requested_port

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def _bind(self) -> socket.socket:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self._requested_port))
        except OSError as exc:
            sock.close()
            raise errors.ConfigurationError(
                f"the console cannot listen on {self.host}:{self._requested_port}: "
                f"{exc.strerror or exc}; choose another with --console-port / CONSOLE_PORT "
                "(0: any free port)"
            ) from None
        sock.listen(64)
        self.port = sock.getsockname()[1]
        return sock

    def start(self) -> ConsoleServer:
        """Serve in a background thread; returns once it answers."""
        sock = self._bind()
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off")
        server = uvicorn.Server(config)
        self._server = server
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="txnq-console", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise errors.ServerUnavailableError(f"the console did not start on {self.url}")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        """Stop serving (idempotent)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self._server = None
        self.actions.close()
