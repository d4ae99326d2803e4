"""Committed ranges: per partition of a topic, the half-open offset range
``[start, end)`` a Spark read covers, fixed when the read starts.

The end is never above the partition's max read offset + 1 as read when the
range is resolved. Everything at or below a max read offset is final (see
``sql/views/committed_messages.sql``), so the range reads the same rows
however often, and by however many Spark tasks, it is read.

Bounds (``start`` and ``end`` of :func:`resolve`):

- ``"earliest"``: the first offset retention kept;
- ``"latest"``: the max read offset + 1 when the range is resolved;
- a mapping ``{partition: offset}``: that offset (a start is inclusive, an end
  exclusive, as Kafka's startingOffsets/endingOffsets); partitions it leaves
  out take ``"earliest"`` (start) or ``"latest"`` (end);
- a timezone-aware ``datetime``: per partition the first offset published at
  or after it (none yet: ``"latest"``).

Starts below the earliest retained offset begin at the earliest one: retention
has deleted what was below.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from txnq.database.queries import QUERIES
from txnq.errors import InvalidArgumentError

Bound = str | Mapping[int, int] | Mapping[str, int] | datetime
# A bound after check_bound(): mappings have int partitions.
CheckedBound = str | dict[int, int] | datetime


@dataclass(frozen=True)
class CommittedRange:
    """The range of one read: ``offsets[partition] = (start, end)``, half-open."""

    topic: str
    topic_id: int
    offsets: dict[int, tuple[int, int]]

    @property
    def empty(self) -> bool:
        return all(end <= start for start, end in self.offsets.values())

    def ends(self) -> dict[int, int]:
        """Per partition the exclusive end: where the next range starts."""
        return {partition: end for partition, (_, end) in self.offsets.items()}

    def to_json(self) -> str:
        return json.dumps({str(p): [s, e] for p, (s, e) in sorted(self.offsets.items())})


def check_bound(bound: object, what: str) -> CheckedBound:
    """A bound as given by a user, checked; raises InvalidArgumentError."""
    if isinstance(bound, str):
        if bound not in ("earliest", "latest"):
            raise InvalidArgumentError(
                f"{what} must be 'earliest', 'latest', a dict of partition -> offset or a "
                f"timezone-aware datetime, not {bound!r}"
            )
        return bound
    if isinstance(bound, datetime):
        if bound.tzinfo is None:
            raise InvalidArgumentError(
                f"{what} must be timezone-aware (e.g. datetime.now(timezone.utc))"
            )
        return bound
    if isinstance(bound, Mapping):
        checked: dict[int, int] = {}
        for partition, offset in bound.items():
            try:
                number = int(partition)
            except (TypeError, ValueError):
                raise InvalidArgumentError(
                    f"{what}: partition {partition!r} is not a partition number"
                ) from None
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
                raise InvalidArgumentError(
                    f"{what}: the offset of partition {number} must be an int >= 0, not {offset!r}"
                )
            checked[number] = offset
        return checked
    raise InvalidArgumentError(
        f"{what} must be 'earliest', 'latest', a dict of partition -> offset or a datetime, "
        f"not {type(bound).__name__}"
    )


def resolve(
    conn: psycopg.Connection[Any], topic: str, topic_id: int, start: Bound, end: Bound
) -> CommittedRange:
    """Fix the range of a read now: see the module docstring."""
    start = check_bound(start, "start")
    end = check_bound(end, "end")
    rows = conn.execute(QUERIES["spark_partition_bounds"], {"topic_id": topic_id}).fetchall()
    latest = {int(p): int(mro) + 1 for p, mro, _ in rows}
    earliest = {int(p): int(first) for p, _, first in rows}
    for what, bound in (("start", start), ("end", end)):
        if isinstance(bound, dict):
            unknown = sorted(set(bound) - set(latest))
            if unknown:
                raise InvalidArgumentError(
                    f"{what} names partitions {unknown} that topic {topic!r} does not have "
                    f"(it has 0..{len(latest) - 1})"
                )

    def offsets_of(bound: CheckedBound, default: dict[int, int]) -> dict[int, int]:
        if bound == "earliest":
            return dict(earliest)
        if bound == "latest":
            return dict(latest)
        if isinstance(bound, datetime):
            found = conn.execute(
                QUERIES["spark_first_offset_at"], {"topic_id": topic_id, "at": bound}
            ).fetchall()
            return {
                int(p): latest[int(p)] if first is None else int(first)
                for p, first in found
                if int(p) in latest
            }
        assert isinstance(bound, dict)
        return {p: int(bound.get(p, default[p])) for p in latest}

    starts = offsets_of(start, earliest)
    ends = offsets_of(end, latest)
    offsets: dict[int, tuple[int, int]] = {}
    for partition in sorted(latest):
        first = max(starts.get(partition, earliest[partition]), earliest[partition])
        last = min(ends.get(partition, latest[partition]), latest[partition])
        offsets[partition] = (first, max(first, last))
    return CommittedRange(topic, topic_id, offsets)


def split(committed: CommittedRange, slices: int) -> list[tuple[int, int, int]]:
    """The range cut into about ``slices`` pieces ``(partition, start, end)``
    of similar offset width, each inside one partition; empty partitions give
    none. The pieces are Spark's JDBC predicates or data source partitions."""
    widths = {p: e - s for p, (s, e) in committed.offsets.items() if e > s}
    total = sum(widths.values())
    pieces: list[tuple[int, int, int]] = []
    for partition, width in sorted(widths.items()):
        start, end = committed.offsets[partition]
        count = max(1, min(width, round(slices * width / total))) if total else 1
        step = -(-width // count)
        pieces.extend((partition, lo, min(lo + step, end)) for lo in range(start, end, step))
    return pieces
