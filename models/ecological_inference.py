"""Variant: ecological inference. A group's class-1 count comes from its bin composition alone.

    y_i ~ BetaBinomial(N_i, phi p_i, phi (1 - p_i)),  p_i = sum_k c_ik sigmoid(a_k),  a_k = a_0 + sigma_a z_k

c_ik is group i's share of items in bin k, N_i its items, y_i = sigmoid(HE_i) N_i (HE read as exact, the
WH = inf reading; `wh`, `mu_prior`, `w_concentration` are ignored). Unlike the default model, the bins are
not modelled given the class, so groups whose bin mixes differ for other reasons do not pull rho (the
default model's aggregation bias, bayes_wsc.checks.aggregation); phi absorbs shares that the composition
does not explain. It still assumes that P(class 1 | bin) is the same in every group, and is biased where
that fails too (CCES 2016 by state: benchmarks/RESULTS.md).
rho[bin] = sigmoid(a_k). With q_k the pooled bin shares (one item added per bin), pi = sum_k q_k rho_k,
w1 = q rho / pi and w0 = q (1 - rho) / (1 - pi) follow by Bayes' rule. Every group's item is classified
from its bin alone, so mu[group] = logit(pi) for all groups (predict's group formula then gives rho);
`share[group]` is p_i. The beta-binomial is its continuous extension (y_i, N_i need not be whole).
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.distributions.dist_math import betaln, binomln
from scipy.special import expit, logit

from bayes_wsc.baselines.wsc import naive_rho
from bayes_wsc.models.wsc import add_estimands, pooled_bin_frequencies


def build_model(data, *, wh=10.0, mu_prior="hierarchical", w_concentration=1.0):
    totals = data.group_totals
    composition, y = data.counts / np.maximum(totals, 1e-300)[:, None], expit(data.he) * totals
    q = pooled_bin_frequencies(data.counts)
    with pm.Model(coords=data.coords) as model:
        a0, sigma_a = pm.Normal("a0", 0.0, 2.0), pm.HalfNormal("sigma_a", 1.0)
        rho = pt.sigmoid(a0 + sigma_a * pm.Normal("z", 0.0, 1.0, dims="bin"))
        phi = pm.Gamma("phi", 2.0, 0.02)
        p = pm.Deterministic("share", pt.clip(pt.dot(composition, rho), 1e-9, 1 - 1e-9), dims="group")
        alpha, beta = phi * p, phi * (1 - p)
        # PyMC's BetaBinomial logp without its cast of n and y to integers
        pm.Potential("group_counts", pt.sum(binomln(totals, y) + betaln(y + alpha, totals - y + beta)
                                            - betaln(alpha, beta)))
        pi = pt.sum(q * rho)
        mu = pm.Deterministic("mu", pt.ones(data.n_groups) * pt.log(pi / (1 - pi)), dims="group")
        w = pt.stack([pm.Deterministic("w0", q * (1 - rho) / (1 - pi), dims="bin"),
                      pm.Deterministic("w1", q * rho / pi, dims="bin")])
        add_estimands(data, mu, w)
    return model


def initial_values(data):
    """The direct estimate (eq. 3.1) as rho, moderate pooling and overdispersion."""
    a = logit(naive_rho(data))
    return {"a0": float(a.mean()), "sigma_a": max(float(a.std()), 0.1), "z": (a - a.mean()) / max(a.std(), 0.1),
            "phi": 50.0}


def map_fixed(data):
    return {}
