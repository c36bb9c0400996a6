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
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.errors import InputError

ITEMS, WEIGHT = "__items", "__weight"


def parquet_paths(source: str | Path) -> list[str]:
    """The Parquet files of a file, a directory (all *.parquet below it) or a glob pattern."""
    source = str(source)
    path = Path(source)
    if path.is_dir():
        files = sorted(str(p) for p in path.rglob("*.parquet"))
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
    try:
        frame = dd.read_parquet(files)
    except Exception as exc:  # noqa: BLE001 - any reader failure is a bad file
        raise InputError(f"clicks {str(source)!r} could not be read as Parquet: {str(exc).splitlines()[0]}") from None
    columns = list(frame.columns)
    for column in [group_col] + ([weight_col] if weight_col else []):
        if column not in columns:
            raise InputError(f"clicks has no column {column!r} (columns: {', '.join(map(str, columns[:12]))})")
    if behavior is None:
        behavior = [c for c in columns if c not in (group_col, weight_col)]
        if not behavior:
            raise InputError("clicks has no behavior columns besides the group and weight columns")
    behavior = list(behavior)
    for column in behavior:
        if column not in columns:
            raise InputError(f"clicks has no column {column!r} (columns: {', '.join(map(str, columns[:12]))})")
    keys = [group_col, *behavior]
    frame = frame[keys + ([weight_col] if weight_col else [])].assign(**{ITEMS: 1})
    sums = {ITEMS: "sum"}
    checks = {}
    if weight_col:
        frame = frame.rename(columns={weight_col: WEIGHT})
        sums[WEIGHT] = "sum"
        checks = {"weight_min": frame[WEIGHT].min(), "weight_missing": frame[WEIGHT].isna().sum()}
    aggregated = frame.groupby(keys, dropna=False, observed=True).agg(sums, split_out=1)
    with _scheduler(scheduler) as compute_kwargs:
        aggregated, checks = dask.compute(aggregated, checks, **compute_kwargs)
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
