"""The HTTP endpoint of a worker: ``/metrics`` for Prometheus and ``/healthz``
for probes (:class:`MetricsServer`, started by :func:`serve`)."""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import GC_COLLECTOR, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import CollectorRegistry

from txnq import errors
from txnq.metrics.database import DatabaseCollector
from txnq.metrics.workers import CoordinatorCollector, CoordinatorWorker, JobMetrics
from txnq.settings import Settings

log = logging.getLogger("txnq.metrics")

#: Where the endpoint listens unless METRICS_HOST says otherwise: the metrics
#: name topics and subscriptions, so serving them beyond the host is a choice.
DEFAULT_HOST = "127.0.0.1"


def check_port(value: object, *, what: str = "--metrics-port") -> int:
    """``value`` as a TCP port for the endpoint (0: any free port), else a
    ConfigurationError that says what to give."""
    text = str(value).strip() if isinstance(value, str | int) else ""
    if isinstance(value, bool) or not text.isdigit():
        raise errors.ConfigurationError(
            f"{what} must be a TCP port number from 1 to 65535 (0: any free port), not {value!r}"
        )
    port = int(text)
    if not 0 <= port <= 65535:
        raise errors.ConfigurationError(
            f"{what} must be a TCP port number from 1 to 65535 (0: any free port), not {port}"
        )
    return port


#: A health check: returns (healthy, details for the /healthz body).
HealthCheck = Callable[[], tuple[bool, dict[str, Any]]]


class _QuietHandler(WSGIRequestHandler):
    """No access log on standard error: the workers' log stays theirs."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _wsgi_app(registry: CollectorRegistry, checks: dict[str, HealthCheck]) -> Any:
    metrics_app = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "/").rstrip("/") != "/healthz":
            return metrics_app(environ, start_response)  # type: ignore[no-any-return]
        results: dict[str, Any] = {}
        healthy = True
        for name, check in list(checks.items()):
            try:
                ok, details = check()
            except Exception as exc:  # a check that fails is a failed check
                ok, details = False, {"error": f"{type(exc).__name__}: {exc}"}
            healthy = healthy and ok
            results[name] = {"ok": ok, **details}
        body = json.dumps(
            {"status": "ok" if healthy else "unavailable", "checks": results}, default=str
        ).encode()
        status = "200 OK" if healthy else "503 Service Unavailable"
        start_response(
            status,
            [
                ("Content-Type", "application/json"),
                ("Content-Length", str(len(body))),
                ("Cache-Control", "no-store"),
            ],
        )
        return [body]

    return app


class MetricsServer:
    """The HTTP endpoint: ``start()`` binds ``host:port`` (port 0: a free one,
    see :attr:`port`) and serves ``/metrics`` from a daemon thread; ``stop()``
    closes it. The registry holds the database collector, the process
    collectors, and what workers add (:meth:`add_jobs`, :meth:`add_coordinator`).
    """

    def __init__(self, dsn: str, *, host: str = DEFAULT_HOST, port: int = 0) -> None:
        self.host = host
        self.requested_port = check_port(port)
        self.registry = CollectorRegistry()
        self.database = DatabaseCollector(dsn)
        self.registry.register(self.database)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        self.registry.register(GC_COLLECTOR)
        self._jobs: JobMetrics | None = None
        self._checks: dict[str, HealthCheck] = {}
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port it listens on (the one the OS chose for port 0)."""
        if self._server is None:
            return self.requested_port
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def add_jobs(self) -> JobMetrics:
        """The scheduler's job metrics, registered once."""
        if self._jobs is None:
            self._jobs = JobMetrics(self.registry)
        return self._jobs

    def add_coordinator(self, worker: CoordinatorWorker) -> None:
        self.registry.register(CoordinatorCollector(worker))

    def add_health(self, name: str, check: HealthCheck) -> None:
        """Make ``check`` part of ``/healthz`` (under ``name``)."""
        self._checks[name] = check

    @property
    def health_url(self) -> str:
        return self.url.removesuffix("/metrics") + "/healthz"

    def start(self) -> MetricsServer:
        if self._server is not None:
            return self
        try:
            family, _, _, _, sockaddr = socket.getaddrinfo(
                self.host, self.requested_port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
            )[0]

            class Server(ThreadingWSGIServer):
                address_family = family

            server = make_server(
                str(sockaddr[0]),
                self.requested_port,
                _wsgi_app(self.registry, self._checks),
                Server,
                handler_class=_QuietHandler,
            )
            thread = threading.Thread(target=server.serve_forever, name="txnq-metrics", daemon=True)
            thread.start()
            self._server, self._thread = server, thread
        except OSError as exc:
            reason = exc.strerror or str(exc) or type(exc).__name__
            raise errors.ConfigurationError(
                f"cannot serve metrics on {self.host}:{self.requested_port}: {reason}; choose "
                "another --metrics-port / TXNQ_METRICS_PORT (or --metrics-host / "
                "TXNQ_METRICS_HOST), or stop what uses that port"
            ) from None
        self.database.start()
        log.info("metrics on %s, health on %s", self.url, self.health_url)
        return self

    def stop(self) -> None:
        """Stop serving and close the database connection. Idempotent."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None
        self.database.close()

    def __enter__(self) -> MetricsServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(dsn: str, settings: Settings) -> MetricsServer | None:
    """The endpoint ``settings`` ask for (METRICS_PORT, METRICS_HOST), started;
    None when METRICS_PORT is unset."""
    if settings.metrics_port is None:
        return None
    return MetricsServer(dsn, host=settings.metrics_host, port=settings.metrics_port).start()
