"""``txnq topics``: create, change, list, describe, grow and delete topics, and
grant PostgreSQL roles access to them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from txnq.cli.help_format import Commands
from txnq.cli.options import DsnOption, JsonOption, TopicArgument, open_client
from txnq.cli.output import (
    console,
    duration_text,
    kept_text,
    print_json,
    print_tables,
    properties_table,
    size_text,
    table,
    time_text,
)
from txnq.cli.subscriptions import subscriptions_table

if TYPE_CHECKING:
    from collections.abc import Callable

    from txnq.admin import BacklogQuotaInfo, PartitionInfo, TopicInfo, TopicPermission

topics_app = Commands(help="Create, list, describe, grow and delete topics.", no_args_is_help=True)

# -- options ----------------------------------------------------------------------

# The backlog quota options read the same on `create` and `set-policy`.
BacklogQuotaSizeOption = Annotated[
    str | None,
    typer.Option(
        "--backlog-quota-size",
        metavar="SIZE",
        show_default=False,
        help="Most payload bytes a subscription's backlog may hold, e.g. 10GiB; -1: no "
        "limit; 'default': BACKLOG_QUOTA_DEFAULT_LIMIT_BYTES.",
    ),
]
BacklogQuotaAgeOption = Annotated[
    str | None,
    typer.Option(
        "--backlog-quota-age",
        metavar="DURATION",
        show_default=False,
        help="Oldest a subscription's unacknowledged message may get, e.g. 1h; -1: no "
        "limit; 'default': BACKLOG_QUOTA_DEFAULT_LIMIT_SECONDS.",
    ),
]
BacklogQuotaPolicyOption = Annotated[
    str | None,
    typer.Option(
        "--backlog-quota-policy",
        metavar="POLICY",
        show_default=False,
        help="What happens over the quota: producer_hold (sends block, then fail), "
        "producer_error (sends fail at once) or consumer_backlog_eviction (the oldest "
        "backlog is acknowledged); 'default': BACKLOG_QUOTA_DEFAULT_POLICY.",
    ),
]
# Retention and TTL read differently on `create` (defaults of a new topic) and
# `set-policy` (what is not given stays), so each command defines its own.

# The permission commands name a topic, or a prefix with --prefix.
TopicOrPrefixArgument = Annotated[
    str,
    typer.Argument(help="Topic name, or a topic-name prefix with --prefix.", show_default=False),
]
RoleOption = Annotated[
    str,
    typer.Option("--role", "-r", show_default=False, help="The PostgreSQL role (login or group)."),
]
PrefixOption = Annotated[
    bool,
    typer.Option("--prefix", help="NAME is a topic-name prefix: every topic starting with it."),
]


# -- tables -----------------------------------------------------------------------


def _quota_text(value: Any, text: Callable[[Any], str]) -> str:
    """A topic's own backlog quota limit: None uses the server default, -1 is none."""
    if value is None:
        return "default"
    return "no limit" if value < 0 else str(text(value))


def _topic_table(topic: TopicInfo) -> Table:
    return properties_table(
        f"Topic {topic.name}",
        [
            ("partitions", topic.partitions),
            ("retention", kept_text(topic.retention_seconds, duration_text)),
            ("retention size", kept_text(topic.retention_bytes, size_text)),
            ("ttl", duration_text(topic.ttl_seconds)),
            ("max message size", size_text(topic.max_message_bytes)),
            ("backlog quota size", _quota_text(topic.backlog_quota_bytes, size_text)),
            ("backlog quota age", _quota_text(topic.backlog_quota_seconds, duration_text)),
            ("backlog quota policy", topic.backlog_quota_policy or "default"),
            ("created", topic.created_at),
            ("topic id", topic.topic_id),
        ],
    )


def _print_topic(topic: TopicInfo, as_json: bool) -> None:
    """What create, set-policy and update print: the topic as it is now."""
    if as_json:
        print_json(topic.to_dict())
        return
    console.print(_topic_table(topic))


def _backlog_quota_table(quota: BacklogQuotaInfo) -> Table:
    def mark(text: str, which: str) -> str:
        return f"{text} (server default)" if which in quota.from_defaults else text

    state = "under quota"
    if quota.exceeded_since is not None:
        state = f"OVER since {time_text(quota.exceeded_since)}: {quota.exceeded_reason}"
    return properties_table(
        "Backlog quota in effect",
        [
            ("size limit", mark(_quota_text(quota.limit_bytes, size_text), "size")),
            ("age limit", mark(_quota_text(quota.limit_seconds, duration_text), "age")),
            ("policy", mark(quota.policy, "policy")),
            ("last check", state),
        ],
    )


def _topics_table(topics: list[TopicInfo]) -> Table:
    return table(
        "Topics",
        ["Name", "Partitions", "Retention", "Retention size", "TTL", "Max message", "Created"],
        (
            [
                t.name,
                t.partitions,
                kept_text(t.retention_seconds, duration_text),
                kept_text(t.retention_bytes, size_text),
                duration_text(t.ttl_seconds),
                size_text(t.max_message_bytes),
                t.created_at,
            ]
            for t in topics
        ),
    )


def _partitions_table(partitions: list[PartitionInfo]) -> Table:
    return table(
        "Partitions",
        [
            "Partition",
            "Earliest",
            "High watermark",
            "Max read",
            "Open ledger",
            "Payload",
            "Last publish",
        ],
        (
            [
                p.partition,
                p.earliest_offset,
                p.high_watermark,
                p.max_read_offset,
                p.open_ledger_id,
                size_text(p.payload_bytes),
                p.last_publish_time,
            ]
            for p in partitions
        ),
    )


def _grants_table(grants: list[TopicPermission]) -> Table:
    return table(
        "Permissions",
        ["Role", "Topic or prefix", "Kind", "Action", "Granted by", "Granted at"],
        [
            [
                g.role if g.role_exists else f"{g.role} (dropped)",
                g.resource,
                g.kind,
                g.action,
                g.granted_by,
                g.granted_at,
            ]
            for g in grants
        ],
    )


# -- commands ---------------------------------------------------------------------


@topics_app.command("create")
def topics_create(
    name: TopicArgument,
    partitions: Annotated[
        int, typer.Option("--partitions", "-p", help="Number of partitions (1 to 4096).")
    ] = 1,
    retention: Annotated[
        str | None,
        typer.Option(
            "--retention",
            metavar="DURATION",
            show_default=False,
            help="Keep acknowledged messages this long, e.g. 7d, 12h; 'infinite' keeps "
            "them forever. Default: none (acknowledged messages are not kept).",
        ),
    ] = None,
    retention_size: Annotated[
        str | None,
        typer.Option(
            "--retention-size",
            metavar="SIZE",
            show_default=False,
            help="Keep acknowledged messages while they add up to at most this, e.g. "
            "10GiB; 'infinite' for no cap. Default: none (not kept by size).",
        ),
    ] = None,
    ttl: Annotated[
        str | None,
        typer.Option(
            "--ttl",
            metavar="DURATION",
            show_default=False,
            help="Acknowledge unconsumed messages older than this on every subscription's "
            "behalf, e.g. 1h. Default: never.",
        ),
    ] = None,
    max_message_bytes: Annotated[
        str | None,
        typer.Option(
            "--max-message-bytes",
            metavar="SIZE",
            show_default=False,
            help="Largest payload accepted, e.g. 1MiB; at most MAX_MESSAGE_BYTES. "
            "Default: MAX_MESSAGE_BYTES (5MiB).",
        ),
    ] = None,
    backlog_quota_size: BacklogQuotaSizeOption = None,
    backlog_quota_age: BacklogQuotaAgeOption = None,
    backlog_quota_policy: BacklogQuotaPolicyOption = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create a topic."""
    with open_client(dsn) as client:
        topic = client.admin.create_topic(
            name,
            partitions,
            retention=retention,
            retention_size=retention_size,
            ttl=ttl,
            max_message_bytes=max_message_bytes,
            backlog_quota_size=backlog_quota_size,
            backlog_quota_age=backlog_quota_age,
            backlog_quota_policy=backlog_quota_policy,
        )
    _print_topic(topic, as_json)


@topics_app.command("set-policy")
def topics_set_policy(
    name: TopicArgument,
    retention: Annotated[
        str | None,
        typer.Option(
            "--retention",
            metavar="DURATION",
            show_default=False,
            help="Keep consumed messages this long, e.g. 7d; 'infinite' keeps them forever; "
            "0: not by time.",
        ),
    ] = None,
    retention_size: Annotated[
        str | None,
        typer.Option(
            "--retention-size",
            metavar="SIZE",
            show_default=False,
            help="Keep consumed messages while they add up to at most this, e.g. 10GiB; "
            "'infinite' for no cap; 0: not by size.",
        ),
    ] = None,
    ttl: Annotated[
        str | None,
        typer.Option(
            "--ttl",
            metavar="DURATION",
            show_default=False,
            help="Acknowledge unconsumed messages older than this on every subscription's "
            "behalf, e.g. 1h; 'none' removes the TTL.",
        ),
    ] = None,
    backlog_quota_size: BacklogQuotaSizeOption = None,
    backlog_quota_age: BacklogQuotaAgeOption = None,
    backlog_quota_policy: BacklogQuotaPolicyOption = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Change a topic's lifecycle policies (retention, TTL, backlog quota); what is not
    given stays. The scheduler applies them at its next TTL, retention and backlog quota
    runs (docs/backlog-quota.md)."""
    changes: dict[str, Any] = {"retention": retention, "retention_size": retention_size}
    if ttl is not None:
        changes["ttl"] = None if ttl.strip().lower() == "none" else ttl
    for key, value in (
        ("backlog_quota_size", backlog_quota_size),
        ("backlog_quota_age", backlog_quota_age),
        ("backlog_quota_policy", backlog_quota_policy),
    ):
        if value is not None:
            changes[key] = value
    with open_client(dsn) as client:
        topic = client.admin.set_topic_policy(name, **changes)
    _print_topic(topic, as_json)


@topics_app.command("list")
def topics_list(dsn: DsnOption = None, as_json: JsonOption = False) -> None:
    """List the topics."""
    with open_client(dsn) as client:
        topics = client.admin.list_topics()
    if as_json:
        print_json([topic.to_dict() for topic in topics])
        return
    print_tables(_topics_table(topics))


@topics_app.command("describe")
def topics_describe(
    name: TopicArgument, dsn: DsnOption = None, as_json: JsonOption = False
) -> None:
    """Show a topic, its partitions (offsets, ledgers, size) and its subscriptions."""
    with open_client(dsn) as client:
        description = client.admin.describe_topic(name)
    if as_json:
        print_json(description.to_dict())
        return
    print_tables(
        _topic_table(description.topic),
        *([_backlog_quota_table(description.backlog_quota)] if description.backlog_quota else []),
        _partitions_table(description.partitions),
        subscriptions_table(description.subscriptions),
    )


@topics_app.command("update")
def topics_update(
    name: TopicArgument,
    partitions: Annotated[
        int,
        typer.Option(
            "--partitions",
            "-p",
            show_default=False,
            help="The new number of partitions; topics grow, never shrink.",
        ),
    ],
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Grow a topic to more partitions."""
    with open_client(dsn) as client:
        topic = client.admin.update_topic(name, partitions=partitions)
    _print_topic(topic, as_json)


@topics_app.command("delete")
def topics_delete(
    name: TopicArgument,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Delete even while subscriptions have a backlog or consumers are connected.",
        ),
    ] = False,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete a topic and its messages; refused while a subscription has a backlog
    or a consumer is connected, unless --force."""
    with open_client(dsn) as client:
        client.admin.delete_topic(name, force=force)
    if as_json:
        print_json({"deleted": name})
        return
    console.print(f"Deleted topic {name}", highlight=False)


@topics_app.command("grant")
def topics_grant(
    name: TopicOrPrefixArgument,
    role: RoleOption,
    actions: Annotated[
        list[str],
        typer.Option(
            "--action",
            "-a",
            show_default=False,
            help="produce, consume or admin (admin includes the other two); repeat it for several.",
        ),
    ],
    prefix: PrefixOption = False,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Allow a PostgreSQL role to produce, consume or administer a topic (or,
    with --prefix, every topic whose name starts with NAME); admin includes
    produce and consume (docs/security.md)."""
    where = {"prefix": name} if prefix else {"topic": name}
    with open_client(dsn) as client:
        added = client.admin.grant(role, actions=actions, **where)
        grants = client.admin.permissions(role=role)
    shown = [g for g in grants if g.resource == name and (g.kind == "prefix") == prefix]
    if as_json:
        print_json({"added": added, "grants": [g.to_dict() for g in shown]})
        return
    console.print(
        f"Granted {', '.join(sorted(set(actions)))} on {'prefix' if prefix else 'topic'} {name} "
        f"to role {role} ({added} new)",
        highlight=False,
    )
    print_tables(_grants_table(shown))


@topics_app.command("revoke")
def topics_revoke(
    name: TopicOrPrefixArgument,
    role: RoleOption,
    actions: Annotated[
        list[str] | None,
        typer.Option(
            "--action",
            "-a",
            show_default=False,
            help="produce, consume or admin; repeat it for several (default: every action).",
        ),
    ] = None,
    prefix: PrefixOption = False,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Take back a role's grants on a topic (or, with --prefix, on that exact
    prefix): the actions given, else all."""
    where = {"prefix": name} if prefix else {"topic": name}
    with open_client(dsn) as client:
        removed = client.admin.revoke(role, actions=actions, **where)
    if as_json:
        print_json({"removed": removed})
        return
    console.print(
        f"Revoked {removed} grant{'s' if removed != 1 else ''} of role {role} on "
        f"{'prefix' if prefix else 'topic'} {name}",
        highlight=False,
    )


@topics_app.command("permissions")
def topics_permissions(
    name: Annotated[
        str | None,
        typer.Argument(
            help="Only the grants that apply to this topic (its own and its prefixes').",
            show_default=False,
        ),
    ] = None,
    role: Annotated[
        str | None,
        typer.Option("--role", "-r", show_default=False, help="Only this role's grants."),
    ] = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the per-topic grants you may see (admins: all)."""
    with open_client(dsn) as client:
        grants = client.admin.permissions(role=role, topic=name)
    if as_json:
        print_json([g.to_dict() for g in grants])
        return
    print_tables(_grants_table(grants))
