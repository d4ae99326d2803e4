"""``txnq consume``: receive messages through a subscription, print them, and
acknowledge what was printed."""

from __future__ import annotations

import dataclasses
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.table import Table
from rich.text import Text

from txnq import Message, MessageId, errors
from txnq.cli.options import DsnOption, JsonOption, open_client
from txnq.cli.output import Column, console, note, print_json, table
from txnq.durations import parse_duration

if TYPE_CHECKING:
    from txnq import Consumer

#: Messages taken from the consumer's receive queue per output batch.
CONSUME_BATCH = 500


def _value_text(value: bytes) -> tuple[str, str]:
    """(text, encoding): the payload as UTF-8 text when it decodes, else as hex."""
    try:
        return value.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return value.hex(), "hex"


def _message_dict(message: Message) -> dict[str, Any]:
    value, encoding = _value_text(message.value)
    return {
        **message.message_id._asdict(),
        "key": message.key,
        "properties": message.properties,
        "value": value,
        "encoding": encoding,
        "publish_time": message.publish_time,
        "event_time": message.event_time,
        "redelivery_count": message.redelivery_count,
    }


#: The columns of the messages table: the value last, the one that gives way.
MESSAGE_COLUMNS: list[str | Column] = [
    "Partition",
    "Offset",
    "Index",
    Column("Key", "text"),
    Column("Properties", "text"),
    Column("Value", "payload"),
]


def _messages_table(messages: list[Message], *, header: bool, widths: list[int]) -> Table:
    """One batch of messages as a table; ``widths`` (the previous batch's, updated
    in place) only grow, so the tables of successive batches line up."""
    rows: list[list[object]] = []
    for m in messages:
        value, encoding = _value_text(m.value)
        properties = ", ".join(f"{k}={v}" for k, v in m.properties.items())
        rows.append(
            [
                m.partition,
                m.offset,
                m.message_id.batch_index,
                Text("-" if m.key is None else m.key),
                Text(properties or "-"),
                Text(value) if encoding == "utf-8" else Text(f"hex:{value}", style="dim"),
            ]
        )
    result = table(None, MESSAGE_COLUMNS, rows, floors=[*widths[:-1], 0] if widths else None)
    result.show_header = header
    widths[:] = [column.width or 0 for column in result.columns]
    return result


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """Make SIGTERM interrupt the block as Ctrl-C does (KeyboardInterrupt), so that
    `kill` ends ``consume`` as cleanly. Python only handles signals in its main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def consume(
    topic: Annotated[str, typer.Argument(help="Topic to read.", show_default=False)],
    subscription: Annotated[
        str,
        typer.Option(
            "--subscription",
            "-s",
            metavar="NAME",
            show_default=False,
            help="Subscription to read through; created on first use.",
        ),
    ],
    subscription_type: Annotated[
        Literal["exclusive", "failover", "shared", "key_shared"],
        typer.Option("--type", "-t", help="Subscription type."),
    ] = "exclusive",
    initial_position: Annotated[
        Literal["earliest", "latest"],
        typer.Option(
            "--initial-position",
            help="Where a new subscription starts; an existing one continues from its cursor.",
        ),
    ] = "latest",
    count: Annotated[
        int,
        typer.Option("--count", "-n", min=0, help="Stop after this many messages; 0: no limit."),
    ] = 0,
    timeout: Annotated[
        str,
        typer.Option(
            "--timeout",
            metavar="DURATION",
            help="Stop when no message arrived for this long (e.g. 500ms, 5s, 1m); "
            "0: never, run until Ctrl-C.",
        ),
    ] = "5s",
    no_ack: Annotated[
        bool,
        typer.Option(
            "--no-ack", help="Do not acknowledge: the messages stay in the subscription's backlog."
        ),
    ] = False,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Receive messages through a subscription and print them.

    Prints partition, offset, index in the batch, key, properties and the value
    (UTF-8 text, else hex); with --json one JSON object per line. A message that
    cannot be decoded (an event time after year 9999, properties that are not
    strings) is said on stderr instead. Stops after --count messages, after
    --timeout without a message, or on Ctrl-C, then acknowledges what it
    received (cumulatively, per partition; one by one on shared and key_shared
    subscriptions) unless --no-ack.
    """
    idle_limit = parse_duration(timeout, what="--timeout")
    received = _Received()
    with open_client(dsn) as client:
        consumer = client.subscribe(
            topic, subscription, subscription_type, initial_position=initial_position
        )
        note(
            f"Reading {topic} through subscription {subscription} ({subscription_type}); "
            + ("Ctrl-C to stop" if idle_limit == 0 else f"stopping after {timeout} idle")
        )
        try:
            with _sigterm_interrupts():
                _receive_and_print(consumer, received, count, idle_limit, as_json)
        except KeyboardInterrupt:
            pass  # Ctrl-C or SIGTERM, the normal end of `--timeout 0`
        if not no_ack and subscription_type in ("shared", "key_shared"):
            consumer.acknowledge(received.every)
        elif not no_ack:
            for message in received.last.values():
                consumer.acknowledge_cumulative(message)
        consumer.close()
    noun = "message" if received.count == 1 else "messages"
    if no_ack:
        note(f"Received {received.count} {noun}; not acknowledged (--no-ack)")
    else:
        note(f"Received and acknowledged {received.count} {noun}")


@dataclasses.dataclass
class _Received:
    """What ``consume`` printed: how many, the last message of each partition,
    and every message (shared subscriptions acknowledge one by one); a message
    that could not be decoded counts by its id."""

    count: int = 0
    last: dict[int, Message | MessageId] = dataclasses.field(default_factory=dict)
    every: list[Message | MessageId] = dataclasses.field(default_factory=list)


def _receive_and_print(
    consumer: Consumer, received: _Received, count: int, idle_limit: float, as_json: bool
) -> None:
    """Print messages until ``count`` (0: no limit) or ``idle_limit`` seconds
    without one (0: no limit); ``received`` stays true when interrupted."""
    idle_since = time.monotonic()
    widths: list[int] = []
    while count == 0 or received.count < count:
        wait = 1.0 if idle_limit == 0 else idle_limit - (time.monotonic() - idle_since)
        if wait <= 0:
            return
        wanted = CONSUME_BATCH if count == 0 else min(CONSUME_BATCH, count - received.count)
        try:
            batch = consumer.batch_receive(max_messages=wanted, timeout=wait)
        except errors.MessageDecodeError as exc:
            # Said on stderr, and acknowledged with the rest like any message
            # printed: one bad message never stops the reading.
            idle_since = time.monotonic()
            received.last[exc.message_id.partition] = exc.message_id
            received.every.append(exc.message_id)
            received.count += 1
            note(f"{exc.message_id}: cannot be decoded: its {exc.field} {exc.detail}")
            continue
        if not batch:
            continue
        idle_since = time.monotonic()
        first = received.count == 0
        # Record before printing: a stop signal between the two must never leave
        # a printed message unacknowledged.
        for message in batch:
            received.last[message.partition] = message
            received.every.append(message)
        received.count += len(batch)
        if as_json:
            for message in batch:
                print_json(_message_dict(message), lines=True)
        else:
            console.print(_messages_table(batch, header=first, widths=widths))
