"""Variant: tied variances, one sd per feature shared by every component (sd_kj = sd_j), as in
linear discriminant analysis: D instead of K x D sds, and no component can shrink onto a few points.

    bayes-wsc fit pcmix --model models/pcmix_tied_variances.py --items ... --components K --lam L
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from bayes_wsc.models.pcmix import (add_component_means, add_estimands, add_label_probabilities,
                                    add_mixture_weights, add_pc_objective, model_coords, priors_from)


def build_model(data, *, components=2, lam=1.0, sd_floor=0.001, mean_prior_sd=3.0, sd_prior_rate=1.0,
                concentration=1.01):
    priors = priors_from(sd_floor, mean_prior_sd, sd_prior_rate, concentration)
    with pm.Model(coords=model_coords(data, components)) as model:
        pi, mean_z = add_mixture_weights(priors), add_component_means(priors)
        tied = pm.Gamma("sd_tied_excess", alpha=priors.sd_shape, beta=priors.sd_rate, dims="feature")
        sd_z = priors.sd_floor + pt.ones((components, 1)) * tied[None, :]
        add_pc_objective(data, pi, mean_z, sd_z, add_label_probabilities(data.n_classes, priors), lam)
        add_estimands(data, mean_z, sd_z)
    return model


def initial_values(data, estimator):
    """The default model's k-means and random starts, the components' sds averaged per feature."""
    return [{**s, "sd_tied_excess": np.mean(s["sd_excess"], axis=0)} if "sd_excess" in s else s
            for s in estimator.initial_values(data)]
