"""Variant: ecological inference. A group's class-1 count comes from its bin composition alone.

    y_i ~ Binomial(N_i, p_i),  p_i = sum_k c_ik sigmoid(a_k + u_i),  a_k ~ Normal(0, 1.5),
    u = tau e,  e ~ ZeroSumNormal(1) over the groups,  tau ~ HalfNormal(1)

c_ik is group i's share of items in bin k, N_i its items, y_i = sigmoid(HE_i) N_i (HE read as exact, the
WH = inf reading; `wh`, `mu_prior`, `w_concentration` are ignored). Unlike the default model, the bins are
not modelled given the class, so groups whose bin mixes differ for other reasons do not pull rho (the
default model's aggregation bias, bayes_wsc.checks.aggregation). P(class 1 | bin k, group i) =
sigmoid(a_k + u_i) varies by group, but only by one shift u_i on the logit scale, the same for every
bin: a group that leans to class 1 leans so in every bin. Where the groups' bins differ otherwise (the
state-level association of a bin and the class runs against the individual one) the fit is biased, and
where the groups' compositions are too alike to tell the bins apart, the levels rest on that assumption
alone: the variant's own check (`checks`, `composition_collinearity`) says so.

Reported: `rho[bin]`, each bin's class-1 share pooled over the data's items, sum_i n_ik sigmoid(a_k + u_i)
/ sum_i n_ik (what PyEI reports as the district-wide preference); `group_logit[group]` = u_i and
`bin_logit[bin]` = a_k, from which `class_probability` and `predict` give each group's P(class 1 | bin)
with intervals; `mu[group]` = logit(p_i), the group's modelled class-1 share, so pi is the pooled share
and w0, w1 follow from pi and rho by Bayes' rule. A new group's items get rho. The binomial is its
continuous extension (y_i, N_i need not be whole).

Per-group intervals are conditional on that one shift: a group's P(class 1 | bin) moves only with u_i, which
the group's own total pins, so its interval holds the uncertainty of u_i and a_k but not the group-by-bin
variation the totals cannot see. On CCES state aggregates they covered 0.72 / 0.57 / 0.65 of the states' true
cells at 90% (race, born-again, age), where PyEI's multinomial-Dirichlet, with each state's levels free around
the pooled ones, covered 0.94 / 0.84 / 0.72 at the same accuracy (issue 42): read them as intervals under the
one-shift assumption, not as the state's uncertainty (not yet changed in the model).

Sampling (benchmarks/ei_vs_pyei.py): the shifts non-centred and summing to zero (a_k is the average group's
logit, not traded against the shifts' mean), no clipping (log p_i and log(1 - p_i) as log-sum-exps of
log-sigmoids). The earlier form, beta-binomial group counts around one share per bin with hierarchical
a_k = a_0 + sigma_a z_k and the shares clipped, stalled: with 3 bins sigma_a is barely identified (R-hat
1.23, bulk ESS 13 with 4 chains on CCES race, 325 of 4000 transitions divergent). No log-likelihood is
recorded (LOO needs u_i integrated out: given u_i, Pareto k exceeded 0.7 for 31-45 of the 51 states).
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy.special import expit, logit

from bayes_wsc.models.wsc import add_estimands

#: prior sd of each bin's logit (near uniform on the share) and the scale of the groups' shifts
BIN_LOGIT_SD = 1.5
SHIFT_SCALE_SD = 1.0
#: prior sd of each bin's spread of the groups' own departures (cell_scale)
CELL_SCALE_SD = 1.0
#: cell_scale held while the MAP is sought (its mode is at 0, where the departures vanish): small, so the
#: MAP is the one-shift fit's, with the departures near 0
MAP_CELL_SCALE = 0.1


def build_model(data, *, wh=10.0, mu_prior="hierarchical", w_concentration=1.0):
    totals = np.asarray(data.group_totals, dtype=float)
    composition = data.counts / np.maximum(totals, 1e-300)[:, None]
    y = expit(data.he) * totals
    with np.errstate(divide="ignore"):
        log_c = np.log(composition)  # -inf for a bin a group has no items in: the log-sum-exp skips it
    with pm.Model(coords=data.coords) as model:
        a = pm.Normal("a", 0.0, BIN_LOGIT_SD, dims="bin")
        u = pt.zeros(len(data.coords["group"]))
        sigma = pm.HalfNormal("cell_scale", CELL_SCALE_SD, dims="bin")
        z = pm.ZeroSumNormal("z", 1.0, dims=("bin", "group"))  # each bin's departures sum to zero over groups
        pm.Deterministic("bin_logit", a, dims="bin")
        x = pm.Deterministic("cell_logit", a[None, :] + u[:, None] + (sigma[:, None] * z).T, dims=("group", "bin"))
        log_p = pt.logsumexp(log_c + -pt.softplus(-x), axis=1)
        log_q = pt.logsumexp(log_c + -pt.softplus(x), axis=1)
        binomln = pt.gammaln(totals + 1) - pt.gammaln(y + 1) - pt.gammaln(totals - y + 1)
        pm.Potential("group_counts", pt.sum(binomln + y * log_p + (totals - y) * log_q))
        level = pt.sigmoid(x)  # (group, bin)
        rho = (data.counts * level).sum(axis=0) / np.maximum(data.counts.sum(axis=0), 1e-300)
        mu = pm.Deterministic("mu", log_p - log_q, dims="group")
        pi = (totals * pt.exp(log_p)).sum() / totals.sum()
        w = pt.stack([pm.Deterministic("w0", _bin_share(data, 1 - rho, 1 - pi), dims="bin"),
                      pm.Deterministic("w1", _bin_share(data, rho, pi), dims="bin")])
        add_estimands(data, mu, w)
    return model


def _bin_share(data, rho, pi):
    """P(bin k | class) by Bayes' rule from the pooled bin shares, rho and pi."""
    q = data.counts.sum(axis=0) / max(float(data.counts.sum()), 1e-300)
    return q * rho / pi


def initial_values(data):
    """Each bin's logit at the groups' pooled share, no shifts yet."""
    share = float(np.clip((expit(data.he) * data.group_totals).sum() / max(data.group_totals.sum(), 1e-300),
                          0.01, 0.99))
    return {"a": np.full(data.n_bins, logit(share)),
            "cell_scale": np.full(data.n_bins, 0.5), "z": np.zeros((data.n_bins, data.n_groups))}


def map_fixed(data):
    """tau held at a moment estimate while the MAP is sought: the joint mode shrinks the shifts toward 0
    (measured: race's three shares pulled to 0.38-0.41 against NUTS's 0.19-0.46). The estimate: the
    spread of the groups' shares around Goodman's regression on their compositions (items-weighted least
    squares), put on the logit scale at the pooled share, floored at 0.05."""
    totals = np.asarray(data.group_totals, dtype=float)
    used = totals > 0
    composition = data.counts[used] / totals[used, None]
    share, weight = expit(data.he[used]), totals[used] / totals[used].sum()
    beta = np.linalg.lstsq(composition * np.sqrt(weight)[:, None], share * np.sqrt(weight), rcond=None)[0]
    spread = float(np.sqrt(np.sum(weight * (share - composition @ beta) ** 2)))
    pooled = float(np.clip(np.sum(weight * share), 0.01, 0.99))
    return {"cell_scale": np.full(data.n_bins, max(spread / (pooled * (1 - pooled)), 0.05))}


def composition_rows(est, data, seed):
    """The variant's check: whether the groups' compositions separate the bins (`checks.composition`)."""
    from bayes_wsc.checks.composition import collinearity_check

    return [collinearity_check(data.counts, data.coords["bin"])]


#: the variant's own checks, in place of the first model's (which replicate the bins given the class)
CHECKS = (composition_rows,)
