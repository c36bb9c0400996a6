"""Simulation-based calibration of every registered model (slow tier: pytest -m slow).

About 20 simulations of tiny data per model (the first model with NUTS's default, mu on the shared grid,
and with mu integrated by per-group quadrature or sampled), every quantity ranked among 99
thinned NUTS draws; the test fails when some quantity's binned ranks fail the
chi-square test at 0.01 / (number of quantities). A correct model fails with
probability about 0.01; a wrong likelihood, transform or prior fails much more
often. The full version (100 simulations) is `benchmarks/sbc.py`.
"""

import numpy as np
import pytest
from contract_cases import SBC_SETTINGS

from bayes_wsc import registry
from bayes_wsc.sbc import run_sbc

pytestmark = pytest.mark.slow

N_SIMS = 20


def small_case(model: str):
    """The model's `sbc_case` (its simulator's, through the registry) at `contract_cases.SBC_SETTINGS`; a case
    named `<model>-<name>` is one more setting of the model."""
    assert model in SBC_SETTINGS, f"tests/contract_cases.py: SBC_SETTINGS declares nothing for model {model!r}"
    if SBC_SETTINGS[model] is None:
        pytest.skip(f"{model} is calibrated by its own tests (see tests/contract_cases.py SBC_SETTINGS)")
    return registry.get(model.partition("-")[0]).module("simulate").sbc_case(**SBC_SETTINGS[model])


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


@pytest.mark.parametrize("model", [*registry.NAMES, *(case for case in SBC_SETTINGS if "-" in case)])
def test_sbc_ranks_are_uniform(model):
    check_calibration(model)
