"""Named SQL queries, loaded once from ``sql/queries/*.sql``.

A file holds blocks that each start with a line ``-- name: <query_name>``;
Python refers to a query by that name (``QUERIES["fetch"]``) and binds
parameters, it never assembles SQL from pieces.
"""

from __future__ import annotations

import re
from importlib import resources
from typing import LiteralString, cast

_BLOCK = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)


def _load() -> dict[str, LiteralString]:
    found: dict[str, LiteralString] = {}
    folder = resources.files("txnq.sql").joinpath("queries")
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".sql"):
            continue
        text = entry.read_text(encoding="utf-8")
        parts = _BLOCK.split(text)
        for name, body in zip(parts[1::2], parts[2::2], strict=True):
            if name in found:
                raise RuntimeError(f"query {name!r} is defined twice (in {entry.name})")
            found[name] = cast(LiteralString, body.strip())
    return found


QUERIES: dict[str, LiteralString] = _load()
