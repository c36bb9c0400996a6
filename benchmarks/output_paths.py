"""Where the benchmarks write, and how a script says that the earlier run it reads is missing.

`OUT` (benchmarks/out/, git-ignored) holds raw output: per-replicate, per-cell and per-round rows,
logs, HTML and PNG, regenerated on demand by the script that writes them. `RESULTS`
(benchmarks/results/, committed) holds only small summary tables, the figures RESULTS.md quotes.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
RESULTS = HERE / "results"


def require(path, command: str) -> Path:
    """`path` if it exists; otherwise one line naming it and the command that makes it, and exit 2."""
    path = Path(path)
    if not path.exists():
        print(f"error: {path} does not exist; make it first with: {command}", file=sys.stderr)
        raise SystemExit(2)
    return path
