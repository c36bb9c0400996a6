"""What the checks of `read_table` cost on the first model's 1M-click CSV (issue 17).

Reference: what reading did before the checks, `pd.read_csv` of both files (ids parsed as
numbers), then `GroupedCounts.from_frames`. Candidate: `read_table` as the command line calls it
(the header read and checked first, byte-order mark and delimiter sniffed, ids read as text),
then the same `from_frames`. Both run in alternating rounds in one process; the figure is the
ratio of the medians.

    python benchmarks/bench_read.py --groups 10000 --items 100 --bins 30 --repeats 7
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.data.tables import read_table
from bayes_wsc.simulate import simulate_wsc


def write_files(folder: Path, n_groups: int, items: int, n_bins: int) -> tuple[Path, Path, int]:
    """One row per click (group, bin) and one per group (group, he), as `bench_map.py --cli` writes them."""
    data, _ = simulate_wsc(n_groups=n_groups, items_per_group=items, n_bins=n_bins, seed=3)
    counts = data.counts.astype(int)
    groups = np.repeat(np.repeat(np.arange(n_groups), n_bins), counts.ravel())
    bins = np.repeat(np.tile(np.arange(n_bins), n_groups), counts.ravel())
    clicks, table = folder / "clicks.csv", folder / "groups.csv"
    pd.DataFrame({"group": groups, "bin": bins}).to_csv(clicks, index=False)
    pd.DataFrame({"group": np.arange(n_groups), "he": data.he}).to_csv(table, index=False)
    return clicks, table, len(groups)


def reference(clicks: Path, groups: Path) -> GroupedCounts:
    return GroupedCounts.from_frames(pd.read_csv(clicks), pd.read_csv(groups))


def candidate(clicks: Path, groups: Path) -> GroupedCounts:
    keys = ["group"]
    return GroupedCounts.from_frames(read_table(clicks, "clicks", text_columns=keys),
                                     read_table(groups, "groups", text_columns=keys))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=10000)
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--bins", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        clicks, groups, n = write_files(Path(folder), args.groups, args.items, args.bins)
        a, b = reference(clicks, groups), candidate(clicks, groups)
        assert np.array_equal(a.counts, b.counts) and np.array_equal(a.he, b.he)
        times = {"reference": [], "candidate": []}
        for _ in range(args.repeats):
            for name, run in (("reference", reference), ("candidate", candidate)):
                t0 = time.perf_counter()
                run(clicks, groups)
                times[name].append(time.perf_counter() - t0)
    ref, new = statistics.median(times["reference"]), statistics.median(times["candidate"])
    print(f"{n} clicks, {args.groups} groups, {args.bins} bins; medians of {args.repeats} alternating rounds")
    print(f"reference (pd.read_csv, ids as numbers) + from_frames: {ref:.3f} s")
    print(f"read_table (checked header, ids as text) + from_frames: {new:.3f} s")
    print(f"ratio: {new / ref:.2f}x")


if __name__ == "__main__":
    main()
