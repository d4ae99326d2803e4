"""Producers: route, batch and append messages, idempotently (see
:mod:`txnq.producer.base` for what a producer guarantees).

    base         options, the batch accumulator and the append plans
    routing      which partition a message goes to
    append_call  the append statement's arguments and the SQLSTATEs acted on
    sync         txnq.Producer (a flush thread)
    aio          txnq.aio.Producer (a flush task)
"""

from txnq.producer.aio import Producer as AsyncProducer
from txnq.producer.append_call import (
    BACKLOG_QUOTA_HOLD,
    HOLD_RECHECK_MAX_SECONDS,
    HOLD_RECHECK_MIN_SECONDS,
)
from txnq.producer.base import ProducerBase, delivery_time
from txnq.producer.batch import EntryBatch
from txnq.producer.routing import PARTITIONS_REFRESH_SECONDS, ROUTING_MODES, partition_for_key
from txnq.producer.sync import Producer
from txnq.transaction.pending import PendingSend, SendCallback, result_timeout

__all__ = [
    "BACKLOG_QUOTA_HOLD",
    "HOLD_RECHECK_MAX_SECONDS",
    "HOLD_RECHECK_MIN_SECONDS",
    "PARTITIONS_REFRESH_SECONDS",
    "ROUTING_MODES",
    "AsyncProducer",
    "EntryBatch",
    "PendingSend",
    "Producer",
    "ProducerBase",
    "SendCallback",
    "delivery_time",
    "partition_for_key",
    "result_timeout",
]
