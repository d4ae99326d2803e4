"""What the CLI's rendering tests share: how to tell that output reads well on
a narrow terminal, by comparing it with the same output on a wide one."""

from __future__ import annotations

from txnq.cli.output import PAYLOAD_MIN_WIDTH

ELLIPSIS = "…"


def broken_words(narrow: str, wide: str) -> list[str]:
    """The words of ``wide`` that ``narrow`` does not show whole. Every word
    of a header, a name, a number, a time or a prose column must stay whole
    on a narrow terminal; only a payload word longer than PAYLOAD_MIN_WIDTH
    may wrap inside (a payload column is never narrower than that)."""
    shown = set(narrow.split())
    return sorted(
        {word for word in wide.split() if len(word) <= PAYLOAD_MIN_WIDTH and word not in shown}
    )


def assert_reads_well(narrow: str, wide: str, what: str) -> None:
    """``narrow`` breaks no word that ``wide`` shows whole, and cuts nothing
    with an ellipsis that ``wide`` shows in full."""
    broken = broken_words(narrow, wide)
    assert not broken, f"{what}: words broken at the narrow width: {broken}\n{narrow}"
    assert narrow.count(ELLIPSIS) <= wide.count(ELLIPSIS), f"{what}: cut with '…'\n{narrow}"
