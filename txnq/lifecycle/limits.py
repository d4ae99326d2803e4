"""Limits the lifecycle jobs share: how long their own connections wait for
a lock, the oldest age they compare with, and the check of a numeric argument."""

from __future__ import annotations

import math
from typing import Any

from txnq import errors

#: Set on the GC and vacuum connections: their DDL and VACUUM wait at most
#: this long for a busy table, then leave it for the next run.
LOCK_TIMEOUT = "SET lock_timeout = '5s'"

#: The longest age a lifecycle call compares with (PostgreSQL's intervals and
#: timestamps overflow far beyond; nothing txnq keeps is this old).
MAX_AGE_SECONDS = 1e9


def check_number(value: Any, what: str, maximum: float | None = None) -> float:
    """``value`` as a float when it is a finite, non-negative number (at most
    ``maximum``), else InvalidArgumentError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise errors.InvalidArgumentError(f"{what} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise errors.InvalidArgumentError(f"{what} must be a finite number, not {value!r}")
    if value < 0:
        raise errors.InvalidArgumentError(f"{what} must not be negative (0: no limit)")
    if maximum is not None and value > maximum:
        raise errors.InvalidArgumentError(f"{what} must be at most {maximum:g}, not {value!r}")
    return float(value)
