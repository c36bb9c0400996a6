"""Variant: symmetric experts, alpha_m = beta_m (one accuracy per expert, as right about must-links
as about cannot-links): M fewer parameters than the default model.

    bayes-wsc fit experts --model models/experts_symmetric.py --items ... --constraints ... --clusters K
"""

import pymc as pm

from bayes_wsc.models.experts import (add_cluster_weights, add_constraint_likelihood, add_expert_weights,
                                      add_memberships, model_coords)


def build_model(data, *, n_clusters=2, prior_sd=1.0, intercept_sd=2.0, accuracy_a=2.0, accuracy_b=2.0):
    with pm.Model(coords=model_coords(data, n_clusters)) as model:
        w_ref, b_ref = add_cluster_weights(data, n_clusters, prior_sd=prior_sd, intercept_sd=intercept_sd)
        ends = add_memberships(data, w_ref, b_ref)
        accuracy_raw = pm.Beta("accuracy_raw", accuracy_a, accuracy_b, dims="expert")
        alpha, beta = add_expert_weights(accuracy_raw, accuracy_raw)
        add_constraint_likelihood(data, ends, alpha, beta)
    return model


def initial_values(data, estimator):
    """The default model's random restarts (`restarts`, seeded), each accuracy at its alpha."""
    return [{**start, "accuracy_raw": start["alpha_raw"]} for start in estimator.initial_values(data)]
