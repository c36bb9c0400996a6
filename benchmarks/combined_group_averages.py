"""How far the study's group averages (`combined.group_averages`: the logit of the realized class-1 share of
10 items, plus N(0, 1/sqrt(10))) are from what the combined model's group term measures (the logit of the
group's expected share, the mean of P(class 1 | x) over its items), at a class model fitted to every training
label (scikit-learn's logistic regression, C = 1): the residuals' mean and sd against the term's sd 1/sqrt(WH)
= 0.316, and how many groups' realized shares were 0 or 1 (clipped to 0.05 or 0.95 by the study).

    python benchmarks/combined_group_averages.py --splits 10
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from combined import study_case  # noqa: E402


def main() -> None:
    from sklearn.linear_model import LogisticRegression

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--size", default="small")
    args = parser.parse_args()
    residuals, clipped = [], 0
    for split in range(args.splits):
        case = study_case("breast_cancer", split, args.size)
        q1 = LogisticRegression(C=1.0, max_iter=5000).fit(case.x_train, case.y_train).predict_proba(case.x_train)[:, 1]
        group = case.tables["item_columns"]["group"].to_numpy()
        for name, he in case.tables["groups"].set_index("group")["he"].items():
            members = group == name
            share = q1[members].mean()
            clipped += int(case.y_train[members].mean() in (0.0, 1.0))
            residuals.append(he - np.log(share / (1 - share)))
    residuals = np.asarray(residuals)
    print(f"{residuals.size} groups, {clipped} with a realized share of 0 or 1; HE minus logit(expected share): "
          f"mean {residuals.mean():.3f}, sd {residuals.std(ddof=1):.3f} (the term's sd: {1 / np.sqrt(10):.3f})")


if __name__ == "__main__":
    main()
