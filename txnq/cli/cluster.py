"""``txnq cluster``: topics sharded over several PostgreSQL servers on PL/Proxy
(docs/cluster.md): set a cluster up, show its shards and how calls are routed."""

from __future__ import annotations

import shlex
from typing import Annotated

import typer
from psycopg.conninfo import conninfo_to_dict
from rich.text import Text

from txnq import errors
from txnq.cli.help_format import Commands
from txnq.cli.options import JsonOption
from txnq.cli.output import Column, console, count_text, note, print_json, print_tables, table
from txnq.settings import load_settings

cluster_app = Commands(
    help="A cluster: one proxy database (PL/Proxy, routing only) and a power of two of "
    "shard databases, each a complete txnq schema. Point TXNQ_DSN at the proxy and the "
    "client works unchanged for what the proxy routes (docs/cluster.md says what it "
    "refuses yet).",
    no_args_is_help=True,
)

ProxyOption = Annotated[
    str | None,
    typer.Option(
        "--proxy",
        "--dsn",
        metavar="URL",
        show_default=False,
        help="PostgreSQL URL of the proxy database (PL/Proxy installed on its server); "
        "--dsn is the same option. Default: TXNQ_DSN (or dsn in txnq.toml).",
    ),
]
ShardOption = Annotated[
    list[str],
    typer.Option(
        "--shard",
        metavar="URL",
        show_default=False,
        help="PostgreSQL URL of a shard database; repeat it once per shard, in order (a "
        "power of two of them: 1, 2, 4 ...). The order places the partitions: keep it.",
    ),
]


def _proxy_dsn(proxy: str | None) -> str:
    dsn = proxy or load_settings().dsn
    if not dsn:
        raise errors.ConfigurationError(
            "no proxy database: pass --proxy URL or set TXNQ_DSN to the proxy"
        )
    return dsn


@cluster_app.command("init")
def cluster_init(
    shard: ShardOption,
    proxy: ProxyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Migrate every shard, install the proxy's functions and PL/Proxy's cluster
    configuration on the proxy, and check that every shard answers through it.
    Safe to run again with the same shards, in the same order."""
    from txnq.cluster.setup import init

    proxy_dsn = _proxy_dsn(proxy)
    if not as_json:
        note(f"Migrating {len(shard)} shard(s) and installing the proxy's schema")
    report = init(proxy_dsn, list(shard))
    if as_json:
        print_json(report.__dict__)
        return
    console.print(
        f"Cluster of {len(report.shards)} shard(s) at revision [bold]{report.revision}[/bold]: "
        f"{report.routed} functions routed, {report.refused} functions"
        + (f" and {count_text(report.refused_views, 'view')}" if report.refused_views else "")
        + " refused through the proxy (TQ030) for now"
    )
    if report.left_out:
        note("not on the proxy (their types are the shards' own): " + ", ".join(report.left_out))
    note("Point TXNQ_DSN at the proxy; `txnq cluster status` shows the shards")


@cluster_app.command("advertise")
def cluster_advertise(
    shard: Annotated[int, typer.Argument(help="The shard's number (`txnq cluster status`).")],
    address: Annotated[
        str,
        typer.Argument(
            help="libpq words host, hostaddr, port and dbname where clients reach the shard, "
            "e.g. 'host=10.0.0.7 port=5432'; 'none' clears it."
        ),
    ],
    proxy: ProxyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Tell clients where a shard is when the proxy's address for it is not
    theirs (Kafka's advertised.listeners): the direct route, Spark's reads and
    consumers' wake-ups connect there with their own credentials."""
    from txnq.cluster.setup import advertise

    location = advertise(_proxy_dsn(proxy), shard, None if address == "none" else address)
    if as_json:
        print_json({"shard": shard, "location": location})
        return
    console.print(f"Clients reach shard {shard} at {location}", highlight=False)


@cluster_app.command("status")
def cluster_status(proxy: ProxyOption = None, as_json: JsonOption = False) -> None:
    """Show each shard's health (reached through the proxy), schema revision, the
    partitions it owns, its entries and the backlog of subscriptions on it."""
    from txnq.cluster.setup import status

    shards = status(_proxy_dsn(proxy))
    if as_json:
        print_json([s.as_dict() for s in shards])
        return
    revisions = {s.schema_revision for s in shards if s.healthy}
    title = f"Cluster of {len(shards)} shard(s)"
    if len(revisions) == 1:
        title += f", revision {revisions.pop()}"
    rows = [
        (
            s.shard,
            Text("up", style="green") if s.healthy else Text("down", style="red"),
            *((s.topics, s.partitions, s.entries, s.backlog_entries) if s.healthy else ("-",) * 4),
            _server(s.dsn) if s.healthy else f"{_server(s.dsn)}: {s.error}",
        )
        for s in shards
    ]
    # The database size and the whole DSN are in --json (80 columns hold no more).
    columns = ["shard", "health", "topics", "partitions", "entries", "backlog"]
    print_tables(table(title, [*columns, Column("server", "payload")], rows))
    if len(revisions) > 1:
        note("the shards are at different revisions: run `txnq cluster init` again")


def _server(dsn: str) -> str:
    """host:port/dbname of a shard's libpq DSN (the whole DSN is in --json)."""
    words = conninfo_to_dict(dsn)
    return f"{words.get('host', '')}:{words.get('port', '')}/{words.get('dbname', '')}"


@cluster_app.command("routing")
def cluster_routing(proxy: ProxyOption = None, as_json: JsonOption = False) -> None:
    """Show how the proxy routes each txnq function (partition, all, all_ids,
    first, owned, summed, home, txn) and which it refuses for now (refused: TQ030)."""
    from txnq.cluster.setup import routing

    rows = routing(_proxy_dsn(proxy))
    if as_json:
        print_json([{"function": f, "rule": r, "note": n} for f, r, n in rows])
        return
    routed = [row for row in rows if row[1] != "refused"]
    console.print(
        table("Routed through the proxy", ["function", "rule", Column("note", "payload")], routed)
    )
    note(f"{len(rows) - len(routed)} other functions are refused through the proxy (TQ030)")


@cluster_app.command("schedulers")
def cluster_schedulers(
    proxy: ProxyOption = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            "--metrics-port",
            metavar="PORT",
            show_default=False,
            help="Give shard i's scheduler --metrics-port PORT + i: metrics per shard.",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Print the `txnq worker scheduler` command of each shard: TTL, retention,
    GC, vacuum and history purge run against each shard's own database (the
    proxy holds no messages). Start one (or more) per shard, e.g. as services."""
    from txnq.cluster.setup import scheduler_commands

    commands = scheduler_commands(_proxy_dsn(proxy), metrics_port)
    if as_json:
        print_json([{"shard": n, "dsn": d, "command": argv} for n, d, argv in commands])
        return
    for _shard, _dsn, argv in commands:
        console.print(shlex.join(argv), markup=False, highlight=False, soft_wrap=True)
