"""The history checker finds each anomaly class in a hand-made history, and
nothing else: a checker that cannot fail proves nothing."""

from __future__ import annotations

import pytest

from bench.chaoslib.history import ANOMALIES, History, check


def _clean() -> History:
    """Two partitions, a producer, a transactional producer, a consumer: no anomaly."""
    h = History()
    h.send("p", "a", "ok", partition=0, position=(0, 0))
    h.send("p", "b", "ok", partition=0, position=(1, 0))
    h.send("p", "c", "ok", partition=1, position=(0, 0))
    h.txn("t1", "committed", commit_time=10.0)
    h.send("tp", "d", "ok", partition=1, position=(1, 0), txn="t1")
    h.send("p", "x", "fail")
    h.send("p", "y", "unknown")
    for partition, position, value in [(0, (0, 0), "a"), (0, (1, 0), "b")]:
        h.poll("c", partition, position, value, time=11.0)
    h.poll("c", 1, (0, 0), "c", time=11.0)
    h.poll("c", 1, (1, 0), "d", time=11.0)
    return h


def _only(history: History) -> dict[str, int]:
    return check(history).anomalies()


def test_a_clean_history_is_valid() -> None:
    report = check(_clean())
    assert report.valid, report.summary()
    assert set(report.counts) == set(ANOMALIES)
    assert report.sends_ok == 4


def test_an_unknown_send_may_be_read_or_not() -> None:
    h = _clean()
    h.send("p", "z", "unknown", partition=0, position=(2, 0))
    assert _only(h) == {}
    h.poll("c", 0, (2, 0), "z", time=12.0)
    assert _only(h) == {}


def test_aborted_read_g1a() -> None:
    h = _clean()
    h.txn("t2", "aborted", commit_time=None)
    h.send("tp", "e", "ok", partition=1, position=(2, 0), txn="t2")
    h.poll("c", 1, (2, 0), "e", time=12.0)
    h.poll("c", 0, (2, 0), "x", time=12.0)  # a failed plain send read too
    assert _only(h) == {"aborted_read": 2}


def test_read_before_the_commit_was_asked_is_uncommitted() -> None:
    h = _clean()
    h.txn("t3", "committed", commit_time=20.0)
    h.send("tp", "f", "ok", partition=1, position=(2, 0), txn="t3")
    h.poll("c", 1, (2, 0), "f", time=19.5)
    assert _only(h) == {"uncommitted_read": 1}


def test_a_value_nobody_sent_is_an_unexpected_read() -> None:
    h = _clean()
    h.poll("c", 0, (2, 0), "ghost", time=12.0)
    assert _only(h) == {"unexpected_read": 1}


def test_lost_write_and_unseen() -> None:
    h = _clean()
    # "m" at 0:2 is never read although 0:3 is: lost. "n" at 1:5 is after
    # everything read on partition 1: unseen.
    h.send("p", "m", "ok", partition=0, position=(2, 0))
    h.send("p", "o", "ok", partition=0, position=(3, 0))
    h.send("p", "n", "ok", partition=1, position=(5, 0))
    h.poll("c2", 0, (3, 0), "o", time=12.0)
    assert _only(h) == {"lost_write": 1, "unseen": 1}


def test_a_value_written_twice_is_a_duplicate_write() -> None:
    h = _clean()
    h.poll("c", 0, (2, 0), "a", time=12.0)  # "a" again, at a new position
    found = _only(h)
    # Read twice by one consumer as well: both classes are reported.
    assert found == {"duplicate_write": 1, "duplicate_delivery": 1}


def test_delivering_a_value_twice_to_one_group_is_a_duplicate_delivery() -> None:
    h = _clean()
    # Another member of the group sees "a" at the same position: a redelivery.
    h.poll("c-other", 0, (0, 0), "a", time=12.0, group="c")
    # A different group reading it is fine.
    h.poll("audit", 0, (0, 0), "a", time=12.0)
    assert _only(h) == {"duplicate_delivery": 1}


def test_reading_a_value_elsewhere_than_written_is_inconsistent() -> None:
    h = History()
    h.send("p", "a", "ok", partition=0, position=(0, 0))
    h.send("p", "b", "ok", partition=0, position=(1, 0))
    h.poll("c", 0, (0, 0), "b", time=1.0)
    h.poll("c2", 0, (1, 0), "a", time=1.0)
    found = _only(h)
    # "a" and "b" read at each other's positions (2 values, each at two places
    # counted as a duplicate write once: written here, read there).
    assert found == {"duplicate_write": 2}
    h2 = History()
    h2.send("p", "a", "ok")  # no position reported by the send
    h2.send("p", "b", "ok")
    h2.poll("c", 0, (0, 0), "a", time=1.0)
    h2.poll("c2", 0, (0, 0), "b", time=1.0)
    assert _only(h2) == {"inconsistent_offset": 1}


def test_poll_skip() -> None:
    h = History()
    for i, v in enumerate("abc"):
        h.send("p", v, "ok", partition=0, position=(i, 0))
    h.poll("c", 0, (0, 0), "a", time=1.0)
    h.poll("c", 0, (2, 0), "c", time=1.0)
    h.poll("c2", 0, (1, 0), "b", time=1.0)  # b is read by someone: not lost
    assert _only(h) == {"poll_skip": 1}


def test_a_new_session_may_start_over_but_one_session_goes_forward() -> None:
    h = History()
    for i, v in enumerate("ab"):
        h.send("p", v, "ok", partition=0, position=(i, 0))
    h.poll("c", 0, (0, 0), "a", time=1.0, session=0, group="g0")
    h.poll("c", 0, (1, 0), "b", time=1.0, session=0, group="g0")
    h.poll("c", 0, (0, 0), "a", time=1.0, session=1, group="g1")  # new session: fine
    assert _only(h) == {}
    h.poll("c", 0, (0, 0), "a", time=1.0, session=1, group="g2")  # backwards in session 1
    assert _only(h) == {"nonmonotonic_poll": 1}


def test_nonmonotonic_send() -> None:
    h = History()
    h.send("p", "a", "ok", partition=0, position=(5, 0))
    h.send("p", "b", "ok", partition=0, position=(4, 0))
    h.send("q", "c", "ok", partition=0, position=(6, 0))
    for pos, v in [((4, 0), "b"), ((5, 0), "a"), ((6, 0), "c")]:
        h.poll("c", 0, pos, v, time=1.0)
    assert _only(h) == {"nonmonotonic_send": 1}


def test_every_input_is_consumed_by_exactly_one_committed_transaction() -> None:
    h = History()
    h.expect_consumed(["i1", "i2", "i3", "i4", "i5"])
    h.txn("t1", "committed", 1.0)
    h.txn("t2", "aborted")
    h.txn("t3", "committed", 2.0)
    h.txn("t4", "unknown", 3.0)
    h.consume("t1", ["i1", "i2"])
    h.consume("t2", ["i3"])  # aborted only: i3 never consumed
    h.consume("t3", ["i2"])  # i2 twice
    h.consume("t4", ["i4"])  # unknown: maybe consumed, not flagged
    # i5: nobody
    assert _only(h) == {"unconsumed_input": 2, "multiply_consumed_input": 1}
    assert check(h).examples["unconsumed_input"] == ["i3", "i5"]


@pytest.mark.parametrize("bad", [lambda h: h.send("p", "a", "maybe"), lambda h: h.txn("t", "x")])
def test_outcomes_are_checked(bad) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError):
        bad(History())
