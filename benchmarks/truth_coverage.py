"""Every registered model's 90% intervals against the truth of data drawn from its own prior, and how often
the "chains have not mixed at all" sentence fires on good NUTS fits and on a bad one (issue 38).

Per model (`registry.MODELS`), data sets from its simulator's `sbc_case` at the slow test's settings
(`tests/contract_cases.py` COVERAGE_SETTINGS, so the same data as `tests/test_truth_coverage_slow.py`),
fitted by `--method` (laplace, or nuts at the case's own settings: 2 chains x (500 tune + 500 draws) or
as the case says), through `bayes_wsc.sbc.interval_coverage`. Printed per model: intervals covering out of
all, the rate and the central 99% range of Binomial(n, rate) for the rate the model's fits state
(`laplace_coverage`, else 0.9); for NUTS, how many fits the unmixed sentence fired on
(`diagnostics.unmixed_message`: false alarms, since every fit here is of data from the model) and the
largest R-hat.

`--bad-case` fits the issue's deliberately bad case instead: the first model with its rater noise sigma_H
learned and Student-t(2) rater noise, on `simulate wsc --seed 2 --n-groups 200 --group-size 20 --n-bins 5`'s
groups with HE's noise replaced by Student-t(2) noise, NUTS started where the MAP collapsed in the issue
(sigma_H = 1e-8, every mu_i at HE_i), `--bad-fits` times with different seeds: the sentence's power.

    nice -n 10 python benchmarks/truth_coverage.py --method laplace
    nice -n 10 python benchmarks/truth_coverage.py --method nuts --sims 3
    nice -n 10 python benchmarks/truth_coverage.py --bad-case --bad-fits 2

Rows per simulation and quantity go to benchmarks/out/truth_coverage_<method>.csv.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import binom

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ is no package
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the slow test's settings
from output_paths import OUT  # noqa: E402

#: the issue's bad case: sigma_H learned, Student-t(2) rater noise, HE ~ t(mu_i, sigma_H), each mu_i sampled, and
#: NUTS started at the degenerate point the issue's MAP found (sigma_H -> 0 with mu_i = HE_i)
BAD_VARIANT = """
    import pymc as pm

    from bayes_wsc.models.wsc import add_click_likelihood, add_emissions, add_estimands, add_group_quality

    START_NUTS_AT_MAP = False


    def build_model(data, *, wh=10.0, mu_prior="hierarchical", w_concentration=1.0):
        with pm.Model(coords=data.coords) as model:
            mu = add_group_quality(data, wh=0.0, mu_prior=mu_prior)
            sigma_h = pm.HalfNormal("sigma_h", 1.0)
            pm.StudentT("he", nu=2.0, mu=mu, sigma=sigma_h, observed=data.he, dims="group")
            w = add_emissions(data, w_concentration=w_concentration)
            add_click_likelihood(data, mu, w)
            add_estimands(data, mu, w)
        return model


    def initial_values(data):
        return {"sigma_h": 1e-8, "mu": data.he}
"""


def rate_stated(model: str) -> float:
    from bayes_wsc import registry

    stated = registry.get(model).estimator_class().laplace_coverage
    return stated[0] if stated else 0.9


def run_models(method: str, sims: int | None, models: list[str]) -> pd.DataFrame:
    from contract_cases import COVERAGE_SETTINGS

    from bayes_wsc import registry
    from bayes_wsc.sbc import interval_coverage

    tables = []
    for model in models:
        settings, default_sims = COVERAGE_SETTINGS[model]
        case = registry.get(model).module("simulate").sbc_case(**settings)
        t0 = time.perf_counter()
        table = interval_coverage(case, sims or default_sims, seed=38, method=method,
                                  progress=lambda row, m=model: print(f"  {m} {row}", flush=True))
        table.insert(0, "model", model)
        tables.append(table)
        summarize(table, method, time.perf_counter() - t0)
    return pd.concat(tables, ignore_index=True)


def summarize(table: pd.DataFrame, method: str, seconds: float) -> None:
    model = table["model"].iloc[0]
    rate = rate_stated(model) if method == "laplace" else 0.9
    n, covered = len(table), int(table["covered"].sum())
    low, high = binom.ppf([0.005, 0.995], n, rate)
    fits = table.drop_duplicates("sim")
    line = (f"{model} {method}: {covered} of {n} covered ({covered / n:.2f}); 99% range of Binomial({n}, {rate}) "
            f"{low:.0f}..{high:.0f}; {len(fits)} data sets, {seconds:.0f} s, "
            f"fit s median {fits['seconds'].median():.1f}")
    if method == "nuts":
        line += (f"; unmixed sentence on {int(fits['unmixed'].sum())} of {len(fits)} fits; R-hat max "
                 f"{table['rhat'].max():.3f}")
    worst = table.groupby("quantity")["covered"].mean().sort_values().head(3).round(2).to_dict()
    print(line + f"; least covered {worst}", flush=True)


def bad_case(fits: int) -> None:
    """The issue's bad case, `fits` NUTS fits: does the unmixed sentence fire?"""
    from bayes_wsc.data.grouped import GroupedCounts
    from bayes_wsc.diagnostics import unmixed_message
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.wsc import WSC
    from bayes_wsc.models.wsc.simulate import simulate_wsc

    data, _ = simulate_wsc(n_groups=200, items_per_group=20, n_bins=5, sigma_h=0.0, seed=2)  # HE = mu exactly
    noise = 0.5 * np.random.default_rng(2).standard_t(2.0, data.n_groups)  # simulate's sigma_h, Student-t(2)
    data_t = GroupedCounts.from_counts(data.counts, np.asarray(data.he) + noise,
                                       group_ids=list(data.group_ids), bin_labels=list(data.bins.labels))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "student_he_learned.py"
        path.write_text(textwrap.dedent(BAD_VARIANT))
        for seed in range(fits):
            est = WSC(model_file=str(path), method="nuts", chains=2, draws=500, tune=500, seed=seed,
                      progressbar=False)
            t0 = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", FitWarning)
                est.fit(data_t)
            sentence = unmixed_message(est._fitted(), est.diagnosed_names())
            steps = np.median(np.asarray(est._fitted().sample_stats["step_size"]), axis=1)
            print(f"bad case seed {seed}: {time.perf_counter() - t0:.0f} s, unmixed sentence "
                  f"{'fired' if sentence else 'silent'}; median step sizes {np.round(steps, 8).tolist()}; "
                  f"{len(caught)} warnings; R-hat max {est.summary()['r_hat'].max():.3g}", flush=True)
            if sentence:
                print(f"  {sentence}", flush=True)


def main(argv=None) -> None:
    from bayes_wsc import registry

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", choices=("laplace", "nuts"), default="laplace")
    parser.add_argument("--sims", type=int, default=None, help="data sets per model (default: the slow test's)")
    parser.add_argument("--models", default=",".join(registry.NAMES))
    parser.add_argument("--bad-case", action="store_true")
    parser.add_argument("--bad-fits", type=int, default=2)
    args = parser.parse_args(argv)
    if args.bad_case:
        bad_case(args.bad_fits)
        return
    table = run_models(args.method, args.sims, args.models.split(","))
    OUT.mkdir(exist_ok=True)
    table.to_csv(OUT / f"truth_coverage_{args.method}.csv", index=False)


if __name__ == "__main__":
    main()
