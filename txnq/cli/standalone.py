"""``txnq standalone``: PostgreSQL, the schema and both workers on one machine,
in the foreground, like `pulsar standalone`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.panel import Panel
from rich.text import Text

from txnq.cli.options import (
    HomeOption,
    LogLevelOption,
    MetricsHostOption,
    MetricsPortOption,
    embedded_server,
)
from txnq.cli.output import configure_logging, console, err_console, note
from txnq.settings import load_settings

if TYPE_CHECKING:
    from txnq.database.embedded import EmbeddedServer


def standalone(
    home: HomeOption = None,
    no_workers: Annotated[
        bool,
        typer.Option(
            "--no-workers",
            help="Run PostgreSQL only, without the scheduler and coordinator workers.",
        ),
    ] = False,
    log_level: LogLevelOption = "INFO",
    metrics_port: MetricsPortOption = None,
    metrics_host: MetricsHostOption = None,
) -> None:
    """Run txnq on one machine in the foreground, like `pulsar standalone`.

    Starts the embedded PostgreSQL (or reuses the one running under the home),
    migrates it, runs the scheduler and a coordinator worker in this process and
    prints the DSN. Ctrl-C or SIGTERM stops the workers, and stops PostgreSQL if
    this command started it (a server that was already running keeps running).
    With --metrics-port, one Prometheus endpoint serves the metrics of both workers.
    """
    from txnq.database.migrate import upgrade
    from txnq.metrics import MetricsServer, serve
    from txnq.workers.coordinator import CoordinatorThread, CoordinatorWorker
    from txnq.workers.scheduler import Scheduler, StopSignal

    configure_logging(log_level)
    settings = load_settings(metrics_port=metrics_port, metrics_host=metrics_host)
    server = embedded_server(home)
    was_running = server.is_running()
    scheduler: Scheduler | None = None
    coordinator: CoordinatorThread | None = None
    metrics: MetricsServer | None = None
    server_started = False

    def stop_everything() -> None:
        # Idempotent: runs on a stop signal, and again on the way out of an
        # error or an interrupt during start-up.
        nonlocal scheduler, coordinator, metrics, server_started
        if coordinator is not None:
            coordinator.stop()
            coordinator = None
        if scheduler is not None:
            scheduler.shutdown()
            scheduler = None
        if metrics is not None:
            metrics.stop()
            metrics = None
        if server_started:
            server_started = False
            server.stop()
            note(f"Stopped PostgreSQL under {server.home}")

    try:
        with err_console.status(
            "Reusing PostgreSQL..." if was_running else "Starting PostgreSQL..."
        ):
            dsn = server.start()
            server_started = not was_running
            revision = upgrade(dsn, settings=settings)
        # From here on Ctrl-C and SIGTERM request a stop (also during the stop itself).
        with StopSignal() as stop:
            try:
                metrics = serve(dsn, settings)
                if not no_workers:
                    scheduler = Scheduler(dsn, settings=settings, metrics=metrics)
                    scheduler.start()
                    coordinator = CoordinatorThread(
                        CoordinatorWorker(dsn, settings, metrics=metrics)
                    ).start()
                _print_standalone_banner(server, dsn, revision, was_running, scheduler, metrics)
                received = stop.wait()
                note(f"Stopping ({received})...")
            finally:
                stop_everything()
        if was_running:
            note(f"PostgreSQL under {server.home} keeps running: it was running before")
    finally:
        stop_everything()


def _print_standalone_banner(
    server: EmbeddedServer,
    dsn: str,
    revision: str,
    was_running: bool,
    scheduler: Any,
    metrics: Any = None,
) -> None:
    status = server.status()
    origin = "reused: it keeps running after this command" if was_running else "started"
    workers = (
        "none (--no-workers)"
        if scheduler is None
        else "scheduler (" + ", ".join(job.name for job in scheduler.jobs) + "), coordinator"
    )
    console.print(
        Panel.fit(
            Text.assemble(
                ("txnq standalone is running\n\n", "bold green"),
                ("Server      ", "bold"),
                f"{status['version']} under {server.home} ({origin})\n",
                ("Schema      ", "bold"),
                f"revision {revision}\n",
                ("Workers     ", "bold"),
                workers,
                *((("\nMetrics     ", "bold"), metrics.url) if metrics is not None else ()),
            ),
            box=box.ROUNDED,
        )
    )
    console.print(Text.assemble(("DSN: ", "bold"), dsn), soft_wrap=True)
    console.print("Use it from another shell:", style="dim", highlight=False)
    console.print(f"export TXNQ_DSN={dsn}", markup=False, highlight=False, soft_wrap=True)
    console.print("Press Ctrl-C to stop.", style="dim", highlight=False)
