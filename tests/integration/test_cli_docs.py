"""The sample outputs of docs/cli.md are what the commands print now
(scripts/cli_docs.py writes them), and every one of them reads well at 80
columns: no word broken that a 250-column run shows whole, nothing cut."""

from __future__ import annotations

from collections.abc import Callable

from scripts import cli_docs
from tests.cli_support import assert_reads_well


def test_the_sample_outputs_in_the_docs_are_what_the_commands_print_now(
    dsn: str, make_module_database: Callable[[], str]
) -> None:
    narrow = cli_docs.render_samples(dsn)

    stale = cli_docs.stale_pages(narrow)
    assert not stale, (
        "the samples in docs/ differ from a run now; rewrite them with "
        "`.venv/bin/python scripts/cli_docs.py`:\n" + "\n".join(stale.values())
    )

    wide = cli_docs.render_samples(make_module_database(), width=250, standalone=False)
    assert set(wide) == set(narrow) - {"standalone", "server-status"}
    for name, text in wide.items():
        assert_reads_well(narrow[name], text, f"sample {name}")
