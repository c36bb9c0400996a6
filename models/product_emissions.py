"""Variant: behavior emissions as a product of independent categoricals, one per column.

Seed 000 (Sec. 2.2) crosses all behavior columns into one categorical with
K = L_1 x L_2 x ... bins. Here, given the class Z, each behavior column is
drawn independently:

    P(X = (l_1, l_2, ...) | Z = z) = prod_c w_z^(c)[l_c],   w_z^(c) ~ Dirichlet(c)

which needs sum_c L_c parameters per class instead of prod_c L_c, and lends
strength to bins that few items use. `w0[bin]`, `w1[bin]` and `rho[bin]` are
still reported on the crossed bins, so predictions and reports work as usual.
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from bayes_wsc.baselines.wsc import naive_emissions
from bayes_wsc.models.wsc import (add_click_likelihood, add_estimands, add_group_quality, check_settings,
                                  hierarchical_scale_fixed)
from bayes_wsc.transforms import StickBreaking


def build_model(data, *, wh=10.0, mu_prior="hierarchical", w_concentration=1.0):
    check_settings(wh, mu_prior, w_concentration)
    bin_levels = data.bins.bin_levels
    with pm.Model(coords=data.coords) as model:
        mu = add_group_quality(data, wh=wh, mu_prior=mu_prior)
        log_w = pt.zeros((2, data.n_bins))
        for j, (column, levels) in enumerate(zip(data.bins.columns, data.bins.levels)):
            if len(levels) < 2:
                continue  # a column with one level carries no information
            model.add_coord(f"{column}_level", levels)
            for z in (0, 1):
                w_column = pm.Dirichlet(f"w{z}_{column}", a=np.full(len(levels), float(w_concentration)),
                                        dims=f"{column}_level", default_transform=StickBreaking())
                log_w = pt.set_subtensor(log_w[z], log_w[z] + pt.log(w_column)[bin_levels[:, j]])
        w = pt.stack([pm.Deterministic("w0", pt.exp(log_w[0]), dims="bin"),
                      pm.Deterministic("w1", pt.exp(log_w[1]), dims="bin")])
        add_click_likelihood(data, mu, w)
        add_estimands(data, mu, w)
    return model


def initial_values(data):
    """The paper's naive solution, summed to each column's margins."""
    w0, w1 = naive_emissions(data)
    bin_levels = data.bins.bin_levels
    start = {"mu": data.he, "mu_loc": float(np.mean(data.he)), "mu_scale": max(float(np.std(data.he)), 0.1)}
    for j, (column, levels) in enumerate(zip(data.bins.columns, data.bins.levels)):
        for z, w in ((0, w0), (1, w1)):
            start[f"w{z}_{column}"] = np.bincount(bin_levels[:, j], weights=w, minlength=len(levels))
    return start


def map_fixed(data, estimator):
    """The same group-quality block as the default model, so the MAP holds mu_scale as it does."""
    return hierarchical_scale_fixed(data, estimator.wh, estimator.mu_prior)
