"""Click logs bigger than memory: streaming Parquet files to the count table (issue 5, P5).

Writes N clicks (default 100 million) over 10,000 groups and three behavior
columns (5 x 3 x 2 = 30 bins) as Parquet files of 1 million rows, then, in a
fresh process each, times and measures the peak resident memory of
  * bayes_wsc's Dask aggregation (`data.stream.grouped_counts_from_parquet`),
  * the in-memory reference: pandas reads every file and `GroupedCounts.from_frames`
    counts (run at a tenth of the size, as the full size does not fit the budget),
and reports clicks per second and peak RSS for each.

    python benchmarks/bench_stream.py --clicks 100000000 --folder /tmp/bayes_wsc_clicks
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROWS_PER_FILE = 1_000_000
N_GROUPS = 10_000


def write_clicks(folder: Path, n_clicks: int, seed: int = 0) -> None:
    import numpy as np
    import pandas as pd

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for part, start in enumerate(range(0, n_clicks, ROWS_PER_FILE)):
        n = min(ROWS_PER_FILE, n_clicks - start)
        pd.DataFrame({
            "group": rng.integers(0, N_GROUPS, n).astype("int32"),
            "level": rng.integers(1, 6, n).astype("int8"),
            "shape": rng.integers(0, 3, n).astype("int8"),
            "color": rng.integers(0, 2, n).astype("int8"),
        }).to_parquet(folder / f"part-{part:05d}.parquet", index=False)
    pd.DataFrame({"group": np.arange(N_GROUPS), "he": rng.normal(size=N_GROUPS)}).to_csv(
        folder.parent / f"{folder.name}_groups.csv", index=False)


def measure(kind: str, folder: Path, n_files: int | None) -> dict:
    """Run in a fresh process: aggregate and report time and peak RSS."""
    import resource

    import pandas as pd

    groups = pd.read_csv(folder.parent / f"{folder.name}_groups.csv")
    t0 = time.perf_counter()
    if kind == "dask":
        from bayes_wsc.data.stream import grouped_counts_from_parquet

        data = grouped_counts_from_parquet(folder, groups)
    else:
        from bayes_wsc.data.grouped import GroupedCounts

        files = sorted(folder.glob("*.parquet"))[:n_files]
        clicks = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
        data = GroupedCounts.from_frames(clicks, groups)
    seconds = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    items = int(data.n_items.sum())
    return {"kind": kind, "clicks": items, "seconds": seconds, "clicks_per_second": items / seconds,
            "peak_rss_mb": peak_mb, "bins": data.n_bins, "groups": data.n_groups}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clicks", type=int, default=100_000_000)
    parser.add_argument("--folder", default="/tmp/bayes_wsc_clicks")
    parser.add_argument("--worker", choices=("dask", "pandas"), help=argparse.SUPPRESS)
    parser.add_argument("--files", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    folder = Path(args.folder)
    if args.worker:
        print(json.dumps(measure(args.worker, folder, args.files)))
        return
    expected = -(-args.clicks // ROWS_PER_FILE)
    if len(list(folder.glob("*.parquet"))) != expected:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
                        f"from bench_stream import write_clicks; from pathlib import Path; "
                        f"write_clicks(Path({str(folder)!r}), {args.clicks})"], check=True)
        print(f"wrote {args.clicks} clicks in {expected} files in {time.perf_counter() - t0:.0f} s")
    rows = []
    for kind, n_files in (("dask", None), ("pandas", max(1, expected // 10))):
        proc = subprocess.run([sys.executable, __file__, "--worker", kind, "--folder", str(folder)]
                              + (["--files", str(n_files)] if n_files else []), capture_output=True, text=True)
        if proc.returncode:
            print(proc.stderr)
            raise SystemExit(1)
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    print(f"{'method':8s} {'clicks':>12s} {'seconds':>8s} {'clicks/s':>12s} {'peak RSS MB':>12s}")
    for r in rows:
        print(f"{r['kind']:8s} {r['clicks']:12d} {r['seconds']:8.1f} {r['clicks_per_second']:12.3g} "
              f"{r['peak_rss_mb']:12.0f}")
    return rows


if __name__ == "__main__":
    main()
