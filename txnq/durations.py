"""Durations and sizes as users write them: ``30``, ``"500ms"``, ``"7d"``, ``"5MiB"``.

DESIGN.md: durations everywhere accept seconds (int/float), ``timedelta`` or
strings with a unit; sizes accept bytes (int) or strings with a unit.
"""

from __future__ import annotations

import re
from datetime import timedelta
from fractions import Fraction

from txnq.errors import InvalidArgumentError

Duration = int | float | timedelta | str
Size = int | str

#: The longest duration accepted anywhere (100 years): ``now()`` plus it is a
#: time that Python, PostgreSQL and Spark all represent, and a wait that
#: Python's locks and conditions accept (their limit is 292 years). Options
#: that mean "forever" have their own value (``retention=-1``, ``ttl=None``).
MAX_DURATION_SECONDS = 100 * 365 * 86400.0
#: The largest size accepted anywhere: PostgreSQL's bigint.
MAX_SIZE_BYTES = 2**63 - 1

_DURATION_UNITS = {
    "ms": 0.001,
    "s": 1.0,
    "m": 60.0,
    "min": 60.0,
    "h": 3600.0,
    "d": 86400.0,
    "w": 7 * 86400.0,
}
_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "t": 1000**4,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}
_NUMBER_UNIT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_duration(value: Duration, *, what: str = "duration", allow_zero: bool = True) -> float:
    """Seconds as a float; raises InvalidArgumentError naming ``what``."""
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{what} must be seconds or a string like '30s', not a bool")
    seconds: float
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        match = _NUMBER_UNIT.match(value)
        unit = match.group(2).lower() if match else ""
        if not match or (unit and unit not in _DURATION_UNITS):
            raise InvalidArgumentError(
                f"{what} {value!r} is not a duration: use seconds or a number with one of "
                f"the units {', '.join(_DURATION_UNITS)} (e.g. '500ms', '30s', '7d')"
            )
        seconds = float(match.group(1)) * _DURATION_UNITS[unit or "s"]
    else:
        raise InvalidArgumentError(
            f"{what} must be seconds, a timedelta or a string like '30s', "
            f"not {type(value).__name__}"
        )
    if seconds < 0 or seconds != seconds or seconds == float("inf"):
        raise InvalidArgumentError(f"{what} must be a finite, non-negative duration, got {value!r}")
    if seconds > MAX_DURATION_SECONDS:
        raise InvalidArgumentError(
            f"{what} {value!r} is longer than the longest duration txnq accepts "
            "(100 years): give a shorter one"
        )
    if seconds == 0 and not allow_zero:
        raise InvalidArgumentError(f"{what} must be longer than zero, got {value!r}")
    return seconds


def parse_size(value: Size, *, what: str = "size") -> int:
    """Bytes as an int; accepts ``1024``, ``"64KiB"``, ``"2GiB"``, ``"5MB"``."""
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{what} must be a number of bytes, not a bool")
    if isinstance(value, int):
        size = value
    elif isinstance(value, str):
        match = _NUMBER_UNIT.match(value)
        unit = match.group(2).lower() if match else ""
        if not match or unit not in _SIZE_UNITS:
            raise InvalidArgumentError(
                f"{what} {value!r} is not a size: use bytes or a number with a unit "
                "such as '512KiB', '5MiB', '2GiB', '10MB'"
            )
        # Exact arithmetic: a float would overflow on a long number of digits.
        size = int(Fraction(match.group(1)) * _SIZE_UNITS[unit])
    else:
        raise InvalidArgumentError(
            f"{what} must be bytes (int) or a string like '5MiB', not {type(value).__name__}"
        )
    if size < 0:
        raise InvalidArgumentError(f"{what} must not be negative, got {value!r}")
    if size > MAX_SIZE_BYTES:
        raise InvalidArgumentError(
            f"{what} {value!r} is larger than the largest size txnq stores (2**63 - 1 bytes)"
        )
    return size
