"""The chaos suite: the workloads live in ``bench/chaoslib`` (shared with
``bench/chaos.py``), so the repository root must be importable."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
