"""Variant: a non-negative embedding, W >= 0 and b >= 0 (half-normal priors), LPE's constraint.

Every feature can only raise an item's perception attributes, as in LPE on non-negative data (word
counts, pixel intensities, the paper's features). On the simulated study, whose attributes load
positively on their features, it is a little ahead of the default model; on the digits it is level
(benchmarks/RESULTS.md). Under NUTS, weights the data push towards zero make a long tail on the log
scale of the half-normal: expect lower effective sample sizes than the default model's.

    bayes-wsc fit perception --model models/perception_nonnegative.py --items ... --seeds ... --perception ...
"""

import numpy as np
import pymc as pm

from bayes_wsc.models.perception import add_estimands, add_perception, add_seed_likelihood, model_coords


def build_model(data, *, weight_scale=3.0, intercept_sd=1.0):
    with pm.Model(coords=model_coords(data)) as model:
        W = pm.HalfNormal("W", weight_scale / np.sqrt(data.n_features), dims=("feature", "perception_feature"))
        b = pm.HalfNormal("b", intercept_sd, dims="perception_feature")
        perception = add_perception(data)
        add_seed_likelihood(data, W, b, perception)
        add_estimands(data, W, b, perception)
    return model


def initial_values(data, estimator):
    """The default model's starts moved into W, b > 0 (absolute values, away from the boundary)."""
    return [{name: np.abs(value) + 1e-3 for name, value in start.items()} for start in estimator.initial_values(data)]
