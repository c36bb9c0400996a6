"""Aggregation bias in the first model (seed 000): behavior that depends on the group beyond the class.

The model's key assumption (Sec. 2.1) is that an item's behavior depends on its group only through its
class: group i's bin counts are Multinomial(N_i, s_i w1 + (1 - s_i) w0), s_i = sigmoid(mu_i). When
groups differ in behavior for other reasons (states differ in race and income far beyond what their
vote shares imply), the model explains those differences with the classes and rho(k) goes wrong,
with no individual label to show it.

The check measures that extra variation without labels: Pearson's dispersion of the bin counts around
the fitted mixture, phi = X^2 / df, the quasi-likelihood estimate of how much more the groups' behavior
mixes vary than the multinomial allows. Under the model phi is 1 at any number of groups (its
spread shrinks as the groups grow in number); the model's information about w0, w1 is overstated about
phi times. It is flagged above `PHI_MAX`, an effect size (with p < `ALPHA` so that few cells do not
flag on noise), chosen by measurement on CCES 2016 and simulations (benchmarks/aggregation_check.py,
benchmarks/RESULTS.md). It needs the MAP of the same data and settings: handed over by the caller
(`map_point`, free), or refitted from the program the user's fit left in the cache (about one MAP's
optimizer run), for MAP and NUTS fits alike.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from bayes_wsc._lazy import LazyModule
from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.errors import FitWarning, InputError

special = LazyModule("scipy.special")  # chdtrc is chi2.sf without importing scipy.stats (0.8 s)

CHECK = "aggregation_bias"
#: flag when the bin counts vary more than this many times the multinomial variance ...
PHI_MAX = 2.5
#: ... and significantly so
ALPHA = 0.01
SETTINGS = ("wh", "mu_prior", "w_concentration")
#: groups named in the message as departing most
N_NAMED = 3


def aggregation_bias_check(data: GroupedCounts, settings: dict, *, model, seed: int = 0,
                           map_point: dict | None = None) -> dict:
    """One row `check, statistic, reference, p_value, effect, tolerance, flagged, message`: phi against
    `PHI_MAX`.

    `model` is the first model's estimator class (`WSC`), or an estimator of it, whose class is used;
    `settings` are its model settings (`wh`, `mu_prior`, `w_concentration`). The check fits that
    model's MAP to `data` with them and measures the bin counts' dispersion around it. A caller that
    holds that MAP already (a fit's `mu`, `w0`, `w1`, and `mu_scale` under the hierarchical prior)
    passes it as `map_point`, and the check costs no fit.
    """
    estimator_class = model if isinstance(model, type) else type(model)
    if not isinstance(settings, dict):
        raise InputError(f"settings must be a dict of WSC model settings {SETTINGS}, got {settings!r}")
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        raise InputError(f"settings has {unknown[0]!r}, which is not a WSC model setting {SETTINGS}")
    estimator = estimator_class(method="map", seed=seed, progressbar=False, **settings)
    estimator.check_params()  # every setting and the seed, one line each, before any fit
    if map_point is None:
        map_point = _map_point(estimator, data)
    mu, w0, w1 = (np.asarray(map_point[n], float) for n in ("mu", "w0", "w1"))
    prior_precision = 1.0 / float(map_point.get("mu_scale", math.inf)) ** 2
    phi, df, x2, per_group = dispersion(data, mu, w0, w1, wh=estimator.wh_used, prior_precision=prior_precision)
    if not df >= 1:
        return {"check": CHECK, "statistic": math.nan, "reference": PHI_MAX, "p_value": math.nan,
                "effect": math.nan, "tolerance": PHI_MAX,
                "flagged": False, "message": f"aggregation bias not checked: {data.n_groups} groups in "
                                             f"{data.n_bins} bins leave no degrees of freedom beyond the fit"}
    p_value = float(special.chdtrc(df, x2))
    flagged = bool(phi > PHI_MAX and p_value < ALPHA)
    return {"check": CHECK, "statistic": float(phi), "reference": PHI_MAX, "p_value": p_value,
            "effect": float(phi), "tolerance": PHI_MAX, "flagged": flagged, "message": _message(phi, p_value, flagged, data.group_ids, per_group)}


def dispersion(data: GroupedCounts, mu, w0, w1, *, wh: float, prior_precision: float = 0.0):
    """(phi, df, X^2, X^2 per group) of the bin counts around the mixture at (mu, w0, w1).

    Counts are put back on the items' scale (down-weighting divided out). The degrees of freedom are
    the cells' I (K - 1), less 2 (K - 1) for w0, w1 and, per group, the share of mu_i's precision that
    its own items give (0 with WH = inf, near 1 when they outweigh HE and the prior).
    """
    used = data.counts.sum(axis=0) > 0
    counts = data.counts[:, used] / data.group_scale[:, None]
    w0, w1 = np.asarray(w0, float)[used], np.asarray(w1, float)[used]
    share = special.expit(np.asarray(mu, float))[:, None]
    items = counts.sum(axis=1)
    p = share * w1 + (1 - share) * w0
    expected = items[:, None] * p
    with np.errstate(divide="ignore", invalid="ignore"):
        cells = np.where(expected > 0, (counts - expected) ** 2 / expected, 0.0)
        info = items * (share[:, 0] * (1 - share[:, 0])) ** 2 * np.where(p > 0, (w1 - w0) ** 2 / p, 0.0).sum(axis=1)
    per_group = cells.sum(axis=1)
    leverage = np.zeros(data.n_groups) if math.isinf(wh) else info / (info + wh + prior_precision)
    k = int(used.sum())
    df = (data.n_groups - 2) * (k - 1) - float(leverage.sum())
    x2 = float(per_group.sum())
    return (x2 / df if df > 0 else math.nan), df, x2, per_group


def _map_point(estimator, data: GroupedCounts) -> dict:
    """mu, w0, w1 (and mu_scale, if the model has it) at the MAP of `estimator`'s model."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)  # the user's own fit reports its diagnostics
        posterior = estimator.fit(data)._fitted().posterior
    return {n: posterior[n].values[0, 0] for n in ("mu", "w0", "w1", "mu_scale") if n in posterior}


def _message(phi, p_value, flagged, group_ids, per_group) -> str:
    if not flagged:
        return (f"no sign of aggregation bias: the groups' behavior mixes vary {phi:.2f} times as much as the "
                f"model allows (up to {PHI_MAX:g} is tolerated)")
    worst = ", ".join(repr(str(g)) for g in np.asarray(group_ids)[np.argsort(per_group)[::-1][:N_NAMED]])
    return (f"aggregation bias: the groups' behavior mixes vary {phi:.1f} times as much as the model allows "
            f"(more than {PHI_MAX:g}; p = {p_value:.2g}), most in groups {worst}. The model assumes that behavior "
            "depends on the group only through the class; here it does not, so rho(k) may be pushed toward 0 "
            f"and 1 or turned around, and its intervals are about {math.sqrt(phi):.1f} times too narrow. Group "
            "the items more finely (groups whose members are alike) before trusting rho; "
            "models/ecological_inference.py drops the assumption about behavior but keeps one about the shares.")
