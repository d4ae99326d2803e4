"""Writing messages into one open transaction from any process (the Spark
driver or an executor's Python worker), idempotently across retries.

Each writer is an idempotent producer of its own name (one per transaction,
and per Spark task partition on executors) whose sequence numbers start at 0
in every attempt and whose batches are cut at fixed sizes per partition. A
retried task therefore sends the same batches with the same sequence numbers,
and ``append_v6`` recognises the ones an earlier attempt wrote: the
transaction holds every row once (Spark requires a task's input to be
deterministic for retries anyway).
"""

from __future__ import annotations

from datetime import datetime
from itertools import count
from typing import Any

import psycopg

from txnq.database.connections import translate
from txnq.database.queries import QUERIES
from txnq.messages import check_event_time, encode_key, encode_payload, encode_properties
from txnq.producer import partition_for_key
from txnq.producer.append_call import append_arguments

BATCH_MESSAGES = 500


class TxnAppender:
    """Buffered appends into transaction ``(tc_id, txn_seq)`` of topic ``topic_id``."""

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        topic_id: int,
        partitions: int,
        producer_name: str,
        txn: tuple[int, int],
        *,
        round_robin_start: int = 0,
    ) -> None:
        self._conn = conn
        self._topic_id = topic_id
        self._partitions = partitions
        self._txn = txn
        rows = self._call("register_producer", {"topic_id": topic_id, "name": producer_name})
        self._producer_id = int(rows[0][0])
        self._epoch = int(rows[0][1])
        self._next_sequence = dict.fromkeys(range(partitions), 0)
        self._buffers: dict[int, list[tuple[bytes, bytes | None, str | None, datetime | None]]] = {}
        self._round_robin = count(round_robin_start)
        self.written = 0

    def add(
        self,
        value: object,
        key: object = None,
        properties: object = None,
        event_time: object = None,
        partition: int | None = None,
    ) -> None:
        payload = encode_payload(value)
        key_bytes = encode_key(key)
        if partition is None:
            partition = (
                partition_for_key(key_bytes, self._partitions)
                if key_bytes is not None
                else next(self._round_robin) % self._partitions
            )
        elif not 0 <= partition < self._partitions:
            from txnq.errors import InvalidArgumentError

            raise InvalidArgumentError(
                f"partition {partition} does not exist: the topic has 0..{self._partitions - 1}"
            )
        buffer = self._buffers.setdefault(partition, [])
        buffer.append(
            (payload, key_bytes, encode_properties(properties), check_event_time(event_time))
        )
        if len(buffer) >= BATCH_MESSAGES:
            self._flush_partition(partition)

    def flush(self) -> None:
        for partition in sorted(self._buffers):
            self._flush_partition(partition)

    def _flush_partition(self, partition: int) -> None:
        buffer = self._buffers.pop(partition, [])
        if not buffer:
            return
        payloads = [m[0] for m in buffer]
        keys = [m[1] for m in buffer]
        properties = [m[2] for m in buffer]
        event_times = [m[3] for m in buffer]
        first_sequence = self._next_sequence[partition]
        self._call(
            "append_positional",
            append_arguments(
                self._topic_id,
                partition,
                (self._producer_id, self._epoch, first_sequence),
                (payloads, keys, properties, event_times),
                self._txn,
            ),
        )
        self._next_sequence[partition] = first_sequence + len(buffer)
        self.written += len(buffer)

    def _call(self, name: str, params: Any) -> list[Any]:
        try:
            return self._conn.execute(QUERIES[name], params).fetchall()
        except psycopg.Error as exc:
            mapped = translate(exc)
            if mapped is None:
                raise
            raise mapped from None
