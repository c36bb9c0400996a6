"""Weakly supervised clustering from noisy group averages (seed 000, Sec. 2, Fig. 3).

    mu_i ~ F0                      group quality (logit scale)
    HE_i ~ Normal(mu_i, sigma_H)   noisy human evaluation, WH = 1 / sigma_H^2
    Z_ij ~ Bernoulli(sigmoid(mu_i))
    X_ij ~ Categorical(w_{Z_ij})   behavior bin, w_0, w_1 ~ Dirichlet(c)

Z is summed out on the I x K table of weighted counts. The model is written as
small blocks that add to the current `pm.Model`, so that a variant in
`models/` can swap one block (rater noise, emissions) and keep the rest.
"""

from __future__ import annotations

import functools
import math
import time
import warnings
from typing import NamedTuple

import numpy as np
import pandas as pd
import xarray as xr

from bayes_wsc import inference, maths
from bayes_wsc._lazy import LazyModule
from bayes_wsc.data.grouped import BehaviorBins, GroupedCounts
from bayes_wsc.data.tables import key_text
from bayes_wsc.defaults import DEFAULT_CI
from bayes_wsc.diagnostics import weightless_data_message
from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.estimator import Estimator
from bayes_wsc.graph_inputs import declare
from bayes_wsc.maths.wsc import naive_emissions
from bayes_wsc.models.wsc.settings import MU_METHODS, MU_PRIORS, WSCSettings  # noqa: F401  (MU_*: importable here)
from bayes_wsc.settings import checked
from bayes_wsc.posterior import append_predictions, stacked, summarize_columns, summarize_rows

# PyMC and PyTensor load when a model is built, not when the estimator is: a MAP whose compiled
# program is cached (bayes_wsc.map_program) runs without them
pm = LazyModule("pymc")
pt = LazyModule("pytensor.tensor")
likelihoods = LazyModule("bayes_wsc.likelihoods")
transforms = LazyModule("bayes_wsc.transforms")
special = LazyModule("scipy.special")

INTEGRATING = ("integrated", "grid")
#: Below this WH the HE barely orients the classes; the posterior can hold both labelings.
WEAK_WH = 1.0
#: Above this WH the estimator fits WH = inf (mu_i = HE_i) instead, with a note. The HE term's curvature,
#: WH per group, then dwarfs the clicks' (about a quarter of a group's clicks), and L-BFGS in the
#: unconstrained space stops short on that badly scaled problem: on simulated data (40 x 20, 200 x 100,
#: 30 x 2000 and 500 x 5 groups x clicks) rho at WH = 1e4 and 1e5 agrees with WH = inf to 1e-4 to 3e-3,
#: at 1e6 to 1e7 it is off by up to 0.03, and from 1e9 the search stops after one iteration (rho near
#: 0.5), reporting convergence. Up to 1e5 the difference from WH = inf is within what the optimizer
#: resolves (sigma_H = 0.003 on the logit scale), so the limit loses nothing a finite WH could show.
WH_LIMIT = 1e5


def effective_wh(wh: float) -> float:
    """The WH a fit uses: WH itself, or inf above `WH_LIMIT`."""
    return math.inf if float(wh) > WH_LIMIT else float(wh)


def wh_limit_message(wh: float) -> str:
    return (f"WH={float(wh):g} is beyond {WH_LIMIT:g}, where the optimizer cannot resolve a finite WH from its "
            "limit (sigma_H below 0.003 on the logit scale): the fit used WH = inf instead, which fixes each "
            "group's mu at its HE.")


def check_settings(wh: float, mu_prior: str, w_concentration: float, *, warn: bool = True,
                   mu: str | None = "sampled") -> None:
    """Fail early, naming the setting, before any model is built (each as declared, `WSCSettings`, then the
    rule between WH and F0); warn about a weak WH."""
    number = checked(WSCSettings, {"wh": wh, "mu_prior": mu_prior, "w_concentration": w_concentration, "mu": mu})["wh"]
    check_flat_prior(number, mu_prior)
    if warn and number < WEAK_WH:
        warnings.warn(weak_wh_message(wh), FitWarning, stacklevel=3)


def check_flat_prior(wh: float, mu_prior: str) -> None:
    """F0 flat needs the HE term: without it (WH = 0) the posterior is improper."""
    if wh == 0 and mu_prior == "flat":
        raise InputError("wh=0 with mu_prior='flat' gives an improper posterior; use mu_prior='hierarchical'")


def weak_wh_message(wh: float) -> str:
    return (f"WH={wh} gives the human evaluations little weight: the labelings Z and 1-Z then fit the "
            "clicks almost equally well, so the posterior can be bimodal and chains may land in "
            "opposite orientations. Raise WH, or check the fit's orientation diagnostics.")


# ---------------------------------------------------------------------- the data the graph reads
#: the dims of every `pm.Data` the blocks declare (`graph_inputs.declare`)
DATA_DIMS = {"he_data": "group", "counts": ("group", "bin"), "pooled_bin_frequencies": "bin", "group_totals": "group"}


def he_inputs(data: GroupedCounts) -> dict[str, np.ndarray]:
    """The values `add_group_quality` and `add_integrated_clicks` declare as `pm.Data`: HE per group."""
    return {"he_data": data.he}


def click_inputs(data: GroupedCounts) -> dict[str, np.ndarray]:
    """The values the click blocks declare as `pm.Data`: the count table and the pooled bin frequencies."""
    return {"counts": data.counts, "pooled_bin_frequencies": pooled_bin_frequencies(data.counts)}


def estimand_inputs(data: GroupedCounts) -> dict[str, np.ndarray]:
    """The values `add_estimands` declares as `pm.Data`: each group's clicks."""
    return {"group_totals": data.group_totals}


def model_data(data: GroupedCounts) -> dict[str, np.ndarray]:
    """Every data-derived value that `build_model`'s blocks declare as `pm.Data`, by name, in NumPy.

    A cached MAP program (`map_program`) takes them as runtime inputs, so one program serves every
    data set of the same shapes; building a program checks that this list and the model agree.
    """
    return {**he_inputs(data), **click_inputs(data), **estimand_inputs(data)}


# ---------------------------------------------------------------------- blocks
def add_group_quality(data: GroupedCounts, *, wh: float = 10.0, mu_prior: str = "hierarchical"):
    """mu[group] with its prior F0, and the observed HE ~ Normal(mu, 1/sqrt(WH)).

    WH = inf fixes mu at HE (known proportions); WH = 0 drops the HE term.
    """
    he = declare(he_inputs(data), DATA_DIMS)["he_data"]
    if math.isinf(wh):
        return pm.Deterministic("mu", he, dims="group")
    mu = group_quality_prior(mu_prior)
    if wh > 0:
        pm.Normal("he", mu=mu, sigma=1.0 / math.sqrt(wh), observed=he, dims="group")
    return mu


def group_quality_prior(mu_prior: str = "hierarchical"):
    """F0: Normal(mu_loc, mu_scale) with weakly informative hyperpriors, or flat."""
    if mu_prior == "flat":
        return pm.Flat("mu", dims="group")
    mu_loc = pm.Normal("mu_loc", 0.0, 2.0)
    mu_scale = pm.HalfNormal("mu_scale", 2.0)
    return pm.Normal("mu", mu_loc, mu_scale, dims="group")


def add_emissions(data: GroupedCounts, *, w_concentration: float = 1.0):
    """w0[bin], w1[bin] ~ Dirichlet(c); returns w as a (2, K) tensor (class 0 first).

    The stick-breaking transform gives NUTS near-independent coordinates.
    """
    if data.n_bins == 1:
        w0 = pm.Deterministic("w0", pt.ones(1), dims="bin")
        w1 = pm.Deterministic("w1", pt.ones(1), dims="bin")
    else:
        alpha = np.full(data.n_bins, float(w_concentration))
        w0 = pm.Dirichlet("w0", a=alpha, dims="bin", default_transform=transforms.StickBreaking())
        w1 = pm.Dirichlet("w1", a=alpha, dims="bin", default_transform=transforms.StickBreaking())
    return pt.stack([w0, w1])


def pooled_bin_frequencies(counts: np.ndarray) -> np.ndarray:
    """q_k: the share of all clicks in bin k, smoothed by one click per bin so that none is 0."""
    counts = np.asarray(counts, dtype=float)
    return (counts.sum(axis=0) + 1.0) / (counts.sum() + counts.shape[1])


def add_click_likelihood(data: GroupedCounts, mu, w, *, he_logp=None):
    """The weighted counts n_ik with Z marginalized, relative to the pooled bin frequencies q:

        sum_ik n_ik log(sig(mu_i) w1_k + (1-sig(mu_i)) w0_k)  -  sum_ik n_ik log q_k.

    The second sum is a constant, so the posterior is unchanged. It keeps the
    log density of the order of what the groups tell apart (8e4 at 1M clicks)
    instead of 3.5e6, so that float32 NUTS (`fit.fit_nuts(precision=...)`)
    evaluates it to within 0.06 nats rather than 0.3 (measured at 1M clicks;
    what is left comes from rounding w itself to float32).

    Also keeps the pointwise log-likelihood per group (`log_likelihood` group, variable
    `groups`, for LOO): the group's clicks with the centring constant added back, plus its HE
    term log N(HE_i | mu_i, sigma_H). `he_logp` gives that term per group; by default it is
    read from the model's observed `he` (none with WH = inf or 0, where HE is not modelled).
    With down-weighted groups or item weights the clicks term is the weighted (pseudo-)
    log-likelihood the model is fitted with.
    """
    counts, q = declare(click_inputs(data), DATA_DIMS).values()
    per_group = likelihoods.binary_counts_mixture_logp(counts, mu, w[0] / q, w[1] / q).sum(axis=1)
    pm.Potential("clicks", per_group.sum())
    centring = pt.dot(counts, pt.log(q))  # the constant subtracted above, per group
    he_logp = observed_he_logp() if he_logp is None else he_logp
    likelihoods.record_pointwise("groups", per_group + centring + he_logp, dims="group")
    return counts


def observed_he_logp():
    """log N(HE_i | mu_i, sigma_H) per group from the current model's observed `he`, or 0 without one."""
    model = pm.modelcontext(None)
    he = model.named_vars.get("he")
    if he is None or he not in model.observed_RVs:
        return 0.0
    return pm.logp(he, model.rvs_to_values[he])


def add_estimands(data: GroupedCounts, mu, w):
    """pi (click-weighted mean of sigmoid(mu)) and rho[bin] = P(Z = 1 | X = k) by Bayes' rule."""
    totals = declare(estimand_inputs(data), DATA_DIMS)["group_totals"]
    pi = pm.Deterministic("pi", click_weighted_share(totals, pt.sigmoid(mu)))
    pm.Deterministic("rho", class1_share(pi, w[0], w[1]), dims="bin")
    return pi


def hierarchical_scale_fixed(data: GroupedCounts, wh: float, mu_prior: str = "hierarchical") -> dict:
    """Where the MAP holds mu_scale: under the hierarchical F0 the joint mode puts it at 0 (every mu
    at mu_loc: an unbounded density), so it is held at its moment estimate from HE,
    var(HE) = mu_scale^2 + 1/WH, floored at half the spread of HE and at 0.1. None for a flat
    F0 or WH = inf (mu fixed at HE)."""
    if mu_prior != "hierarchical" or np.isinf(float(wh)):
        return {}
    spread = float(np.var(data.he))
    noise = 1.0 / float(wh) if float(wh) > 0 else 0.0
    return {"mu_scale": float(np.sqrt(max(spread - noise, 0.25 * spread, 0.01)))}


def build_model(
    data: GroupedCounts,
    *,
    wh: float = 10.0,
    mu_prior: str = "hierarchical",
    w_concentration: float = 1.0,
    mu: str = "sampled",
) -> pm.Model:
    """The HE -> mu -> Z -> X model as a `pm.Model` with dims `group` and `bin`.

    Add to it inside `with model:` before fitting, or copy a file from
    `models/` to swap a block. `mu="integrated"` integrates every mu_i out of the density
    (`add_integrated_clicks`); that model has no mu, pi or rho, which `WSC.complete_draws`
    adds to its draws. `mu="grid"` takes the same integrals on one grid of nodes (`grid_plan`). With
    WH = inf (mu = HE) there is nothing to integrate, and all are the same.
    """
    check_settings(wh, mu_prior, w_concentration, mu=mu)
    if mu in INTEGRATING and not math.isinf(wh):
        grid = grid_plan(data, wh, mu_prior) if mu == "grid" else None
        with pm.Model(coords=data.coords) as model:
            w = add_emissions(data, w_concentration=w_concentration)
            add_integrated_clicks(data, w, wh=wh, mu_prior=mu_prior, grid=grid)
        return model
    with pm.Model(coords=data.coords) as model:
        mu = add_group_quality(data, wh=wh, mu_prior=mu_prior)
        w = add_emissions(data, w_concentration=w_concentration)
        add_click_likelihood(data, mu, w)
        add_estimands(data, mu, w)
    return model


# ---------------------------------------------------------------------- mu integrated out
#: Gauss-Hermite nodes and Newton steps of the integral over a group's mu in the model's graph
#: (`mu="integrated"`), where NUTS evaluates it at every leapfrog step, each node costing about one
#: evaluation of the sampled model's click term. 5 nodes and 2 steps from the mode of F0 and HE agree
#: with 30 nodes and 8 steps to 2e-5 nats per group (Sec. 5 data, 2000 groups of 100 clicks,
#: WH = 10; 0.0065 nats in all; 3 nodes: 1e-3 and 0.58); on tiny data with 3 sharply different
#: bins, to 4e-6 with HE (WH = 10), 4e-4 without it (WH = 0) and 2e-4 under the flat F0 (WH = 4),
#: and 15 nodes bring all three within 1e-7
#: (tests/test_model_wsc_integrated_mu.py). Without HE, Newton starts at mu_loc and takes 4 steps.
MODEL_GH_NODES = 5
MODEL_NEWTON_STEPS = {True: 2, False: 4}  # by whether HE is modelled


def add_integrated_clicks(data: GroupedCounts, w, *, wh: float = 10.0, mu_prior: str = "hierarchical",
                          nodes: int = MODEL_GH_NODES, sigma_h=None, grid: GridPlan | None = None):
    """F0's hyperparameters and the clicks and HE of every group with its mu_i integrated out
    (`group_quadrature`): NUTS then samples 2K + 2 dimensions instead of I + 2K + 2, without the
    funnel between mu_scale and the mu_i. The click term is centred as in `add_click_likelihood`;
    the pointwise log-likelihood per group is the integral itself (what LOO leaves out under the
    hierarchical F0). Returns (mu_loc, mu_scale), None for a flat F0; mu_i is drawn after NUTS
    (`draw_group_qualities`). `sigma_h`, a variable of the model, replaces 1 / sqrt(wh) (a variant
    that learns the rater noise). `grid`: the nodes shared by the groups on it (`grid_plan`), instead of
    Gauss-Hermite nodes per group, which integrate the groups too heavy for it."""
    from bayes_wsc import group_quadrature as gq

    he = declare(he_inputs(data), DATA_DIMS)["he_data"]
    counts, q = declare(click_inputs(data), DATA_DIMS).values()
    loc = scale = None
    if mu_prior == "hierarchical":
        loc, scale = pm.Normal("mu_loc", 0.0, 2.0), pm.HalfNormal("mu_scale", 2.0)
    sigma = sigma_h if sigma_h is not None else (1.0 / math.sqrt(wh) if wh > 0 else None)
    g = gq.Integrand(counts, he, w[0] / q, w[1] / q, loc, scale, sigma)
    ops = gq.pytensor_ops()
    def by_quadrature(g):
        return gq.integrated_loglik(ops, g, gq.gaussian_start(g), nodes=nodes, steps=MODEL_NEWTON_STEPS[sigma is not None])

    if grid is None or not grid.on_grid.any():
        per_group = by_quadrature(g)
    elif grid.on_grid.all():
        per_group = gq.grid_loglik(ops, g, grid.nodes)
    else:  # the heaviest groups by per-group quadrature, the rest on the grid, back in the groups' order
        light, heavy = np.flatnonzero(grid.on_grid), np.flatnonzero(~grid.on_grid)
        parts = [gq.grid_loglik(ops, g._replace(counts=counts[light], he=he[light]), grid.nodes),
                 by_quadrature(g._replace(counts=counts[heavy], he=he[heavy]))]
        per_group = pt.concatenate(parts)[np.argsort(np.concatenate([light, heavy]))]
    pm.Potential("clicks", per_group.sum())
    likelihoods.record_pointwise("groups", per_group + pt.dot(counts, pt.log(q)), dims="group")
    return loc, scale


#: `mu="grid"`: the nodes are GRID_SPACING times the finest width any group's integrand can have
#: (`group_quadrature.narrowest_width`: its bound on the clicks' curvature, sigma_H, F0's scale) apart,
#: and reach GRID_REACH of its own widths past every group's integrand. On Sec. 5 data (2000 groups,
#: J = 5 and 100, WH = 4 and 10, K = 15 and 30, the truth and 3 points around it) the grid agrees with
#: 40-node adaptive Gauss-Hermite (itself with scipy's quad to 1e-14) to 2e-8 nats per group at spacing 1
#: (34-74 nodes), 4e-4 at 1.5 and 2e-2 at 2; the model's 5-node quadrature (mu="integrated") to 9e-4
#: (benchmarks/grid_accuracy.py, benchmarks/RESULTS.md).
GRID_SPACING = 1.0
GRID_REACH = 8.0
#: the gradient's cost grows with the nodes: at 10,000 groups of 100 clicks 2.1 ms at 78 nodes against 4.8 ms
#: by per-group quadrature; with one group of 1000 clicks 207 nodes, 6.7 against 5.4 ms; of 3000 clicks 352
#: nodes, 20 against 3.5 ms. A grid never takes more than this many nodes: the heaviest groups (narrow
#: everywhere, so they set the spacing) are then integrated by per-group quadrature instead (`grid_plan`)
MAX_GRID_NODES = 250
#: what one group costs by per-group quadrature (5 Gauss-Hermite nodes and Newton steps), in nodes of the
#: shared grid: a gradient cost 0.44 ms per-group against 0.34 ms on 76 nodes at 1000 groups (98 nodes a
#: group) and 4.25 against 2.31 ms on 78 nodes at 10,000 (143) (benchmarks/bench_gradient.py, RESULTS.md);
#: the lower, so that a doubtful split leaves the heavy groups to the quadrature
GRID_NODES_PER_QUADRATURE_GROUP = 100
#: a grid that holds every group within MAX_GRID_NODES is split only where that costs at most this share of it:
#: the grid is the more accurate (2e-8 nats a group against up to 9e-4 by 5-node quadrature)
GRID_SPLIT_GAIN = 0.5
#: the check after sampling (`grid_check`): on up to GRID_CHECK_DRAWS draws, no group may put more than
#: GRID_END_WEIGHT of its integral on an end node, and no draw's finest width may be below the spacing
#: over GRID_SPACING_LIMIT (where the error of the sum reaches about 1e-4 nats)
GRID_CHECK_DRAWS = 100
GRID_END_WEIGHT = 1e-6
GRID_SPACING_LIMIT = 1.5


class GridPlan(NamedTuple):
    """Which groups `mu="grid"` integrates on the shared nodes (`on_grid`, (I,) bools) and which, the
    heaviest, by per-group quadrature (`add_integrated_clicks`); `nodes` is empty when none is on it."""

    nodes: np.ndarray
    on_grid: np.ndarray


def grid_plan(data: GroupedCounts, wh: float, mu_prior: str) -> GridPlan:
    """The nodes of `mu="grid"` and the groups on them, from the data alone. The nodes are spaced by the
    finest width the integrands on the grid can have (set by its heaviest group, F0's scale at its moment
    estimate) and cover each of them at the paper's starting point (naive emissions, F0 at the moments of
    HE). A heavy group narrows the spacing for all: the split that costs the least per gradient, in nodes
    (`GRID_NODES_PER_QUADRATURE_GROUP` for a group by per-group quadrature), within `MAX_GRID_NODES`,
    among sending none, the heaviest 1, 2, 4, ... groups, or all of them to the quadrature; every group on
    the grid unless a split costs at most `GRID_SPLIT_GAIN` of that."""
    from bayes_wsc import group_quadrature as gq

    q = pooled_bin_frequencies(data.counts)
    w0, w1 = naive_emissions(data)
    sigma = 1.0 / math.sqrt(wh) if wh > 0 else None
    loc = scale = None
    if mu_prior == "hierarchical":
        loc, scale = float(np.mean(data.he)), hierarchical_scale_fixed(data, wh, mu_prior)["mu_scale"]
    g = gq.Integrand(np.asarray(data.counts, float), np.asarray(data.he, float), w0 / q, w1 / q, loc, scale, sigma)
    low, high = gq.integrand_extent(g, reach=GRID_REACH)
    totals = np.asarray(data.counts, float).sum(axis=1)
    heaviest_first = np.sort(totals)[::-1]
    best = GridPlan(np.zeros(0), np.zeros(totals.size, bool))
    best_cost = GRID_NODES_PER_QUADRATURE_GROUP * totals.size
    whole = None  # every group on the grid, and its cost
    heavy = 0
    while heavy < totals.size:
        on_grid = totals <= heaviest_first[heavy]
        quadrature_cost = GRID_NODES_PER_QUADRATURE_GROUP * int((~on_grid).sum())
        if quadrature_cost >= best_cost:
            break
        spacing = GRID_SPACING * float(gq.narrowest_width(heaviest_first[heavy], sigma, scale))
        nodes = gq.grid_over(float(low[on_grid].min()), float(high[on_grid].max()), spacing)
        cost = int(on_grid.sum()) * nodes.size + quadrature_cost
        if nodes.size <= MAX_GRID_NODES:
            whole = (GridPlan(nodes, on_grid), cost) if heavy == 0 else whole
            best, best_cost = (GridPlan(nodes, on_grid), cost) if cost < best_cost else (best, best_cost)
        heavy = max(1, 2 * heavy)
    return whole[0] if whole is not None and best_cost > GRID_SPLIT_GAIN * whole[1] else best


def data_grid(data: GroupedCounts, wh: float, mu_prior: str) -> np.ndarray:
    """The shared nodes of `mu="grid"` on these data (`grid_plan`)."""
    return grid_plan(data, wh, mu_prior).nodes


def grid_check(data: GroupedCounts, nodes: np.ndarray, w0, w1, mu_loc=None, mu_scale=None, sigma_h=None,
               on_grid=None) -> dict:
    """Whether the grid held every group on it (`on_grid`, default all) at the sampled values: the
    largest share of a group's integral on an end node over up to `GRID_CHECK_DRAWS` draws spread over
    the run, and the largest spacing over the finest width any of them can have, over every draw (F0's
    scale and sigma_H per draw). w0, w1 (S, K); mu_loc, mu_scale, sigma_h (S,) or None. `ok` is False
    past `GRID_END_WEIGHT` or `GRID_SPACING_LIMIT`."""
    from bayes_wsc import group_quadrature as gq

    q = pooled_bin_frequencies(data.counts)
    counts, he = np.asarray(data.counts, float), np.asarray(data.he, float)
    on_grid = np.ones(len(he), bool) if on_grid is None else np.asarray(on_grid, bool)
    counts, he = counts[on_grid], he[on_grid]
    found = {"nodes": int(nodes.size), "groups_on_grid": int(on_grid.sum()),
             "groups_by_quadrature": int((~on_grid).sum()), "draws_checked": 0, "largest_end_weight": 0.0,
             "spacing_over_finest_width": 0.0, "ok": True}
    if not on_grid.any():
        return found
    spacing = float(nodes[1] - nodes[0])
    heaviest = float(counts.sum(axis=1).max())
    n_draws = np.shape(w0)[0]
    ratio = float(np.max(spacing / gq.narrowest_width(heaviest, sigma_h, mu_scale) + np.zeros(n_draws)))
    end = 0.0
    picked = np.unique(np.linspace(0, n_draws - 1, min(n_draws, GRID_CHECK_DRAWS)).round().astype(int))
    for s in picked:
        g = gq.Integrand(counts, he, np.asarray(w0[s], float) / q, np.asarray(w1[s], float) / q,
                         None if mu_loc is None else float(mu_loc[s]), None if mu_scale is None else float(mu_scale[s]),
                         None if sigma_h is None else float(np.broadcast_to(sigma_h, (n_draws,))[s]))
        end = max(end, float(gq.grid_end_weight(gq.grid_log_terms(gq.numpy_ops(), g, nodes)).max()))
    return {**found, "spacing": spacing, "range": [float(nodes[0]), float(nodes[-1])], "heaviest_on_grid": heaviest,
            "draws_checked": int(picked.size), "largest_end_weight": end, "spacing_over_finest_width": ratio,
            "ok": bool(end <= GRID_END_WEIGHT and ratio <= GRID_SPACING_LIMIT)}


def grid_message(check: dict) -> list[str]:
    """The plain warning of a grid that did not hold every group's integrand (`grid_check`)."""
    if check.get("ok", True):
        return []
    return [f"mu='grid': {' and '.join(grid_reasons(check))}, so the density NUTS sampled may differ from the "
            "model's by more than 1e-4 nats a group: do not trust this fit; refit with mu='integrated'."]


def grid_reasons(check: dict) -> list[str]:
    """Why the grid did not hold (`grid_check`), in words."""
    why = []
    if check["largest_end_weight"] > GRID_END_WEIGHT:
        why.append(f"a group put {check['largest_end_weight']:.1g} of its integral on an end node of the grid "
                   f"{check['range'][0]:.2f}..{check['range'][1]:.2f} (its mass reaches past the grid)")
    if check["spacing_over_finest_width"] > GRID_SPACING_LIMIT:
        why.append(f"the nodes are {check['spacing_over_finest_width']:.2f}x the finest width a group's integrand "
                   f"can have at some draw's F0 scale (more than {GRID_SPACING_LIMIT})")
    return why


def click_weighted_share(totals, p1):
    """pi: the click-weighted mean of the groups' P(Z = 1), in NumPy or PyTensor (along the last axis)."""
    return (totals * p1).sum(axis=-1) / totals.sum()


def class1_share(pi, w0, w1):
    """rho[bin] = P(Z = 1 | X = k) by Bayes' rule, in NumPy or PyTensor."""
    return pi * w1 / (pi * w1 + (1 - pi) * w0)


#: draws of mu_i from its conditional: an independence Metropolis-Hastings chain per draw and group,
#: started at a proposal draw, with a Student-t proposal (2 degrees of freedom) 1.2 times the Laplace
#: scale wide. Its centre and scale come from the conditional at a reference point (the draws' mean):
#: the click term's Taylor expansion to second order around that conditional's mode (found once, by
#: `REFERENCE_NEWTON_STEPS` Newton steps), plus each draw's own F0 and HE terms, exactly: no pass over
#: the count table per draw besides the chain's. Where the proposal's heavier tails bound the target,
#: every step brings the draw's law geometrically closer to the conditional. On Sec. 5 data (J = 5,
#: 30, 100; WH = 0, 4, 10) the acceptance rate was 0.77-0.79, and the Kolmogorov-Smirnov distance of
#: 20,000 draws to the exact conditional fell from 0.08 (the proposal) to 0.03 after one step and to
#: the sampling noise (0.006) after three, also with the globals of a Laplace fit at J = 5 varying
#: from draw to draw (the emissions' sd 26% of their mean). Three steps, then (four until issue 43: at
#: 10,000 groups each step is a pass over the count table per draw, a quarter of the draws' time; the
#: 90% HDIs of rho and pi with three steps differed from four's by no more than four's differ between
#: seeds, benchmarks/RESULTS.md, "Speed at the headline scale").
#: tests/test_model_wsc_integrated_mu.py checks the draws against the conditional.
MH_STEPS = 3
PROPOSAL_DF = 2.0  # `_student_t2`: its quantile function is one square root
PROPOSAL_INFLATION = 1.2
REFERENCE_NEWTON_STEPS = 6


def draw_group_qualities(counts, he, w0, w1, mu_loc=None, mu_scale=None, sigma_h=None, *, seed: int = 0):
    """mu_i from p(mu_i | clicks_i, HE_i, w0, w1, mu_loc, mu_scale), per draw: (S, I), and the mean
    acceptance rate of the Metropolis-Hastings steps (`MH_STEPS`). w0, w1 (S, K); mu_loc, mu_scale
    (S,) or None (flat F0); sigma_h a number, one per draw (S,) (a learned rater noise), or None when
    HE is not modelled (WH = 0)."""
    from bayes_wsc.jax_setup import jax_runtime

    jax = jax_runtime()
    # float64: in float32, XLA's CPU code for this loop (JAX 0.10.2) got the log integrand wrong by tens of
    # nats once a vector held 8 or more groups, and the draws drifted off the conditional with every step
    per_draw = {"w0": w0, "w1": w1, "loc": mu_loc, "scale": mu_scale}
    n_draws = np.shape(w0)[0]
    if sigma_h is not None:
        per_draw["sigma"] = np.broadcast_to(np.asarray(sigma_h, dtype=np.float64), (n_draws,))
    per_draw = {k: np.asarray(v, dtype=np.float64) for k, v in per_draw.items() if v is not None}
    counts, he = np.asarray(counts, np.float64), np.asarray(he, np.float64)
    reference = _reference_fn(jax, tuple(per_draw))(counts, he, *(v.mean(axis=0) for v in per_draw.values()))
    keys = np.asarray(jax.random.split(jax.random.PRNGKey(seed), n_draws))
    fn = _draw_fn(jax, tuple(per_draw))
    mu, rates = _in_blocks(fn, {"key": keys, **per_draw}, counts, he, *reference)
    return mu, float(np.mean(rates))


@functools.cache
def _reference_fn(jax, names: tuple):
    """(mode, slope, curvature): the conditional's mode at one value of the globals (`names`), and the
    click term's first and second derivatives there (the curvature floored at 0)."""
    from bayes_wsc import group_quadrature as gq

    ops = gq.jax_ops(jax)

    def reference(counts, he, *values):
        values = dict(zip(names, values))
        g = gq.Integrand(counts, he, values["w0"], values["w1"], values.get("loc"), values.get("scale"),
                         values.get("sigma"))
        mode, _ = gq.newton_mode(ops, g, gq.gaussian_start(g), REFERENCE_NEWTON_STEPS)
        _, slope, curvature = gq.log_integrand(ops, g._replace(loc=None, sigma=None), mode, True)
        return mode, slope, jax.numpy.minimum(curvature, 0.0)

    return jax.jit(reference)


@functools.cache
def _draw_fn(jax, names: tuple):
    from bayes_wsc import group_quadrature as gq

    jnp, ops = jax.numpy, gq.jax_ops(jax)

    def one_draw(counts, he, *rest):
        *rest, ref_mode, ref_slope, ref_curvature = rest
        values = dict(zip(("key", *names), rest))
        g = gq.Integrand(counts, he, values["w0"], values["w1"], values.get("loc"), values.get("scale"),
                         values.get("sigma"))
        # the click term as its quadratic at the reference, F0 and HE as this draw's: a Gaussian in closed form
        precision, shift = -ref_curvature, ref_slope - ref_curvature * ref_mode
        if g.loc is not None:
            precision, shift = precision + 1 / g.scale**2, shift + g.loc / g.scale**2
        if g.sigma is not None:
            precision, shift = precision + 1 / g.sigma**2, shift + g.he / g.sigma**2
        mode = shift / precision
        spread = PROPOSAL_INFLATION / jnp.sqrt(precision)

        def log_ratio(m):  # target over proposal, up to a constant
            z = (m - mode) / spread
            return gq.log_integrand(ops, g, m) + 0.5 * (PROPOSAL_DF + 1) * jnp.log1p(z**2 / PROPOSAL_DF)

        def propose(u):
            return mode + spread * _student_t2(jnp, u)

        def step(i, state):  # a loop, not unrolled: one copy of the integrand for XLA to compile
            current, weight, accepted = state
            u_t, u_accept = _uniforms(jax, jax.random.fold_in(values["key"], i + 1), 2, mode.shape)
            proposal = propose(u_t)
            proposed = log_ratio(proposal)
            accept = jnp.log(u_accept) < proposed - weight
            return (jnp.where(accept, proposal, current), jnp.where(accept, proposed, weight),
                    accepted + jnp.mean(accept))

        first = propose(_uniforms(jax, jax.random.fold_in(values["key"], 0), 1, mode.shape)[0])
        current, _, accepted = jax.lax.fori_loop(0, MH_STEPS, step, (first, log_ratio(first), jnp.zeros((), mode.dtype)))
        return current, accepted / MH_STEPS

    return jax.jit(jax.vmap(one_draw, in_axes=(None, None, *[0] * (len(names) + 1), None, None, None)))


def _uniforms(jax, key, n: int, shape):
    """n arrays of uniforms in (0, 1), float64, each from one 32-bit word (Threefry makes 32-bit words, and
    a float64 uniform costs two): resolution 2^-32, ample for an acceptance test and the proposal's
    quantile (the largest t it can give is 256 scales). Random numbers cost twice a pass over the count
    table per Metropolis-Hastings step with `jax.random.t` and `uniform` (which samples a gamma by
    rejection: 4 ms a draw at 10,000 groups, 90% of a nested Laplace fit then)."""
    bits = jax.random.bits(key, (n, *shape), jax.numpy.uint32)
    return (bits.astype(jax.numpy.float64) + 0.5) * 2.0**-32


def _student_t2(jnp, u):
    """Student-t with 2 degrees of freedom at the probabilities u: its quantile function, one square root
    (the 4-degree one, in closed form too, costs as much as a pass over the count table)."""
    return (2 * u - 1) / jnp.sqrt(2 * u * (1 - u))


def _in_blocks(fn, per_draw: dict, *shared) -> list[np.ndarray]:
    """fn(*shared[:2], *per_draw values, *shared[2:]) over the draws a block at a time (each block
    holds about `CHUNK_FLOATS` cells of the count table; the last one padded: one compilation);
    returns each output stacked over the draws."""
    from bayes_wsc.posterior import CHUNK_FLOATS

    arrays = list(per_draw.values())
    n_draws, size = arrays[0].shape[0], np.asarray(shared[0]).size
    block = int(min(n_draws, max(1, CHUNK_FLOATS // max(1, size))))
    pieces = []
    for start in range(0, n_draws, block):
        chunk = [a[start:start + block] for a in arrays]
        short = block - chunk[0].shape[0]
        if short:
            chunk = [np.concatenate([a, np.repeat(a[-1:], short, axis=0)]) for a in chunk]
        result = fn(*shared[:2], *chunk, *shared[2:])
        result = result if isinstance(result, tuple) else (result,)
        pieces.append([np.asarray(r)[:block - short] for r in result])
    return [np.concatenate([p[i] for p in pieces]) for i in range(len(pieces[0]))]


# ---------------------------------------------------------------------- pointwise log-likelihood
#: Gauss-Hermite nodes of the integral over a group's mu, after Newton steps centre them on the
#: integrand's mode: 9 nodes and 4 steps, in float32, agree with adaptive quadrature (scipy) to 1e-4
#: nats with HE (WH = 4) and 2e-4 without (WH = 0), on a Sec. 5 fit
GH_NODES = 9
NEWTON_STEPS = 4
#: Gauss-Legendre nodes of `integrated_own_loglik` (a variant's own term, against a Cauchy): with a
#: Student-t HE (2 d.f.) and a rater 13 sigma_H off, so that the integrand has a second bump far from
#: the first, 48 nodes were off by 0.04 nats, 64 by 0.009 and 96 by 3e-4 (scipy's adaptive quadrature;
#: elsewhere all agree to 3e-4; tests/test_variant_log_likelihood.py)
OWN_TERM_NODES = 96


def integrated_group_loglik(counts, he, mu, w0, w1, mu_loc, mu_scale, sigma_h=None) -> np.ndarray:
    """log p(clicks_i, HE_i | mu_loc, mu_scale, w0, w1, sigma_H) per draw and group, mu_i integrated out:

        log  integral N(m | mu_loc, mu_scale) N(HE_i | m, sigma_H) prod_k (sig(-m) w0_k + sig(m) w1_k)^n_ik dm

    This is what leaving group i out means under the hierarchical F0: its own quality goes with
    it. Conditional on mu_i, PSIS-LOO fails (at 100 clicks a group's data outweigh the prior on
    its mu_i: 68% of Pareto k above 0.7 in a Sec. 5 fit, and the wrong WH preferred); integrated,
    every k stayed below 0.5. Computed by Gauss-Hermite quadrature (`group_quadrature`) centred by
    Newton steps started at each draw's own mu_i, with JAX, a block of draws at a time, in float32
    (half the time of float64 on this CPU; the values differ from float64 by about 1e-4 nats at
    100 clicks a group, 1e-6 of their size).

    counts (I, K), he (I,); mu (S, I); w0, w1 (S, K); mu_loc, mu_scale (S,); sigma_h (S,) or None
    when HE is not modelled (WH = 0). Returns (S, I).
    """
    from bayes_wsc.jax_setup import jax_runtime

    jax = jax_runtime()
    per_draw = {"mu": mu, "w0": w0, "w1": w1, "loc": mu_loc, "scale": mu_scale, "sigma": sigma_h}
    per_draw = {k: np.asarray(v, dtype=np.float32) for k, v in per_draw.items() if v is not None}
    fn = _integrated_loglik_fn(jax, sigma_h is not None)
    return _in_blocks(fn, per_draw, np.asarray(counts, np.float32), np.asarray(he, np.float32))[0].astype(float)


@functools.cache
def _integrated_loglik_fn(jax, with_he: bool):
    from bayes_wsc import group_quadrature as gq

    ops = gq.jax_ops(jax)

    def one_draw(counts, he, mu, w0, w1, loc, scale, sigma=None):
        g = gq.Integrand(counts, he, w0, w1, loc, scale, sigma)
        return gq.integrated_loglik(ops, g, mu, nodes=GH_NODES, steps=NEWTON_STEPS)

    return jax.jit(jax.vmap(one_draw, in_axes=(None, None, *[0] * (6 if with_he else 5))))


def integrated_own_loglik(model, posterior: dict, *, nodes: int = OWN_TERM_NODES,
                          steps: int = NEWTON_STEPS) -> np.ndarray:
    """Each group's recorded log-likelihood with its mu_i integrated out over F0, from the fitted
    model's *own* per-group term (a variant's Student-t HE, say):

        log  integral N(m | mu_loc, mu_scale) exp(recorded_i(m)) dm

    where recorded_i(m) is the model's `log_likelihood__groups` graph at mu_i = m, evaluated in JAX
    with every other free variable at the draw. For a model whose mu is a free variable whose density
    is F0 and its recorded term alone (`checks.wsc.likelihood_terms` says `group_quality` is the
    default's). A variant's term need not be Gaussian-shaped in m (a Student-t has heavy tails, where
    Gauss-Hermite's weights blow up), so the integral is taken against a Cauchy centred by Newton
    steps from each draw's mu_i and scaled by the curvature there: m = c + s tan(pi (u - 1/2)), and
    Gauss-Legendre quadrature in u (the derivatives by forward differentiation: the term of group i
    depends on mu_i alone). posterior: {name: (S, ...)} of every free variable; returns (S, I)."""
    from bayes_wsc import model_terms
    from bayes_wsc.group_quadrature import MAX_STEP
    from bayes_wsc.jax_setup import jax_runtime

    jax = jax_runtime()
    jnp = jax.numpy
    names, fn = model_terms.jax_function(model, [model[inference.LOG_LIKELIHOOD_PREFIX + "groups"]])
    at = names.index("mu")
    u, weights = np.polynomial.legendre.leggauss(nodes)
    angle = 0.5 * math.pi * u  # u in (-1, 1): m = c + s tan(angle), dm = s (pi / 2) sec^2(angle) du
    log_weight = np.log(weights) + math.log(0.5 * math.pi) - 2 * np.log(np.cos(angle))

    def one_draw(values):
        loc, scale = values[names.index("mu_loc")], values[names.index("mu_scale")]

        def g(m):
            z = (m - loc) / scale
            return fn(*values[:at], m, *values[at + 1:])[0] - 0.5 * z**2 - jnp.log(scale) - 0.5 * math.log(2 * math.pi)

        def d1(m):
            return jax.jvp(g, (m,), (jnp.ones_like(m),))[1]

        mode, curvature = values[at], -1.0 / scale**2
        for _ in range(steps):
            slope, second = jax.jvp(d1, (mode,), (jnp.ones_like(mode),))
            curvature = jnp.minimum(second, -1.0 / scale**2)
            mode = mode - jnp.clip(slope / curvature, -MAX_STEP, MAX_STEP)
        width = 1.0 / jnp.sqrt(-curvature)
        terms = jnp.stack([g(mode + width * float(np.tan(aj))) + float(lw) for aj, lw in zip(angle, log_weight)])
        return jax.scipy.special.logsumexp(terms, axis=0) + jnp.log(width)

    run = jax.jit(jax.vmap(lambda *values: one_draw(list(values))))
    arrays = [np.asarray(posterior[n], dtype=np.float64) for n in names]
    n_draws, block = arrays[0].shape[0], min(arrays[0].shape[0], OWN_TERM_BLOCK)
    pieces = []
    for start in range(0, n_draws, block):  # the last block padded: one compilation
        chunk = [a[start:start + block] for a in arrays]
        short = block - chunk[0].shape[0]
        if short:
            chunk = [np.concatenate([c, np.repeat(c[-1:], short, axis=0)]) for c in chunk]
        pieces.append(np.asarray(run(*chunk))[:block - short])
    return np.concatenate(pieces).astype(float)


#: draws at a time in `integrated_own_loglik`
OWN_TERM_BLOCK = 64


# ---------------------------------------------------------------------- estimator
def class1_probability(mu, w0, w1):
    """P(Z = 1 | X = k, group i) = sigmoid(mu_i + log w1_k - log w0_k), elementwise on draws."""
    return special.expit(mu + np.log(w1) - np.log(w0))


def empty_groups_messages(idata) -> list[str]:
    """Groups of the groups table without items (or whose items all weigh 0) take part in the fit
    through HE alone and say nothing about rho: how many, in words."""
    if "counts" not in getattr(idata, "observed_data", {}):
        return []
    totals = idata.observed_data["counts"].values.sum(axis=1)
    empty = int((totals <= 0).sum())
    if not empty:
        return []
    some = ", ".join(repr(str(g)) for g in idata.observed_data["group"].values[totals <= 0][:3])
    return [f"{empty} of {totals.size} groups have no items (or only items of weight 0), e.g. {some}"
            f"{', ...' if empty > 3 else ''}: they enter the fit through HE alone and tell nothing about rho. "
            "Check that the clicks and groups files belong together."]


class WSC(Estimator):
    """Bayesian weakly supervised clustering from noisy group averages (seed 000).

    Parameters
    ----------
    wh : weight of the human evaluation, 1 / sigma_H^2 (10 as in the paper; inf fixes mu at HE).
    mu_prior : "hierarchical" (Normal with learned location and scale) or "flat" (the paper's).
    w_concentration : Dirichlet concentration c of w0 and w1 (2 reproduces the paper's +1 smoothing).
    method : "map" (posterior mode, started from the paper's naive solution), "nuts", or "laplace"
        (intervals in seconds, `draws` draws: by default nested, a Gaussian at the mode of the emissions
        and F0 with every mu_i integrated out, and each mu_i drawn from its conditional,
        `bayes_wsc.nested_laplace`; with mu="sampled", a Gaussian at the joint mode, `bayes_wsc.laplace`).
    draws, tune, chains, seed, backend, target_accept : NUTS settings.
    precision : NumPyro's arithmetic; default float32 here, which halves the cost per gradient
        and keeps the posterior (the click term is centred; see `add_click_likelihood`).
    mu : "sampled" (NUTS samples every mu_i) or "integrated" (NUTS, or Laplace, takes the emissions and
        F0 with every mu_i integrated out by quadrature, then each mu_i is drawn from its conditional;
        not for a MAP, and no variant file unless its build_model takes `mu`). The posterior is the
        same. "grid" integrates on one grid of nodes shared by the groups (`grid_plan`: the heaviest by
        per-group quadrature where they would need too fine a grid; NUTS and the default model only), and
        the fit says so at the top if the grid did not hold every group on it (`grid_check`). None (the
        default): "grid" for NUTS on the default model, "integrated" for Laplace and for NUTS on a
        variant whose build_model takes `mu`, else "sampled" (`mu_used`; the summary's notes say which).
    model_file : a variant file (see `models/`) whose `build_model(data, **settings)` replaces the default.
    model_settings : the variant's own settings, passed to its `build_model` with the ones above.

    After `fit(data)`: `idata_` (InferenceData with `rho[bin]`, `pi`, `w0`, `w1`, `mu[group]`) and `model_`.
    """

    model_name = "wsc"
    data_class = GroupedCounts
    nuts_precision = "float32"
    laplace_local = ("mu",)
    estimands = ["rho", "pi", "w0", "w1", "mu_loc", "mu_scale", "sigma_h"]
    internal_variables = ("mu",)
    unit_dims = ("group",)
    required_attrs = ("model", "method", "settings", "behavior_levels")
    required_groups = ("posterior", "observed_data", "constant_data")
    attr_kinds = {"behavior_levels": ("a mapping of each behavior column to its levels",
                                      lambda v: isinstance(v, dict) and all(isinstance(x, list) for x in v.values()))}
    bounds = {"rho": (0.0, 1.0), "pi": (0.0, 1.0), "w0": (0.0, 1.0), "w1": (0.0, 1.0), "mu_scale": (0.0, float("inf")),
              "sigma_h": (0.0, float("inf"))}
    required_variables = {"posterior": ("rho", "pi", "mu", "w0", "w1"), "observed_data": ("counts", "he"),
                          "constant_data": ("n_items", "group_scale")}

    Settings = WSCSettings

    def build_settings(self) -> dict:
        """The settings `build_model` takes; `mu` only when not the default, so that a variant file
        written for the default model keeps working (and one that cannot integrate mu says so)."""
        settings = {"wh": self.wh_used, "mu_prior": self.mu_prior, "w_concentration": float(self.w_concentration)}
        return settings if self.mu_used == "sampled" else {**settings, "mu": self.mu_used}

    @property
    def mu_used(self) -> str:
        """How the fit treats the group qualities: `mu` when given; by default, where the model can
        integrate them (WH finite, and a variant file's build_model takes `mu`), "grid" for NUTS on the
        default model (its heaviest groups by per-group quadrature where they would need too fine a grid:
        `grid_plan`), "integrated" for NUTS on a variant (the grid is written for the default model only)
        and for Laplace (nested); "sampled" otherwise (a MAP, WH = inf, a variant that cannot integrate)."""
        if self.mu is not None:
            return self.mu
        if "_mu_of_fit" in self.__dict__:  # a loaded fit: as it was fitted (an older default, too)
            return self._mu_of_fit
        if self.method == "map" or math.isinf(effective_wh(float(self.wh))) or not self._variant_takes_mu():
            return "sampled"
        return "grid" if self.method == "nuts" and self.model_file is None else "integrated"

    def _variant_takes_mu(self) -> bool:
        """Whether the model's build_model takes `mu`: a variant's as the fit stored it (never imported
        to read a fit), else as its file says."""
        return self.model_file is None or "mu" in self.variant_facts().build_model_takes

    def _integrates_mu(self) -> bool:
        return self.mu_used in INTEGRATING and not math.isinf(self.wh_used) and self._variant_takes_mu()

    @property
    def wh_used(self) -> float:
        """The WH the model is built with: `wh`, or inf above `WH_LIMIT` (`effective_wh`)."""
        return effective_wh(self.wh)

    def data_messages(self, data: GroupedCounts) -> list[str]:
        """A WH beyond `WH_LIMIT` (fitted as inf), data whose clicks weigh less than one click in all, and data
        with one group, which cannot identify rho."""
        messages = [wh_limit_message(self.wh)] if self.wh_used != float(self.wh) else []
        messages += [m for m in [weightless_data_message(float(data.group_totals.sum()), "click")] if m]
        with_clicks = data.n_groups - int((data.group_totals <= 0).sum())
        if with_clicks < 2:
            messages.append(
                f"{'no' if with_clicks == 0 else 'only one'} group has clicks: rho is told apart "
                "from the emissions only by how the groups' click mixes change with their HE, so one group "
                "cannot identify it (any rho fits its clicks as well). Give clicks of at least two groups with "
                "different HE.")
        return messages

    def fit(self, data: GroupedCounts):
        """With the default mu, a NUTS fit on the shared grid that the grid did not hold (`grid_check`: a
        group's integrand reached past it, or F0 narrower than its spacing, as where the groups' qualities
        barely vary) is redone by per-group quadrature (mu="integrated"), and says so in the summary's
        notes; the discarded fit's warnings are not shown."""
        self.__dict__.pop("_mu_of_fit", None)  # a refit resolves its own default
        if self.mu is not None or self.method != "nuts":
            return super().fit(data)
        self.check_params()  # bad settings: one line, before `mu_used` reads them
        if self.mu_used != "grid":
            return super().fit(data)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            super().fit(data)
        check = inference.get_attrs(self._fitted()).get("fit_info", {}).get("nuts", {}).get("mu_grid", {})
        if check.get("ok", True):
            for w in caught:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            return self
        self._mu_of_fit = "integrated"
        super().fit(data)
        inference.set_attrs(self._fitted(), {"mu_grid_refused": check})
        return self

    @classmethod
    def from_idata(cls, idata, source: str = "this fit"):
        """The saved fit's estimator, with the mu it was fitted with when the default chose it (the fit's
        `settings_used`, which name mu unless it was sampled)."""
        estimator = super().from_idata(idata, source)
        used = inference.get_attrs(estimator._fitted()).get("settings_used")
        if estimator.mu is None and isinstance(used, dict):
            estimator._mu_of_fit = used.get("mu", "sampled")
        return estimator

    def summary_notes(self) -> list[str]:
        return super().summary_notes() + self._mu_notes()

    def _mu_notes(self) -> list[str]:
        """How a NUTS fit treated the group qualities, in words: what `mu` chose (`mu_used`), and
        which groups the grid left to per-group quadrature."""
        attrs = inference.get_attrs(self._fitted())
        if attrs.get("method") != "nuts" or math.isinf(self.wh_used):
            return []
        used, chosen = self.mu_used, "the default" if self.mu is None else "as asked"
        grid = attrs.get("fit_info", {}).get("nuts", {}).get("mu_grid") or {}
        if used == "grid":
            how = f"each mu_i integrated out on one grid of {grid.get('nodes', '?')} nodes shared by the groups"
            if grid.get("groups_by_quadrature"):
                how += (f", except the {grid['groups_by_quadrature']} heaviest (more than "
                        f"{grid.get('heaviest_on_grid', 0):g} clicks), by per-group quadrature: a grid fine "
                        "enough for them would cost more")
        elif used == "integrated":
            how = "each mu_i integrated out by per-group quadrature"
            refused = attrs.get("mu_grid_refused")
            if isinstance(refused, dict):
                how += (f" (the default, NUTS on a shared grid, was fitted first and did not hold every group: "
                        f"{' and '.join(grid_reasons(refused))}; so it was redone)")
            elif self.mu is None and self.model_file is not None:
                how += " (the shared grid is written for the default model only)"
        else:
            how = "NUTS sampled every mu_i"
            if self.mu is None and self.model_file is not None:
                how += " (the variant's build_model takes no mu, so they cannot be integrated out)"
        after = ", then drawn from its conditional at every draw" if used != "sampled" else ""
        return [f"Group qualities: {how}{after} (mu={used!r}, {chosen})."]

    def check_params(self) -> None:
        """The declared settings (`WSCSettings`), then the rules between them: WH and F0, mu and the method."""
        super().check_params()
        check_flat_prior(self.wh, self.mu_prior)
        if self.mu_used == "grid" and self.method != "nuts":
            raise InputError(f"mu='grid' is a NUTS setting (method='nuts'), got method={self.method!r}; a Laplace fit "
                             "integrates with mu='integrated'")
        if self.mu_used in INTEGRATING and self.method == "map":
            raise InputError(f"mu={self.mu_used!r} is a NUTS or Laplace setting (method='nuts' or 'laplace'); a map "
                             "fit keeps every mu_i as a parameter (mu='sampled')")
        if self.mu_used == "grid" and self.model_file is not None:
            raise InputError("mu='grid' is the default model's; a variant file integrates with mu='integrated'")

    def build_model(self, data: GroupedCounts) -> pm.Model:
        with warnings.catch_warnings():  # a weak WH is reported by model_checks, with or without a build
            warnings.filterwarnings("ignore", message="WH=", category=FitWarning)
            return build_model(data, **self.build_settings())

    def model_inputs(self, data: GroupedCounts):
        """None with mu="grid" (no cached MAP program): its nodes are constants of the graph, computed
        from the data, which a program cached for other data of the same shapes would reuse."""
        if self.mu_used == "grid" and not math.isinf(self.wh_used):
            return None
        return data.coords, model_data(data)

    def initial_values(self, data: GroupedCounts) -> dict:
        """The paper's initialization (eq. 4.1-4.4): mu = HE and the naive w0, w1."""
        w0, w1 = naive_emissions(data)
        return {"mu": data.he, "mu_loc": float(np.mean(data.he)),
                "mu_scale": max(float(np.std(data.he)), 0.1), "w0": w0, "w1": w1}

    def map_fixed(self, data: GroupedCounts) -> dict:
        """mu_scale held at its moment estimate (`hierarchical_scale_fixed`): the joint mode is degenerate.
        With every mu_i integrated out it is not (the marginal density of mu_scale is bounded): nothing held."""
        if self._integrates_mu():
            return {}
        return hierarchical_scale_fixed(data, self.wh_used, self.mu_prior)

    def data_groups(self, data: GroupedCounts) -> dict:
        return {
            "observed_data": {"counts": data.counts, "he": data.he},
            "constant_data": {"group_totals": data.group_totals, "n_items": data.n_items,
                              "group_scale": data.group_scale},
            "dims": {"counts": ["group", "bin"], "he": ["group"], "group_totals": ["group"],
                     "n_items": ["group"], "group_scale": ["group"]},
            "extra_coords": data.bin_factor_coords(),
            "attrs": {"data_settings": data.settings,
                      "behavior_levels": {c: list(lv) for c, lv in zip(data.bins.columns, data.bins.levels)}},
        }

    def model_checks(self, idata) -> list[str]:
        """Warn about a weak WH, and when chains disagree on which class is 'happy' (the orientation
        set by HE)."""
        model = getattr(self, "_model", None)
        if self.model_file is not None and model is not None and not (
                "he" in model.named_vars and model["he"] in model.observed_RVs):
            return empty_groups_messages(idata)  # a variant that reads HE as exact: WH orients nothing
        weak = [weak_wh_message(self.wh)] if float(self.wh) < WEAK_WH else []
        weak += empty_groups_messages(idata)
        weak += grid_message(inference.get_attrs(idata).get("fit_info", {}).get(self.method, {}).get("mu_grid", {}))
        if (self.method != "nuts" or "he" not in idata.observed_data or "mu" not in idata.posterior
                or np.isinf(self.wh_used)):
            return weak
        he = idata.observed_data["he"].values
        if he.std() == 0:
            return weak
        mu = idata.posterior["mu"].mean("draw").values
        signs = [np.sign(np.corrcoef(m, he)[0, 1]) for m in mu]
        if min(signs) < 0:
            return weak + ["some chains put the 'happy' class on the groups with low HE (the opposite "
                           "orientation): the posterior is bimodal. Raise WH or check that HE is on the logit "
                           "scale."]
        return weak

    def nuts_options(self) -> dict:
        """With mu integrated out NUTS samples 2K + 2 correlated dimensions (each bin's w0_k and w1_k
        trade off against the bin's overall share): a full mass matrix is cheap there and shortens
        the trees. Its pointwise log-likelihood (each group's integral in float64 at every draw: 30-50 s
        at 10,000 groups) waits for first use, and a saved fit leaves it out (`log_likelihood_from_file`)."""
        return {"dense_mass": True, "defer_log_likelihood": True} if self._integrates_mu() else {}

    def complete_draws(self, draws, data: GroupedCounts) -> dict:
        """With mu integrated out: draw mu[group] from its conditional per draw
        (`draw_group_qualities`), then pi and rho from them, as the default model defines them. A
        variant's learned rater noise `sigma_h` is used per draw. For a Laplace fit this makes it
        nested (`bayes_wsc.nested_laplace`), and its record says so."""
        if not self._integrates_mu():
            return {}
        post = draws.posterior
        shape = post["w0"].shape[:2]
        flat = {n: np.asarray(post[n]).reshape(-1, *np.shape(post[n])[2:])
                for n in ("w0", "w1", "mu_loc", "mu_scale", "sigma_h") if n in post}
        wh = self.wh_used
        sigma_h = flat["sigma_h"] if "sigma_h" in flat else (1.0 / math.sqrt(wh) if wh > 0 else None)
        started = time.perf_counter()
        mu, rate = draw_group_qualities(data.counts, data.he, flat["w0"], flat["w1"], flat.get("mu_loc"),
                                        flat.get("mu_scale"), sigma_h, seed=int(draws.info.get("seed") or 0))
        mu = mu.astype(float)
        pi = click_weighted_share(data.group_totals, special.expit(mu))
        rho = class1_share(pi[:, None], flat["w0"], flat["w1"])
        post["mu"], post["pi"], post["rho"] = mu.reshape(*shape, -1), pi.reshape(shape), rho.reshape(*shape, -1)
        draws.info["mu_draws"] = {"method": "independence Metropolis-Hastings from the 1-D conditional",
                                  "steps": MH_STEPS, "acceptance_rate": rate,
                                  "seconds": time.perf_counter() - started}
        if self.mu_used == "grid":
            started = time.perf_counter()
            plan = grid_plan(data, wh, self.mu_prior)
            draws.info["mu_grid"] = grid_check(data, plan.nodes, flat["w0"], flat["w1"], flat.get("mu_loc"),
                                               flat.get("mu_scale"), sigma_h, on_grid=plan.on_grid)
            draws.info["mu_grid"]["seconds"] = time.perf_counter() - started
        if self.method == "laplace":
            from bayes_wsc.nested_laplace import mark_nested

            mark_nested(draws.info, "mu")
        return {"mu": ["group"], "rho": ["bin"]}

    def pointwise_log_likelihood(self, draws, data: GroupedCounts) -> str | None:
        """Under the hierarchical F0 (a fit with mu_loc and mu_scale), each group's log-likelihood has
        its own mu_i integrated out (`integrated_group_loglik`), so that LOO leaves out a group with
        its quality. That formula is the default model's, so it replaces the recorded values only when
        the fitted model's clicks, HE and F0 terms are the default's (`self._fit_terms`, decided from
        the built model by `checks.wsc.likelihood_terms`; a learned sigma_H is used as learned). A
        variant with a term of its own keeps what it recorded, conditional on mu_i. With a flat F0 (no
        distribution to draw a new group's mu from) or WH = inf (mu_i = HE_i) it stays conditional on
        mu_i, and so does a MAP fit's (one point, where LOO does not apply; the integral would cost a
        compilation per data shape). Returns what the values then hold, in words."""
        from bayes_wsc.model_terms import replaced

        post = draws.posterior
        name = inference.LOG_LIKELIHOOD_PREFIX + "groups"
        conditional = "each group's clicks and HE given its own mu_i, as the fitted model recorded them"
        if self._integrates_mu():  # the model's own per-group values are already integrated
            return ("each group's clicks and HE with its mu_i integrated out over F0 in the model's own density "
                    f"(mu={self.mu_used!r})")
        if name not in post:
            return None
        own = replaced(getattr(self, "_fit_terms", None))
        single = np.shape(post[name])[0] * np.shape(post[name])[1] == 1
        if own:
            words = f"its {', '.join(own)} {'is' if len(own) == 1 else 'are'} not the default model's"
            model = self.model_
            if single or "group_quality" in own or "mu" not in model.named_vars \
                    or model["mu"] not in model.free_RVs or not {"mu_loc", "mu_scale"} <= set(post):
                return f"{conditional} ({words}, so mu_i was not integrated out with the default model's formula)"
            shape = np.shape(post[name])[:2]
            flat = {rv.name: np.asarray(post[rv.name]).reshape(-1, *np.shape(post[rv.name])[2:])
                    for rv in model.free_RVs}
            post[name] = integrated_own_loglik(model, flat).reshape(*shape, -1)
            return ("each group's log-likelihood with its own mu_i integrated out over F0, Normal(mu_loc, "
                    f"mu_scale), from the fitted model's own recorded term ({words})")
        if single:
            return f"{conditional} (one point: LOO does not apply)"
        if not {"mu", "mu_loc", "mu_scale", "w0", "w1"} <= set(post):
            return f"{conditional} (no hierarchical F0 to integrate mu_i over)"
        if "sigma_h" not in post and math.isinf(self.wh_used):
            return f"{conditional} (WH = inf: mu_i = HE_i)"
        post[name] = self._integrated_values(post, data)
        return ("each group's clicks and HE with its own mu_i integrated out over F0, Normal(mu_loc, mu_scale) "
                "(the fitted model's terms are the default's)")

    def _integrated_values(self, post, data: GroupedCounts) -> np.ndarray:
        """`integrated_group_loglik` at every draw of `post` (chain, draw, group), with the rater noise
        the fit used (learned by a variant, else 1 / sqrt(WH); none at WH = 0)."""
        shape = post["mu"].shape[:2]
        flat = {n: np.asarray(post[n]).reshape(-1, *np.shape(post[n])[2:])
                for n in ("mu", "w0", "w1", "mu_loc", "mu_scale", "sigma_h") if n in post}
        wh = self.wh_used
        if "sigma_h" in flat:  # a variant that learns the rater noise
            sigma_h = flat["sigma_h"]
        else:
            sigma_h = None if wh == 0 else np.full(flat["mu"].shape[0], 1.0 / math.sqrt(wh))
        values = integrated_group_loglik(data.counts, data.he, flat["mu"], flat["w0"], flat["w1"], flat["mu_loc"],
                                         flat["mu_scale"], sigma_h)
        return values.reshape(*shape, -1)

    def log_likelihood_from_file(self):
        """With mu integrated out (a nested Laplace fit) and the default model's terms, a saved fit's
        per-group log-likelihood is `integrated_group_loglik` of its draws and data: it is left out of
        the file and computed on first use."""
        from bayes_wsc.model_terms import replaced

        terms = getattr(self, "_fit_terms", None) or inference.get_attrs(self._fitted()).get("likelihood_terms")
        if self._integrates_mu() and terms is not None and not replaced(terms):
            return self._log_likelihood_of_file
        return None

    def _log_likelihood_of_file(self) -> tuple[dict, dict, str]:
        name = inference.LOG_LIKELIHOOD_PREFIX + "groups"
        values = self._integrated_values(self._fitted().posterior, self.data_from_fit())
        return ({name: values}, {name: ["group"]},
                "each group's clicks and HE with its mu_i integrated out over F0 in the default model's density, "
                f"computed from the saved draws and data ({GH_NODES}-node Gauss-Hermite quadrature in float32: within "
                "1e-5 of the fit's own values, relative)")

    # ------------------------------------------------------------------ data back from a fit
    @property
    def bins_(self) -> BehaviorBins:
        self._check_fitted()
        levels = inference.get_attrs(self._fitted())["behavior_levels"]
        return BehaviorBins(tuple(levels), tuple(tuple(v) for v in levels.values()))

    def data_from_fit(self) -> GroupedCounts:
        """The count table the fit saw, rebuilt from the saved fit (for baselines and reports)."""
        self._check_fitted()
        obs, const = self._fitted().observed_data, self._fitted().constant_data
        attrs = inference.get_attrs(self._fitted())
        return GroupedCounts(obs["counts"].values, obs["he"].values, np.asarray(obs["group"].values),
                             self.bins_, const["n_items"].values, const["group_scale"].values,
                             dict(attrs.get("data_settings", {})))

    def write_report(self, out_dir, **kwargs):
        """Write `out_dir/report.html`: rho(k) with intervals beside the paper's baselines, and more."""
        from bayes_wsc.models.wsc.report import write_report

        return write_report(self, out_dir, **kwargs)

    def plot_rho(self, **kwargs):
        """rho(k) with its credible intervals beside the paper's baselines (a matplotlib Figure)."""
        from bayes_wsc.models.wsc.report import plot_rho

        return plot_rho(self, **kwargs)

    # ------------------------------------------------------------------ predictions
    def class_probability(self, groups=None, ci: float = DEFAULT_CI) -> xr.Dataset:
        """P(Z = 1 | X = k, group i) for chosen groups and every bin: mean and HDI, computed on demand."""
        self._check_fitted()
        all_ids = np.asarray(self._fitted().posterior["group"].values).astype(str)
        ids = all_ids if groups is None else np.asarray(groups).astype(str)
        pos = pd.Index(all_ids).get_indexer(ids)
        if (pos < 0).any():
            raise InputError(f"unknown group {str(ids[pos < 0][0])!r}")
        n_bins = self._fitted().posterior.sizes["bin"]
        cells = (pos[:, None] * n_bins + np.arange(n_bins)[None]).ravel()
        mean, low, high = self._group_bin_summary(cells, ci)
        shape = (len(ids), n_bins)
        coords = {"group": ids, "bin": self._fitted().posterior["bin"].values}
        return xr.Dataset({k: (("group", "bin"), v.reshape(shape)) for k, v in
                           {"mean": mean, "low": low, "high": high}.items()}, coords=coords,
                          attrs={"ci": ci})

    def _group_bin_summary(self, cells: np.ndarray, ci: float):
        """P(Z = 1 | X = k, group i) = sigmoid(group_i + bin_k): mu_i and log w1_k - log w0_k, or a variant's
        own split of that logit (`group_logit[group]`, `bin_logit[bin]`), or its own logit of every cell
        (`cell_logit[group, bin]`; models/ecological_inference.py)."""
        # each cell's draws as a row (`summarize_rows`): gathered from logits stored (group or bin, draw), and
        # the sigmoid taken in place; the same values as column by column, in half the time at 7,500 cells
        posterior = self._fitted().posterior
        if "cell_logit" in posterior:
            cell = stacked(self._fitted(), "cell_logit")
            flat = np.ascontiguousarray(cell.reshape(cell.shape[0], -1).T)  # (group * bin, draw), the cells' order
            return summarize_rows(len(cells), lambda rows: maths.expit(flat[cells[rows]]), flat.shape[1], ci)
        if "group_logit" in posterior and "bin_logit" in posterior:
            group, per_bin = stacked(self._fitted(), "group_logit"), stacked(self._fitted(), "bin_logit")
        else:
            group, w0, w1 = (stacked(self._fitted(), n) for n in ("mu", "w0", "w1"))
            per_bin = np.log(w1) - np.log(w0)  # once per (draw, bin), not per cell
        n_draws, n_bins = per_bin.shape
        group, per_bin = np.ascontiguousarray(group.T, dtype=float), np.ascontiguousarray(per_bin.T, dtype=float)

        def rows_of(rows):  # class1_probability, with the per-bin logits taken above
            g, k = np.divmod(cells[rows], n_bins)
            values = np.empty((rows.size, n_draws))
            # a run of one group's cells at a time: its logits plus its bins' (a slice when they are consecutive),
            # without gathering a row of either per cell
            ends = np.append(np.flatnonzero(np.diff(g)) + 1, g.size)
            for start, end in zip(np.append(0, ends[:-1]), ends):
                bins = k[start:end]
                consecutive = np.all(np.diff(bins) == 1)
                np.add(per_bin[bins[0]:bins[-1] + 1] if consecutive else per_bin[bins], group[g[start]],
                       out=values[start:end])
            return maths.expit(values, out=values)

        return summarize_rows(len(cells), rows_of, n_draws, ci)

    def predict(self, items: pd.DataFrame, *, ci: float = DEFAULT_CI, group_col: str | None = None) -> pd.DataFrame:
        """Every input column plus `prob`, `prob_low`, `prob_high`: P(Z = 1 | behavior).

        Group-specific for rows whose group the fit knows; the population
        `rho` for the others (or when there is no group column). How many rows
        went each way is in `result.attrs["group_rows"]` ({"matched": n,
        "population": m}) and, as a sentence, in `result.attrs["notes"]`.
        """
        self._check_fitted()
        bin_index = self.bins_.index(items, "items")
        group_col = group_col or inference.get_attrs(self._fitted()).get("data_settings", {}).get("group_col", "group")
        n_bins = self._fitted().posterior.sizes["bin"]
        pos = np.full(len(items), -1)
        if group_col in items.columns:
            ids = pd.Index(np.asarray(self._fitted().posterior["group"].values).astype(str))
            pos = ids.get_indexer(key_text(items[group_col]))
        prob, low, high = (np.empty(len(items)) for _ in range(3))
        known = pos >= 0
        cells = pos[known] * n_bins + bin_index[known]
        uniq, inverse = np.unique(cells, return_inverse=True)
        stats = self._group_bin_summary(uniq, ci)
        for target, values in zip((prob, low, high), stats):
            target[known] = values[inverse]
        bins_needed, inverse = np.unique(bin_index[~known], return_inverse=True)
        rho = stacked(self._fitted(), "rho")
        stats = summarize_columns(len(bins_needed), lambda cols: rho[:, bins_needed[cols]], rho.shape[0], ci)
        for target, values in zip((prob, low, high), stats):
            target[~known] = values[inverse]
        out = append_predictions(items, {"prob": prob, "prob_low": low, "prob_high": high})
        matched = int(known.sum())
        out.attrs["group_rows"] = {"matched": matched, "population": len(items) - matched}
        if group_col in items.columns:
            note = (f"{matched} of {len(items)} rows matched a group of the fit; {len(items) - matched} fell back "
                    f"to the population estimate rho (their {group_col!r} is not a group of the fit)")
        else:
            note = (f"items has no group column {group_col!r}: all {len(items)} rows used the population "
                    "estimate rho")
        out.attrs["notes"] = [*out.attrs.get("notes", []), note]
        return out
