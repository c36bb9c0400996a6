"""Where the combined model's Laplace approximation is centred, searched from the MAP in one stage or in two
(`laplace.find_centre`: the transformed variables first, the class weights held at the MAP, then all), on the
study's draws (`combined.py`, the all-sources fit at one size).

For each split: every MAP restart's log density (without Jacobian) and the test accuracy of its class model;
the centre that one joint L-BFGS search from the best restart's optimum reaches (the search before
`find_centre`) and the two-stage centre, each with its log density with Jacobian (the quantity the centre
maximizes: higher is the better centre) and the test accuracy of the class model at it (plug-in, argmax of
softmax(x W + b)). No Hessian and no draws: the centre alone, which decides where the Laplace draws sit.

    python benchmarks/combined_centre.py --data digits --splits 10
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import combined  # noqa: E402


def centres(case: combined.Case, restarts: int = 2) -> dict:
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.estimator import _restricted
    from bayes_wsc.laplace import find_centre
    from bayes_wsc.map_program import minimize
    from bayes_wsc.models.combined.data import CombinedSupervision
    from bayes_wsc.models.combined.model import CombinedClassifier

    given = {s: case.tables[s] for s in ("votes", "pairs", "bags", "groups") if case.has(s)}
    data = CombinedSupervision.from_frames(case.items_frame(combined.ALL_SOURCES), classes=case.classes, **given)
    est = CombinedClassifier(method="laplace", progressbar=False, checks=False, restarts=restarts, seed=case.seed)
    starts = est.initial_values(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        program, _, inputs, _ = est._map_program(data, starts, est.map_fixed(data),
                                                 {"jacobian": True, "local": list(est._laplace_local())})
    device = program.device_inputs(inputs)

    def accuracy(x):
        values = program.values(x, device)
        logits = case.x_test @ np.asarray(values["W"]).T + np.asarray(values["b"])
        return float((logits.argmax(axis=1) == case.y_test).mean())

    def with_jacobian(x):
        return program.laplace_value_and_grad(x, device)

    xs = [np.asarray(program.start(program.complete(s), device), dtype=float)
          for s in _restricted(starts, program.free)]
    optima = [minimize(lambda x: program.value_and_grad(x, device), x) for x in xs]
    best = int(np.argmin([o.fun for o in optima]))
    one = minimize(with_jacobian, optima[best].x)
    two, first = find_centre(with_jacobian, program.layout, np.asarray(optima[best].x, dtype=float))
    return {"map_log_density": [float(-o.fun) for o in optima], "map_accuracy": [accuracy(o.x) for o in optima],
            "best_restart": best, "one_stage_log_density": float(-one.fun), "one_stage_accuracy": accuracy(one.x),
            "two_stage_log_density": float(-two.fun), "two_stage_accuracy": accuracy(two.x),
            "first_stage_iterations": first}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="digits", choices=combined.DATASETS)
    parser.add_argument("--size", default="small", choices=list(combined.SIZES))
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--first-split", type=int, default=0)
    args = parser.parse_args()
    print("split | MAP restarts: log density (accuracy) | one stage: log density with Jacobian (accuracy) | "
          "two stages: log density with Jacobian (accuracy)")
    for split in range(args.first_split, args.first_split + args.splits):
        r = centres(combined.study_case(args.data, split, args.size))
        restarts = ", ".join(f"{lp:.2f} ({a:.3f})" + (" *" if i == r["best_restart"] else "")
                             for i, (lp, a) in enumerate(zip(r["map_log_density"], r["map_accuracy"])))
        print(f"{split} | {restarts} | {r['one_stage_log_density']:.2f} ({r['one_stage_accuracy']:.3f}) | "
              f"{r['two_stage_log_density']:.2f} ({r['two_stage_accuracy']:.3f})", flush=True)


if __name__ == "__main__":
    main()
