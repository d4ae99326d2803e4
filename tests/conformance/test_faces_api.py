"""The two faces offer one API: the same public methods with the same
parameters (names, kinds, defaults), the same shared value types, and the
same life cycle (close, use after close, context managers)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from faces import FAST

import txnq
import txnq.aio
from txnq import errors

PAIRS = [
    (txnq.Client, txnq.aio.Client),
    (txnq.Producer, txnq.aio.Producer),
    (txnq.Consumer, txnq.aio.Consumer),
    (txnq.Transaction, txnq.aio.Transaction),
    (txnq.AttachedTransaction, txnq.aio.AttachedTransaction),
]

#: Public members of one face only, by design, and why.
FACE_SPECIFIC = {
    # The sync client's pooled psycopg connections and named queries (used by
    # the workers, the CLI and the tests); the asyncio client has no pool to lend.
    ("Client", "checkout"): "sync",
    ("Client", "connection"): "sync",
    ("Client", "query"): "sync",
    ("Client", "execute"): "sync",
    # How an asyncio client connects (its constructor cannot await), and the
    # sync client it shares settings and schema checks with.
    ("Client", "connect"): "aio",
    ("Client", "open"): "aio",
    ("Client", "sync"): "aio",
}

#: Drift: public members one face (the value) lacks though it should have them.
MISSING: dict[tuple[str, str], str] = {}


def members(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def parameters(function: Any) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize("sync_class, aio_class", PAIRS, ids=[s.__name__ for s, _ in PAIRS])
def test_each_public_method_has_the_same_parameters_on_both_faces(
    sync_class: type, aio_class: type
) -> None:
    shared = members(sync_class) & members(aio_class)
    for name in sorted(shared):
        ours, theirs = getattr(sync_class, name), getattr(aio_class, name)
        if callable(ours) and callable(theirs):
            assert parameters(ours) == parameters(theirs), f"{sync_class.__name__}.{name}"


@pytest.mark.parametrize("sync_class, aio_class", PAIRS, ids=[s.__name__ for s, _ in PAIRS])
def test_each_face_has_the_other_faces_public_methods(sync_class: type, aio_class: type) -> None:
    kind = sync_class.__name__
    only = {("sync", n) for n in members(sync_class) - members(aio_class)} | {
        ("aio", n) for n in members(aio_class) - members(sync_class)
    }
    lacking = {"sync": "aio", "aio": "sync"}
    unexplained = {
        (face, name)
        for face, name in only
        if FACE_SPECIFIC.get((kind, name)) != face and MISSING.get((kind, name)) != lacking[face]
    }
    assert unexplained == set()


def test_no_public_method_is_missing_from_a_face() -> None:
    assert MISSING == {}


def test_the_faces_share_their_value_types_and_attach_takes_the_same_parameters() -> None:
    for name in ("Backoff", "DeadLetterPolicy", "Message", "MessageId", "PendingSend"):
        assert getattr(txnq.aio, name) is getattr(txnq, name), name
    assert parameters(txnq.aio.attach) == parameters(txnq.attach)
    assert set(txnq.aio.__all__) <= set(txnq.__all__)


# -- the life cycle, per face ---------------------------------------------------


def test_closing_the_client_closes_what_it_made(face: Any, client: Any, topic: Any) -> None:
    topic("orders")
    producer = client.producer("orders")
    pending = producer.send_async(b"flushed at close")
    consumer = client.subscribe("orders", "s", initial_position="earliest", **FAST)
    client.close()
    client.close()  # twice: a no-op
    assert pending.result(5).topic == "orders"
    with pytest.raises(errors.ClosedError):
        producer.send(b"x")
    with pytest.raises(errors.ClosedError):
        consumer.receive(timeout=0)
    with pytest.raises(errors.ClosedError):
        client.new_transaction()


def test_producers_and_consumers_close_at_the_end_of_their_with_block(
    client: Any, topic: Any
) -> None:
    topic("orders")
    with client.producer("orders") as producer:
        producer.send(b"x")
    with client.subscribe("orders", "s", initial_position="earliest", **FAST) as consumer:
        assert consumer.receive(timeout=5).value == b"x"
    producer.close()  # again: a no-op
    consumer.close()
    with pytest.raises(errors.ClosedError):
        producer.send_async(b"x")
    with pytest.raises(errors.ClosedError):
        consumer.acknowledge([])
    with pytest.raises(errors.ClosedError), producer:
        pass
    with pytest.raises(errors.ClosedError), consumer:
        pass
