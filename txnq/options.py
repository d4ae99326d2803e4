"""The options of ``client.producer(...)`` and ``client.subscribe(...)``:
their names and defaults, shared by the sync and asyncio clients, and the
check that refuses an option neither knows (UnknownOptionError, also a
TypeError) before anything is written."""

from __future__ import annotations

from typing import Any

from txnq import errors

#: The options of ``client.producer`` and their defaults (txnq.producer.Producer).
PRODUCER_OPTIONS: dict[str, Any] = {
    "batching_max_messages": 1000,
    "batching_max_bytes": 128 * 1024,
    "batching_max_delay": "5ms",
    "max_pending_messages": 100_000,
    "send_timeout": "30s",
    "routing_mode": "key_hash",
    "encoding": "utf-8",
    "transactional_id": None,
}
#: The options of ``client.subscribe`` and their defaults (txnq.consumer.Consumer).
CONSUMER_OPTIONS: dict[str, Any] = {
    "initial_position": "latest",
    "isolation": "read_committed",
    "consumer_name": None,
    "priority": 0,
    "receiver_queue_size": 1000,
    "negative_ack_redelivery_delay": "1m",
    "lease": None,
    "poll_interval": None,
    "ack_timeout": None,
    "negative_ack_backoff": None,
    "dead_letter_policy": None,
    "retry_enable": False,
    "durable_acks": False,
}


def checked_options(defaults: dict[str, Any], given: dict[str, Any], what: str) -> dict[str, Any]:
    """``given`` over ``defaults``; UnknownOptionError names what is not an option."""
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise errors.UnknownOptionError(
            f"unknown {what} option(s) {', '.join(unknown)}: use {', '.join(sorted(defaults))}"
        )
    return {**defaults, **given}
