"""Seconds per split of the combined study's all-sources fit when its units are padded to bucketed slots (one
compiled program for splits whose evidence items differ by a few) and when they are not (issue 41).

Both layouts run in one invocation, one after the other, each in its own process with an empty cache folder
(XDG_CACHE_HOME: the package's MAP programs and XLA's compiled code start cold), on the same splits and the
same draw of the supervision as `combined.py --study sources` (the combined_all arm's Laplace fit, without
its held-out bags' intervals). "unpadded" sets `model.slots` to the identity: every item unit and pair in a
slot of its own, the layout before the padding. For each fit: the seconds, and the shapes that key its program
(items that are units of their own, their slots; distinct pairs, their slots).

    python benchmarks/combined_programs.py --data wine --splits 0,1,3

Prints one row per (layout, split) and writes benchmarks/out/combined_programs_<data>.csv.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from output_paths import OUT  # noqa: E402

LAYOUTS = ("unpadded", "padded")


def one_layout(data_name: str, size: str, splits: list[int], layout: str) -> list[dict]:
    """Fit every split in this process, under `layout`, and time each fit."""
    import combined
    from bayes_wsc.models.combined import model

    if layout == "unpadded":
        model.slots = lambda n: int(n)
    rows = []
    for split in splits:
        case = combined.study_case(data_name, split, size)
        start = time.time()
        est = combined.fit_combined(case, combined.ALL_SOURCES, "laplace")
        seconds = time.time() - start
        data = est.data_from_fit()
        own = model.item_units(data).size
        probs = est.predict(case.test)[[f"prob_{c}" for c in case.classes]].to_numpy()
        rows.append({"layout": layout, "split": split, "seconds": round(seconds, 1), "item_units": own,
                     "item_slots": model.slots(own), "pairs": data.n_pairs, "pair_slots": model.slots(data.n_pairs),
                     "accuracy": float((probs.argmax(axis=1) == case.y_test).mean())})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="wine")
    parser.add_argument("--size", default="small")
    parser.add_argument("--splits", default="0,1,3")
    parser.add_argument("--layout", choices=LAYOUTS, help="run one layout in this process (used by the default run)")
    args = parser.parse_args()
    splits = [int(s) for s in args.splits.split(",")]
    if args.layout:
        one_layout(args.data, args.size, splits, args.layout)
        return
    rows = []
    for layout in LAYOUTS:
        with tempfile.TemporaryDirectory() as cache:
            run = subprocess.run([sys.executable, __file__, "--data", args.data, "--size", args.size, "--splits",
                                  args.splits, "--layout", layout], env={**os.environ, "XDG_CACHE_HOME": cache},
                                 capture_output=True, text=True, check=True)
        rows += [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    table = pd.DataFrame(rows)
    table.to_csv(OUT / f"combined_programs_{args.data}.csv", index=False)
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
