"""Names of topics, subscriptions, producers and consumers.

A name is 1 to 200 characters of ``A-Z a-z 0-9 . _ -``. Names are only ever
bound as parameters; no SQL identifier is built from them.
"""

from __future__ import annotations

import re

from txnq.errors import InvalidNameError

NAME_PATTERN = re.compile(r"^[A-Za-z0-9._-]{1,200}$")


def validate_name(value: object, kind: str) -> str:
    """Return ``value`` if it is a valid name, else raise InvalidNameError naming ``kind``."""
    if not isinstance(value, str):
        raise InvalidNameError(f"{kind} name must be a str, not {type(value).__name__}")
    if not NAME_PATTERN.fullmatch(value):
        raise InvalidNameError(
            f"{kind} name {value!r} is not valid: use 1 to 200 characters of "
            "A-Z a-z 0-9 . _ - (no spaces, slashes or quotes)"
        )
    return value
