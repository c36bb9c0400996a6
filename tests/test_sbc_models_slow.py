"""Simulation-based calibration of every model: WSC, noisy experts, PC mixture, perception (slow tier: pytest -m slow).

About 20 simulations of tiny data per model (the first model with NUTS's default, mu on the shared grid,
and with mu integrated by per-group quadrature or sampled), every quantity ranked among 99
thinned NUTS draws; the test fails when some quantity's binned ranks fail the
chi-square test at 0.01 / (number of quantities). A correct model fails with
probability about 0.01; a wrong likelihood, transform or prior fails much more
often. The full version (100 simulations) is `benchmarks/sbc.py`.
"""

import numpy as np
import pytest

from bayes_wsc.sbc import run_sbc

pytestmark = pytest.mark.slow

N_SIMS = 20


def small_case(model: str):
    if model.startswith("wsc"):  # "wsc": NUTS's default (the shared grid); "wsc-integrated", "wsc-sampled"
        from bayes_wsc.simulate.wsc import sbc_case

        mu = model.partition("-")[2] or None
        return sbc_case(n_groups=20, items_per_group=20, n_bins=3, draws=500, tune=400, chains=2, mu=mu)
    if model == "experts":
        from bayes_wsc.simulate.experts import sbc_case

        return sbc_case(n_items=20, n_features=2, n_clusters=2, n_experts=2, pairs_per_expert=40, restarts=3,
                        draws=500, tune=400, chains=2)
    if model == "perception":
        from bayes_wsc.simulate.perception import sbc_case

        return sbc_case(n_items=40, n_features=2, n_seeded=30, draws=500, tune=400, chains=2)
    from bayes_wsc.simulate.pcmix import sbc_case

    return sbc_case(n_items=30, n_features=1, components=2, labeled_fraction=0.5, restarts=3, draws=500,
                    tune=400, chains=2)


def check_calibration(model: str, n_sims: int = N_SIMS, seed: int = 6):
    case = small_case(model)
    result = run_sbc(case, n_sims, seed=seed)
    assert result.n_sims == n_sims
    for quantity in case.quantities:
        ranks = result.ranks(quantity)
        assert ((ranks >= 0) & (ranks <= result.n_rank_draws)).all()
    table = result.uniformity()
    failed = table.loc[~table["passes"], ["quantity", "chi2", "p_value", "mean_rank_fraction"]]
    assert failed.empty, f"{model}: ranks not uniform ({'; '.join(result.problems())}):\n{failed.to_string()}"
    # the ranks came from nearly independent draws: the median simulation has ESS above the thinned draws
    assert np.median(result.table["ess_min"]) >= result.n_rank_draws
    return result


@pytest.mark.parametrize("model", ["wsc", "wsc-integrated", "wsc-sampled", "experts", "pcmix", "perception"])
def test_sbc_ranks_are_uniform(model):
    check_calibration(model)
