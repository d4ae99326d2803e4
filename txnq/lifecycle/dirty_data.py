"""The dirty-data sweep (``txnq gc doctor``): orphan ledgers, entries without
a ledger row, inactive subscriptions; removed only when asked."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from txnq import errors
from txnq.lifecycle.limits import MAX_AGE_SECONDS, check_number
from txnq.lifecycle.report import LifecycleReport, record_run

if TYPE_CHECKING:
    from txnq.client import Client


@dataclass(frozen=True)
class OrphanLedger:
    topic_id: int
    partition: int
    ledger_id: int
    state: str
    first_offset: int
    last_offset: int | None
    reason: str
    removed: bool = False


@dataclass(frozen=True)
class EntriesWithoutLedger:
    topic_id: int
    partition: int
    ledger_id: int
    entry_logs: list[int]
    entries: int
    first_offset: int
    last_offset: int
    bytes: int
    removed: bool = False


@dataclass(frozen=True)
class InactiveSubscription:
    topic: str
    subscription: str
    subscription_id: int
    subscription_type: str
    last_active: datetime
    backlog: int
    removed: bool = False


@dataclass
class DoctorReport:
    """What the dirty-data sweep found and, with ``remove``, removed."""

    removed: bool
    inactive_seconds: float
    orphan_ledgers: list[OrphanLedger] = field(default_factory=list)
    entries_without_ledger: list[EntriesWithoutLedger] = field(default_factory=list)
    inactive_subscriptions: list[InactiveSubscription] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (
            self.orphan_ledgers or self.entries_without_ledger or self.inactive_subscriptions
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"clean": self.clean}


def doctor(
    client: Client, *, remove: bool = False, inactive_seconds: float | None = None
) -> DoctorReport:
    """Find dirty data; with ``remove``, remove what was found.

    - orphan ledgers (not DELETED, but their topic or partition is gone, or an
      OPEN ledger that is not its partition's current one): removal marks them
      DELETED, and GC reclaims their entries;
    - entries without a ledger row: removal gives them a DELETED ledger row
      (never a row delete), and GC reclaims them;
    - inactive subscriptions (no consumer connected, cursor unmoved for
      ``inactive_seconds``, default INACTIVE_CURSOR_SECONDS): removal
      unsubscribes them, which releases what they held back from retention.

    Every removal re-checks its condition in the same statement, so something
    that became active since the look is left alone. A removal is recorded in
    ``txnq.gc_runs`` (job ``doctor``).
    """
    if not isinstance(remove, bool):
        raise errors.InvalidArgumentError("remove must be True or False")
    inactive = check_number(
        client.settings.inactive_cursor_seconds if inactive_seconds is None else inactive_seconds,
        "inactive_seconds",
        MAX_AGE_SECONDS,
    )
    if inactive <= 0:
        raise errors.InvalidArgumentError("inactive_seconds must be positive")
    started = datetime.now(UTC)
    report = DoctorReport(remove, inactive)
    for row in client.query("doctor_orphan_ledgers", {}):
        row.pop("metadata")
        removed = remove and bool(client.query("doctor_delete_orphan_ledger", row))
        report.orphan_ledgers.append(OrphanLedger(**row, removed=removed))
    for row in client.query("doctor_entries_without_ledger", {}):
        removed = remove and bool(client.query("doctor_adopt_entries", row))
        report.entries_without_ledger.append(EntriesWithoutLedger(**row, removed=removed))
    params = {"inactive_seconds": inactive}
    for row in client.query("doctor_inactive_subscriptions", params):
        removed = False
        if remove:
            try:
                done = client.query(
                    "doctor_remove_subscription",
                    params | {"subscription_id": row["subscription_id"]},
                )
            except errors.ConsumerBusyError:  # a consumer connected since the look
                done = []
            removed = bool(done)
        report.inactive_subscriptions.append(InactiveSubscription(**row, removed=removed))
    if remove and not report.clean:
        items = report.orphan_ledgers + report.entries_without_ledger
        count = sum(1 for i in [*items, *report.inactive_subscriptions] if i.removed)
        record_run(
            client,
            LifecycleReport("doctor", False, started),
            count,
            {
                "orphan_ledgers": [
                    [i.topic_id, i.partition, i.ledger_id]
                    for i in report.orphan_ledgers
                    if i.removed
                ],
                "ledgers_created": [
                    [i.topic_id, i.partition, i.ledger_id]
                    for i in report.entries_without_ledger
                    if i.removed
                ],
                "unsubscribed": [
                    f"{i.topic}/{i.subscription}"
                    for i in report.inactive_subscriptions
                    if i.removed
                ],
            },
        )
    return report
