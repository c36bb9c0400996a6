"""The aggregation check's phi at the joint MAP (what it fits when a fit has no mu) against its phi at the
mode of the globals' marginal density with each mu_i at its conditional mode there (what a fit that
integrated mu out now hands it: models.wsc.checks.map_point). Data from the model and with behavior that
depends on the group (tests/test_checks_aggregation.grouped_behavior), and Sec. 5 data.

    python benchmarks/aggregation_point.py
"""
import math
import sys
import warnings

import numpy as np
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_checks_aggregation import grouped_behavior
from bayes_wsc.checks.aggregation import aggregation_bias_check
from bayes_wsc.models.wsc import WSC
from bayes_wsc import group_quadrature as gq
from bayes_wsc.simulate import simulate_wsc
warnings.simplefilter("ignore")
def compare(name, data, wh):
    joint = aggregation_bias_check(data, {"wh": wh}, model=WSC)
    est = WSC(method="laplace", wh=wh, draws=100, seed=0).fit(data)
    pt = est.map_point_
    sigma = 1 / math.sqrt(wh) if wh > 0 else None
    g = gq.Integrand(np.asarray(data.counts, float), np.asarray(data.he, float), pt["w0"], pt["w1"], pt.get("mu_loc"), pt.get("mu_scale"), sigma)
    mu = gq.conditional_modes(g)
    point = {"mu": mu, "w0": pt["w0"], "w1": pt["w1"], **({"mu_scale": pt["mu_scale"]} if "mu_scale" in pt else {})}
    marg = aggregation_bias_check(data, {"wh": wh}, model=WSC, map_point=point)
    print(f"{name}: joint phi {joint['statistic']:.4f} p {joint['p_value']:.3g} flagged {joint['flagged']} | marginal phi {marg['statistic']:.4f} p {marg['p_value']:.3g} flagged {marg['flagged']}", sorted(pt), flush=True)
for seed in (0, 1):
    compare(f"model data seed {seed} wh10", grouped_behavior(seed=seed), 10.0)
    compare(f"biased c=30 seed {seed} wh10", grouped_behavior(concentration=30.0, seed=seed), 10.0)
    compare(f"biased c=300 seed {seed} wh10", grouped_behavior(concentration=300.0, seed=seed), 10.0)
for J in (5, 100):
    d, _ = simulate_wsc(n_groups=500, items_per_group=J, n_bins=15, seed=1000)
    compare(f"sec5 I=500 J={J} wh10", d, 10.0)
    compare(f"sec5 I=500 J={J} wh4", d, 4.0)
