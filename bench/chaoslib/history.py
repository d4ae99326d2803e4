"""A Jepsen-style checker for queue histories; it knows nothing of txnq.

A workload records what every process did and saw; the checker then looks for
each anomaly class Jepsen's queue and Kafka checkers look for, and counts them:

- a **send** of one unique value: ``ok`` (with the partition and position it
  got), ``fail`` (it certainly did not happen) or ``unknown`` (a timeout, a
  crash: it may or may not have happened). A send inside a transaction takes
  the transaction's outcome: committed → ok, aborted → fail, unknown → unknown;
- a **poll**: a value a consumer received at a partition and position, when,
  in which consumer *session* (a new session may start over from the cursor)
  and for which consumer *group* (a subscription: the unit of exactly-once);
- a **transaction**: its outcome and the time its commit was asked for;
- a **consume**: an input value a transaction acknowledged (for the
  delivery-count check of consume-transform-produce).

Positions are tuples (txnq: ``(offset, batch_index)``), compared in order.

Anomaly classes (``ANOMALIES``; the report counts each, zero included):

``aborted_read``        G1a: a value read whose send failed or whose transaction aborted
``uncommitted_read``    a value read before its transaction's commit was even asked for
``unexpected_read``     a value read that nobody sent
``lost_write``          an acknowledged value never read, though a later position of its
                        partition was read (Jepsen's *lost*)
``unseen``              an acknowledged value never read, nothing after it read either
``duplicate_write``     a value at more than one position (written twice)
``duplicate_delivery``  a value delivered twice to one consumer group
``inconsistent_offset`` a value read at another position than its send got, or two
                        values at one position
``poll_skip``           a consumer's consecutive reads of a partition jump over a
                        position holding an acknowledged value
``nonmonotonic_poll``   a consumer's consecutive reads of a partition go backwards
``nonmonotonic_send``   a producer's acknowledged sends to a partition go backwards
``unconsumed_input``    an input that no committed transaction consumed
``multiply_consumed_input`` an input that more than one committed transaction consumed
                        (the exactly-once check Jepsen could never make pass on Kafka)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise

Position = tuple[int, ...]

ANOMALIES: tuple[str, ...] = (
    "aborted_read",
    "uncommitted_read",
    "unexpected_read",
    "lost_write",
    "unseen",
    "duplicate_write",
    "duplicate_delivery",
    "inconsistent_offset",
    "poll_skip",
    "nonmonotonic_poll",
    "nonmonotonic_send",
    "unconsumed_input",
    "multiply_consumed_input",
)

SEND_OUTCOMES = ("ok", "fail", "unknown")
TXN_OUTCOMES = ("committed", "aborted", "unknown")


@dataclass(frozen=True)
class Send:
    process: str
    value: str
    outcome: str
    partition: int | None = None
    position: Position | None = None
    txn: str | None = None


@dataclass(frozen=True)
class Poll:
    process: str
    partition: int
    position: Position
    value: str
    time: float = 0.0
    session: int = 0
    group: str | None = None  # None: the process is its own group


@dataclass(frozen=True)
class Txn:
    txn: str
    outcome: str
    commit_time: float | None = None  # when commit() was called; None: never


@dataclass(frozen=True)
class Consume:
    txn: str
    value: str


@dataclass
class History:
    """What happened, in the order each process did it (sends per process,
    polls per consumer session, in record order)."""

    sends: list[Send] = field(default_factory=list)
    polls: list[Poll] = field(default_factory=list)
    txns: dict[str, Txn] = field(default_factory=dict)
    consumes: list[Consume] = field(default_factory=list)
    inputs: set[str] = field(default_factory=set)  # values every committed run must consume once

    def send(self, process: str, value: str, outcome: str, **kw: object) -> None:
        if outcome not in SEND_OUTCOMES:
            raise ValueError(f"send outcome must be one of {SEND_OUTCOMES}, not {outcome!r}")
        self.sends.append(Send(process, value, outcome, **kw))  # type: ignore[arg-type]

    def poll(
        self, process: str, partition: int, position: Position, value: str, **kw: object
    ) -> None:
        self.polls.append(Poll(process, partition, tuple(position), value, **kw))  # type: ignore[arg-type]

    def txn(self, txn: str, outcome: str, commit_time: float | None = None) -> None:
        if outcome not in TXN_OUTCOMES:
            raise ValueError(f"transaction outcome must be one of {TXN_OUTCOMES}, not {outcome!r}")
        self.txns[txn] = Txn(txn, outcome, commit_time)

    def consume(self, txn: str, values: Iterable[str]) -> None:
        self.consumes.extend(Consume(txn, v) for v in values)

    def expect_consumed(self, values: Iterable[str]) -> None:
        self.inputs.update(values)


@dataclass
class Report:
    counts: dict[str, int]
    examples: dict[str, list[str]]
    sends_ok: int
    polls: int

    @property
    def valid(self) -> bool:
        return not any(self.counts.values())

    def anomalies(self) -> dict[str, int]:
        """The classes with at least one anomaly."""
        return {k: v for k, v in self.counts.items() if v}

    def summary(self) -> str:
        found = self.anomalies()
        if not found:
            return f"valid: {self.sends_ok} acknowledged sends, {self.polls} polls, no anomaly"
        lines = [f"{k}: {v} (e.g. {'; '.join(self.examples[k][:3])})" for k, v in found.items()]
        return "INVALID: " + " | ".join(lines)


class _Found:
    def __init__(self) -> None:
        self.counts: dict[str, int] = dict.fromkeys(ANOMALIES, 0)
        self.examples: dict[str, list[str]] = {k: [] for k in ANOMALIES}

    def add(self, kind: str, detail: str) -> None:
        self.counts[kind] += 1
        if len(self.examples[kind]) < 10:
            self.examples[kind].append(detail)


def _effective(send: Send, txns: dict[str, Txn]) -> str:
    """ok / fail / unknown, a transactional send taking its transaction's outcome."""
    if send.txn is None or send.outcome == "fail":
        return send.outcome
    txn = txns.get(send.txn)
    if txn is None or txn.outcome == "unknown":
        return "unknown"
    return "ok" if txn.outcome == "committed" else "fail"


def check(history: History) -> Report:
    """Every anomaly class of ``ANOMALIES``, counted over ``history``."""
    found = _Found()
    txns = history.txns
    # value -> its sends, with their effective outcome
    sent: dict[str, list[tuple[Send, str]]] = defaultdict(list)
    for s in history.sends:
        sent[s.value].append((s, _effective(s, txns)))

    # Where each value was written (acknowledged sends that report a position).
    written_at: dict[str, set[tuple[int, Position]]] = defaultdict(set)
    acked_by_partition: dict[int, list[tuple[Position, str]]] = defaultdict(list)
    for value, items in sent.items():
        for s, eff in items:
            if eff == "ok" and s.partition is not None and s.position is not None:
                written_at[value].add((s.partition, s.position))
                acked_by_partition[s.partition].append((s.position, value))
    for positions in acked_by_partition.values():
        positions.sort()

    # -- reads --------------------------------------------------------------
    read_at: dict[str, set[tuple[int, Position]]] = defaultdict(set)
    value_at: dict[tuple[int, Position], set[str]] = defaultdict(set)
    delivered: dict[tuple[str, str], int] = defaultdict(int)
    highest_read: dict[int, Position] = {}
    for p in history.polls:
        read_at[p.value].add((p.partition, p.position))
        value_at[(p.partition, p.position)].add(p.value)
        delivered[(p.group or p.process, p.value)] += 1
        if p.partition not in highest_read or p.position > highest_read[p.partition]:
            highest_read[p.partition] = p.position
        items = sent.get(p.value)
        if not items:
            found.add("unexpected_read", f"{p.value} at {p.partition}:{p.position} by {p.process}")
            continue
        outcomes = {eff for _, eff in items}
        if outcomes == {"fail"}:
            found.add("aborted_read", f"{p.value} by {p.process}")
            continue
        for s, _ in items:
            txn = txns.get(s.txn) if s.txn is not None else None
            if txn is not None and txn.commit_time is not None and p.time < txn.commit_time:
                found.add(
                    "uncommitted_read",
                    f"{p.value} read by {p.process} {txn.commit_time - p.time:.3f}s before "
                    f"transaction {txn.txn} asked to commit",
                )
                break

    for (group, value), n in delivered.items():
        if n > 1:
            found.add("duplicate_delivery", f"{value} delivered {n} times to {group}")

    for value in set(read_at) | set(written_at):
        places = read_at.get(value, set()) | written_at.get(value, set())
        if len(places) > 1:
            found.add("duplicate_write", f"{value} at {sorted(places)}")
        elif value in written_at and value in read_at and read_at[value] != written_at[value]:
            found.add(
                "inconsistent_offset",
                f"{value} written at {sorted(written_at[value])}, read at {sorted(read_at[value])}",
            )
    for (partition, position), values in value_at.items():
        if len(values) > 1:
            found.add("inconsistent_offset", f"{partition}:{position} holds {sorted(values)}")

    # -- acknowledged writes never read --------------------------------------
    acked_values = {v for v, items in sent.items() if any(eff == "ok" for _, eff in items)}
    for value in sorted(acked_values - set(read_at)):
        places = written_at.get(value)
        later_read = False
        if places:
            later_read = any(
                part in highest_read and highest_read[part] > pos for part, pos in places
            )
        found.add("lost_write" if later_read else "unseen", value)

    # -- per consumer session and partition: monotonic, no skips ----------------
    sequences: dict[tuple[str, int, int], list[Poll]] = defaultdict(list)
    for p in history.polls:
        sequences[(p.process, p.session, p.partition)].append(p)
    for (process, _session, partition), polls in sequences.items():
        acked_positions = [pos for pos, _ in acked_by_partition.get(partition, [])]
        for before, after in pairwise(polls):
            if after.position <= before.position:
                found.add(
                    "nonmonotonic_poll",
                    f"{process} read {partition}:{after.position} "
                    f"after {partition}:{before.position}",
                )
                continue
            skipped = [q for q in acked_positions if before.position < q < after.position]
            if skipped:
                found.add(
                    "poll_skip",
                    f"{process} went from {partition}:{before.position} to "
                    f"{partition}:{after.position}, skipping {len(skipped)} acknowledged",
                )

    # -- per producer and partition: acknowledged sends in order ---------------
    last_sent: dict[tuple[str, int], Position] = {}
    for s in history.sends:
        if s.partition is None or s.position is None or _effective(s, txns) != "ok":
            continue
        key = (s.process, s.partition)
        if key in last_sent and s.position <= last_sent[key]:
            found.add(
                "nonmonotonic_send",
                f"{s.process} got {s.partition}:{s.position} after {s.partition}:{last_sent[key]}",
            )
        last_sent[key] = s.position

    # -- consume-transform-produce: every input consumed exactly once ------------
    if history.inputs or history.consumes:
        committed: dict[str, int] = defaultdict(int)
        maybe: set[str] = set()
        for c in history.consumes:
            txn = txns.get(c.txn)
            if txn is not None and txn.outcome == "committed":
                committed[c.value] += 1
            elif txn is None or txn.outcome == "unknown":
                maybe.add(c.value)
        for value in sorted(history.inputs):
            n = committed.get(value, 0)
            if n == 0 and value not in maybe:
                found.add("unconsumed_input", value)
        for value, n in committed.items():
            if n > 1:
                found.add(
                    "multiply_consumed_input", f"{value} consumed by {n} committed transactions"
                )

    return Report(
        counts=found.counts,
        examples=found.examples,
        sends_ok=len(acked_values),
        polls=len(history.polls),
    )
