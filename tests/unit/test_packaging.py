"""What a wheel ships: pyproject.toml lists packages one by one (sql/,
migrations/ and workers/ are mapped into the txnq package from the top of the
repository), so a new package under txnq/ that is not listed would be left out
of every install that is not editable."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _listed_packages() -> set[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return set(config["tool"]["setuptools"]["packages"])


def test_every_package_under_txnq_ships_in_the_wheel() -> None:
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "txnq").rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    missing = sorted(found - _listed_packages())
    assert not missing, f"add these to [tool.setuptools] packages in pyproject.toml: {missing}"


def test_every_listed_package_exists() -> None:
    mapped = {"txnq.sql", "txnq.migrations", "txnq.workers"}
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    package_dir = config["tool"]["setuptools"]["package-dir"]
    for name in sorted(_listed_packages()):
        folder = package_dir.get(name)
        if folder is None:
            root = next((m for m in mapped if name.startswith(m + ".")), None)
            if root is not None:
                folder = package_dir[root] + name[len(root) :].replace(".", "/")
            else:
                folder = name.replace(".", "/")
        assert (ROOT / folder).is_dir(), (
            f"{name} is listed in pyproject.toml but {folder}/ is missing"
        )
