"""``bytea[]`` parameters in PostgreSQL's binary array format, written
directly.

An append sends its payloads (and keys) as one ``bytea[]`` parameter. For a
plain ``list`` psycopg works out the element type, the dimensions and a dumper
on every call (``ListBinaryDumper.upgrade``): about 16 us of client CPU per
array on the machine of docs/benchmarks.md, a tenth of a single send's client
time. A :class:`ByteaArray` is a list whose type already says all of that, so
its dumper only frames the elements. The dumper is registered on psycopg's
global adapters for this class alone, so connections txnq did not open (an
attached transaction's) send it the same way and nothing else changes.
"""

from __future__ import annotations

import struct
from typing import Any

import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import Format

BYTEA_OID = 17
BYTEA_ARRAY_OID = 1001
_ONE_DIMENSION = struct.Struct("!iiiii")  # ndim, has NULLs, element oid, size, lower bound
_EMPTY = struct.pack("!iii", 0, 0, BYTEA_OID)
_LENGTH = struct.Struct("!i")
_NULL = _LENGTH.pack(-1)


class ByteaArray(list[bytes | None]):
    """A list of ``bytes`` (or None) sent as one ``bytea[]`` indexed from 1."""

    __slots__ = ()


class ByteaArrayBinaryDumper(Dumper):
    """Dumps a :class:`ByteaArray` in PostgreSQL's binary array format."""

    format = Format.BINARY
    oid = BYTEA_ARRAY_OID

    def dump(self, obj: Any) -> bytes:
        if not obj:
            return _EMPTY
        pack = _LENGTH.pack
        parts = [b""]
        has_null = 0
        for item in obj:
            if item is None:
                has_null = 1
                parts.append(_NULL)
            else:
                data = item if isinstance(item, bytes) else bytes(item)
                parts.append(pack(len(data)))
                parts.append(data)
        parts[0] = _ONE_DIMENSION.pack(1, has_null, BYTEA_OID, len(obj), 1)
        return b"".join(parts)


psycopg.adapters.register_dumper(ByteaArray, ByteaArrayBinaryDumper)
