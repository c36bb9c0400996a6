"""What the votes do to the combined fit in the study (`combined.py`): per split, the all-sources MAP against the
same fit without the votes, with the confusion matrices' prior flat (`vote_diagonal=1`), with the class
model's prior wider (`prior_sd=2`), and with the confusion matrices held at the simulator's true ones (an
oracle: the MAP with them held fixed, as the package holds a variable fixed, `map_fixed`), each with its test
accuracy and log loss; and each annotator's learned accuracy (mean of its confusion diagonal) against the true
one. If the oracle recovers what the votes cost, the deficit is in the learned confusion matrices.

    python benchmarks/combined_votes.py --data breast_cancer --splits 10
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import combined  # noqa: E402
from output_paths import OUT  # noqa: E402


def fit(case, sources, **settings):
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.combined.data import CombinedSupervision
    from bayes_wsc.models.combined.model import CombinedClassifier

    given = {s: case.tables[s] for s in ("votes", "pairs", "bags", "groups") if s in sources and case.has(s)}
    data = CombinedSupervision.from_frames(case.items_frame(sources), classes=case.classes, **given)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return CombinedClassifier(method="map", progressbar=False, checks=False, restarts=2, seed=case.seed,
                                  **settings).fit(data)


def probs_of(est, case):
    return est.predict(case.test)[[f"prob_{c}" for c in case.classes]].to_numpy()


def true_confusion(k: int, names) -> np.ndarray:
    """The simulator's confusion rows, `combined.ACCURACY` on the diagonal, errors spread evenly."""
    rows = []
    for name in names:
        acc = combined.ACCURACY[int(str(name).removeprefix("annotator")) - 1]
        rows.append(np.full((k, k), (1 - acc) / (k - 1)) + np.eye(k) * (acc - (1 - acc) / (k - 1)))
    return np.stack(rows)


def oracle_probs(case):
    """The all-sources MAP with the confusion matrices held at the truth (the estimator's `map_fixed`, as the
    package holds any variable of a MAP fixed), its class model scored on the test items."""
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.combined.data import CombinedSupervision
    from bayes_wsc.models.combined.model import CombinedClassifier

    given = {s: case.tables[s] for s in ("votes", "pairs", "bags", "groups") if case.has(s)}
    data = CombinedSupervision.from_frames(case.items_frame(combined.ALL_SOURCES), classes=case.classes, **given)
    truth = true_confusion(case.k, data.source_names)

    class TrueConfusion(CombinedClassifier):
        def map_fixed(self, data):
            return {"confusion": truth}

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        est = TrueConfusion(method="map", progressbar=False, checks=False, restarts=2, seed=case.seed).fit(data)
    held = np.asarray(est.map_point_["confusion"])
    assert np.allclose(held, truth), "the confusion matrices were not held at the truth"
    return probs_of(est, case)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="breast_cancer", choices=combined.DATASETS)
    parser.add_argument("--size", default="small", choices=list(combined.SIZES))
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--first-split", type=int, default=0)
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    out = OUT / f"combined_votes_{args.data}{args.tag}.csv"
    without_votes = tuple(s for s in combined.ALL_SOURCES if s != "votes")
    rows = []
    for split in range(args.first_split, args.first_split + args.splits):
        case = combined.study_case(args.data, split, args.size)
        row = {"dataset": args.data, "split": split, "size": args.size}
        est = fit(case, combined.ALL_SOURCES)
        arms = {"all": probs_of(est, case),
                "without_votes": probs_of(fit(case, without_votes), case),
                "all_flat_confusion": probs_of(fit(case, combined.ALL_SOURCES, vote_diagonal=1.0), case),
                "all_prior_sd2": probs_of(fit(case, combined.ALL_SOURCES, prior_sd=2.0), case),
                "without_votes_prior_sd2": probs_of(fit(case, without_votes, prior_sd=2.0), case),
                "all_true_confusion": oracle_probs(case)}
        for name, probs in arms.items():
            row[f"{name}_accuracy"], row[f"{name}_log_loss"] = combined.scores(probs, case.y_test)
        confusion = np.asarray(est.map_point_["confusion"])
        data = est.data_from_fit()
        names = data.source_names
        for s, name in enumerate(names):
            row[f"{name}_learned_accuracy"] = float(np.diagonal(confusion[s]).mean())
            row[f"{name}_votes"] = int((data.vote_source[data.cast] == s).sum())
        rows.append(row)
        pd.DataFrame(rows).to_csv(out, index=False)
        print(" ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()), flush=True)
    frame = pd.DataFrame(rows)
    print("means:", frame.filter(like="accuracy").mean().round(3).to_dict())
    print("all minus without votes:", (frame["all_accuracy"] - frame["without_votes_accuracy"]).round(3).tolist())


if __name__ == "__main__":
    main()
