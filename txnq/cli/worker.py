"""``txnq worker``: run the scheduler or a coordinator worker in the foreground."""

from __future__ import annotations

from txnq.cli.help_format import Commands
from txnq.cli.options import (
    DsnOption,
    LogFormatOption,
    LogLevelOption,
    MetricsHostOption,
    MetricsPortOption,
    open_client,
)
from txnq.cli.output import configure_logging, err_console, note
from txnq.settings import Settings, load_settings

worker_app = Commands(help="Run a txnq worker process in the foreground.", no_args_is_help=True)


def _settings_and_logging(
    log_level: str, log_format: str | None, metrics_port: int | None, metrics_host: str | None
) -> Settings:
    """A worker's settings (its flags beat TXNQ_* variables and the config file), with
    its logging configured to them."""
    settings = load_settings(
        metrics_port=metrics_port, metrics_host=metrics_host, log_format=log_format
    )
    configure_logging(log_level, settings.log_format)
    return settings


@worker_app.command("scheduler")
def worker_scheduler(
    dsn: DsnOption = None,
    log_level: LogLevelOption = "info",
    log_format: LogFormatOption = None,
    metrics_port: MetricsPortOption = None,
    metrics_host: MetricsHostOption = None,
) -> None:
    """Run the scheduler worker (transaction timeouts, entry-log rollover, TTL,
    retention, GC) until Ctrl-C or SIGTERM. Any number may run: each job runs in
    one process at a time. --metrics-port serves Prometheus metrics (job durations,
    failures, and the database's rates, backlogs and transactions) and /healthz.
    On SIGTERM it waits for the job runs in progress, at most
    SHUTDOWN_TIMEOUT_SECONDS (20s)."""
    from txnq.workers.scheduler import Scheduler

    settings = _settings_and_logging(log_level, log_format, metrics_port, metrics_host)
    Scheduler(dsn or None, settings=settings).run_forever()


@worker_app.command("coordinator")
def worker_coordinator(
    dsn: DsnOption = None,
    log_level: LogLevelOption = "info",
    log_format: LogFormatOption = None,
    metrics_port: MetricsPortOption = None,
    metrics_host: MetricsHostOption = None,
) -> None:
    """Run a coordinator worker until Ctrl-C or SIGTERM: it finishes decided
    transactions (COMMIT/ABORT markers, pending acks) of the coordinators it holds.
    Start several: they split the coordinators evenly and take over a dead one's
    within seconds. --metrics-port serves Prometheus metrics (its leases and
    completions, and the database's rates, backlogs and transactions) and /healthz.
    On SIGTERM it finishes the step in progress and unlocks its leases, within
    SHUTDOWN_TIMEOUT_SECONDS (20s)."""
    from txnq.workers.coordinator import run_coordinator

    settings = _settings_and_logging(log_level, log_format, metrics_port, metrics_host)
    with open_client(dsn) as client:  # resolves the DSN and checks the schema
        where = client.dsn
    run_coordinator(where, settings, announce=note if err_console.is_terminal else None)
