"""``txnq produce``: send messages to a topic through an idempotent producer,
from ``--message`` texts, a file or standard input."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO

import typer
from rich.progress import Progress, TaskID
from rich.text import Text

from txnq import MessageId, errors
from txnq.cli.options import DsnOption, JsonOption, open_client
from txnq.cli.output import console, note, print_json, progress_bar

if TYPE_CHECKING:
    from txnq import PendingSend

#: A progress bar (on a terminal) shows above this many messages, and the JSON
#: output lists every message id up to this many.
PROGRESS_THRESHOLD = 1000


def _properties(values: list[str] | None) -> dict[str, str] | None:
    if not values:
        return None
    properties: dict[str, str] = {}
    for value in values:
        name, sep, text = value.partition("=")
        if not sep or not name:
            raise errors.InvalidArgumentError(
                f"--property {value!r} is not KEY=VALUE (e.g. --property source=cli)"
            )
        properties[name] = text
    return properties


def _lines(stream: BinaryIO) -> Iterator[bytes]:
    """Each line of ``stream`` without its line ending, as it arrives."""
    for line in stream:
        yield line.removesuffix(b"\n").removesuffix(b"\r")


def _open_lines(path: str) -> tuple[Iterator[bytes], int | None]:
    """The lines of ``path`` ('-': standard input, read as it arrives) and their
    count when known in advance (a regular file is read at once)."""
    if path == "-":
        return _lines(typer.get_binary_stream("stdin")), None
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise errors.InvalidArgumentError(
            f"cannot read --file {path}: {exc.strerror or exc}"
        ) from None
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the final newline ends the last line; it starts no new one
    return iter([line.removesuffix(b"\r") for line in lines]), len(lines)


class _SendTally:
    """Counts written and failed messages from the producer's callbacks (its threads)."""

    def __init__(self, progress: Progress, task: TaskID) -> None:
        self._lock = threading.Lock()
        self._progress = progress
        self._task = task
        self.written = 0
        self.failed = 0
        self.first_error: BaseException | None = None

    def __call__(self, error: BaseException | None, message_id: MessageId | None) -> None:
        with self._lock:
            if error is not None:
                self.failed += 1
                self.first_error = self.first_error or error
                return
            self.written += 1
            written = self.written
        if written % 500 == 0:
            self._progress.update(self._task, completed=written)


def produce(
    topic: Annotated[str, typer.Argument(help="Topic to send to.", show_default=False)],
    message: Annotated[
        list[str] | None,
        typer.Option(
            "--message",
            "-m",
            metavar="TEXT",
            show_default=False,
            help="A message to send, as UTF-8 text. Repeat for several.",
        ),
    ] = None,
    file: Annotated[
        str | None,
        typer.Option(
            "--file",
            "-f",
            metavar="PATH",
            show_default=False,
            help="Send each line of PATH as one message (after any --message); '-' reads "
            "standard input, sending lines as they arrive.",
        ),
    ] = None,
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            "-k",
            show_default=False,
            help="Key of every message: messages with one key go to one partition, in order.",
        ),
    ] = None,
    prop: Annotated[
        list[str] | None,
        typer.Option(
            "--property",
            "-P",
            metavar="KEY=VALUE",
            show_default=False,
            help="A property of every message. Repeat for several.",
        ),
    ] = None,
    count: Annotated[
        int,
        typer.Option("--count", "-n", min=1, help="Send the messages this many times over."),
    ] = 1,
    producer_name: Annotated[
        str | None,
        typer.Option(
            "--producer-name",
            show_default=False,
            help="Name of the producer (default: a new random name). A named producer "
            "continues its sequence numbers and fences an older one of the same name.",
        ),
    ] = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Send messages to a topic (idempotent producer, batched).

    Prints how many were sent and the last message id (topic:partition:offset:index).
    """
    properties = _properties(prop)
    texts = [text.encode("utf-8") for text in message or []]
    if not texts and file is None:
        raise errors.InvalidArgumentError(
            "nothing to send: give messages with --message/-m TEXT or --file PATH ('-' for stdin)"
        )
    lines: Iterator[bytes] = iter(())
    line_count: int | None = 0
    if file is not None:
        lines, line_count = _open_lines(file)
    payloads: Iterable[bytes]
    if count == 1:
        payloads = itertools.chain(texts, lines)
    else:
        once = [*texts, *lines]  # to repeat them, standard input is read to its end first
        line_count = len(once) - len(texts)
        payloads = itertools.chain.from_iterable(itertools.repeat(once, count))
    total = None if line_count is None else (len(texts) + line_count) * count

    pending: list[PendingSend] = []  # for --json, while there are few
    last: PendingSend | None = None
    sent = 0
    with open_client(dsn) as client, progress_bar() as progress:
        task = progress.add_task(
            f"Sending to {topic}",
            total=total,
            visible=total is not None and total > PROGRESS_THRESHOLD,
        )
        tally = _SendTally(progress, task)
        producer = client.producer(topic, name=producer_name)
        for payload in payloads:
            last = producer.send_async(payload, key=key, properties=properties, callback=tally)
            sent += 1
            if sent <= PROGRESS_THRESHOLD:
                pending.append(last)
            elif pending:
                pending = []
        progress.update(task, description=f"Flushing to {topic}")
        producer.flush()
        progress.update(task, completed=tally.written)
        producer.close()
    if tally.failed:
        note(f"{tally.written} of {sent} messages were written")
        error = tally.first_error
        if isinstance(error, errors.TxnqError):
            raise type(error)(f"{tally.failed} messages were not written: {error}")
        raise errors.TxnqError(f"{tally.failed} messages were not written: {error}")
    last_id = last.result() if last is not None else None
    if as_json:
        result: dict[str, Any] = {
            "topic": topic,
            "sent": sent,
            "last_message_id": None if last_id is None else last_id._asdict(),
        }
        if sent <= PROGRESS_THRESHOLD:
            result["message_ids"] = [p.result()._asdict() for p in pending]
        print_json(result)
        return
    noun = "message" if sent == 1 else "messages"
    text = Text.assemble("Sent ", (str(sent), "bold"), f" {noun} to {topic}")
    if last_id is not None:
        text.append(f" (last message id {last_id})")
    console.print(text, soft_wrap=True)
