"""``txnq standalone``: PostgreSQL, the schema and both workers on one machine,
in the foreground, like `pulsar standalone`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from txnq.cli.options import (
    ConsolePortOption,
    HomeOption,
    JsonOption,
    LogLevelOption,
    MetricsHostOption,
    MetricsPortOption,
    PortOption,
    embedded_server,
)
from txnq.cli.output import (
    configure_logging,
    console,
    err_console,
    note,
    print_json,
    properties_table,
)
from txnq.settings import load_settings

if TYPE_CHECKING:
    from txnq.database.embedded import EmbeddedServer


def standalone(
    home: HomeOption = None,
    port: PortOption = None,
    no_workers: Annotated[
        bool,
        typer.Option(
            "--no-workers",
            help="Run PostgreSQL only, without the scheduler and coordinator workers.",
        ),
    ] = False,
    log_level: LogLevelOption = "info",
    metrics_port: MetricsPortOption = None,
    metrics_host: MetricsHostOption = None,
    console_port: ConsolePortOption = None,
    no_console: Annotated[
        bool, typer.Option("--no-console", help="Do not serve the web console.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Run txnq on one machine in the foreground, like `pulsar standalone`.

    Starts the embedded PostgreSQL (or reuses the one running under the home) on
    its port (the same at every start, so the DSN stays valid), migrates it, runs
    the scheduler and a coordinator worker in this process and prints the DSN
    (with --json: one line of JSON). Ctrl-C or SIGTERM stops the workers, and stops
    PostgreSQL if this command started it (a server that was already running
    keeps running). With --metrics-port, one Prometheus endpoint serves the
    metrics of both workers. The web console is served on 127.0.0.1 (its URL
    is printed; on any free port when its own is taken), unless --no-console.
    """
    from txnq import errors
    from txnq.console.server import ConsoleServer
    from txnq.database.migrate import upgrade
    from txnq.metrics import MetricsServer, serve
    from txnq.workers.coordinator import CoordinatorWorker
    from txnq.workers.coordinator_thread import CoordinatorThread
    from txnq.workers.scheduler import Scheduler, StopSignal

    configure_logging(log_level)
    settings = load_settings(metrics_port=metrics_port, metrics_host=metrics_host)
    server = embedded_server(home, port)
    was_running = server.is_running()
    scheduler: Scheduler | None = None
    coordinator: CoordinatorThread | None = None
    metrics: MetricsServer | None = None
    web_console: ConsoleServer | None = None
    server_started = False

    def stop_everything() -> None:
        # Idempotent: runs on a stop signal, and again on the way out of an
        # error or an interrupt during start-up.
        nonlocal scheduler, coordinator, metrics, web_console, server_started
        if web_console is not None:
            web_console.stop()
            web_console = None
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
                if not no_console:
                    try:
                        web_console = ConsoleServer(dsn, settings, port=console_port).start()
                    except errors.ConfigurationError as exc:  # its port is taken
                        note(f"{exc}: serving the console on a free port instead")
                        web_console = ConsoleServer(dsn, settings, port=0).start()
                banner = _banner(server, dsn, revision, was_running, scheduler, metrics)
                banner["console"] = None if web_console is None else web_console.url
                if as_json:  # one line: a script reads it while this keeps running
                    print_json(banner, lines=True)
                else:
                    _print_banner(banner)
                received = stop.wait()
                note(f"Stopping ({received})...")
            finally:
                stop_everything()
        if was_running:
            note(f"PostgreSQL under {server.home} keeps running: it was running before")
    finally:
        stop_everything()


def _banner(
    server: EmbeddedServer,
    dsn: str,
    revision: str,
    was_running: bool,
    scheduler: Any,
    metrics: Any,
) -> dict[str, Any]:
    """What is running, for the banner and --json."""
    return {
        "dsn": dsn,
        "home": str(server.home),
        "port": server.port,
        "version": server.status()["version"],
        "started": not was_running,
        "revision": revision,
        "jobs": None if scheduler is None else [job.name for job in scheduler.jobs],
        "coordinator": scheduler is not None,
        "metrics": None if metrics is None else metrics.url,
    }


def _print_banner(banner: dict[str, Any]) -> None:
    origin = "started" if banner["started"] else "reused: it keeps running after this command"
    workers = (
        "none (--no-workers)"
        if banner["jobs"] is None
        else "scheduler (" + ", ".join(banner["jobs"]) + "), coordinator"
    )
    rows: list[tuple[str, object]] = [
        ("server", f"{banner['version']} under {banner['home']} ({origin})"),
        ("schema", f"revision {banner['revision']}"),
        ("workers", workers),
    ]
    if banner["metrics"] is not None:
        rows.append(("metrics", banner["metrics"]))
    if banner["console"] is not None:
        rows.append(("console", banner["console"]))
    rows.append(("DSN", banner["dsn"]))
    console.print(properties_table("txnq standalone is running", rows))
    console.print("Use it from another shell:", style="dim", highlight=False)
    console.print(f"export TXNQ_DSN={banner['dsn']}", markup=False, highlight=False, soft_wrap=True)
    console.print("Press Ctrl-C to stop.", style="dim", highlight=False)
