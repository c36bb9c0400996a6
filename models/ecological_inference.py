"""Variant: ecological inference. A group's class-1 count comes from its bin composition alone.

    y_i ~ Binomial(N_i, p_i),  p_i = sum_k c_ik sigmoid(a_k + u_i + s_k z_ik),  a_k ~ Normal(0, 1.5),
    u = tau e,  e ~ ZeroSumNormal(1) over the groups,  tau ~ HalfNormal(1),
    z_k ~ ZeroSumNormal(1) over the groups,  s_k ~ HalfNormal(1)

c_ik is group i's share of items in bin k, N_i its items, y_i = sigmoid(HE_i) N_i (HE read as exact, the
WH = inf reading; `wh`, `mu_prior`, `w_concentration` are ignored). Unlike the default model, the bins are
not modelled given the class, so groups whose bin mixes differ for other reasons do not pull rho (the
default model's aggregation bias, bayes_wsc.checks.aggregation). P(class 1 | bin k, group i) =
sigmoid(a_k + u_i + s_k z_ik): a shift u_i that moves all of a group's bins together, and each bin's own
departure s_k z_ik, with a learned scale per bin (`cell_scale`). The group's total pins only the
composition-weighted sum, so the departures are what lets a group's bins move apart as PyEI's do. Where the
state-level association of a bin and the class runs against the individual one the pooled levels are still
biased (the ecological fallacy; no label-free check sees it), and where the groups' compositions are too
alike to tell the bins apart, the levels rest on the model's assumptions alone: the variant's check
(`composition_collinearity`) says so.

Reported: `rho[bin]`, each bin's class-1 share pooled over the data's items, sum_i n_ik sigmoid(cell_logit_ik)
/ sum_i n_ik (what PyEI reports as the district-wide preference); `cell_logit[group, bin]`, from which
`class_probability` and `predict` give each group's P(class 1 | bin) with intervals; `group_logit[group]` =
u_i and `bin_logit[bin]` = a_k; `mu[group]` = logit(p_i), the group's modelled class-1 share, so pi is the
pooled share and w0, w1 follow from pi and rho by Bayes' rule. A new group's items get rho. The binomial is
its continuous extension (y_i, N_i need not be whole).

Per-group intervals (benchmarks/ei_vs_pyei.py, RESULTS "EI variant vs PyEI"): on CCES 2016 by state the
earlier form, one shift per group and no departures, covered 0.85 / 0.44 / 0.56 of the states' true cells at
90% (weighted by respondents; race in 4 levels, born-again, age in 3 levels), PyEI's multinomial-Dirichlet
0.89 / 0.96 / 1.00. The true cells depart from level + state shift by 0.05-0.66 on the logit scale (Black
voters' the most), which one shift cannot follow. With the departures the variant covers 0.89 / 0.64 / 0.53,
level with PyEI on race but not on born-again or age, where its levels sit off the truth (the ecological
fallacy on born-again, collinear compositions on age) and its intervals around them are narrower than
PyEI's; state-level mean absolute error 0.076 / 0.065 / 0.180 against PyEI's 0.062 / 0.055 / 0.044. So every
fit with draws says so (`group_intervals`, below): read a group's interval as the model's, not as calibrated.

Sampling: the shifts and departures non-centred and summing to zero over the groups (a_k is the average
group's logit), no clipping (log p_i and log(1 - p_i) as log-sum-exps of log-sigmoids). One departure scale
shared by the bins sampled with 170 of 4000 transitions divergent on race; one per bin with none. The earlier
form, beta-binomial group counts around hierarchical a_k = a_0 + sigma_a z_k with clipped shares, stalled
(R-hat 1.23 on CCES race). No log-likelihood is recorded (LOO needs a group's own effects integrated out:
benchmarks/ei_vs_pyei.py --loo does that by Monte Carlo).
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
        tau = pm.HalfNormal("tau", SHIFT_SCALE_SD)
        u = pm.Deterministic("group_logit", tau * pm.ZeroSumNormal("e", 1.0, dims="group"), dims="group")
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
    return {"a": np.full(data.n_bins, logit(share)), "tau": 0.5, "e": np.zeros(data.n_groups),
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
    return {"tau": max(spread / (pooled * (1 - pooled)), 0.05), "cell_scale": np.full(data.n_bins, MAP_CELL_SCALE)}


def composition_rows(est, data, seed):
    """The variant's check: whether the groups' compositions separate the bins (`checks.composition`)."""
    from bayes_wsc.checks.composition import collinearity_check

    return [collinearity_check(data.counts, data.coords["bin"])]


#: the per-group 90% intervals' coverage of the true state cells on CCES 2016 (race in 4 levels, born-again,
#: age in 3 levels; benchmarks/ei_vs_pyei.py --seed 42), this variant's and PyEI's
MEASURED_COVERAGE = ((0.89, 0.64, 0.53), (0.89, 0.96, 1.00))


def interval_rows(est, data, seed):
    """Every fit with draws says that its per-group intervals may not cover, with the rates measured: no
    label-free quantity measured so far tells the fits whose intervals cover from those whose do not, so
    the row is flagged on every such fit (effect: the largest bin's posterior-mean departure scale)."""
    from bayes_wsc.criticism import Check

    posterior = est.idata_.posterior
    if posterior.sizes["chain"] * posterior.sizes["draw"] == 1:
        return []
    scale = posterior["cell_scale"].mean(("chain", "draw")).values
    ours, pyei = (" / ".join(f"{v:.2f}" for v in rates) for rates in MEASURED_COVERAGE)
    message = (f"each group's P(class 1 | bin) interval comes from the model's assumptions about how a group's "
               f"bins depart from each other (largest learned departure scale {scale.max():.2f} on the logit "
               f"scale), which the groups' totals cannot check: on CCES 2016 by state the 90% intervals covered "
               f"{ours} of the true cells (race, born-again, age), PyEI's {pyei}. Read them as the model's, "
               "not as calibrated; where the pooled levels are off (the ecological fallacy), so are they.")
    return [Check("group_intervals", float(scale.max()), float("nan"), float("nan"), True, message,
                  float(scale.max()), float("nan"))]


#: the variant's own checks, in place of the first model's (which replicate the bins given the class)
CHECKS = (composition_rows, interval_rows)
