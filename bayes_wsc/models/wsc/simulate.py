"""The simulation study of seed 000, Sec. 5: groups of clicks with a noisy group-level label."""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import expit

from bayes_wsc.data.grouped import GroupedCounts


@dataclass
class WSCTruth:
    """True parameters of a simulated HE -> mu -> Z -> X data set."""

    mu: np.ndarray
    w0: np.ndarray
    w1: np.ndarray
    pi: float
    rho: np.ndarray


def sec5_rho(n_bins: int = 15) -> np.ndarray:
    """A smooth increasing P(Z=1 | X=k) from 0.1 to 0.9, symmetric about 1/2 like Fig. 4."""
    return expit(np.linspace(-2.2, 2.2, n_bins))


def emissions_from_rho(rho: np.ndarray, bin_share: np.ndarray | None = None, pi: float = 0.5):
    """w0, w1 such that P(Z=1 | X=k) = rho[k] when P(Z=1) = pi and P(X=k) = bin_share[k]."""
    rho = np.asarray(rho, dtype=float)
    share = np.full(rho.size, 1.0 / rho.size) if bin_share is None else np.asarray(bin_share, float)
    w1 = rho * share
    w0 = (1 - rho) * share
    return w0 / w0.sum(), w1 / w1.sum()


def simulate_wsc(
    n_groups: int = 500,
    items_per_group: int | np.ndarray = 100,
    n_bins: int = 15,
    sigma_h: float = 0.5,
    mu_loc: float = 0.0,
    mu_scale: float = 1.0,
    w0: np.ndarray | None = None,
    w1: np.ndarray | None = None,
    seed: int | None = 0,
) -> tuple[GroupedCounts, WSCTruth]:
    """The simulation of seed 000, Sec. 5: mu ~ N(0, 1), HE ~ N(mu, sigma_H), J items per group.

    Returns the count table (the sufficient statistics) and the truth. `rho`
    in the truth uses the realised click-weighted pi, matching the estimand.
    """
    rng = np.random.default_rng(seed)
    if w0 is None or w1 is None:
        w0, w1 = emissions_from_rho(sec5_rho(n_bins))
    w0, w1 = np.asarray(w0, float), np.asarray(w1, float)
    n_bins = w0.size
    sizes = np.broadcast_to(np.asarray(items_per_group), (n_groups,)).astype(np.int64)
    mu = rng.normal(mu_loc, mu_scale, n_groups)
    he = mu + sigma_h * rng.standard_normal(n_groups) if sigma_h > 0 else mu.copy()
    counts = simulate_counts(mu, w0, w1, sizes, rng)
    data = GroupedCounts.from_counts(counts, he, group_ids=[f"g{i}" for i in range(n_groups)],
                                     bin_labels=[f"b{k + 1:02d}" for k in range(n_bins)])
    pi = float(np.sum(sizes * expit(mu)) / sizes.sum())
    rho = pi * w1 / (pi * w1 + (1 - pi) * w0)
    return data, WSCTruth(mu=mu, w0=w0, w1=w1, pi=pi, rho=rho)


def differs_from_the_fit(sigma_h: float) -> str:
    """How `simulate_wsc`'s data differ from a draw of the default fit's own model (truth.json's
    `differs_from_the_fit`); `sbc_case` draws every parameter from that prior instead."""
    wh = "HE equals mu, which the fit holds at --wh inf" if sigma_h == 0 else \
        f"fit with --wh {1 / sigma_h ** 2:g} (1 / sigma_h^2) for the fit's likelihood to hold exactly"
    return ("mu_loc = 0 and mu_scale = 1 are fixed values where the fit's prior draws them (mu_loc ~ N(0, 2), "
            "mu_scale ~ HalfNormal(2)); w0 and w1 are Sec. 5's emissions, fixed, not drawn from the fit's "
            f"Dirichlet(1) prior; HE's sd around mu is sigma_h = {sigma_h:g}, while the fit's --wh W assumes "
            f"1 / sqrt(W) (0.316 at the default 10): {wh}. mu_i ~ N(0, 1) and the clicks given mu are the fit's "
            "model, and pi and rho are as the fit defines them (pi weighted by clicks). Data drawn from the fit's "
            "own prior: `sbc_case` of bayes_wsc.models.wsc.simulate, "
            "which tests/test_truth_coverage_slow.py fits.")


def example(seed: int | None = 0) -> GroupedCounts:
    """Small data of the model (40 groups of 30 clicks in 5 bins, Sec. 5's rho): a fit takes seconds.
    The registry's example of the model (`registry.ModelSpec.example`), for tests and trials."""
    return simulate_wsc(n_groups=40, items_per_group=30, n_bins=5, seed=seed)[0]


def simulate_counts(mu, w0, w1, sizes, rng: np.random.Generator) -> np.ndarray:
    """The I x K click counts given the parameters: Z_ij ~ Bernoulli(sigmoid(mu_i)), X_ij ~ w_Z."""
    sizes = np.broadcast_to(np.asarray(sizes), np.shape(mu)).astype(np.int64)
    n_happy = rng.binomial(sizes, expit(mu))
    return np.stack([rng.multinomial(n, w1) for n in n_happy]) + np.stack(
        [rng.multinomial(n, w0) for n in sizes - n_happy]
    )


def sbc_case(
    n_groups: int = 40,
    items_per_group: int = 20,
    n_bins: int = 5,
    *,
    wh: float = 10.0,
    w_concentration: float = 1.0,
    model_file: str | None = None,
    draws: int = 500,
    tune: int = 500,
    chains: int = 2,
    target_accept: float = 0.8,
    n_mu: int = 3,
    mu: str | None = None,
):
    """Simulation-based calibration of the WSC model (see `bayes_wsc.sbc`), fitted with `mu` (None: the
    default, the shared grid for NUTS; "integrated", "sampled").

    The prior draw holds mu_loc, mu_scale, mu, w0, w1, the observed HE ~ N(mu, 1/sqrt(WH)) and rho and pi,
    all drawn from the prior of the model that samples every mu_i, whichever `mu` fits (a model with mu
    integrated out has no mu to draw); the clicks (a `pm.Potential` in the model) are simulated here given
    (mu, w0, w1). Ranked: every rho[k], pi, mu_loc, mu_scale, the first `n_mu` mu[i], w0[0] and w1[0].
    """
    from bayes_wsc.models.wsc.model import WSC
    from bayes_wsc.sbc import SBCCase

    labels = [f"b{k + 1:02d}" for k in range(n_bins)]
    ids = [f"g{i}" for i in range(n_groups)]
    template = GroupedCounts.from_counts(np.full((n_groups, n_bins), float(items_per_group) / n_bins),
                                         np.zeros(n_groups), group_ids=ids, bin_labels=labels)

    def simulate(draw, rng):
        counts = simulate_counts(draw["mu"], draw["w0"], draw["w1"], items_per_group, rng)
        return GroupedCounts.from_counts(counts, draw["he"], group_ids=ids, bin_labels=labels)

    def estimator(seed, mu=mu):
        return WSC(wh=wh, w_concentration=w_concentration, model_file=model_file, method="nuts", mu=mu,
                   draws=draws, tune=tune, chains=chains, seed=seed, target_accept=target_accept,
                   progressbar=False)

    @functools.cache
    def sampled_model():
        return estimator(0, mu="sampled")._recipe()[0](template)

    def draw_prior(rng):
        import pymc as pm

        from bayes_wsc.inference import LOG_LIKELIHOOD_PREFIX

        model = sampled_model()
        names = [v.name for v in [*model.free_RVs, *model.observed_RVs, *model.deterministics]
                 if not v.name.startswith(LOG_LIKELIHOOD_PREFIX)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            values = pm.draw([model[n] for n in names], random_seed=int(rng.integers(2**31)))
        return {n: np.asarray(v) for n, v in zip(names, values)}

    quantities = [f"rho[{k}]" for k in range(n_bins)] + ["pi", "mu_loc", "mu_scale"]
    quantities += [f"mu[{i}]" for i in range(min(n_mu, n_groups))]
    if n_bins > 1:
        quantities += ["w0[0]", "w1[0]"]
    description = (f"WSC model, I = {n_groups} groups of J = {items_per_group} clicks, K = {n_bins} bins, "
                   f"WH = {wh}, Dirichlet({w_concentration}); NUTS {chains} chains x ({tune} tune + {draws} draws), "
                   f"mu={estimator(0).mu_used!r}" + (f"; variant {model_file}" if model_file else ""))
    return SBCCase("wsc", template, simulate, estimator, quantities, draw_prior=draw_prior, description=description)


def counts_to_clicks(data: GroupedCounts) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Expand a count table to one row per item plus a groups table, as a user's files would be.

    Only for integer counts without down-weighting; the behavior column keeps its name.
    """
    counts = np.rint(data.counts).astype(np.int64)
    group_rep = np.repeat(np.repeat(np.arange(data.n_groups), data.n_bins), counts.ravel())
    bin_rep = np.repeat(np.tile(np.arange(data.n_bins), data.n_groups), counts.ravel())
    column = data.bins.columns[0]
    clicks = pd.DataFrame({"group": data.group_ids[group_rep], column: np.asarray(data.bins.labels)[bin_rep]})
    groups = pd.DataFrame({"group": data.group_ids, "he": data.he})
    return clicks, groups
