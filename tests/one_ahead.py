"""Test databases made one test ahead and dropped behind it, in a
background thread: a test's setup then mostly finds its database ready and
its teardown does not wait for the drop (together about a second a test on
the 2-core machine, before; docs/development.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager


class OneAhead:
    """``take()`` hands out what ``make()`` returns (a database's name), made
    while the previous test ran, and gives it to ``drop`` afterwards."""

    def __init__(self, make: Callable[[], str], drop: Callable[[str], None]) -> None:
        self._make = make
        self._drop = drop
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="test-databases")
        self._next: Future[str] | None = None

    @contextmanager
    def take(self) -> Iterator[str]:
        ready, self._next = self._next, None
        name = ready.result() if ready is not None else self._make()
        self._next = self._pool.submit(self._make)
        try:
            yield name
        finally:
            self._pool.submit(self._drop, name)

    def close(self) -> None:
        """Drop what was made ahead, and wait for every drop."""
        ready, self._next = self._next, None
        if ready is not None and ready.exception() is None:
            self._pool.submit(self._drop, ready.result())
        self._pool.shutdown(wait=True)
