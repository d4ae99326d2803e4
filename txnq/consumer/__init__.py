"""Consumers: a session on a subscription that delivers its messages and
acknowledges them (see :mod:`txnq.consumer.base` for the subscription types
and what they guarantee).

    base              options, the receive queue, acks, seeks, leaving
    session           registering, the lease and heartbeat, the fetch loop
    delivery          the two deliveries, chosen at subscribe:
    cursor_delivery     exclusive and failover (read from the cursor)
    claim_delivery      shared and key_shared (claims)
    acks              the ack tracker (acknowledged messages are never handed out again)
    shard_listeners   through a cluster's proxy: LISTEN on the partitions' shards
    dead_letters      Backoff, DeadLetterPolicy, retry letters
    sync              txnq.Consumer (a fetch thread)
    aio               txnq.aio.Consumer (a fetch task)
"""

from txnq.consumer.aio import Consumer as AsyncConsumer
from txnq.consumer.base import (
    INITIAL_POSITIONS,
    ISOLATIONS,
    SHARED_TYPES,
    SUBSCRIPTION_TYPES,
    ConsumerBase,
)
from txnq.consumer.claim_delivery import CLAIM_MAX_MESSAGES
from txnq.consumer.cursor_delivery import FETCH_MAX_BYTES
from txnq.consumer.dead_letters import Backoff, DeadLetterPolicy
from txnq.consumer.sync import Consumer

__all__ = [
    "CLAIM_MAX_MESSAGES",
    "FETCH_MAX_BYTES",
    "INITIAL_POSITIONS",
    "ISOLATIONS",
    "SHARED_TYPES",
    "SUBSCRIPTION_TYPES",
    "AsyncConsumer",
    "Backoff",
    "Consumer",
    "ConsumerBase",
    "DeadLetterPolicy",
]
