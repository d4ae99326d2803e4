"""Fuzzing the public API with hypothesis.

1. A stateful test: random sequences of produce, transactions (commit and
   abort), receive, acknowledge (plain and in a transaction) and negative
   acknowledge against a reference model. A read_committed consumer never
   receives an uncommitted or aborted message, nor one acknowledged for
   good; at the end a new consumer on the subscription receives exactly the
   committed messages not acknowledged, once each.
2. Random bad input to every public entry point: only ``TxnqError``
   subclasses escape, and a rejected call leaves the database unchanged.
"""

from __future__ import annotations

import math
import uuid
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test

import txnq
from tests.fuzz_support import fingerprint
from txnq import errors

PICK = st.integers(min_value=0, max_value=1_000)


class QueueModel(RuleBasedStateMachine):
    def __init__(self, dsn: str) -> None:
        super().__init__()
        self.client = txnq.Client(dsn)
        self.topic = f"fz-{uuid.uuid4().hex[:10]}"
        self.client.admin.create_topic(self.topic, partitions=2)
        self.producer = self.client.producer(self.topic)
        self.consumer = self.client.subscribe(
            self.topic,
            "s",
            initial_position="earliest",
            negative_ack_redelivery_delay="50ms",
        )
        self.counter = 0
        self.committed: set[str] = set()
        self.acked: set[str] = set()
        self.received: dict[str, txnq.Message] = {}
        self.ids: dict[str, txnq.MessageId] = {}
        self.txn: txnq.Transaction | None = None
        self.txn_sent: list[str] = []
        self.txn_acked: set[str] = set()

    def _value(self) -> str:
        self.counter += 1
        return f"v{self.counter}"

    @rule(key=st.one_of(st.none(), st.sampled_from(["a", "b", "c"])))
    def send(self, key: str | None) -> None:
        value = self._value()
        self.producer.send(value.encode(), key=key)
        self.committed.add(value)

    @precondition(lambda self: self.txn is None)
    @rule()
    def begin(self) -> None:
        self.txn = self.client.new_transaction(timeout="60s")

    @precondition(lambda self: self.txn is not None)
    @rule(key=st.one_of(st.none(), st.sampled_from(["a", "b"])))
    def send_in_transaction(self, key: str | None) -> None:
        value = self._value()
        self.producer.send(value.encode(), key=key, txn=self.txn)
        self.txn_sent.append(value)

    @precondition(lambda self: self.txn is not None)
    @rule()
    def commit(self) -> None:
        assert self.txn is not None
        self.txn.commit()
        self.committed.update(self.txn_sent)
        self.acked |= self.txn_acked
        self._end()

    @precondition(lambda self: self.txn is not None)
    @rule()
    def abort(self) -> None:
        assert self.txn is not None
        self.txn.abort()
        self._end()

    def _end(self) -> None:
        self.txn, self.txn_sent, self.txn_acked = None, [], set()

    @rule()
    def receive(self) -> None:
        message = self.consumer.receive(timeout=0.05)
        if message is None:
            return
        value = message.value.decode()
        assert value in self.committed, f"{value} delivered but never committed"
        assert value not in self.acked, f"{value} delivered after it was acknowledged"
        assert value not in self.txn_acked, f"{value} delivered while pending in a transaction"
        self.received[value] = message
        self.ids[value] = message.message_id

    def _ackable(self) -> list[str]:
        return sorted(set(self.received) - self.acked - self.txn_acked)

    # What a rule acts on is drawn as a plain number and picked from the model
    # at run time, never sampled from lists that depend on what the database
    # delivered so far (timing): hypothesis replays a draw as itself, so a
    # failure shows as itself and not as FlakyStrategyDefinition. A rule with
    # nothing to act on does nothing.
    @staticmethod
    def _pick(choices: list[str], index: int) -> str | None:
        return choices[index % len(choices)] if choices else None

    @rule(index=PICK)
    def acknowledge(self, index: int) -> None:
        value = self._pick(self._ackable(), index)
        if value is None:
            return
        self.consumer.acknowledge(self.received.pop(value))
        self.acked.add(value)

    @rule(index=PICK)
    def acknowledge_in_transaction(self, index: int) -> None:
        value = self._pick(self._ackable(), index)
        if value is None or self.txn is None:
            return
        self.consumer.acknowledge(self.received.pop(value), txn=self.txn)
        self.txn_acked.add(value)

    @rule(index=PICK)
    def acknowledging_a_pending_message_outside_conflicts(self, index: int) -> None:
        # The message was received before; its id is all an ack needs.
        value = self._pick(sorted(self.txn_acked), index)
        if value is None:
            return
        with pytest.raises(errors.TransactionConflictError):
            self.consumer.acknowledge(self.ids[value])

    @rule(index=PICK)
    def negative_acknowledge(self, index: int) -> None:
        value = self._pick(self._ackable(), index)
        if value is None:
            return
        self.consumer.negative_acknowledge(self.received.pop(value))

    def teardown(self) -> None:
        try:
            if self.txn is not None:
                self.txn.abort()
                self._end()
            self.consumer.close()
            expected = self.committed - self.acked
            seen: list[str] = []
            with self.client.subscribe(self.topic, "s") as again:
                while True:
                    message = again.receive(timeout=1.0 if len(seen) >= len(expected) else 5.0)
                    if message is None:
                        break
                    seen.append(message.value.decode())
            assert len(seen) == len(set(seen)), f"duplicates: {sorted(seen)}"
            assert set(seen) == expected
        finally:
            self.client.close()


def test_random_operation_sequences_match_the_model(dsn: str) -> None:
    run_state_machine_as_test(
        lambda: QueueModel(dsn),
        settings=settings(
            max_examples=8,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )


# -- bad input --------------------------------------------------------------------

junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=300),
    st.binary(max_size=50),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.just(timedelta(seconds=-1)),
    st.just(object()),
)
names = st.one_of(
    junk,
    st.text(alphabet="abc-_./ %\x00'\"é", min_size=0, max_size=300),
    st.sampled_from(["", " ", "a" * 250, "a/b", "../x", "x;drop", "é", "\x00"]),
)
durations = st.one_of(
    junk,
    st.sampled_from(["-1s", "0", "1y", "nan", "inf", "1e400", "10000000d", "", "500ms", "  "]),
    st.floats(min_value=-1e12, max_value=1e12),
)
properties = st.one_of(
    junk,
    st.dictionaries(
        st.text(max_size=20), st.one_of(st.text(max_size=20), st.integers()), max_size=4
    ),
    st.just({"k": "v" * (6 * 1024 * 1024)}),
    st.just({str(i): "x" for i in range(5000)}),
)


@pytest.fixture
def world(dsn: str) -> Any:
    with txnq.Client(dsn) as client, txnq.Client(dsn) as other:
        client.admin.create_topic("t", partitions=2)
        producer = client.producer("t", name="p")
        consumer = client.subscribe("t", "s", initial_position="earliest")
        producer.send(b"m0")
        message = consumer.receive(timeout=5)
        assert message is not None
        ended = client.new_transaction()
        ended.commit()
        foreign = other.new_transaction()
        with psycopg.connect(dsn, autocommit=True) as conn:
            yield {
                "client": client,
                "producer": producer,
                "consumer": consumer,
                "message": message,
                "ended": ended,
                "foreign": foreign,
                "conn": conn,
            }
        foreign.abort()


def _rejected_or_fine(world: dict[str, Any], call: Any) -> None:
    before = fingerprint(world["conn"])
    try:
        call()
    except errors.TxnqError:
        after = fingerprint(world["conn"])
        assert after == before, "a rejected call changed the database"
        return
    # Accepted: nothing to check but that it did not raise anything else.


FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


@FUZZ
@given(
    name=names, partitions=st.one_of(junk, st.integers(-3, 5), st.just(10**9)), retention=durations
)
def test_create_topic_rejects_bad_input_cleanly(world, name, partitions, retention) -> None:  # type: ignore[no-untyped-def]
    admin = world["client"].admin
    _rejected_or_fine(
        world, lambda: admin.create_topic(name, partitions=partitions, retention=retention)
    )


@FUZZ
@given(
    value=st.one_of(junk, st.just(b"x" * (5 * 1024 * 1024 + 1))),
    key=st.one_of(junk, st.text(max_size=10)),
    props=properties,
    partition=st.one_of(st.none(), st.integers(-2, 4), junk),
    txn=st.sampled_from(["none", "ended", "foreign", "junk"]),
)
def test_send_rejects_bad_input_cleanly(world, value, key, props, partition, txn) -> None:  # type: ignore[no-untyped-def]
    producer = world["producer"]
    txn_arg = {"none": None, "ended": world["ended"], "foreign": world["foreign"], "junk": 42}[txn]
    _rejected_or_fine(
        world,
        lambda: producer.send(value, key=key, properties=props, partition=partition, txn=txn_arg),
    )


@FUZZ
@given(timeout=durations)
def test_new_transaction_rejects_bad_timeouts_cleanly(world, timeout) -> None:  # type: ignore[no-untyped-def]
    client = world["client"]

    def call() -> None:
        txn = client.new_transaction(timeout=timeout)
        txn.abort()

    if isinstance(timeout, float) and (math.isnan(timeout) or timeout <= 0):
        with pytest.raises(errors.TxnqError):
            call()
    _rejected_or_fine(world, call)


@FUZZ
@given(
    topic=st.one_of(names, st.just("t")),
    subscription=names,
    subscription_type=st.one_of(junk, st.sampled_from(["exclusive", "shared", "Failover", ""])),
    initial_position=st.one_of(junk, st.sampled_from(["earliest", "latest", "middle"])),
    isolation=st.one_of(junk, st.sampled_from(["read_committed", "serializable"])),
)
def test_subscribe_rejects_bad_input_cleanly(  # type: ignore[no-untyped-def]
    world, topic, subscription, subscription_type, initial_position, isolation
) -> None:
    client = world["client"]

    def call() -> None:
        consumer = client.subscribe(
            topic,
            subscription,
            subscription_type,
            initial_position=initial_position,
            isolation=isolation,
        )
        consumer.close()

    _rejected_or_fine(world, call)


@FUZZ
@given(
    what=st.one_of(junk, st.sampled_from(["message", "foreign-id", "far-id", "list"])),
    txn=st.sampled_from(["none", "ended", "foreign", "junk"]),
    cumulative=st.booleans(),
    # Only bad timeouts: a valid huge one would (rightly) wait that long.
    timeout=st.one_of(
        st.floats(max_value=-1e-9),
        st.sampled_from(
            ["-1s", "nan", "", "abc", -1, float("nan"), float("-inf"), True, b"1", [1]]
        ),
    ),
)
def test_consumer_calls_reject_bad_input_cleanly(world, what, txn, cumulative, timeout) -> None:  # type: ignore[no-untyped-def]
    consumer = world["consumer"]
    message = world["message"]
    target = (
        {
            "message": message,
            "foreign-id": txnq.MessageId("other", 0, 0),
            "far-id": txnq.MessageId("t", 0, 10**12),
            "list": [message.message_id, "x"],
        }.get(what, what)
        if isinstance(what, str)
        else what
    )
    txn_arg = {"none": None, "ended": world["ended"], "foreign": world["foreign"], "junk": "1:1"}[
        txn
    ]
    if txn == "none" and what == "message":
        return  # a valid ack: nothing to reject
    ack = consumer.acknowledge_cumulative if cumulative else consumer.acknowledge
    _rejected_or_fine(world, lambda: ack(target, txn=txn_arg))
    before = fingerprint(world["conn"])
    with pytest.raises(errors.TxnqError):
        consumer.receive(timeout=timeout)
    assert fingerprint(world["conn"]) == before
