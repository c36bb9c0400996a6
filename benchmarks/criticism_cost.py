"""What model criticism adds to a fit of the first model: the checks at fit time, and the pointwise
log-likelihood with each group's mu integrated out.

  map   the paper's headline scale (I = 10,000 groups, J = 100 clicks, K = 30 bins): a warm MAP fit
        (its program cached) with checks=True and with checks=False, alternated `--rounds` times in
        one process; the ratio of their medians is the cost of the checks.
  nuts  the NUTS benchmark's workload (I = 1000, J = 100, K = 30, 2 chains x 1000 draws after 1000
        tuning steps): one fit with checks, then, on its draws, the integrated log-likelihood and the
        checks timed on their own, against the fit's whole time and its sampling time.

    python benchmarks/criticism_cost.py map --rounds 5
    python benchmarks/criticism_cost.py nuts
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings


def run_map(rounds: int) -> None:
    from bayes_wsc.models.wsc import WSC
    from bayes_wsc.simulate import simulate_wsc

    data, _ = simulate_wsc(n_groups=10_000, items_per_group=100, n_bins=30, seed=1)
    WSC(checks=False).fit(data)  # builds and caches the MAP program
    WSC(checks=True).fit(data)
    times = {True: [], False: []}
    for _ in range(rounds):
        for checks in (False, True):
            t0 = time.perf_counter()
            WSC(checks=checks).fit(data)
            times[checks].append(time.perf_counter() - t0)
    on, off = statistics.median(times[True]), statistics.median(times[False])
    print(f"MAP at 10,000 groups: median {off:.2f} s without checks, {on:.2f} s with (x{on / off:.2f}); "
          f"rounds: off {[round(t, 2) for t in times[False]]}, on {[round(t, 2) for t in times[True]]}")


def run_nuts() -> None:
    import numpy as np

    from bayes_wsc import criticism as checks
    from bayes_wsc.models.wsc import WSC, integrated_group_loglik
    from bayes_wsc.simulate import simulate_wsc

    data, _ = simulate_wsc(n_groups=1000, items_per_group=100, n_bins=30, seed=1)
    t0 = time.perf_counter()
    est = WSC(method="nuts", draws=1000, tune=1000, chains=2, seed=1, progressbar=False).fit(data)
    whole = time.perf_counter() - t0
    sampling = est._fitted().posterior.attrs["fit_info"]
    import json

    sampling = json.loads(sampling)["nuts"]["seconds"]
    post = est._fitted().posterior
    flat = {n: post[n].values.reshape(-1, *post[n].shape[2:]) for n in ("mu", "w0", "w1", "mu_loc", "mu_scale")}
    t0 = time.perf_counter()
    integrated_group_loglik(data.counts, data.he, flat["mu"], flat["w0"], flat["w1"], flat["mu_loc"],
                            flat["mu_scale"], np.full(flat["mu"].shape[0], 1 / np.sqrt(10)))
    pointwise = time.perf_counter() - t0
    t0 = time.perf_counter()
    checks.run(est, data, draws=None)
    checked = time.perf_counter() - t0
    print(f"NUTS at 1000 groups, 2 x 1000 draws: whole fit {whole:.1f} s (sampling {sampling:.1f} s); "
          f"integrated log-likelihood {pointwise:.1f} s ({pointwise / whole:.0%} of the fit), checks with LOO "
          f"{checked:.1f} s ({checked / whole:.0%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload", choices=("map", "nuts"))
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    run_map(args.rounds) if args.workload == "map" else run_nuts()


if __name__ == "__main__":
    main()
