"""The crowd model's agreement check: its power on an adversarial annotator and its false alarms on honest
ones; and the classes it finds beside majority vote and (when installed) crowd-kit's Dawid-Skene EM.

Data from the model (`simulate_crowd`): 150 items, 3 classes, 4 honest annotators of accuracy 0.9, 0.8, 0.7,
0.65, each voting on 60% of the items, and one more source per scenario:

* honest: a fifth honest annotator (accuracy 0.6): false alarms;
* adversarial: an annotator that never gives the true class: power;
* random: an annotator voting uniformly at random, whatever the class: not a conflict (the model learns to
  ignore it), so a flag here is a false alarm too.

Each replicate is fitted by MAP (`CrowdClassifier()`, checks at fit time); a case counts as flagged when the
`source_agreement` row flags, and as naming the extra source when its message names it. The classes found
are scored against the truth beside majority vote (ties at random) and crowd-kit's `DawidSkene` (its EM, 100
iterations), if `crowd-kit` is importable (it is no dependency: `pip install crowd-kit`).

    python benchmarks/crowd_check.py --reps 20

Writes benchmarks/out/crowd_check.csv and prints the rates as a markdown table.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

SCENARIOS = {"honest": {"n_sources": 5}, "adversarial": {"n_sources": 4, "adversarial": 1},
             "random": {"n_sources": 4, "random": 1}}
EXTRA = {"honest": "annotator5", "adversarial": "adversary1", "random": "random1"}


def crowd_kit_classes(votes: pd.DataFrame) -> pd.Series | None:
    """crowd-kit's Dawid-Skene EM on the cast votes (item -> class), or None when it is not installed."""
    try:
        from crowdkit.aggregation import DawidSkene
    except ImportError:
        return None
    cast = votes.dropna(subset=["vote"]).rename(columns={"item": "task", "source": "worker", "vote": "label"})
    return DawidSkene(n_iter=100).fit_predict(cast)


def one_case(scenario: str, rep: int, n_items: int) -> dict:
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.crowd.baselines import majority_vote
    from bayes_wsc.models.crowd.data import CrowdVotes
    from bayes_wsc.models.crowd.model import CrowdClassifier
    from bayes_wsc.models.crowd.simulate import simulate_crowd

    votes, truth = simulate_crowd(n_items, 3, vote_rate=0.6, seed=1000 + rep, **SCENARIOS[scenario])
    data = CrowdVotes.from_frame(votes, classes=list(truth.classes))
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        est = CrowdClassifier(seed=rep).fit(data)
    seconds = time.perf_counter() - start
    [row] = est.checks_[est.checks_["check"] == "source_agreement"].to_dict("records")
    true_class = truth.classes[truth.z]
    found = est.item_probabilities()["class"].to_numpy()
    majority = majority_vote(data, seed=rep)
    out = {"scenario": scenario, "rep": rep, "flagged": bool(row["flagged"]),
           "names_extra": bool(row["flagged"]) and f"'{EXTRA[scenario]}'" in row["message"],
           "effect": row["effect"], "p_value": row["p_value"], "seconds": seconds,
           "model_accuracy": float((found == true_class).mean()),
           "majority_accuracy": float((np.where(majority >= 0, data.classes[np.maximum(majority, 0)], "") == true_class)
                                      .mean())}
    theirs = crowd_kit_classes(votes)
    if theirs is not None:
        out["crowd_kit_accuracy"] = float((theirs.reindex(data.item_ids).to_numpy() == true_class).mean())
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--n-items", type=int, default=150)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out" / "crowd_check.csv")
    args = parser.parse_args(argv)
    rows = []
    for scenario in SCENARIOS:
        for rep in range(args.reps):
            rows.append(one_case(scenario, rep, args.n_items))
            print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    summary = table.groupby("scenario", sort=False).agg(
        cases=("rep", "size"), flagged=("flagged", "sum"), names_extra=("names_extra", "sum"),
        model=("model_accuracy", "mean"), majority=("majority_accuracy", "mean"),
        **({"crowd_kit": ("crowd_kit_accuracy", "mean")} if "crowd_kit_accuracy" in table else {}),
        seconds=("seconds", "median"))
    print("| scenario | " + " | ".join(summary.columns) + " |")
    print("|---" * (summary.shape[1] + 1) + "|")
    for scenario, row in summary.iterrows():
        print(f"| {scenario} | " + " | ".join(str(int(v)) if float(v).is_integer() else f"{v:.3f}" for v in row) + " |")


if __name__ == "__main__":
    main()
