"""Where a producer sends a message (stable, documented for other languages).

A message with a key goes to partition ``zlib.crc32(key_bytes) % partitions``
(CRC-32/IEEE of the UTF-8 key); messages without a key go round-robin, one
batch per partition at a time (as Pulsar's batching-aware round robin), from a
random first partition, unless ``partition=`` is given. ``routing_mode=
"round_robin"`` sends keyed messages round-robin too.
"""

from __future__ import annotations

import zlib

ROUTING_MODES = ("key_hash", "round_robin")
#: How often a producer looks for partitions added to its topic (Pulsar: 60 s).
PARTITIONS_REFRESH_SECONDS = 60.0


def partition_for_key(key: bytes, partitions: int) -> int:
    """The partition of a key: CRC-32 of its bytes modulo the partition count."""
    return zlib.crc32(key) % partitions
