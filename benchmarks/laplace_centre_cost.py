"""What the two-stage Laplace centre (`laplace.find_centre`) costs against the one joint search it replaced,
in the same process, the two taking turns on the same data:

--digits: the combined study's all-sources Laplace fit (`combined.arm_combined_all`) on digits at the small
size, each split fitted twice (two stages, then one stage), timing the whole arm and its parts from `fit_info`
(the MAP, the Laplace part: centre, Hessian, draws), with the centre's iterations and the test accuracy;
--wsc: the first model (`WSC(method="laplace")`, nested, and `mu="sampled"`, joint) at 10,000 groups of 100
clicks and 30 bins, a new simulated data set per round, after a warm-up fit of each form that compiles the
programs. One stage is `find_centre` without its first stage (what `laplace.run_laplace` did before it).

    python benchmarks/laplace_centre_cost.py --digits --splits 3
    python benchmarks/laplace_centre_cost.py --wsc --repeats 2
    python benchmarks/laplace_centre_cost.py --digits --splits 1 --profile   # where a fit's seconds go
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from output_paths import OUT  # noqa: E402


@contextlib.contextmanager
def centre_search(stages: str):
    """`laplace.find_centre` as it is ("two") or as one joint search from the MAP ("one")."""
    from bayes_wsc import laplace
    from bayes_wsc.map_program import minimize

    original = laplace.find_centre

    def one_stage(value_and_grad, layout, x_map, *, jacobian=True, maxiter=5000, tol=1e-8):
        return minimize(value_and_grad, np.array(x_map, dtype=float), maxiter=maxiter, tol=tol), 0

    laplace.find_centre = original if stages == "two" else one_stage
    try:
        yield
    finally:
        laplace.find_centre = original


def info_row(est) -> dict:
    info = json.loads(est._fitted().posterior.attrs["fit_info"])
    lap = info["laplace"]
    return {"map_s": info["map"]["seconds"], "laplace_part_s": lap["seconds"],
            "centre_iterations": lap["centre_iterations"],
            "first_stage_iterations": lap.get("centre_first_stage_iterations", 0),
            "log_density_at_centre": lap["log_density_at_centre"], "form": lap.get("form"),
            "compiled_program": info["map"].get("compiled_program")}


def run_digits(splits, first_split, size, stage_list=("two", "one")) -> list[dict]:
    import combined

    captured = {}
    fit_combined = combined.fit_combined

    def keeping(case, sources, method="map"):
        est = fit_combined(case, sources, method)
        captured["est"] = est
        return est

    combined.fit_combined = keeping
    rows = []
    for split in range(first_split, first_split + splits):
        case = combined.study_case("digits", split, size)
        for stages in stage_list:
            with centre_search(stages):
                t0 = time.perf_counter()
                probs, _, coverage = combined.arm_combined_all(case)
                seconds = time.perf_counter() - t0
            accuracy, log_loss = combined.scores(probs, case.y_test)
            row = {"split": split, "stages": stages, "arm_s": seconds, "accuracy": accuracy, "log_loss": log_loss,
                   **info_row(captured["est"]), **coverage}
            rows.append(row)
            print(row, flush=True)
    return rows


def run_wsc(repeats, n_groups, items, n_bins) -> list[dict]:
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.wsc import WSC
    from bayes_wsc.simulate import simulate_wsc

    def simulate(seed):
        return simulate_wsc(n_groups=n_groups, items_per_group=items, n_bins=n_bins, seed=seed)[0]

    rows = []
    forms = {"nested": {}, "joint": {"mu": "sampled"}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        warm = simulate(3)
        for form, kwargs in forms.items():
            t0 = time.perf_counter()
            WSC(method="laplace", seed=0, **kwargs).fit(warm)
            print(f"warm-up {form}: {time.perf_counter() - t0:.1f} s", flush=True)
        for round_ in range(repeats):
            data = simulate(4 + round_)
            for form, kwargs in forms.items():
                for stages in (("two", "one") if round_ % 2 == 0 else ("one", "two")):
                    with centre_search(stages):
                        t0 = time.perf_counter()
                        est = WSC(method="laplace", seed=round_, **kwargs).fit(data)
                        seconds = time.perf_counter() - t0
                    row = {"round": round_, "seed": 4 + round_, "form": form, "stages": stages, "fit_s": seconds,
                           **{k: v for k, v in info_row(est).items() if k != "form"}}
                    rows.append(row)
                    print(row, flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--digits", action="store_true")
    parser.add_argument("--wsc", action="store_true")
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--first-split", type=int, default=0)
    parser.add_argument("--size", default="small")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--profile", action="store_true",
                        help="--digits: the two-stage fits only, under cProfile; prints the 25 costliest calls")
    parser.add_argument("--wsc-size", default="10000x100x30", help="IxJxK")
    args = parser.parse_args()
    if args.digits and args.profile:
        import cProfile
        import pstats

        profile = cProfile.Profile()
        rows = profile.runcall(run_digits, args.splits, args.first_split, args.size, ("two",))
        pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
        out = OUT / "laplace_centre_cost_digits_profile.csv"
    elif args.digits:
        rows = run_digits(args.splits, args.first_split, args.size)
        out = OUT / "laplace_centre_cost_digits.csv"
    else:
        n_groups, items, n_bins = (int(v) for v in args.wsc_size.split("x"))
        rows = run_wsc(args.repeats, n_groups, items, n_bins)
        out = OUT / "laplace_centre_cost_wsc.csv"
    frame = pd.DataFrame(rows)
    frame.to_csv(out, index=False)
    keys = [c for c in ("form", "stages") if c in frame]
    print(frame.groupby(keys).median(numeric_only=True).round(3).to_string())


if __name__ == "__main__":
    main()
