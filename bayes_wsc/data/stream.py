"""Click logs bigger than memory: stream Parquet files through Dask into the count table.

The model only needs, per group and behavior bin, the number of items and
their summed weight. Dask reads the Parquet files a partition at a time and
reduces them by a tree of group-bys, so memory holds a few partitions and the
(small) aggregated table, never the clicks. The aggregated table then goes
through the same validation and tabulation as an in-memory one
(`GroupedCounts.from_frames` with a count column).

A distributed scheduler is used when its address is given (needs the
`distributed` package: `pip install 'bayes-wsc[distributed]'`); otherwise
Dask's local threaded scheduler runs it.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.errors import InputError
from bayes_wsc.outputs import folder_parts

ITEMS, WEIGHT = "__items", "__weight"


def parquet_paths(source: str | Path) -> list[str]:
    """The Parquet files of a file, a directory (its parts: every *.parquet below it but names starting
    with "_" or ".", `outputs.folder_parts`) or a glob pattern."""
    source = str(source)
    path = Path(source)
    if path.is_dir():
        files = folder_parts(path)[0]
    elif any(ch in source for ch in "*?["):
        files = sorted(glob.glob(source, recursive=True))
    elif path.exists():
        files = [source]
    else:
        raise InputError(f"clicks file {source!r} does not exist")
    if not files:
        raise InputError(f"clicks source {source!r} holds no Parquet files")
    return files


def is_parquet_source(source: str | Path) -> bool:
    """A directory, a glob pattern or a Parquet file: read by streaming, not into memory."""
    source = str(source)
    return Path(source).is_dir() or any(ch in source for ch in "*?[") or source.lower().endswith((".parquet", ".pq"))


def aggregate_clicks(
    source: str | Path,
    *,
    group_col: str = "group",
    behavior: Sequence[str] | None = None,
    weight_col: str | None = None,
    scheduler: str | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """One row per (group, behavior levels) with the item count and the summed weight.

    Returns the aggregated frame (columns: group, behavior..., `ITEMS`, and
    `WEIGHT` when weighted) and the behavior columns used. Missing keys,
    negative or missing weights are errors naming the column, as in memory.
    """
    import dask
    import dask.dataframe as dd

    files = parquet_paths(source)
    schemas = part_schemas(files)
    try:
        frame = dd.read_parquet(files)
    except Exception as exc:  # noqa: BLE001 - any reader failure is a bad file
        raise InputError(f"clicks {str(source)!r} could not be read as Parquet: {_first_line(exc)}") from None
    columns = list(frame.columns)
    for column in [group_col] + ([weight_col] if weight_col else []):
        if column not in columns:
            raise InputError(f"clicks has no column {column!r} (columns: {', '.join(map(str, columns[:12]))})")
    behavior_given = behavior
    if behavior is None:
        behavior = [c for c in columns if c not in (group_col, weight_col)]
        if not behavior:
            raise InputError("clicks has no behavior columns besides the group and weight columns")
    behavior = list(behavior)
    for column in behavior:
        if column not in columns:
            raise InputError(f"clicks has no column {column!r} (columns: {', '.join(map(str, columns[:12]))})")
    keys = [group_col, *behavior]
    check_parts(schemas, columns, keys, weight_col, inferred=behavior_given is None)
    frame = frame[keys + ([weight_col] if weight_col else [])].assign(**{ITEMS: 1})
    sums = {ITEMS: "sum"}
    checks = {}
    if weight_col:
        frame = frame.rename(columns={weight_col: WEIGHT})
        sums[WEIGHT] = "sum"
        checks = {"weight_min": frame[WEIGHT].min(), "weight_missing": frame[WEIGHT].isna().sum()}
    aggregated = frame.groupby(keys, dropna=False, observed=True).agg(sums, split_out=1)
    with _scheduler(scheduler) as compute_kwargs:
        try:
            aggregated, checks = dask.compute(aggregated, checks, **compute_kwargs)
        except (OSError, ValueError, KeyError, TypeError) as exc:  # ArrowInvalid is a ValueError
            raise InputError(unreadable_part(files, [c for c in [*keys, weight_col] if c in schemas[0][1]], exc)) \
                from None
    aggregated = aggregated.reset_index()
    for column in keys:
        if aggregated[column].isna().any():
            raise InputError(f"clicks column {column!r} has missing values")
    if weight_col:
        if checks["weight_missing"]:
            raise InputError(f"clicks column {weight_col!r} has {int(checks['weight_missing'])} missing values")
        if checks["weight_min"] < 0:
            raise InputError(f"clicks column {weight_col!r} has value {float(checks['weight_min'])!r}; it must be >= 0")
    return aggregated, behavior


def part_schemas(files: list[str]) -> list[tuple[str, dict]]:
    """Each part's columns and their Arrow types, from its footer alone; a part that is not Parquet
    is one line naming it."""
    import pyarrow.parquet as pq

    schemas = []
    what = "part" if len(files) > 1 else "file"
    for path in files:
        try:
            schema = pq.read_schema(path)
        except Exception as exc:  # noqa: BLE001 - any reader failure is a bad part
            raise InputError(f"clicks {what} {path!r} could not be read as Parquet: {_first_line(exc)}") from None
        index = [n for n in (schema.pandas_metadata or {}).get("index_columns", []) if isinstance(n, str)]
        schemas.append((path, {name: schema.field(name).type for name in schema.names if name not in index}))
    return schemas


def check_parts(schemas: list[tuple[str, dict]], columns: list[str], keys: list[str], weight_col: str | None,
                *, inferred: bool) -> None:
    """Every part holds the columns used, each of one kind in every part (text, integer, ...), and a
    numeric weight; with the behavior columns inferred from the first part, no part has others.
    Columns no part holds come from the folder names (hive partitions) and are not checked here."""
    import pyarrow as pa

    stored = set().union(*(set(types) for _, types in schemas))
    used = [c for c in [*keys, *([weight_col] if weight_col else [])] if c in stored]
    first_path, first = schemas[0]
    for path, types in schemas:
        missing = [c for c in used if c not in types]
        if missing:
            raise InputError(f"clicks part {path!r} has no column {missing[0]!r} (its columns: "
                             f"{', '.join(map(str, list(types)[:12]))}), which {first_path!r} has")
        if inferred:
            extra = [c for c in types if c not in columns]
            if extra:
                raise InputError(f"clicks part {path!r} has a column {extra[0]!r} that {first_path!r} lacks: "
                                 "name the behavior columns (--behavior, behavior=) to use only those")
        for column in used:
            if column not in first:
                continue
            kind, expected = _kind(types[column]), _kind(first[column])
            if "null" not in (kind, expected) and kind != expected:
                raise InputError(f"clicks column {column!r} is {kind} in part {path!r} but {expected} in "
                                 f"{first_path!r}")
        if weight_col and weight_col in types and not (pa.types.is_integer(types[weight_col])
                                                       or pa.types.is_floating(types[weight_col])
                                                       or pa.types.is_null(types[weight_col])):
            raise InputError(f"clicks column {weight_col!r} holds {types[weight_col]} in part {path!r}, "
                             "not numbers")


def _kind(arrow_type) -> str:
    """An Arrow type's kind as the count table sees it: text whatever its encoding, numbers whatever
    their width."""
    import pyarrow as pa

    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    for kind, test in (("text", lambda t: pa.types.is_string(t) or pa.types.is_large_string(t)),
                       ("integer", pa.types.is_integer), ("floating point", pa.types.is_floating),
                       ("boolean", pa.types.is_boolean), ("null", pa.types.is_null)):
        if test(arrow_type):
            return kind
    return str(arrow_type)


def unreadable_part(files: list[str], columns: list[str], exc: BaseException) -> str:
    """The line for a failure while streaming: the first part whose columns cannot be read (found by
    reading each part again, only after a failure), else the whole source."""
    import pyarrow.parquet as pq

    for path in files:
        try:
            pq.read_table(path, columns=columns)
        except Exception as part_exc:  # noqa: BLE001 - any reader failure is a bad part
            return f"clicks part {path!r} could not be read: {_first_line(part_exc)}"
    return f"clicks could not be read from {len(files)} Parquet part{'s' * (len(files) > 1)}: {_first_line(exc)}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


class _scheduler:
    """Context giving `dask.compute` keyword arguments: a distributed client, or local threads."""

    def __init__(self, address: str | None):
        self.address = address
        self.client = None

    def __enter__(self) -> dict:
        if self.address is None:
            return {"scheduler": "threads"}
        try:
            from distributed import Client
        except ImportError:
            raise InputError("a scheduler address needs the 'distributed' package: "
                             "pip install 'bayes-wsc[distributed]'") from None
        try:
            self.client = Client(self.address, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise InputError(f"cannot reach the Dask scheduler at {self.address!r}: {exc}") from None
        return {}

    def __exit__(self, *exc):
        if self.client is not None:
            self.client.close()
        return False


def grouped_counts_from_parquet(
    source: str | Path,
    groups: pd.DataFrame,
    *,
    group_col: str = "group",
    behavior: Sequence[str] | None = None,
    weight_col: str | None = None,
    he_col: str | None = None,
    he_prob_col: str | None = None,
    max_group_weight: float | None = None,
    scheduler: str | None = None,
) -> GroupedCounts:
    """`GroupedCounts` from Parquet click files of any size (see the module docstring)."""
    aggregated, behavior = aggregate_clicks(source, group_col=group_col, behavior=behavior,
                                            weight_col=weight_col, scheduler=scheduler)
    data = GroupedCounts.from_frames(
        aggregated, groups, group_col=group_col, behavior=behavior, weight_col=WEIGHT if weight_col else None,
        he_col=he_col, he_prob_col=he_prob_col, max_group_weight=max_group_weight, count_col=ITEMS,
        what="clicks (aggregated)",
    )
    data.settings["weight_col"] = weight_col
    data.settings["clicks_source"] = str(source)
    return data


def parts_read(source: str | Path) -> str:
    """Which Parquet files a click source was read from, in words (and, for a folder, which were skipped)."""
    files = parquet_paths(source)
    base = Path(source) if Path(source).is_dir() else None
    names = [os.path.relpath(f, base) if base else f for f in files]
    shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    words = f"read {len(files)} Parquet file{'s' * (len(files) > 1)} of {str(source)!r}: {shown}"
    if base is not None:
        skipped = folder_parts(base)[1]
        if skipped:
            listed = ", ".join(os.path.relpath(f, base) for f in skipped[:4]) + (" ..." if len(skipped) > 4 else "")
            words += f"; skipped {len(skipped)} whose name starts with '_' or '.' (not parts: {listed})"
    return words
