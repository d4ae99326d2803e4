"""The web console's chart history: one sample of every topic's counters and
of the entry logs per call of ``txnq.console_sample_v1``, run by the
scheduler's ``console_sample`` job every CONSOLE_SAMPLE_INTERVAL_SECONDS.
The same call deletes samples (and console actions) older than
CONSOLE_HISTORY_SECONDS: docs/lifecycle.md, "Every table bounded"."""

from __future__ import annotations

from txnq import errors
from txnq.admin import NamedQueryRunner

#: The longest history a console keeps (a year): beyond it a chart is unreadable anyway.
MAX_HISTORY_SECONDS = 366 * 86_400.0


def sample_history(client: NamedQueryRunner, *, keep_seconds: float | None = None) -> int:
    """Take one sample; delete what is older than ``keep_seconds`` (default:
    the setting CONSOLE_HISTORY_SECONDS). Returns the topics sampled."""
    keep = client.settings.console_history_seconds if keep_seconds is None else keep_seconds
    if isinstance(keep, bool) or not isinstance(keep, int | float):
        raise errors.InvalidArgumentError(
            f"keep_seconds must be a number of seconds, not {type(keep).__name__}"
        )
    if not 0 < keep <= MAX_HISTORY_SECONDS:
        raise errors.InvalidArgumentError(
            f"keep_seconds must be from 1 second to {MAX_HISTORY_SECONDS:g}, not {keep!r}"
        )
    rows = client.query("console_sample", {"keep_seconds": float(keep)})
    return int(rows[0]["console_sample_v1"]) if rows else 0
