"""Reading input tables and checking their columns, with one-line errors.

Every data container validates through these helpers so that a bad file or
column produces the same kind of message whatever the model.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from bayes_wsc.errors import InputError

TABLE_SUFFIXES = (".csv", ".tsv", ".parquet", ".pq")
#: delimiters that a file meant for another program often uses, and how --sep names them
DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
#: byte-order marks, longest first: a file that starts with one is read in that encoding
BOMS = ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"), (b"\xef\xbb\xbf", "utf-8-sig"),
        (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))
#: frame.attrs key: column name as read -> the name in the file, for names with surrounding spaces
ORIGINAL_NAMES = "original_names"


def read_table(path: str | Path, what: str = "table", *, sep: str | None = None,
               text_columns: Sequence[str] = ()) -> pd.DataFrame:
    """Read a CSV or Parquet file; any failure becomes a one-line `InputError` naming the file.

    sep : the column separator of a CSV (default: comma; tab for .tsv). A file whose header
        holds no `sep` but another usual delimiter is refused with the delimiter it seems to use.
    text_columns : columns read as text, whatever they hold (ids: '001' stays '001'; in a
        Parquet file, integer ids become their text).

    Column names are checked before pandas reads the rows: a repeated name, or a name that
    differs from another only by surrounding spaces, is an error (pandas would silently rename
    it 'name.1'); a name with surrounding spaces is matched without them (the name in the file
    is kept in `frame.attrs["original_names"]`, so that outputs can give it back). A CSV is
    UTF-8 text, with or without a byte-order mark; UTF-16 and UTF-32 with one are read too.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"{what} file {str(path)!r} does not exist")
    if path.is_dir():
        raise InputError(f"{what} file {str(path)!r} is a directory, not a CSV or Parquet file")
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise InputError(f"{what} file {str(path)!r} is not CSV or Parquet (expected a .csv, .tsv or .parquet suffix)")
    try:
        if suffix in (".parquet", ".pq"):
            frame = pd.read_parquet(path)
            _check_names([str(c) for c in frame.columns], path, what)
        else:
            frame = _read_csv(path, what, sep or ("\t" if suffix == ".tsv" else ","), text_columns)
    except InputError:
        raise
    except pd.errors.EmptyDataError:
        raise InputError(f"{what} file {str(path)!r} is empty") from None
    except UnicodeError:
        raise InputError(_not_utf8(path, what)) from None
    except (pd.errors.ParserError, OSError, ValueError, TypeError, ImportError) as exc:
        # pyarrow and pandas name a bad file in many ways: any of them is "could not be read"
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{what} file {str(path)!r} could not be read: {first_line}") from None
    except Exception as exc:  # noqa: BLE001 - pyarrow's ArrowInvalid and kin derive from Exception only
        if type(exc).__module__.startswith("pyarrow"):
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputError(f"{what} file {str(path)!r} could not be read as Parquet: {first_line}") from None
        raise
    frame = _strip_names(frame)
    if text_columns:
        frame = _as_text(frame, [c for c in text_columns if c in frame.columns])
    if len(frame) == 0:
        raise InputError(f"{what} file {str(path)!r} has no rows")
    return frame


def restore_names(frame: pd.DataFrame, source: pd.DataFrame) -> pd.DataFrame:
    """`frame` with the column names of `source` as they were in its file (see `read_table`)."""
    original = source.attrs.get(ORIGINAL_NAMES) or {}
    return frame.rename(columns=original) if original else frame


def _read_csv(path: Path, what: str, sep: str, text_columns: Sequence[str]) -> pd.DataFrame:
    encoding = _encoding(path)
    header = _header_line(path, encoding)
    if header is None:
        raise InputError(f"{what} file {str(path)!r} is empty")
    if "\x00" in header:
        raise InputError(f"{what} file {str(path)!r} holds NUL bytes: it seems to be UTF-16 text without a "
                         "byte-order mark, or not text at all; save it as UTF-8 CSV")
    if sep not in header:
        seen = [d for d in DELIMITERS if d != sep and d in header]
        if seen:
            shown = header if len(header) <= 60 else header[:57] + "..."
            raise InputError(
                f"{what} file {str(path)!r} seems to use {DELIMITERS[seen[0]]}s ({seen[0]!r}) between columns, "
                f"not {DELIMITERS.get(sep, repr(sep))}s (header: {shown!r}); give --sep {DELIMITERS[seen[0]]}")
    names = next(csv.reader([header], delimiter=sep))
    _check_names(names, path, what)
    wanted = {str(c).strip() for c in text_columns}
    dtype = {name: str for name in names if name.strip() in wanted}
    return pd.read_csv(path, sep=sep, encoding=encoding, dtype=dtype or None, keep_default_na=True)


def _encoding(path: Path) -> str:
    with open(path, "rb") as handle:
        start = handle.read(4)
    return next((name for bom, name in BOMS if start.startswith(bom)), "utf-8")


def _header_line(path: Path, encoding: str) -> str | None:
    """The first line that is not blank (pandas skips blank lines too), without its line end."""
    with open(path, encoding=encoding, newline="") as handle:
        for line in handle:
            line = line.rstrip("\r\n")
            if line.strip():
                return line
    return None


def _check_names(names: list[str], path: Path, what: str) -> None:
    """Every column has a name, and no two names are the same once surrounding spaces are removed."""
    seen: dict[str, int] = {}
    for position, name in enumerate(names, 1):
        if not name.strip():
            raise InputError(f"{what} file {str(path)!r} has a column without a name (column {position} of the "
                             "header); name it or remove it")
        key = name.strip()
        if key in seen:
            first = names[seen[key] - 1]
            how = "twice" if first == name else f"as {first!r} and {name!r} (the same but for spaces)"
            raise InputError(f"{what} file {str(path)!r} names a column {key!r} {how}, columns {seen[key]} and "
                             f"{position}; give every column its own name")
        seen[key] = position


def _strip_names(frame: pd.DataFrame) -> pd.DataFrame:
    """Names with surrounding spaces matched without them; the file's names kept in attrs."""
    renames = {c: c.strip() for c in frame.columns if isinstance(c, str) and c != c.strip()}
    if not renames:
        return frame
    frame = frame.rename(columns=renames)
    frame.attrs[ORIGINAL_NAMES] = {new: old for old, new in renames.items()}
    return frame


def _as_text(frame: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Id columns as text (Parquet integers become their text; missing cells stay missing)."""
    for column in columns:
        values = frame[column]
        if not (pd.api.types.is_string_dtype(values.dtype) or values.dtype == object):
            frame[column] = key_text(values)
    return frame


def _not_utf8(path: Path, what: str) -> str:
    """Which line of a file is not UTF-8, for the message."""
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, 1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                byte = line[exc.start:exc.start + 1].hex()
                return (f"{what} file {str(path)!r} is not UTF-8 text (line {number} has the byte 0x{byte}); "
                        "save it as UTF-8")
    return f"{what} file {str(path)!r} is not UTF-8 text; save it as UTF-8"


def require_columns(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    """Fail naming the first column of `columns` that `frame` lacks (or repeats)."""
    check_frame(frame, what)
    for column in columns:
        if column not in frame.columns:
            raise InputError(f"{what} has no column {column!r} ({describe_columns(frame.columns, column)})")


def describe_columns(names, wanted=None) -> str:
    """'columns: 'a', 'b c', ...' with every name quoted, so that spaces and separators show; and
    the name that differs from `wanted` only by surrounding spaces, if one does."""
    names = list(names)
    shown = ", ".join(repr(n) for n in names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
    text = f"columns: {shown}"
    if isinstance(wanted, str):
        near = [n for n in names if isinstance(n, str) and n.strip() == wanted.strip()]
        if near:
            text += f"; {near[0]!r} differs from it only by surrounding spaces"
    return text


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
    """An id column as text; missing ids are an error (ids are matched as text, see `key_text`)."""
    raw = frame[column]
    if raw.isna().any():
        row = int(np.flatnonzero(raw.isna().to_numpy())[0])
        raise InputError(f"{what} column {column!r} has a missing id (row {row + 1}: an empty cell, or a text "
                         "such as NA or null that tables read as missing)")
    return key_text(raw)


def key_text(values: pd.Series) -> pd.Series:
    """Ids as text. Read from a CSV as text they are kept as written ('001'); numbers become their
    text, and a float column of whole numbers (integer ids with a gap, as pandas and Parquet give
    them) the text of the integers, so that 7.0 matches 7. Missing cells stay missing."""
    if pd.api.types.is_float_dtype(values.dtype):
        numbers = values.to_numpy(dtype=float)
        present = ~np.isnan(numbers)
        if (np.abs(numbers[present]) < 2.0 ** 53).all() and (numbers[present] == np.round(numbers[present])).all():
            text = pd.Series(np.where(present, numbers, 0).astype(np.int64).astype(str), index=values.index,
                             dtype=object)
            return text.where(present, None)
    if pd.api.types.is_string_dtype(values.dtype) and values.dtype != object:
        return values
    return values.astype(str).where(values.notna(), None)


#: beyond this many standard deviations from the training mean a new item's feature is refused: far
#: beyond any real data, and well inside what the models' arithmetic holds (squares of 1e100 / sd)
MAX_ABS_STANDARDIZED = 1e100


def feature_moments(raw: np.ndarray, names: Sequence[str], what: str) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation of each column of `raw` (n, D), for standardizing. A column whose
    moments overflow (values near 1e154 and beyond) is an error naming its largest value and row."""
    with np.errstate(over="ignore", invalid="ignore"):
        center = raw.mean(axis=0)
        scale = raw.std(axis=0)
    bad = ~(np.isfinite(center) & np.isfinite(scale))
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        row = int(np.argmax(np.abs(raw[:, j])))
        raise InputError(f"{what} column {names[j]!r} has value {float(raw[row, j])!r} (row {row + 1}), too large "
                         "to standardize (its square overflows); rescale the column")
    return center, scale


def check_standardized(z: np.ndarray, raw: np.ndarray, names: Sequence[str], what: str, *,
                       scaled: bool = True) -> np.ndarray:
    """Standardized features (`scaled`) or features used as given, refusing a value beyond
    `MAX_ABS_STANDARDIZED` (in standard deviations from the training mean when scaled), or not
    finite: the column, row and value are named."""
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(z) <= MAX_ABS_STANDARDIZED)
    if bad.any():
        row, j = (int(v) for v in np.argwhere(bad)[0])
        where = f"{what} column {names[j]!r} has value {float(raw[row, j])!r} (row {row + 1})"
        if scaled:
            raise InputError(f"{where}, {abs(float(z[row, j])):.3g} standard deviations from the fit's mean of that "
                             f"column; the fit cannot score values beyond {MAX_ABS_STANDARDIZED:g}")
        raise InputError(f"{where}, beyond the {MAX_ABS_STANDARDIZED:g} that the model's arithmetic holds for "
                         "features used as given; rescale the column or standardize it")
    return z
