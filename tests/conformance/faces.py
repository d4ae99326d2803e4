"""The two faces of txnq behind one synchronous surface, so that each
conformance test is written once and run against both (River's driver
conformance suite is the model; README.md in this folder says how to add a case).

``SyncFace`` hands out the sync API itself: ``txnq.Client``, ``txnq.attach``
and psycopg's ``Connection``. ``AsyncFace`` runs ``txnq.aio`` on an event loop
of its own, in a background thread, and hands out proxies (:class:`Awaited`)
whose methods run the asyncio method on that loop and wait for it: every call
of a test on an asyncio object becomes ``await obj.method(...)`` on the loop,
``with obj`` becomes ``async with obj``, iteration becomes ``async for``, and
``pending.result()`` becomes ``await pending``. Nothing else is translated:
arguments, return values (messages, ids, lists) and exceptions pass through
unchanged, so an error raised by the asyncio face reaches the test as the
very object the asyncio face raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import psycopg
import pytest

import txnq
import txnq.aio
from txnq import PendingSend

T = TypeVar("T")

#: No single call of a test waits longer than this on the asyncio face's loop:
#: a call that hangs fails the test instead of blocking the suite.
CALL_TIMEOUT_SECONDS = 60.0
#: Consumer options of the suite: poll fast (the fallback poll bounds each wait).
FAST = {"poll_interval": "100ms"}


class SyncFace:
    """The sync API as it is (no adapter needed)."""

    name = "sync"

    def __init__(self) -> None:
        self._clients: list[txnq.Client] = []
        self._connections: list[psycopg.Connection[Any]] = []

    def client(self, dsn: str, **overrides: Any) -> Any:
        """A new ``txnq.Client``, closed with the face."""
        client = txnq.Client(dsn, **overrides)
        self._clients.append(client)
        return client

    def connect(self, dsn: str, *, autocommit: bool = False) -> Any:
        """An application's own psycopg connection, closed with the face."""
        conn = psycopg.connect(dsn, autocommit=autocommit)
        self._connections.append(conn)
        return conn

    def attach(self, connection: Any, **options: Any) -> Any:
        return txnq.attach(connection, **options)

    def close(self) -> None:
        for client in reversed(self._clients):
            client.close()
        for conn in self._connections:
            conn.close()


class AsyncFace:
    """``txnq.aio`` on an event loop this face owns, in a thread of its own."""

    name = "aio"

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="conformance-aio-loop", daemon=True
        )
        self._thread.start()
        self._clients: list[Awaited] = []
        self._connections: list[Awaited] = []

    # -- what a test uses ---------------------------------------------------

    def client(self, dsn: str, **overrides: Any) -> Any:
        """A new ``txnq.aio.Client`` (connected), closed with the face."""
        client = self.call(txnq.aio.Client.connect, dsn, **overrides)
        self._clients.append(client)
        return client

    def connect(self, dsn: str, *, autocommit: bool = False) -> Any:
        """An application's own psycopg ``AsyncConnection``, closed with the face."""
        conn = self.call(psycopg.AsyncConnection.connect, dsn, autocommit=autocommit)
        self._connections.append(conn)
        return conn

    def attach(self, connection: Any, **options: Any) -> Any:
        return self.call(txnq.aio.attach, connection, **options)

    def close(self) -> None:
        try:
            for client in reversed(self._clients):
                client.close()
            for conn in self._connections:
                conn.close()
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)
            if not self._thread.is_alive():
                self.loop.close()

    # -- the adapter ----------------------------------------------------------

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the face's loop; its result or its exception."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result(CALL_TIMEOUT_SECONDS)
        except TimeoutError:
            if future.done():
                raise  # the coroutine itself raised TimeoutError
            future.cancel()
            raise AssertionError(
                f"an asyncio call did not finish within {CALL_TIMEOUT_SECONDS}s"
            ) from None

    def call(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``await function(*args, **kwargs)`` on the loop (the call itself runs
        there too, so a method that is not a coroutine sees the running loop);
        an awaitable result is awaited once, as a caller of the asyncio API
        would (``await client.producer(...)``), and asyncio objects come back
        wrapped."""

        async def called() -> Any:
            result = function(*_unwrapped(args), **_unwrapped(kwargs))
            if inspect.isawaitable(result) and not isinstance(result, PendingSend):
                result = await result
            return result

        return self.wrap(self.run(called()))

    def wrap(self, value: Any) -> Any:
        if isinstance(value, Awaited) or not _is_asyncio_object(value):
            return value
        if isinstance(value, PendingSend):
            return AwaitedPendingSend(self, value)
        return Awaited(self, value)


_ASYNCIO_TYPES = (
    txnq.aio.Client,
    txnq.aio.Producer,
    txnq.aio.Consumer,
    txnq.aio.Transaction,
    txnq.aio.AttachedTransaction,
    PendingSend,
    psycopg.AsyncConnection,
    psycopg.AsyncCursor,
)


def _is_asyncio_object(value: Any) -> bool:
    """Whether ``value`` is used with ``await`` / ``async with`` / ``async for``
    (``client.admin`` of txnq.aio is a private class of an ``aio`` module)."""
    kind = type(value)
    return (
        isinstance(value, _ASYNCIO_TYPES)
        or "aio" in kind.__module__.split(".")
        or hasattr(kind, "__aenter__")
        or hasattr(kind, "__anext__")
    )


def _unwrapped(values: Any) -> Any:
    if isinstance(values, dict):
        return {k: v._target if isinstance(v, Awaited) else v for k, v in values.items()}
    return [v._target if isinstance(v, Awaited) else v for v in values]


class Awaited:
    """An asyncio object seen through a synchronous surface (see the module docstring)."""

    __slots__ = ("_face", "_target")

    def __init__(self, face: AsyncFace, target: Any) -> None:
        self._face = face
        self._target = target

    def __getattr__(self, name: str) -> Any:
        if name == "close" and hasattr(self._target, "aclose"):
            name = "aclose"  # process(): a sync generator's close() is aclose() here
        value = getattr(self._target, name)
        if callable(value) and not isinstance(value, type):
            return lambda *args, **kwargs: self._face.call(value, *args, **kwargs)
        return self._face.wrap(value)

    def __enter__(self) -> Any:
        return self._face.call(self._target.__aenter__)

    def __exit__(self, *exc: Any) -> Any:
        return self._face.call(self._target.__aexit__, *exc)

    def __iter__(self) -> Awaited:
        if not hasattr(self._target, "__anext__"):
            self._target = self._target.__aiter__()
        return self

    def __next__(self) -> Any:
        try:
            return self._face.call(self._target.__anext__)
        except StopAsyncIteration:
            raise StopIteration from None

    def __eq__(self, other: object) -> bool:
        return self._target is (other._target if isinstance(other, Awaited) else other)

    def __hash__(self) -> int:
        return id(self._target)

    def __repr__(self) -> str:
        return f"Awaited({self._target!r})"


class AwaitedPendingSend(Awaited):
    """``send_async``'s result: ``result()`` and ``exception()`` await it (the
    asyncio face's way; its blocking ``result()`` would stall the loop)."""

    __slots__ = ()

    def result(self, timeout: float | None = None) -> Any:
        async def awaited() -> Any:
            return await asyncio.wait_for(_awaitable(self._target), timeout)

        return self._face.run(awaited())

    def exception(self, timeout: float | None = None) -> BaseException | None:
        async def outcome() -> BaseException | None:
            try:
                await asyncio.wait_for(_awaitable(self._target), timeout)
            except TimeoutError:
                raise
            except BaseException as exc:
                return exc
            return None

        return self._face.run(outcome())

    def done(self) -> bool:
        return bool(self._target.done())


async def _awaitable(pending: PendingSend) -> Any:
    return await pending


FACES: dict[str, Callable[[], SyncFace | AsyncFace]] = {"sync": SyncFace, "aio": AsyncFace}


def drift(face: str, reason: str, *, racy: bool = False) -> pytest.MarkDecorator:
    """Mark a behaviour test whose ``face`` (``sync`` or ``aio``) differs from
    the other today: an expected failure for that face only (the suite's
    conftest turns the mark into xfail). Strict, so a fix shows up as a
    failure until the mark goes; ``racy`` only for a difference that shows up
    on some runs, not all (a strict mark would fail the runs it misses)."""
    assert face in FACES, face
    return pytest.mark.drift(face=face, reason=reason, racy=racy)


@contextlib.contextmanager
def opened(name: str) -> Any:
    """The face named ``name`` (``sync`` or ``aio``), closed at the end."""
    face = FACES[name]()
    try:
        yield face
    finally:
        face.close()
