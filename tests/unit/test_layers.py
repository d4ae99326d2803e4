"""The house rules of txnq/ that import-linter (make lint) does not check:
modules a newcomer can read in one sitting, names that say what a module
holds, and the worker processes imported only by the command line."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The most lines a module of the library or the workers may have.
MAX_LINES = 600
#: Names that say nothing about what a module holds.
VAGUE_NAMES = {"utils", "util", "helpers", "misc", "common", "tools"}


def _modules() -> list[Path]:
    return sorted(
        path
        for folder in ("txnq", "workers")
        for path in (ROOT / folder).rglob("*.py")
        if "__pycache__" not in path.parts
    )


def test_no_module_is_over_600_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for path in _modules()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"split these by concern (at most {MAX_LINES} lines each): {long}"


def test_no_module_has_a_name_that_says_nothing() -> None:
    vague = [str(p.relative_to(ROOT)) for p in _modules() if p.stem in VAGUE_NAMES]
    assert not vague, f"name these after what they hold: {vague}"


def _imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_only_the_command_line_imports_the_worker_processes() -> None:
    # txnq.workers ships from workers/ (mapped in at install), so import-linter,
    # which scans txnq/, cannot see it: this is its forbidden contract.
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "txnq").rglob("*.py")
        if "cli" not in path.relative_to(ROOT / "txnq").parts
        and any(
            name == "txnq.workers" or name.startswith("txnq.workers.")
            for name in _imported_modules(path)
        )
    ]
    assert not offenders, f"the library must not import the worker processes: {offenders}"
