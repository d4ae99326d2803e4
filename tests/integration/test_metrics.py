"""The Prometheus endpoint of the workers: a known workload, scraped over HTTP
on the loopback interface, shows exactly the counts the database holds, and a
bad port is refused with an error that says what to do.

Every endpoint here binds 127.0.0.1 on a port the OS picks (port 0)."""

from __future__ import annotations

import socket
import threading
import urllib.request
from collections.abc import Iterator

import psycopg
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from txnq.workers import coordinator as coordinator_worker
from txnq.workers import scheduler as scheduler_worker
from txnq.workers.coordinator import CoordinatorWorker
from txnq.workers.coordinator_thread import CoordinatorThread
from txnq.workers.scheduler import Job, JobContext, Scheduler
from typer.testing import CliRunner

import txnq
from tests.helpers import receive_messages, sql, wait_until
from txnq import errors, lifecycle
from txnq.cli import app
from txnq.database.migrate import upgrade
from txnq.metrics import DatabaseCollector, MetricsServer, check_port, serve
from txnq.settings import load_settings

runner = CliRunner(env={"COLUMNS": "200", "TXNQ_METRICS_PORT": None, "TXNQ_CONFIG": None})

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(server: MetricsServer) -> Samples:
    """Every sample of one scrape over HTTP: (name, labels) -> value."""
    assert server.url.startswith("http://127.0.0.1:"), server.url
    with urllib.request.urlopen(server.url, timeout=10) as response:
        assert response.status == 200
        text = response.read().decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    key = (name, frozenset(labels.items()))
    assert key in samples, (
        f"no sample {name}{labels}; have: {sorted(k for k in samples if k[0] == name)}"
    )
    return samples[key]


@pytest.fixture
def metrics(dsn: str) -> Iterator[MetricsServer]:
    with MetricsServer(dsn, host="127.0.0.1", port=0) as server:
        yield server


def send(producer: txnq.Producer, count: int, partition: int, txn: object = None) -> None:
    """``count`` entries of one 10-byte message each."""
    for i in range(count):
        producer.send(f"message-{i:02d}", partition=partition, txn=txn)


# -- the database metrics ---------------------------------------------------------


def test_a_known_workload_is_scraped_with_exact_counts(dsn: str, metrics: MetricsServer) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("orders", partitions=2)
        consumer = client.subscribe("orders", "billing", initial_position="earliest")
        before = scrape(metrics)
        assert value(before, "txnq_topic_entries_appended_total", topic="orders") == 0
        assert (
            value(
                before, "txnq_subscription_backlog_entries", topic="orders", subscription="billing"
            )
            == 0
        )

        with client.producer("orders") as producer:
            send(producer, 5, partition=0)  # offsets 0-4 of partition 0, 50 bytes
            send(producer, 3, partition=1)  # offsets 0-2 of partition 1, 30 bytes
            for i in range(4):  # one batch: offset 3 of partition 1, 4 messages, 40 bytes
                producer.send_async(f"batched-{i:02d}", partition=1)
            producer.flush()
            with client.new_transaction() as committed:  # offsets 4-5 + COMMIT marker 6
                send(producer, 2, partition=1, txn=committed)
            aborted = client.new_transaction()  # offset 5 + ABORT marker 6 of partition 0
            send(producer, 1, partition=0, txn=aborted)
            aborted.abort()
            by_admin = client.new_transaction()
            client.admin.abort_transaction(str(by_admin.txn_id))
            still_open = client.new_transaction()

        # 5 + 3 + 4 + 2 messages are readable; the aborted one never is.
        messages = receive_messages(consumer, 14)
        for message in messages:
            if message.message_id.partition == 0:
                consumer.acknowledge(message)  # folds past the aborted entry and its marker
        (third,) = [m for m in messages if m.message_id.partition == 1 and m.message_id.offset == 2]
        consumer.acknowledge(third)  # an individual ack above the mark-delete offset

        samples = scrape(metrics)
        assert value(samples, "txnq_topic_partitions", topic="orders") == 2
        # Entries, not messages: 7 on each partition, markers included.
        assert value(samples, "txnq_topic_entries_appended_total", topic="orders") == 14
        assert value(samples, "txnq_topic_payload_bytes_appended_total", topic="orders") == 150
        # Partition 0 passed to offset 6 (7 entries), plus offset 2 of partition 1.
        labels = {"topic": "orders", "subscription": "billing"}
        assert value(samples, "txnq_subscription_entries_acknowledged_total", **labels) == 8
        # Partition 1: offsets 0-6 readable (the marker too), one acknowledged.
        assert value(samples, "txnq_subscription_backlog_entries", **labels) == 6
        # Its ledger's 90 payload bytes: whole, as nothing below it is acknowledged.
        assert value(samples, "txnq_subscription_backlog_bytes", **labels) == 90
        assert value(samples, "txnq_subscription_consumers", **labels) == 1

        assert value(samples, "txnq_transactions_opened_total") == 4
        assert value(samples, "txnq_transactions", state="OPEN") == 1
        assert value(samples, "txnq_transactions", state="COMMITTING") == 0
        assert value(samples, "txnq_transactions", state="ABORTING") == 0
        assert 0 < value(samples, "txnq_transaction_oldest_open_seconds") < 60
        completed = "txnq_transactions_completed_total"
        assert value(samples, completed, outcome="committed", reason="client") == 1
        assert value(samples, completed, outcome="aborted", reason="client") == 1
        assert value(samples, completed, outcome="aborted", reason="admin") == 1
        histogram = "txnq_transaction_completion_seconds"
        assert value(samples, histogram + "_count", outcome="committed") == 1
        assert value(samples, histogram + "_count", outcome="aborted") == 2
        assert value(samples, histogram + "_bucket", outcome="aborted", le="+Inf") == 2
        assert value(samples, histogram + "_sum", outcome="committed") >= 0

        # Scraped again, nothing is counted twice; the open one completes once.
        still_open.commit()
        again = scrape(metrics)
        assert value(again, completed, outcome="committed", reason="client") == 2
        assert value(again, completed, outcome="aborted", reason="client") == 1
        assert value(again, "txnq_transactions", state="OPEN") == 0
        assert value(again, "txnq_transaction_oldest_open_seconds") == 0
        assert value(again, "txnq_metrics_database_up") == 1
        assert value(again, "txnq_metrics_scrape_errors_total") == 0
        consumer.close()


def test_a_subscription_reading_uncommitted_counts_open_transactions_in_its_backlog(
    dsn: str, metrics: MetricsServer
) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("events")
        for name, isolation in (("committed", "read_committed"), ("dirty", "read_uncommitted")):
            client.subscribe(
                "events", name, initial_position="earliest", isolation=isolation
            ).close()
        with client.producer("events") as producer:
            send(producer, 2, partition=0)
            txn = client.new_transaction()
            send(producer, 3, partition=0, txn=txn)  # holds the max read offset at 1
            samples = scrape(metrics)
            txn.abort()
    backlog = "txnq_subscription_backlog_entries"
    assert value(samples, backlog, topic="events", subscription="committed") == 2
    assert value(samples, backlog, topic="events", subscription="dirty") == 5
    assert (
        value(samples, "txnq_subscription_backlog_bytes", topic="events", subscription="committed")
        == 20
    )
    assert value(samples, "txnq_subscription_consumers", topic="events", subscription="dirty") == 0


def test_lifecycle_runs_are_counted_by_job(dsn: str) -> None:
    # Ledgers of two entries, rolled at once: four messages make two closed ledgers.
    upgrade(dsn, settings=load_settings(ledger_max_entries=2, ledger_min_rollover_seconds=0))
    with txnq.Client(dsn) as client, MetricsServer(dsn, port=0) as metrics:
        client.admin.create_topic("logs")
        consumer = client.subscribe("logs", "archive", initial_position="earliest")
        with client.producer("logs") as producer:
            send(producer, 4, partition=0)
        labels = {"topic": "logs", "subscription": "archive"}
        samples = scrape(metrics)
        assert value(samples, "txnq_subscription_backlog_bytes", **labels) == 40
        messages = receive_messages(consumer, 4)
        consumer.acknowledge(messages[0])
        # The first ledger counts half (one of its two entries), the second whole.
        assert value(scrape(metrics), "txnq_subscription_backlog_bytes", **labels) == 30
        for message in messages[1:]:
            consumer.acknowledge(message)
        consumer.close()

        samples = scrape(metrics)
        for job in ("ttl", "retention", "gc"):
            assert value(samples, "txnq_gc_reclaimed_bytes_total", job=job) == 0
            assert value(samples, "txnq_gc_runs_total", job=job) == 0
        report = lifecycle.apply_retention(client)
        assert [(i.ledger_id, i.size_bytes) for i in report.items] == [(0, 20), (1, 20)]
        samples = scrape(metrics)
    assert value(samples, "txnq_gc_reclaimed_bytes_total", job="retention") == 40
    assert value(samples, "txnq_gc_items_total", job="retention") == 2
    assert value(samples, "txnq_gc_runs_total", job="retention") == 1
    assert value(samples, "txnq_gc_reclaimed_bytes_total", job="gc") == 0
    assert value(samples, "txnq_topic_payload_bytes_appended_total", topic="logs") == 40
    assert value(samples, "txnq_subscription_backlog_bytes", **labels) == 0


def test_an_unreadable_database_leaves_the_database_metrics_out(pg_server_dsn: str) -> None:
    # A database that does not exist: the endpoint serves, says so, and counts it.
    from tests.conftest import dsn_for_database

    missing = dsn_for_database(pg_server_dsn, "txnq_metrics_no_such_database")
    with MetricsServer(missing, port=0) as metrics:
        samples = scrape(metrics)
        assert value(samples, "txnq_metrics_database_up") == 0
        assert value(samples, "txnq_metrics_scrape_errors_total") >= 1
        assert not any(name.startswith("txnq_topic_") for name, _ in samples)
        assert any(name.startswith("process_") or name.startswith("python_") for name, _ in samples)


# -- the workers' own metrics -----------------------------------------------------


def _fails(context: JobContext) -> str:
    raise errors.TxnqError("this job always fails")


def test_the_scheduler_measures_its_job_runs(dsn: str, metrics: MetricsServer) -> None:
    jobs = [
        Job("works", lambda context: "did it"),
        Job("fails", _fails),
        Job("elsewhere", lambda context: "never runs here"),
    ]
    # Another process runs "elsewhere": it holds the job's lock.
    with psycopg.connect(dsn, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(hashtext('txnq.job.elsewhere'))")
        scheduler = Scheduler(dsn, jobs=jobs, metrics=metrics)
        scheduler.start()  # one-shot jobs run here, before start() returns
        try:
            samples = scrape(metrics)
        finally:
            scheduler.shutdown()
    assert value(samples, "txnq_job_duration_seconds_count", job="works") == 1
    assert value(samples, "txnq_job_failures_total", job="works") == 0
    assert value(samples, "txnq_job_last_success_timestamp_seconds", job="works") > 0
    assert value(samples, "txnq_job_duration_seconds_count", job="fails") == 1
    assert value(samples, "txnq_job_failures_total", job="fails") == 1
    assert value(samples, "txnq_job_last_success_timestamp_seconds", job="fails") == 0
    assert value(samples, "txnq_job_duration_seconds_count", job="elsewhere") == 0
    assert value(samples, "txnq_job_skipped_total", job="elsewhere") == 1


def test_a_scheduler_with_metrics_port_serves_its_own_endpoint(dsn: str) -> None:
    scheduler = Scheduler(
        dsn,
        settings=load_settings(metrics_port=0),
        jobs=[Job("works", lambda context: "did it")],
    )
    scheduler.start()
    try:
        assert scheduler.metrics is not None
        assert scheduler.metrics.host == "127.0.0.1"
        samples = scrape(scheduler.metrics)
        assert value(samples, "txnq_job_duration_seconds_count", job="works") == 1
        assert value(samples, "txnq_metrics_database_up") == 1
    finally:
        scheduler.shutdown()
    assert scheduler.metrics is None


def test_a_coordinator_worker_reports_what_it_completed(dsn: str, metrics: MetricsServer) -> None:
    settings = load_settings(tc_count=2)
    upgrade(dsn, settings=settings)
    worker = CoordinatorWorker(dsn, settings, poll_interval=0.1, grace_seconds=0.0, metrics=metrics)
    thread = CoordinatorThread(worker).start()
    try:
        leases = "txnq_coordinator_leases"
        wait_until(lambda: value(scrape(metrics), leases, worker=worker.name) == 2, what="leases")
        with txnq.Client(dsn) as client:
            client.admin.create_topic("jobs")
            with client.producer("jobs") as producer:
                txn = client.new_transaction()
                send(producer, 1, partition=0, txn=txn)
                txn.commit(wait=False)  # the worker runs the marker phase
        completed = "txnq_coordinator_transactions_completed_total"
        wait_until(
            lambda: value(scrape(metrics), completed, worker=worker.name) == 1, what="completion"
        )
        samples = scrape(metrics)
    finally:
        thread.stop()
    assert (
        value(samples, "txnq_transactions_completed_total", outcome="committed", reason="client")
        == 1
    )
    assert value(samples, "txnq_transaction_completion_seconds_count", outcome="committed") == 1
    assert value(samples, "txnq_transactions", state="COMMITTING") == 0


# -- ports, hosts and the command line ----------------------------------------------


def test_no_metrics_port_means_no_endpoint(dsn: str) -> None:
    assert load_settings().metrics_port is None
    assert load_settings().metrics_host == "127.0.0.1"
    assert serve(dsn, load_settings()) is None


@pytest.mark.parametrize("bad", ["-1", "65536", "http", "", "8080.5", True])
def test_a_bad_port_is_refused_with_what_to_give(bad: object) -> None:
    with pytest.raises(errors.ConfigurationError, match="TCP port number from 1 to 65535"):
        check_port(bad)


def test_a_bad_metrics_port_setting_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TXNQ_METRICS_PORT", "ninety")
    with pytest.raises(errors.ConfigurationError, match="METRICS_PORT"):
        load_settings()
    monkeypatch.setenv("TXNQ_METRICS_PORT", "70000")
    with pytest.raises(errors.ConfigurationError, match="METRICS_PORT must be a TCP port"):
        load_settings()
    monkeypatch.setenv("TXNQ_METRICS_PORT", "9464")
    assert load_settings().metrics_port == 9464


def test_a_port_in_use_is_refused_with_what_to_do(dsn: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(errors.ConfigurationError, match=f"127.0.0.1:{port}.*--metrics-port"):
            MetricsServer(dsn, port=port).start()


@pytest.mark.parametrize("command", [["worker", "scheduler"], ["worker", "coordinator"]])
def test_a_worker_command_stops_on_a_port_in_use(dsn: str, command: list[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = runner.invoke(app, [*command, "--dsn", dsn, "--metrics-port", str(port)])
    assert result.exit_code == 1, result.output
    assert f"cannot serve metrics on 127.0.0.1:{port}" in result.output
    assert "choose another --metrics-port" in result.output


@pytest.mark.parametrize(
    "command", [["worker", "scheduler"], ["worker", "coordinator"], ["standalone"]]
)
def test_the_worker_commands_take_metrics_options(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert "--metrics-port" in result.output
    assert "--metrics-host" in result.output
    assert "TXNQ_METRICS_PORT" in result.output

    bad = runner.invoke(app, [*command, "--metrics-port", "70000"])
    assert bad.exit_code == 2, bad.output
    assert "Invalid value for '--metrics-port'" in bad.output
    assert "must be a TCP port number from 1 to 65535 (0: any free port), not 70000" in bad.output

    bad = runner.invoke(app, [*command, "--metrics-port", "http"])
    assert bad.exit_code == 2, bad.output
    assert "Invalid value for '--metrics-port'" in bad.output
    assert "integer" in bad.output


def test_a_bad_metrics_port_from_the_environment_fails_the_command(dsn: str) -> None:
    result = runner.invoke(
        app, ["worker", "scheduler", "--dsn", dsn], env={"TXNQ_METRICS_PORT": "99999"}
    )
    assert result.exit_code == 1, result.output
    assert "METRICS_PORT must be a TCP port from 1 to 65535" in result.output


@pytest.mark.parametrize("module", [scheduler_worker, coordinator_worker])
def test_the_worker_modules_take_metrics_options(
    module: object, capsys: pytest.CaptureFixture[str]
) -> None:
    main = module.main  # type: ignore[attr-defined]
    with pytest.raises(SystemExit) as exit_help:
        main(["--help"])
    assert exit_help.value.code == 0
    assert "--metrics-port PORT" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_bad:
        main(["--metrics-port", "70000"])
    assert exit_bad.value.code == 2
    assert "--metrics-port must be a TCP port number from 1 to 65535" in capsys.readouterr().err


def test_scrapes_at_once_are_served_one_after_the_other(dsn: str, metrics: MetricsServer) -> None:
    results: list[Samples] = []
    threads = [threading.Thread(target=lambda: results.append(scrape(metrics))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(results) == 4
    assert all(value(r, "txnq_metrics_database_up") == 1 for r in results)
    # One connection served them all.
    connections = sql(
        dsn,
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE application_name = 'txnq-metrics' AND datname = current_database()",
    )
    assert connections == [(1,)]


def test_completions_count_from_the_endpoints_start_and_each_once(dsn: str) -> None:
    upgrade(dsn, settings=load_settings(tc_count=1))
    with txnq.Client(dsn) as client:
        client.new_transaction().commit()  # before the start: not counted
        in_flight = client.new_transaction()  # open at the start, committed after: counted
        # At most two new transactions per coordinator and scrape: a burst is
        # counted over several scrapes, each one bounded.
        collector = DatabaseCollector(dsn, transactions_per_scrape=2)
        registry = CollectorRegistry()
        registry.register(collector)
        collector.start()
        try:
            in_flight.commit()
            for _ in range(4):
                client.new_transaction().abort()
            counts = []
            for _ in range(3):
                samples = {
                    s.labels.get("outcome"): s.value
                    for family in text_string_to_metric_families(generate_latest(registry).decode())
                    for s in family.samples
                    if s.name == "txnq_transactions_completed_total"
                }
                counts.append((samples["committed"], samples["aborted"]))
        finally:
            collector.close()
    assert counts == [(1, 2), (1, 4), (1, 4)]
