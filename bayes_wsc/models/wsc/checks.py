"""Checks of the first model (noisy group averages): replicated bin shares, group shares and HE.

Every replicate draws each group's class-1 count Z_i ~ Binomial(N_i, sigmoid(mu_i)) and then its items'
bins from w1 and w0, and HE_i ~ Normal(mu_i, sigma_H) where HE is modelled. Three statistics are kept
for `ppc` (plots of replicated against observed data), none of them I x K per draw (the group shares
are drawn with each item's class summed out, which has the same distribution and costs one binomial
draw per group instead of three):

* `bin_share[bin]`: the share of all items in each bin, pooled over groups (before any down-weighting
  of large groups, which is a choice of the fit, not a property of the data).
* `group_share[group]`: each group's share of items in the bins that lean to class 1 (w1_k > w0_k at
  the posterior mean): the group-level share the behavior implies.
* `he[group]`: the human evaluations.

None of them is a check, and no row reports them (measured, benchmarks/check_power.py and RESULTS.md):
the bins' pooled shares are reproduced by the free w0, w1 on every fit; HE is followed by each group's
free mu_i, so its p-value was 1 even with HE eight times noisier than WH says; and the groups' shares,
which can flag, differ from their replicates 3.8-6.8 times more than chance on CCES 2016 by state x age
x gender, where the model nearly reaches the oracle, and 5.3 times with HE eight times noisier than WH
says: no tolerance tells the two apart, and every misfit it caught, the targeted check caught too.

Weights: a replicated group has the group's raw number of items N_i (`n_items`), each item carrying
the group's mean item weight, so shares are simulated with the sampling noise of the real items.

The failures that matter for this model, aggregation bias (behavior that depends on the group beyond
the class) and a wrong WH, show in its targeted check (`checks/aggregation.py`): the bin counts'
dispersion around the fit, an effect size with a tolerance calibrated on CCES 2016 and simulations.
"""

from __future__ import annotations

import math

import numpy as np

from bayes_wsc._lazy import LazyModule
from bayes_wsc.criticism import COLUMNS, Check, Replicates
from bayes_wsc.criticism import likelihood_terms as fit_terms
from bayes_wsc.model_terms import DEFAULT

special = LazyModule("scipy.special")

#: the replicates feed `ppc` only: `criticism.run` skips them at fit time
REPLICATE_ROWS = False
#: the first model's terms that `likelihood_terms` tells apart (the fit's attrs `likelihood_terms`)
TERMS = ("clicks", "he", "group_quality")


def variates(data) -> int:
    """Random numbers one replicate needs (class-1 counts, group shares, HE per group)."""
    return 3 * data.n_groups


def parameters(posterior) -> list[str]:
    return ["mu", "w0", "w1"] + (["sigma_h"] if "sigma_h" in posterior else [])


def he_noise(est, params: dict, n: int) -> np.ndarray | None:
    """sigma_H per replicate: learned by a variant, else 1 / sqrt(WH); None where HE is not modelled."""
    if "sigma_h" in params:
        return np.asarray(params["sigma_h"], dtype=float).reshape(n)
    wh = est.wh_used
    if wh == 0 or math.isinf(wh):
        return None
    return np.full(n, 1.0 / math.sqrt(wh))


# ---------------------------------------------------------------------- the fitted model's terms
def default_parts(est, data, params: dict) -> tuple[np.ndarray, np.ndarray]:
    """The default model's per-group log-likelihood at draws of mu, w0, w1 (and a learned sigma_h):
    the clicks, sum_k n_ik log(sig(-mu_i) w0_k + sig(mu_i) w1_k), and HE, log N(HE_i | mu_i, sigma_H)
    (0 where HE is not modelled). Each (S, I); what `add_click_likelihood` records, in NumPy."""
    mu, w0, w1 = (np.asarray(params[k], dtype=float) for k in ("mu", "w0", "w1"))
    mixed = special.expit(-mu)[:, :, None] * w0[:, None, :] + special.expit(mu)[:, :, None] * w1[:, None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        clicks = np.where(data.counts[None] > 0, data.counts[None] * np.log(mixed), 0.0).sum(axis=2)
    sigma = he_noise(est, params, mu.shape[0])
    if sigma is None:
        return clicks, np.zeros_like(clicks)
    he = np.asarray(data.he, dtype=float)
    return clicks, -0.5 * ((he - mu) / sigma[:, None]) ** 2 - np.log(sigma[:, None]) - 0.5 * math.log(2 * math.pi)


def likelihood_terms(est, data, params: dict, recorded: dict, model) -> dict[str, str]:
    """Which of the fitted model's terms are the default's (see `model_terms`): `clicks` (the click
    likelihood), `he` (the rater noise HE_i given mu_i) and `group_quality` (F0, mu_i ~ Normal(mu_loc,
    mu_scale)), from its recorded per-group log-likelihood, its own observed `he` term (when it
    declares one) and, for F0, its log density as the group qualities move."""
    from bayes_wsc import model_terms as mt

    values = recorded.get("groups")
    try:
        clicks, he = default_parts(est, data, params)
    except KeyError:  # no mu, w0 or w1: nothing of the default formula can be evaluated
        clicks = he = None
    terms = {"clicks": mt.UNVERIFIED, "he": mt.UNVERIFIED, "group_quality": mt.UNVERIFIED}
    if values is None or clicks is None:
        return terms
    if mt.same(values, clicks + he) == mt.DEFAULT:
        terms.update(clicks=mt.DEFAULT, he=mt.DEFAULT)
    elif model is not None and "he" in model.named_vars and model["he"] in model.observed_RVs:
        import pymc as pm

        rv = model["he"]
        own_he = mt.evaluate(model, [pm.logp(rv, model.rvs_to_values[rv])], params)[0]
        terms.update(he=mt.same(own_he, he), clicks=mt.same(values - own_he, clicks))
    if model is not None:
        terms["group_quality"] = _group_quality(model, params)
    return terms


def _group_quality(model, params: dict) -> str:
    """DEFAULT when the model's log density, as its per-group free variables move (mu_i itself, or a
    group's rater error that moves it), changes by its recorded log-likelihood plus
    log N(mu_i | mu_loc, mu_scale), and nothing else: then mu_i given the rest is the default's, and
    integrating it out over F0 is integrating the fitted model's own terms."""
    from bayes_wsc import model_terms as mt
    from bayes_wsc.inference import LOG_LIKELIHOOD_PREFIX

    name = LOG_LIKELIHOOD_PREFIX + "groups"
    local = [rv for rv in model.free_RVs if tuple(model.named_vars_to_dims.get(rv.name, ())) == ("group",)]
    if not local or "mu" not in model.named_vars or not {"mu_loc", "mu_scale"} <= set(params) \
            or name not in model.named_vars:
        return mt.UNVERIFIED
    rng = np.random.default_rng(0)
    n = np.shape(params["mu"])[0]
    points = {k: np.concatenate([v, v]) for k, v in params.items()}
    for rv in local:  # the second half of the draws with every group's variable moved a little
        points[rv.name][n:] = points[rv.name][n:] + 0.1 * rng.standard_normal(np.shape(params[rv.name]))
    density, recorded, mu = mt.evaluate(model, [model.logp(jacobian=False), model[name].sum(), model["mu"]], points)
    loc, scale = (np.concatenate([params[k], params[k]]).astype(float)[:, None] for k in ("mu_loc", "mu_scale"))
    prior = np.sum(-0.5 * ((mu - loc) / scale) ** 2 - np.log(scale), axis=1)
    change = (density[n:] - density[:n]) - (recorded[n:] - recorded[:n])
    expected = prior[n:] - prior[:n]
    ok = np.allclose(change, expected, rtol=mt.RTOL, atol=mt.ATOL * (1 + np.abs(density).max()))
    return mt.DEFAULT if ok else mt.OWN


def replicate(est, data, params: dict, rng: np.random.Generator) -> Replicates:
    mu, w0, w1 = (np.asarray(params[k], dtype=float) for k in ("mu", "w0", "w1"))
    n_rep = mu.shape[0]
    items = np.asarray(data.n_items, dtype=np.int64)
    totals = data.group_totals
    has_items = items > 0
    # pooled over groups, the table before down-weighting (Sec. 6.2 scales whole groups, a choice of the
    # fit, not of the data); each replicated item carries its group's mean item weight
    undone = data.counts / np.where(data.group_scale > 0, data.group_scale, 1.0)[:, None]
    weight = np.where(has_items, undone.sum(axis=1) / np.maximum(items, 1), 0.0)
    leaning = w1.mean(axis=0) > w0.mean(axis=0)  # bins that lean to class 1, fixed across replicates
    p1 = special.expit(mu)
    class1 = rng.binomial(items, p1)  # (S, I): the latent classes, drawn
    class0 = items - class1
    # items of each group in the class-1-leaning bins: each item is there with probability
    # p1 W1 + (1 - p1) W0, its class summed out (the same distribution as drawing it; one draw, not three)
    in_leaning = rng.binomial(items, p1 * w1[:, leaning].sum(axis=1)[:, None]
                              + (1 - p1) * w0[:, leaning].sum(axis=1)[:, None])
    with np.errstate(invalid="ignore", divide="ignore"):
        group_share = np.where(has_items, in_leaning / items, np.nan)
        observed_share = np.where(has_items, data.counts[:, leaning].sum(axis=1) / totals, np.nan)
    bin_counts = np.empty((n_rep, data.n_bins))
    same_weight = np.allclose(weight[has_items], weight[has_items][0]) if has_items.any() else True
    for s in range(n_rep):
        if same_weight:  # a class-1 item's bin does not depend on its group: pool, then one multinomial
            pooled = rng.multinomial(class1[s].sum(), w1[s]) + rng.multinomial(class0[s].sum(), w0[s])
            bin_counts[s] = pooled * (weight[has_items][0] if has_items.any() else 1.0)
        else:
            counts = rng.multinomial(class1[s], w1[s]) + rng.multinomial(class0[s], w0[s])
            bin_counts[s] = weight @ counts
    with np.errstate(invalid="ignore", divide="ignore"):
        bin_share = bin_counts / bin_counts.sum(axis=1, keepdims=True)
    replicated = {"bin_share": bin_share, "group_share": group_share}
    observed = {"bin_share": undone.sum(axis=0) / undone.sum(), "group_share": observed_share}
    not_run = {}
    terms = fit_terms(est)
    if terms.get("clicks", DEFAULT) != DEFAULT:  # replicated from the default click model: not the fitted one's
        why = (f"not run: the fitted model's click likelihood is {_term_words(terms['clicks'])}, and this check "
               "would replicate the clicks from the default model's.")
        for name in ("bin_share", "group_share"):
            replicated.pop(name), observed.pop(name)
            not_run[f"ppc_{name}"] = why
    if terms.get("he", DEFAULT) == DEFAULT:
        sigma = he_noise(est, params, n_rep)
        if sigma is not None:
            replicated["he"] = mu + sigma[:, None] * rng.standard_normal(mu.shape)
            observed["he"] = np.asarray(data.he, dtype=float)
    else:
        own, why = _own_he(est, n_rep, rng)
        if own is None:
            not_run["ppc_he"] = (f"not run: the fitted model's HE term is {_term_words(terms['he'])}, and "
                                 "replicating HE from the default Normal(mu_i, sigma_H) would check another "
                                 f"model; {why}.")
        else:
            replicated["he"], observed["he"] = own, np.asarray(data.he, dtype=float)
    return Replicates(replicated, observed, dims={"bin_share": ["bin"], "group_share": ["group"], "he": ["group"]},
                      coords=data.coords, not_run=not_run)


def _term_words(value: str) -> str:
    return "the variant's own" if value == "own" else "not known to be the default model's"


def _own_he(est, n_rep: int, rng: np.random.Generator) -> tuple[np.ndarray | None, str]:
    """HE replicated from the fitted model's own observed `he` term (a variant's Student-t, say) at the
    same draws as the other replicates, or None and why not: the model is not at hand (a loaded fit),
    declares no observed `he`, or its `he` cannot be sampled."""
    from bayes_wsc import model_terms
    from bayes_wsc.criticism import subsample

    model = getattr(est, "_model", None)
    if model is None:
        return None, "the variant's own observed `he` is replicated only in the process that fitted it"
    if "he" not in model.named_vars or model["he"] not in model.observed_RVs:
        return None, "the variant declares no observed `he` to replicate it from"
    posterior = est._fitted().posterior
    try:
        points, _ = subsample(posterior, [rv.name for rv in model.free_RVs], n_rep)
        return model_terms.draw(model, "he", points, int(rng.integers(2**31))), ""
    except Exception as exc:  # noqa: BLE001 - a variant's term that cannot be sampled: the row says so
        return None, f"its observed `he` could not be sampled ({type(exc).__name__})"


def rows(est, data, replicates: Replicates) -> list[Check]:
    """No row: none of the replicated statistics can be a check here (see the module docstring); they
    are `ppc`'s plots. The model's criticism is its targeted check."""
    return []


# ---------------------------------------------------------------------- the targeted check
def targeted() -> list:
    """The first model's targeted check: aggregation bias, by refitting on halves of the groups."""
    return [aggregation_rows]


def aggregation_rows(est, data, seed: int, check=None) -> list[Check]:
    """`checks.aggregation.aggregation_bias_check` as a row; `check` replaces it in tests.

    It gets the estimator's class (what it refits when it must), the model settings it knows (wh,
    mu_prior, w_concentration) and, from a MAP fit of the package's own model, the fit's point, so that
    it needs no refit.
    """
    from bayes_wsc.checks.aggregation import SETTINGS, aggregation_bias_check
    from bayes_wsc.model_terms import replaced

    own = replaced(fit_terms(est))
    if own and check is None:  # it refits the default model: a check of that model, not of the fitted one
        return [Check("aggregation_bias", float("nan"), float("nan"), float("nan"), False,
                      f"not run: it refits the default model, and the fitted model's {', '.join(own)} "
                      f"{'is' if len(own) == 1 else 'are'} not known to be the default's.")]
    check = aggregation_bias_check if check is None else check
    settings = {k: v for k, v in est.build_settings().items() if k in SETTINGS}
    result = check(data, settings, model=type(est), seed=seed, map_point=map_point(est, data))
    return [Check(**{k: result.get(k, float("nan")) for k in COLUMNS})]


def map_point(est, data=None) -> dict | None:
    """The fit's MAP mu, w0, w1 (and mu_scale) for the package's own model (a MAP fit's point, or the
    MAP a Laplace or NUTS fit started from), else None. A fit that integrated mu_i out (nested Laplace,
    NUTS with mu="grid" or "integrated") started from the mode of the globals' marginal density, which
    has no mu: with `data`, each mu_i is then its conditional mode given those globals
    (`group_quadrature.conditional_modes`), where the joint MAP's mu_i sits given the joint MAP's globals.
    That spares the check a MAP of its own (1.7 CPU s of a Laplace fit at 10,000 groups). Measured against
    that MAP (10 data sets from the model and with behavior that depends on the group, 60-500 groups):
    the dispersion phi within 0.025 (0.6%), the same verdict in every one (benchmarks/RESULTS.md)."""
    point = None if est.model_file is not None else est.map_point_
    if point is not None and "mu" not in point and data is not None and {"w0", "w1"} <= set(point) \
            and est._integrates_mu():
        from bayes_wsc import group_quadrature as gq

        wh = est.wh_used
        g = gq.Integrand(np.asarray(data.counts, float), np.asarray(data.he, float), np.asarray(point["w0"], float),
                         np.asarray(point["w1"], float), point.get("mu_loc"), point.get("mu_scale"),
                         1.0 / math.sqrt(wh) if wh > 0 else None)
        point = {**point, "mu": gq.conditional_modes(g)}
    if point is None or not {"mu", "w0", "w1"} <= set(point):
        return None
    return {n: np.asarray(point[n]) for n in ("mu", "w0", "w1", "mu_scale") if n in point}
