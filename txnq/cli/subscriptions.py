"""``txnq subscriptions``: list, describe, reset and delete the subscriptions of a topic."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from txnq.cli.help_format import Commands
from txnq.cli.options import DsnOption, JsonOption, TopicArgument, open_client
from txnq.cli.output import (
    console,
    count_text,
    print_json,
    print_tables,
    properties_table,
    table,
)

if TYPE_CHECKING:
    from txnq.admin import ConsumerInfo, CursorInfo, SubscriptionInfo

subscriptions_app = Commands(
    help="List, describe, reset and delete the subscriptions of a topic.", no_args_is_help=True
)

SubscriptionArgument = Annotated[str, typer.Argument(help="Subscription name.", show_default=False)]


# -- tables -----------------------------------------------------------------------


def subscriptions_table(subscriptions: list[SubscriptionInfo]) -> Table:
    """The subscriptions of a topic (also part of `txnq topics describe`)."""
    return table(
        "Subscriptions",
        ["Name", "Type", "Isolation", "Backlog entries", "Consumers", "Created"],
        (
            [s.name, s.subscription_type, s.isolation, s.backlog_entries, s.consumers, s.created_at]
            for s in subscriptions
        ),
    )


def _cursors_table(cursors: list[CursorInfo]) -> Table:
    return table(
        "Cursors",
        [
            "Partition",
            "Mark delete",
            "Max read",
            "High watermark",
            "Backlog entries",
            "Individual acks",
            "Updated",
        ],
        (
            [
                c.partition,
                c.mark_delete_offset,
                c.max_read_offset,
                c.high_watermark,
                c.backlog_entries,
                c.individual_acks,
                c.updated_at,
            ]
            for c in cursors
        ),
    )


def _consumers_table(consumers: list[ConsumerInfo]) -> Table:
    return table(
        "Consumers",
        ["Id", "Name", "Priority", "Connected", "Lease expires"],
        (
            [k.consumer_id, k.name, k.priority, k.connected_at, k.lease_expires_at]
            for k in consumers
        ),
    )


# -- commands ---------------------------------------------------------------------


@subscriptions_app.command("list")
def subscriptions_list(
    topic: TopicArgument, dsn: DsnOption = None, as_json: JsonOption = False
) -> None:
    """List the subscriptions of a topic with their backlog and consumers."""
    with open_client(dsn) as client:
        subscriptions = client.admin.list_subscriptions(topic)
    if as_json:
        print_json(subscriptions)
        return
    print_tables(subscriptions_table(subscriptions))


@subscriptions_app.command("describe")
def subscriptions_describe(
    topic: TopicArgument,
    name: SubscriptionArgument,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show a subscription: its cursor on each partition and its connected consumers."""
    with open_client(dsn) as client:
        description = client.admin.describe_subscription(topic, name)
    if as_json:
        print_json(description.to_dict())
        return
    s = description.subscription
    print_tables(
        properties_table(
            f"Subscription {s.name} on {description.topic}",
            [
                ("type", s.subscription_type),
                ("isolation", s.isolation),
                ("backlog", count_text(s.backlog_entries, "entry")),
                ("consumers", s.consumers),
                ("created", s.created_at),
            ],
        ),
        _cursors_table(description.cursors),
        _consumers_table(description.consumers),
    )


def _seek_target(value: str) -> str | int | datetime:
    """'earliest' / 'latest' / an offset / an ISO datetime (local time when it has no offset)."""
    if value in ("earliest", "latest"):
        return value
    if value.isdigit():
        return int(value)
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return value  # the library refuses it, naming the forms it accepts
    return when if when.tzinfo is not None else when.astimezone()


@subscriptions_app.command("reset")
def subscriptions_reset(
    topic: TopicArgument,
    name: SubscriptionArgument,
    to: Annotated[
        str,
        typer.Option(
            "--to",
            metavar="POSITION",
            show_default=False,
            help="earliest, latest, an offset (the next message delivered, on every "
            "partition), or an ISO 8601 publish time such as 2025-01-31T12:00:00Z "
            "(local time when it has no offset).",
        ),
    ],
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Move a subscription's cursors on every partition; connected consumers rewind."""
    with open_client(dsn) as client:
        cursors = client.admin.reset_subscription(topic, name, _seek_target(to))
    if as_json:
        print_json({"topic": topic, "subscription": name, "cursors": cursors})
        return
    console.print(_cursors_table(cursors))


@subscriptions_app.command("delete")
def subscriptions_delete(
    topic: TopicArgument,
    name: SubscriptionArgument,
    force: Annotated[
        bool, typer.Option("--force", help="Delete even while consumers are connected.")
    ] = False,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete a subscription and its cursors; refused while consumers are connected,
    unless --force."""
    with open_client(dsn) as client:
        client.admin.delete_subscription(topic, name, force=force)
    if as_json:
        print_json({"topic": topic, "deleted": name})
        return
    console.print(f"Deleted subscription {name} of topic {topic}", highlight=False)
