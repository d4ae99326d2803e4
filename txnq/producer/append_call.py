"""The append call of a producer: its arguments (``append_positional``, one
call of ``txnq.append_v6`` per entry) and the SQLSTATEs of its answers that
the producer acts on rather than raises."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from txnq.database.arrays import ByteaArray

#: SQLSTATE of append_v6 for a topic over its backlog quota with policy
#: producer_hold: the producer waits and re-checks, starting after the first
#: delay and doubling it up to the second.
BACKLOG_QUOTA_HOLD = "TQ017"
#: SQLSTATE of append_v6 for an invalid argument, among them a producer id
#: the history purge forgot (docs/lifecycle.md, "Every table bounded").
INVALID_ARGUMENT = "TQ005"
#: SQLSTATE of append_v6 for a sequence that skips ahead: after a crash of
#: PostgreSQL, the unflushed appends of a transaction may be lost (that
#: transaction cannot commit any more, see txnq.open_txn_v3), and the
#: producer's next sequence with them.
OUT_OF_ORDER_SEQUENCE = "TQ003"
HOLD_RECHECK_MIN_SECONDS = 0.05
HOLD_RECHECK_MAX_SECONDS = 1.0


def append_arguments(
    topic_id: int,
    partition: int,
    producer: tuple[int, int, int],
    columns: tuple[list[bytes], list[bytes | None], list[str | None], list[datetime | None]],
    txn: tuple[int, int] | None,
) -> tuple[Any, ...]:
    """The arguments of ``append_positional`` (append_v6) for one entry:
    ``producer`` is (producer id, epoch, first sequence), ``columns`` the
    messages' payloads, keys, properties and event times (a column with
    nothing in it goes as NULL), ``txn`` the transaction's (tc_id, seq)."""
    payloads, keys, properties, event_times = columns
    return (
        topic_id,
        partition,
        *producer,
        ByteaArray(payloads),
        ByteaArray(keys) if any(k is not None for k in keys) else None,
        properties if any(properties) else None,
        event_times if any(event_times) else None,
        *(txn or (None, None)),
    )
