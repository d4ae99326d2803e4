"""Every TQ code a SQL function raises is documented and mapped (issue 17):
docs/sql-api.md's table names it, and txnq.database.connections.SQLSTATE_ERRORS turns it
into a TxnqError subclass, so no rejection from the SQL boundary reaches a
Python caller as a raw psycopg error."""

from __future__ import annotations

import re
from pathlib import Path

from txnq import errors
from txnq.database.connections import SQLSTATE_ERRORS

ROOT = Path(__file__).resolve().parents[2]
RAISED = re.compile(r"ERRCODE\s*=\s*'(TQ\d{3})'")
DOCUMENTED = re.compile(r"^\| (TQ\d{3}(?: / TQ\d{3})*) \|", re.MULTILINE)


def raised_codes() -> set[str]:
    codes: set[str] = set()
    for path in (ROOT / "sql").rglob("*.sql"):
        codes.update(RAISED.findall(path.read_text(encoding="utf-8")))
    return codes


def documented_codes() -> set[str]:
    text = (ROOT / "docs" / "sql-api.md").read_text(encoding="utf-8")
    return {code for cell in DOCUMENTED.findall(text) for code in cell.split(" / ")}


def test_every_raised_code_is_documented_in_the_sql_api_page() -> None:
    raised = raised_codes()
    assert raised, "no TQ code found under sql/: the pattern is out of date"
    assert raised - documented_codes() == set()


def test_every_raised_code_maps_to_a_txnq_error() -> None:
    missing = raised_codes() - set(SQLSTATE_ERRORS)
    assert missing == set()
    assert all(issubclass(cls, errors.TxnqError) for cls in SQLSTATE_ERRORS.values())
