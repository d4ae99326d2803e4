"""What the Admin API needs of a client, and what its parts share.

The Admin sits below the client: it reaches PostgreSQL through the few
methods of :class:`NamedQueryRunner`, which :class:`txnq.Client` has, and
never imports the client itself.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from txnq.errors import InvalidArgumentError

if TYPE_CHECKING:
    import psycopg

    from txnq.settings import Settings


class NamedQueryRunner(Protocol):
    """Runs the named queries of ``sql/queries`` on a pooled connection."""

    settings: Settings

    def connection(self) -> AbstractContextManager[psycopg.Connection[Any]]:
        """A connection for the block (autocommit; ``conn.transaction()`` for more)."""
        ...

    def query(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """The named query's rows as dicts."""
        ...

    def execute(self, name: str, params: dict[str, Any]) -> None:
        """Run the named query, ignoring its rows."""
        ...


class AdminBase:
    """The client every part of the Admin API runs its queries with."""

    def __init__(self, client: NamedQueryRunner) -> None:
        self._client = client


def check_flag(value: object, what: str) -> bool:
    """``value`` when it is a bool, else InvalidArgumentError naming ``what``."""
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{what} must be True or False, not {value!r}")
    return value
