"""False alarms and power of the combined model's held-out-source conflict check (issue 41).

Data from the model (`simulate_combined`: 200 items, 2 features, 2 classes; 10 hand labels, three annotators
of accuracy 0.9, 0.75, 0.6 each voting on 30% of the items, two experts of accuracy 0.9 and 0.7 on 40 pairs
each, 4 bags of 6 items, 4 groups of 6 items), honest or with one source corrupted:

* flipped_annotator: annotator1's votes all swapped (an adversarial annotator);
* wrong_bags: two of the four bags' counts swapped between the classes (a bag with as many of each class is
  unchanged by it: the `counts_moved` column says how many items' worth of counts the swap moved);
* flipped_labels: half the hand labels swapped;
* random_expert: expert1 answers every pair at random (the model can describe it: alpha = beta = 0.5).

For each replicate the model is fitted by MAP and `checks.source_conflict` run (one MAP per held-out source);
a case counts as detected when the row flags, and as naming the corrupted source when its message names it.

    python benchmarks/combined_conflict.py --reps 10
    python benchmarks/combined_conflict.py --first-rep 10 --reps 5 --out benchmarks/out/combined_conflict_10.csv

Writes benchmarks/out/combined_conflict.csv and prints the rates.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

SCENARIOS = ("honest", "flipped_annotator", "wrong_bags", "flipped_labels", "random_expert")
CORRUPTED = {"flipped_annotator": "votes:annotator1", "wrong_bags": "bags", "flipped_labels": "labels",
             "random_expert": "pairs:expert1"}


def swap(values: pd.Series, rows) -> pd.Series:
    out = values.copy()
    out.loc[rows] = out.loc[rows].map({"c0": "c1", "c1": "c0"})
    return out


def corrupt(tables: dict, scenario: str, rng: np.random.Generator) -> dict:
    tables = {k: v.copy() for k, v in tables.items()}
    if scenario == "flipped_annotator":
        votes = tables["votes"]
        rows = votes.index[(votes["source"] == "annotator1") & votes["vote"].notna()]
        votes["vote"] = swap(votes["vote"], rows)
    elif scenario == "wrong_bags":
        bags = tables["bags"]
        c0, c1 = bags["c0"].to_numpy().copy(), bags["c1"].to_numpy().copy()
        bags["c0"], bags["c1"] = np.r_[c1[:2], c0[2:]], np.r_[c0[:2], c1[2:]]
    elif scenario == "flipped_labels":
        items = tables["items"]
        labelled = items.index[items["label"].notna()]
        items["label"] = swap(items["label"], rng.choice(labelled, labelled.size // 2, replace=False))
    elif scenario == "random_expert":
        pairs = tables["pairs"]
        rows = pairs["expert"] == "expert1"
        pairs.loc[rows, "link"] = rng.integers(0, 2, rows.sum())
    return tables


def counts_moved(honest, data) -> int:
    """How wrong the bags are: the number of items' worth of class counts the corruption moved (half the sum of
    absolute differences from the true counts; 0 when the swapped bags held as many of each class)."""
    return int(np.abs(data.bag_counts - honest.bag_counts).sum() // 2) if data.n_bags else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--first-rep", type=int, default=0, help="replicates first-rep .. first-rep + reps - 1")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--out", default=str(Path(__file__).parent / "out" / "combined_conflict.csv"))
    args = parser.parse_args()
    from bayes_wsc.models.combined.checks import source_conflict
    from bayes_wsc.models.combined.model import CombinedClassifier
    from bayes_wsc.models.combined.simulate import data_from_tables, simulate_combined

    rows = []
    for rep in range(args.first_rep, args.first_rep + args.reps):
        tables, _, _ = simulate_combined(200, 2, 2, seed=1000 + rep, n_groups=4)
        for scenario in args.scenarios.split(","):
            data = data_from_tables(corrupt(tables, scenario, np.random.default_rng(rep)))
            honest = data_from_tables(tables)
            start = time.time()
            est = CombinedClassifier(progressbar=False, checks=False, conflict_check=True).fit(data)
            [row] = source_conflict(est, data, seed=rep)
            target = CORRUPTED.get(scenario)
            rows.append({"rep": rep, "scenario": scenario, "flagged": row.flagged, "p_value": row.p_value,
                         "effect": row.effect, "names_source": bool(target and f"Source {target} " in row.message),
                         "counts_moved": counts_moved(honest, data),
                         "seconds": time.time() - start, "message": row.message})
            print(f"{rep} {scenario}: flagged={row.flagged} {row.message[:120]}", flush=True)
            pd.DataFrame(rows).to_csv(args.out, index=False)
    table = pd.DataFrame(rows).groupby("scenario").agg(cases=("flagged", "size"), flag_rate=("flagged", "mean"),
                                                       names_corrupted_source=("names_source", "mean"),
                                                       seconds=("seconds", "median"))
    print(table.to_string())
    frame = pd.DataFrame(rows)
    bags = frame[frame["scenario"] == "wrong_bags"]
    if len(bags):
        print("wrong_bags by how wrong the bags are:")
        print(bags.groupby("counts_moved").agg(cases=("flagged", "size"), flagged=("flagged", "sum")).to_string())


if __name__ == "__main__":
    main()
