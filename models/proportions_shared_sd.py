"""Label proportions with one sd per feature shared by every class (a variant of the gaussian emission).

The classes differ only in their means, as in linear discriminant analysis: fewer parameters than
the default (one sd per class and feature), which helps small data. Everything else (the bag
likelihoods, noisy proportions, eta, predictions, report) is the model's own blocks.

    bayes-wsc fit proportions --items I.csv --proportions P.csv --emission gaussian \
        --model models/proportions_shared_sd.py --out F.nc
"""

import numpy as np
import pymc as pm

from bayes_wsc import likelihoods
from bayes_wsc.models.proportions import add_bag_likelihood, add_class_shares, model_coords, soft_label_start


def build_model(data, *, emission="gaussian", bag_likelihood="independent", concentration=None, mean_prior_sd=3.0,
                sd_prior_rate=1.0, **unused_priors):
    if emission != "gaussian":
        raise ValueError(f"this variant is of the gaussian emission: fit it with emission='gaussian' "
                         f"(--emission gaussian), not {emission!r}")
    with pm.Model(coords=model_coords(data)) as model:
        log_shares = add_class_shares(data, concentration)
        mean_z = pm.Normal("mean_z", 0.0, mean_prior_sd, dims=("class", "feature"))
        sd_shared = 1e-3 + pm.Gamma("sd_shared_excess", alpha=2.0, beta=sd_prior_rate, dims="feature")
        sd_z = pm.math.ones_like(mean_z) * sd_shared[None, :]
        pm.Deterministic("mean", data.center + data.scale * mean_z, dims=("class", "feature"))
        pm.Deterministic("sd", data.scale * sd_z, dims=("class", "feature"))
        log_f = likelihoods.diag_normal_logp(pm.Data("x", data.x), mean_z, sd_z)
        add_bag_likelihood(data, "gaussian", bag_likelihood, log_shares, log_f, concentration)
    return model


def initial_values(data):
    start = soft_label_start(data, "gaussian")
    return {"mean_z": start["mean_z"], "sd_shared_excess": np.mean(start["sd_excess"], axis=0)}
