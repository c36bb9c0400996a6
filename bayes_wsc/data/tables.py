"""Reading input tables and checking their columns, with one-line errors.

Every data container validates through these helpers so that a bad file or
column produces the same kind of message whatever the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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
#: words that other programs write for a missing value; here they are text, and only an empty cell is missing
MISSING_MARKERS = {"na", "n/a", "n.a.", "nan", "null", "none", "nil", "-", "--", "?", "missing", "#n/a"}


def read_table(path: str | Path, what: str = "table", *, sep: str | None = None,
               text_columns: Sequence[str] = ()) -> pd.DataFrame:
    """Read a CSV or Parquet file; any failure becomes a one-line `InputError` naming the file.

    Every cell of a CSV is read as the text written in it: nothing is guessed. Each column is
    then parsed by the role the model gives it (`numeric_column` for numbers, `key_column` and
    `text_column` for ids, classes and category levels, which stay text exactly as written: '01'
    is not '1', 'None' and 'NA' are names). Only an empty cell is missing. A row with fewer or
    more cells than the header is an error naming the row.

    sep : the column separator of a CSV (default: comma; tab for .tsv). A file whose header
        holds no `sep` but another usual delimiter is refused with the delimiter it seems to use.
    text_columns : columns read as text, whatever they hold, from a Parquet file (integer ids
        become their text); a CSV's columns are all text already.

    Column names are checked before the rows are used: a repeated name, or a name that differs
    from another only by surrounding spaces, is an error; a name with surrounding spaces is
    matched without them (the name in the file is kept in `frame.attrs["original_names"]`, so
    that outputs can give it back). A CSV is UTF-8 text, with or without a byte-order mark;
    UTF-16 and UTF-32 with one are read too. A NUL character in any cell or name is an error.
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
            import pyarrow.parquet as pq

            table = pq.read_table(path)
            _check_names([str(c) for c in table.column_names], path, what)
        else:
            table = _read_csv(path, what, sep or ("\t" if suffix == ".tsv" else ","))
        _check_text_cells(table, path, what)
        frame = table.to_pandas()
    except InputError:
        raise
    except UnicodeError:
        raise InputError(_not_utf8(path, what)) from None
    except (OSError, ValueError, TypeError, ImportError) as exc:
        # pyarrow names a bad file in many ways: any of them is "could not be read"
        raise InputError(f"{what} file {str(path)!r} could not be read: {_first_line(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - pyarrow's ArrowInvalid and kin derive from Exception only
        if type(exc).__module__.startswith("pyarrow"):
            if suffix not in (".parquet", ".pq") and "UTF8" in str(exc):
                raise InputError(_not_utf8(path, what)) from None
            kind = " as Parquet" if suffix in (".parquet", ".pq") else ""
            raise InputError(f"{what} file {str(path)!r} could not be read{kind}: {_first_line(exc)}") from None
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


#: a column name longer than this is refused: no real header has one, and the names go into the
#: fit file's attributes, which HDF5 caps at 64 KiB
MAX_NAME_LENGTH = 1000
#: pyarrow reads a CSV in blocks; a row must fit in one
CSV_BLOCK_BYTES = 16 << 20


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _read_csv(path: Path, what: str, sep: str):
    """Every cell as text (pyarrow: one pass, no type guessing), the header's names checked, and a row
    with another number of cells than the header refused by its row number."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

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
    ragged = []

    def refuse(row):
        ragged.append(row)
        return "error"

    # the header is read as row 0 of the data, so that its names come from the same parser as the cells
    n_columns = _count_fields(header, sep)
    read = pacsv.ReadOptions(use_threads=False, autogenerate_column_names=True, block_size=CSV_BLOCK_BYTES,
                             encoding="utf8" if encoding.startswith("utf-8") else encoding)
    parse = pacsv.ParseOptions(delimiter=sep, newlines_in_values=True, invalid_row_handler=refuse)
    convert = pacsv.ConvertOptions(column_types={f"f{j}": pa.string() for j in range(n_columns)},
                                   strings_can_be_null=True, quoted_strings_can_be_null=True, null_values=[""])
    try:
        table = pacsv.read_csv(path, read_options=read, parse_options=parse, convert_options=convert)
        if table.num_columns != n_columns:  # a header our count misread: read again with pyarrow's count
            convert.column_types = {f"f{j}": pa.string() for j in range(table.num_columns)}
            table = pacsv.read_csv(path, read_options=read, parse_options=parse, convert_options=convert)
    except Exception:
        if ragged:
            row = ragged[0]
            shown = row.text if len(row.text) <= 60 else row.text[:57] + "..."
            where = f"row {row.number - 1}" if row.number is not None else "a row"
            cells = f"{row.actual_columns} cell{'s' * (row.actual_columns != 1)}"
            raise InputError(f"{what} file {str(path)!r} {where} has {cells}, but the header names "
                             f"{row.expected_columns} columns ({shown!r}); give every row a cell for every column "
                             "(an empty cell where a value is missing)") from None
        raise
    names = [str(table.column(j)[0].as_py() or "") for j in range(table.num_columns)]
    _check_names(names, path, what)
    return table.slice(1).rename_columns(names)


def _count_fields(header: str, sep: str) -> int:
    """The number of cells in the header line (quotes respected; no length limit on a cell)."""
    count, quoted = 1, False
    for char in header:
        if char == '"':
            quoted = not quoted
        elif char == sep and not quoted:
            count += 1
    return count


def _check_text_cells(table, path: Path, what: str) -> None:
    """No NUL character in any text cell: it would pass every check and then break the fit file."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for name, column in zip(table.column_names, table.columns):
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            continue
        found = pc.match_substring(column, "\x00")
        if pc.any(found).as_py():
            row = int(pc.index(found, True).as_py())
            raise InputError(f"{what} file {str(path)!r} column {name!r} has a NUL character (row {row + 1}); "
                             "remove it")


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
        if "\x00" in name:
            raise InputError(f"{what} file {str(path)!r} has a column name with a NUL character (column {position} "
                             "of the header); remove it")
        if len(name) > MAX_NAME_LENGTH:
            raise InputError(f"{what} file {str(path)!r} has a column name of {len(name)} characters (column "
                             f"{position} of the header, starting {name[:20]!r}); names are at most "
                             f"{MAX_NAME_LENGTH} characters")
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
        if not isinstance(column, str):  # group_col=["g"]: a name is one text, not a list
            raise InputError(f"a column of {what} is named by text, got {column!r}")
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
    for name in frame.columns:
        if isinstance(name, str) and "\x00" in name:
            raise InputError(f"{what} has a column name with a NUL character ({name!r}); remove it")
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
    hint: str = "",
    keys: pd.Series | None = None,
    key_name: str = "group",
) -> np.ndarray:
    """Return `frame[column]` as floats, failing on text, True/False, NaN, inf or values out of range.

    A text cell is parsed as a number written out ('1.5', '-2', '1e3'); anything else ('n.a.',
    '1,5', 'True', 'NA') is an error, and only an empty cell is missing. The message names the
    column, the first offending row and its value (and `hint`, how to leave the column out), and with
    `keys` the row's id as well ("row 2, group 'g2'").
    """

    def at(row: int) -> str:
        return f"row {row + 1}" if keys is None else f"row {row + 1}, {key_name} {str(keys.iloc[row])!r}"

    raw = frame[column]
    if pd.api.types.is_bool_dtype(raw.dtype):
        raise InputError(f"{what} column {column!r} holds True/False, not numbers; give 1 and 0 if that is meant")
    kind = _not_numbers(raw.dtype)
    if kind:
        raise InputError(f"{what} column {column!r} holds {kind} ({raw.dtype}), not numbers{hint}")
    if raw.dtype == object:
        flags = raw.map(lambda v: isinstance(v, (bool, np.bool_, bytes))).to_numpy(dtype=bool)
        if flags.any():
            row = int(np.flatnonzero(flags)[0])
            raise InputError(f"{what} column {column!r} has a non-numeric value {raw.iloc[row]!r} ({at(row)})")
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    bad_text = np.isnan(values) & raw.notna().to_numpy()
    if bad_text.any():
        row = int(np.flatnonzero(bad_text)[0])
        cell = raw.iloc[row]
        marker = (" (only an empty cell is missing)" if isinstance(cell, str) and cell.strip().lower()
                  in MISSING_MARKERS else "")
        raise InputError(f"{what} column {column!r} has a non-numeric value {cell!r} ({at(row)}){marker}{hint}")
    if not allow_missing and np.isnan(values).any():
        row = int(np.flatnonzero(np.isnan(values))[0])
        raise InputError(f"{what} column {column!r} has a missing value ({at(row)})")
    finite_or_missing = np.isfinite(values) | np.isnan(values)
    if not finite_or_missing.all():
        row = int(np.flatnonzero(~finite_or_missing)[0])
        raise InputError(f"{what} column {column!r} has a non-finite value {float(values[row])!r} ({at(row)})")
    present = ~np.isnan(values)
    if lower is not None:
        bad = present & ((values <= lower) if lower_open else (values < lower))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            bound = f"> {lower}" if lower_open else f">= {lower}"
            raise InputError(f"{what} column {column!r} has value {float(values[row])!r} ({at(row)}); it must be {bound}")
    if upper is not None:
        bad = present & ((values >= upper) if upper_open else (values > upper))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            bound = f"< {upper}" if upper_open else f"<= {upper}"
            raise InputError(f"{what} column {column!r} has value {float(values[row])!r} ({at(row)}); it must be {bound}")
    return values


def _not_numbers(dtype) -> str:
    """What a column of a type that is not a number holds, in words ('' for numbers, text and objects,
    which are parsed cell by cell): a date would otherwise become nanoseconds since 1970."""
    if isinstance(dtype, pd.CategoricalDtype):
        return "categories (a categorical type)"
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "dates and times"
    if pd.api.types.is_timedelta64_dtype(dtype):
        return "durations"
    if isinstance(dtype, (pd.PeriodDtype, pd.IntervalDtype)):
        return "periods or intervals"
    return ""


def feature_columns(frame: pd.DataFrame, features: Sequence[str] | None, reserved: Sequence[str | None],
                    what: str, role: str = "id") -> tuple[list[str], str]:
    """The feature columns, and the hint that a parse error of one of them should carry.

    Named columns are used as named; by default every column but `reserved` (the id, group or
    label columns) is a feature, and each is then parsed by its role, so that a column that cannot
    be used is an error that names it: nothing is dropped because of what it holds. The hint says
    how to leave such a column out. `role` names the reserved columns in messages.
    """
    reserved = [str(c) for c in reserved if c is not None]
    hint = ""
    if features is None:
        features = [str(c) for c in frame.columns if str(c) not in reserved]
        if not features:
            raise InputError(f"{what} has no feature columns besides the {role} column "
                             f"{', '.join(map(repr, reserved))}")
        hint = (f"; by default every column but {', '.join(map(repr, reserved))} is a feature: name the features "
                "(--features, or features= in Python) to leave this one out")
    if isinstance(features, str):
        features = [features]
    features = [str(f) for f in features]
    if not features:
        raise InputError("the list of feature columns is empty")
    require_columns(frame, features, what)
    for column in features:
        if column in reserved:
            raise InputError(f"feature column {column!r} is also the {role} column")
    if len(set(features)) != len(features):
        dup = pd.Index(features)[pd.Index(features).duplicated()][0]
        raise InputError(f"feature column {dup!r} is listed twice")
    return features, hint


def read_features(frame: pd.DataFrame, features: Sequence[str], what: str, hint: str = "") -> np.ndarray:
    """The feature columns as an (n, D) float array, each parsed as numbers (`numeric_column`)."""
    require_columns(frame, list(features), what)
    return np.column_stack([numeric_column(frame, c, f"{what} feature", hint=hint) for c in features])


def standardize(frame: pd.DataFrame, features: Sequence[str], center: np.ndarray, scale: np.ndarray,
                what: str = "items") -> np.ndarray:
    """New items' feature columns on the training scale (`FeatureScaling.transform`), the cells named
    as "<what> feature" columns."""
    return FeatureScaling(tuple(features), center, scale).transform(frame, what, cells=f"{what} feature")


def key_column(frame: pd.DataFrame, column: str, what: str) -> pd.Series:
    """An id column as text; missing ids are an error (ids are matched as text, see `key_text`)."""
    raw = frame[column]
    if raw.isna().any():
        row = int(np.flatnonzero(raw.isna().to_numpy())[0])
        raise InputError(f"{what} column {column!r} has a missing id (row {row + 1}: an empty cell)")
    return text_column(key_text(raw), column, what)


def text_column(values: pd.Series, column: str, what: str) -> pd.Series:
    """Ids, classes or levels as text, refusing a NUL character (files are checked when read; this
    catches DataFrames): it passes every comparison and then breaks the fit file."""
    text = values.astype(str)
    has_nul = text.str.contains("\x00", regex=False).to_numpy(dtype=bool)
    if has_nul.any():
        row = int(np.flatnonzero(has_nul)[0])
        raise InputError(f"{what} column {column!r} has a NUL character (row {row + 1}); remove it")
    return values


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
    moments overflow (values near 1e154 and beyond) is an error naming its largest value and row, as is
    a value that is missing or not finite (arrays given directly; a table's cells are parsed first)."""
    unusable = ~np.isfinite(raw)
    if unusable.any():
        row, j = (int(v) for v in np.argwhere(unusable)[0])
        raise InputError(f"{what} column {names[j]!r} has a missing or non-finite value {float(raw[row, j])!r} "
                         f"(row {row + 1})")
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


#: a column whose standard deviation is at most this share of its mean's magnitude (or of 1) is constant
CONSTANT_COLUMN = 1e-12


@dataclass(frozen=True)
class FeatureScaling:
    """The one standardization of numeric features: which columns, and the centre and scale applied to
    them in training and again to new items.

    Each column becomes (value - mean) / sd, with the training items' mean and standard deviation
    (`feature_moments`: a column whose square overflows is refused by name). A constant column (sd at
    most `CONSTANT_COLUMN` of its mean) gets scale 1: it becomes all zeros, so it adds nothing to any
    model and a new item's value there is still scored; it carries no information, which every model
    that weighs features says before its fit (`diagnostics.constant_features_message`). Features used
    as given (`standardize=False`) keep centre 0 and scale 1. Training values and new items alike are
    refused beyond `MAX_ABS_STANDARDIZED` (`check_standardized`).
    """

    names: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray

    def __post_init__(self):
        object.__setattr__(self, "names", tuple(str(n) for n in self.names))
        object.__setattr__(self, "mean", np.asarray(self.mean, dtype=float))
        object.__setattr__(self, "scale", np.asarray(self.scale, dtype=float))

    @classmethod
    def fit(cls, raw: np.ndarray, names: Sequence[str], what: str,
            standardize: bool = True) -> tuple[FeatureScaling, np.ndarray]:
        """The scaling learned from `raw` (n, D) and the scaled matrix; `what` names the columns in errors."""
        raw = np.asarray(raw, dtype=float)
        names = [str(n) for n in names]
        if standardize:
            mean, scale = feature_moments(raw, names, what)
            scale[constant_columns(mean, scale)] = 1.0
        else:  # used as given: the same bound as a new item's standardized value
            mean, scale = np.zeros(raw.shape[1]), np.ones(raw.shape[1])
            check_standardized(raw, raw, names, what, scaled=False)
        return cls(tuple(names), mean, scale), (raw - mean) / scale

    @classmethod
    def read(cls, frame: pd.DataFrame, columns: Sequence[str], what: str, standardize: bool = True,
             hint: str = "") -> tuple[FeatureScaling, np.ndarray]:
        """`columns` of `frame` parsed as numbers (`numeric_column`; `hint` says how to leave a default
        column out), then `fit`."""
        raw = np.column_stack([numeric_column(frame, c, what, hint=hint) for c in columns])
        return cls.fit(raw, columns, what, standardize)

    @classmethod
    def saved(cls, constant_data) -> FeatureScaling:
        """The scaling a fit keeps in its constant data (coordinate `feature`, variables `feature_mean`
        and `feature_scale`, as the clustering models save it)."""
        return cls(tuple(str(f) for f in constant_data["feature"].values), constant_data["feature_mean"].values,
                   constant_data["feature_scale"].values)

    def transform(self, frame: pd.DataFrame, what: str = "items", *, cells: str | None = None) -> np.ndarray:
        """The feature matrix of new items, scaled as in training: rows and columns required, each
        parsed as numbers and refused beyond what the models' arithmetic holds (`check_standardized`).
        `cells` names the columns in the errors about values (default `what`)."""
        require_rows(frame, what)
        require_columns(frame, list(self.names), what)
        cells = cells or what
        raw = np.column_stack([numeric_column(frame, c, cells) for c in self.names])
        return check_standardized((raw - self.mean) / self.scale, raw, list(self.names), cells)


def float_array(values, name: str) -> np.ndarray:
    """Numbers given in Python (the API's arrays) as floats, or one line naming them: text, True/False and
    ragged rows are refused, never parsed or taken as 1 and 0."""
    try:
        raw = values if isinstance(values, np.ndarray) else np.asarray(values)
        numbers = None if raw.dtype.kind in "bUSO" else np.asarray(raw, dtype=float)
    except (TypeError, ValueError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{name} must be numbers in a regular table: {reason}") from None
    if numbers is not None:
        return numbers
    if raw.dtype.kind == "b":
        raise InputError(f"{name} hold True/False, not numbers; give 1 and 0 if that is meant")
    first = next((v for v in raw.ravel() if isinstance(v, (str, bytes, bool, np.bool_))), None)
    if first is not None:
        raise InputError(f"{name} must be numbers, got {first!r}")
    try:
        return np.asarray(raw, dtype=float)
    except (TypeError, ValueError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{name} must be numbers in a regular table: {reason}") from None


def index_array(values, name: str) -> np.ndarray:
    """Indices given in Python (each item's group, a class code) as int64: a fractional, non-finite or
    non-numeric value is one line naming its position, never truncated (0.5 is not group 0)."""
    if not isinstance(values, np.ndarray):  # a bool among numbers would become 0 or 1 in NumPy's array of them
        items = np.asarray(values, dtype=object).ravel()
        flags = [isinstance(v, (bool, np.bool_)) for v in items]
        if any(flags) and not all(flags):  # all of them: `float_array` says True/False are not numbers
            position = flags.index(True)
            raise InputError(f"{name} must be whole-number indices, got {items[position]!r} at position {position}")
    raw = np.asarray(values) if not isinstance(values, np.ndarray) else values
    if raw.dtype.kind in "iu":
        return raw.astype(np.int64)
    numbers = float_array(raw, name)
    bad = ~np.isfinite(numbers) | (numbers != np.round(numbers))
    if bad.any():
        position = int(np.flatnonzero(bad.ravel())[0])
        raise InputError(f"{name} must be whole-number indices, got {float(numbers.ravel()[position])!r} at position "
                         f"{position}")
    return numbers.astype(np.int64)


def check_scaled_features(x, features: Sequence[str], center, scale,
                          n_items: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A container's standardized features (n, D), with their D names, centres and scales, as float
    arrays; one line for the first thing wrong (the shape, `n_items` rows when given, the names, a
    missing value, a scale that is not positive)."""
    x, center, scale = (np.asarray(v, dtype=float) for v in (x, center, scale))
    if x.ndim != 2 or (n_items is not None and x.shape[0] != n_items):
        rows = "" if n_items is None else f" with {n_items} rows"
        raise InputError(f"features must be a 2-D items x features array{rows}, got shape {x.shape}")
    d = x.shape[1]
    if d == 0:
        raise InputError("there are no feature columns")
    if len(features) != d or center.shape != (d,) or scale.shape != (d,):
        raise InputError(f"{d} feature columns but {len(features)} names, {center.size} centres and "
                         f"{scale.size} scales")
    if len(set(features)) != d:
        raise InputError(f"feature names repeat: {list(features)}")
    if not np.isfinite(x).all():
        raise InputError("features have a missing or non-finite value")
    if not (np.isfinite(scale).all() and (scale > 0).all()):
        raise InputError("feature scales must be positive and finite")
    return x, center, scale


def constant_columns(mean: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """(D,) True where a column's standard deviation is at most `CONSTANT_COLUMN` of its mean (or of 1)."""
    return ~(np.asarray(scale) > CONSTANT_COLUMN * np.maximum(np.abs(np.asarray(mean)), 1.0))


@dataclass
class ItemFeatures:
    """Items with ids and standardized numeric features: what the clustering containers
    (`PairwiseConstraints`, `SeedSets`) share, checked here once.

    item_ids : (n,) item ids as text.
    features : (n, d) feature matrix, standardized unless asked otherwise.
    scaling : the feature names and the centre and scale used (applied again to new items).
    """

    item_ids: np.ndarray
    features: np.ndarray
    scaling: FeatureScaling

    def __post_init__(self):
        self.item_ids = np.asarray(self.item_ids).astype(str)
        self.features = np.asarray(self.features, dtype=float)
        n = self.item_ids.size
        if self.features.ndim != 2 or self.features.shape[0] != n:
            raise InputError(f"features must be an (items x features) matrix for {n} items, "
                             f"got shape {self.features.shape}")
        if self.features.shape[1] != len(self.scaling.names):
            raise InputError(f"features have {self.features.shape[1]} columns but {len(self.scaling.names)} names")
        if not np.isfinite(self.features).all():
            raise InputError("features must be finite numbers")
        require_unique(self.item_ids, "item id")

    @property
    def n_items(self) -> int:
        return self.item_ids.size

    @property
    def n_features(self) -> int:
        return self.features.shape[1]

    @property
    def feature_names(self) -> list[str]:
        return list(self.scaling.names)


def read_items(items: pd.DataFrame, id_col: str, features, standardize: bool):
    """Item ids, the feature scaling and the scaled feature matrix of an items table (`ItemFeatures`)."""
    require_rows(items, "items")
    require_columns(items, [id_col], "items")
    ids = read_ids(items, id_col, "items")
    features, hint = feature_columns(items, features, (id_col,), "items")
    if len(items) < 2:
        raise InputError("items has a single row: clustering needs at least two items")
    scaling, matrix = FeatureScaling.read(items, features, "items", standardize, hint)
    return ids, scaling, matrix


def require_unique(values, what: str) -> None:
    """Ids or labels that may not repeat: one line naming the first that does (`what`, e.g. "item id")."""
    index = pd.Index(values)
    if index.has_duplicates:
        raise InputError(f"{what} {index[index.duplicated()][0]!r} appears more than once")


#: the id column of every container and command: a column named so is the items' ids when present
#: (`--id-col`, `id_col=` name another)
DEFAULT_ID_COL = "id"


def optional_id_column(frame: pd.DataFrame, id_col: str | None) -> str | None:
    """The id column of a table whose ids are optional (`LabeledItems`, `LabelProportions`): `id_col`
    when it names another column than the default, the default `id` when the table has it, else None
    (the rows are numbered). One rule for every container and command."""
    if id_col == DEFAULT_ID_COL and id_col not in frame.columns:
        return None
    return id_col


def require_id_column(frame: pd.DataFrame, id_col: str | None, what: str, other: str, role: str) -> None:
    """An optional id column (`id_col` None: the rows are numbered) is present, and is not the `role`
    column `other` (the label or group column)."""
    if id_col is None:
        return
    require_columns(frame, [id_col], what)
    if id_col == other:
        raise InputError(f"the id column {id_col!r} is also the {role} column")


def read_ids(frame: pd.DataFrame, id_col: str | None, what: str) -> np.ndarray:
    """The rows' ids as text (`key_column`), or their row numbers without an id column; a repeated id is
    refused by its row."""
    if id_col is None:
        return np.arange(len(frame)).astype(str)
    ids = key_column(frame, id_col, what).to_numpy()
    repeated = pd.Index(ids).duplicated()
    if repeated.any():
        row = int(np.flatnonzero(repeated)[0])
        raise InputError(f"{what} column {id_col!r} has a duplicate id {ids[row]!r} (row {row + 1})")
    return ids
