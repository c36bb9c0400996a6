"""Reading input tables and checking their columns, with one-line errors.

Every data container validates through these helpers so that a bad file or
column produces the same kind of message whatever the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from bayes_wsc.errors import InputError

TABLE_SUFFIXES = (".csv", ".parquet", ".pq")


def read_table(path: str | Path, what: str = "table") -> pd.DataFrame:
    """Read a CSV or Parquet file; any failure becomes an `InputError` naming the file."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{what} file {str(path)!r} does not exist")
    if path.is_dir():
        raise InputError(f"{what} file {str(path)!r} is a directory, not a CSV or Parquet file")
    suffix = path.suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            frame = pd.read_parquet(path)
        elif suffix == ".csv":
            frame = pd.read_csv(path, keep_default_na=True)
        else:
            raise InputError(
                f"{what} file {str(path)!r} is not CSV or Parquet (expected a .csv or .parquet suffix)"
            )
    except InputError:
        raise
    except pd.errors.EmptyDataError:
        raise InputError(f"{what} file {str(path)!r} is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError, OSError, ValueError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{what} file {str(path)!r} could not be read: {first_line}") from None
    if len(frame) == 0:
        raise InputError(f"{what} file {str(path)!r} has no rows")
    return frame


def require_columns(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    """Fail naming the first column of `columns` that `frame` lacks (or repeats)."""
    check_frame(frame, what)
    for column in columns:
        if column not in frame.columns:
            available = ", ".join(map(str, frame.columns[:12]))
            raise InputError(f"{what} has no column {column!r} (columns: {available})")


def check_frame(frame, what: str) -> None:
    """A pandas DataFrame whose column names are unique (Parquet and DataFrames allow repeats)."""
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"{what} must be a pandas DataFrame, got {type(frame).__name__}")
    repeated = frame.columns[frame.columns.duplicated()]
    if len(repeated):
        raise InputError(f"{what} has more than one column named {repeated[0]!r}")


def require_rows(frame: pd.DataFrame, what: str) -> None:
    """A DataFrame (see `check_frame`) with at least one row."""
    check_frame(frame, what)
    if len(frame) == 0:
        raise InputError(f"{what} has no rows")


def numeric_column(
    frame: pd.DataFrame,
    column: str,
    what: str,
    *,
    allow_missing: bool = False,
    lower: float | None = None,
    upper: float | None = None,
    lower_open: bool = False,
    upper_open: bool = False,
) -> np.ndarray:
    """Return `frame[column]` as floats, failing on text, NaN, inf or values out of range.

    The message names the column, the first offending row and its value.
    """
    raw = frame[column]
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    bad_text = np.isnan(values) & raw.notna().to_numpy()
    if bad_text.any():
        row = int(np.flatnonzero(bad_text)[0])
        raise InputError(f"{what} column {column!r} has a non-numeric value {raw.iloc[row]!r} (row {row + 1})")
    if not allow_missing and np.isnan(values).any():
        row = int(np.flatnonzero(np.isnan(values))[0])
        raise InputError(f"{what} column {column!r} has a missing value (row {row + 1})")
    finite_or_missing = np.isfinite(values) | np.isnan(values)
    if not finite_or_missing.all():
        row = int(np.flatnonzero(~finite_or_missing)[0])
        raise InputError(f"{what} column {column!r} has a non-finite value {float(values[row])!r} (row {row + 1})")
    present = ~np.isnan(values)
    if lower is not None:
        bad = present & ((values <= lower) if lower_open else (values < lower))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            bound = f"> {lower}" if lower_open else f">= {lower}"
            raise InputError(f"{what} column {column!r} has value {float(values[row])!r} (row {row + 1}); it must be {bound}")
    if upper is not None:
        bad = present & ((values >= upper) if upper_open else (values > upper))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            bound = f"< {upper}" if upper_open else f"<= {upper}"
            raise InputError(f"{what} column {column!r} has value {float(values[row])!r} (row {row + 1}); it must be {bound}")
    return values


def key_column(frame: pd.DataFrame, column: str, what: str) -> pd.Series:
    """An id column as strings; missing ids are an error (ids are matched as text)."""
    raw = frame[column]
    if raw.isna().any():
        row = int(np.flatnonzero(raw.isna().to_numpy())[0])
        raise InputError(f"{what} column {column!r} has a missing id (row {row + 1})")
    return raw.astype(str)
