"""A simulated data set as files: the tables `bayes-wsc fit MODEL` reads, and the truth beside them.

`bayes-wsc simulate MODEL --out DIR` writes into DIR the CSV files of one
model's fit command, `truth.json` (the generator, its settings and seed,
and the true parameters) and, for models whose items have true classes,
`truth.csv` (one row per item). `check_folder` runs before anything is
simulated: it refuses a folder that already holds one of those files
(naming them) unless `--replace` is given, so that a simulation never
replaces data silently. NumPy and pandas only: no PyMC on this path.
"""

from __future__ import annotations

import math
import os
import shlex
from pathlib import Path

import numpy as np
import pandas as pd

from bayes_wsc import outputs
from bayes_wsc.errors import InputError


def check_folder(folder: str | os.PathLike, names, *, replace: bool) -> None:
    """Refuse `folder` when it already holds one of `names` and `replace` is false."""
    present = [name for name in names if (Path(folder) / name).exists()]
    if present and not replace:
        raise InputError(f"the simulation folder {str(folder)!r} already holds {', '.join(present)}, which "
                         "simulate would replace; give a new or empty folder, or --replace")


def plain(value):
    """`value` with NumPy scalars and arrays turned into JSON numbers and lists (NaN as null)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.generic):
        return plain(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def named(values, names) -> dict:
    """A vector as {name: value}."""
    return {str(n): v for n, v in zip(names, np.asarray(values).tolist())}


def named_matrix(values, rows, columns) -> dict:
    """A matrix as {row name: {column name: value}}."""
    return {str(r): named(v, columns) for r, v in zip(rows, np.asarray(values))}


def write_simulation(folder: str | os.PathLike, tables: dict[str, pd.DataFrame], truth: dict,
                     truth_table: pd.DataFrame | None = None) -> list[Path]:
    """Write each table as CSV (`tables`: file name -> frame), then truth.csv and truth.json."""
    folder = Path(folder)
    written = [outputs.write_csv(frame, folder / name, name) for name, frame in tables.items()]
    if truth_table is not None:
        written.append(outputs.write_csv(truth_table, folder / "truth.csv", "truth table"))
    written.append(outputs.write_json(plain(truth), folder / "truth.json", "truth file"))
    return written


def in_folder(folder, name: str) -> str:
    """The path of `name` in `folder`, quoted for a shell (for the printed next command)."""
    return shlex.quote(os.path.join(str(folder), name))


def report(written: list[Path], tables: dict[str, pd.DataFrame], next_command: str) -> None:
    """Print what was written and the command that fits it."""
    rows = {name: len(frame) for name, frame in tables.items()}
    for path in written:
        count = f" ({rows[path.name]} rows)" if path.name in rows else ""
        print(f"wrote {path}{count}")
    print(f"fit it with:\n  {next_command}")
