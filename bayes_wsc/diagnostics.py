"""Plain-language checks of a fit: each failure is a sentence that says what to do.

The checks read an InferenceData (through `bayes_wsc.inference`) and return
messages; the estimator warns with them and stores them in the fit, and the
report prints them.
"""

from __future__ import annotations

import numpy as np

from bayes_wsc import inference

RHAT_MAX = 1.01
ESS_PER_CHAIN_MIN = 100


def nuts_messages(idata, var_names: list[str], max_tree_depth: int = 10) -> list[str]:
    """R-hat, bulk/tail ESS, divergences and tree-depth saturation on `var_names`."""
    messages = []
    post = idata.posterior
    chains, draws = post.sizes["chain"], post.sizes["draw"]
    stats = idata.sample_stats if "sample_stats" in inference.group_names(idata) else None
    if draws < 4:
        return [f"only {draws} draws per chain: too few to judge convergence; use at least 200"]
    conv = inference.convergence(idata, var_names)
    if chains > 1 and (unmixed := unmixed_message(idata, var_names, conv)):
        messages.append(unmixed)
    ess_min = ESS_PER_CHAIN_MIN * chains
    for name, c in conv.items():
        if chains > 1 and c["rhat"] > RHAT_MAX:
            messages.append(
                f"R-hat of {name} is {c['rhat']:.3f} (above {RHAT_MAX}): the chains disagree. "
                "Run more tuning and draws, and check whether chains sit in different modes."
            )
        for kind in ("ess_bulk", "ess_tail"):
            if c[kind] < ess_min:
                messages.append(
                    f"{'Bulk' if kind == 'ess_bulk' else 'Tail'} effective sample size of {name} is "
                    f"{c[kind]:.0f} (below {ess_min} for {chains} chains): intervals are imprecise. "
                    "Draw more samples."
                )
    if chains == 1:
        messages.append("a single chain cannot show non-convergence: run at least 2 (4 is better)")
    if stats is not None and "diverging" in stats:
        n_div = int(np.asarray(stats["diverging"]).sum())
        if n_div:
            messages.append(
                f"{n_div} of {chains * draws} transitions diverged: NUTS could not follow the posterior "
                "everywhere, so it may be biased. Raise target_accept (for example 0.95)."
            )
    if stats is not None and "tree_depth" in stats:
        saturated = float(np.mean(np.asarray(stats["tree_depth"]) >= max_tree_depth))
        if saturated > 0.05:
            messages.append(
                f"{saturated:.0%} of draws hit the maximum tree depth: sampling is inefficient; "
                "the posterior is badly scaled or very correlated."
            )
    return messages


#: a chain whose median step size after tuning is below this has stopped moving (typical NUTS step
#: sizes of these models, on the unconstrained scale: 0.05-1)
STEP_SIZE_COLLAPSED = 1e-3


def unmixed_message(idata, var_names: list[str], conv: dict | None = None) -> str | None:
    """One sentence when the chains have not mixed at all after tuning: for some element of a variable,
    no two chains' draws overlap (each chain stayed in values no other chain visited), with the likely
    cause: a collapsed step size (the chains sit where the density grows without bound, as at a scale
    collapsing to 0), else separate modes that tuning did not cross. None when every variable's chains
    overlap."""
    post = idata.posterior
    chains = post.sizes["chain"]
    apart = []
    for name in var_names:
        values = post[name].transpose("chain", "draw", ...).values.reshape(chains, post.sizes["draw"], -1)
        low, high = values.min(axis=1), values.max(axis=1)
        order = np.argsort(low, axis=0)
        low, high = np.take_along_axis(low, order, 0), np.take_along_axis(high, order, 0)
        if ((high[:-1] < low[1:]).all(axis=0)).any():
            apart.append(name)
    if not apart:
        return None
    conv = conv or inference.convergence(idata, apart)
    worst = max((conv[n]["rhat"] for n in apart if n in conv and np.isfinite(conv[n]["rhat"])), default=float("nan"))
    stats = idata.sample_stats if "sample_stats" in inference.group_names(idata) else None
    steps = (np.median(np.asarray(stats["step_size"]), axis=1) if stats is not None and "step_size" in stats
             else np.full(chains, np.nan))
    collapsed = np.flatnonzero(steps < STEP_SIZE_COLLAPSED)
    if collapsed.size:
        cause = (f"the step size of {collapsed.size} of {chains} chains collapsed to {np.min(steps):.1g}, so those "
                 "chains sit where the density grows without bound (a scale collapsing to 0 is the usual case): "
                 "give that scale a prior that keeps it from 0, or hold it (map_fixed), and refit")
    else:
        cause = ("the posterior has separate modes (or chains started in different ones) that tuning did not "
                 "cross: the report's rank plots show them; refit with more tuning, or from starts in one mode")
    return (f"The chains have not mixed at all after tuning: for {', '.join(apart)} each chain stayed in values no "
            f"other chain visited (R-hat up to {worst:.3g}), so the draws are not from the posterior; likely cause: "
            f"{cause}.")


#: the largest relative gradient (`map_program.optimum_check`: max_i |g_i| max(|x_i|, 1) / max(|f|, 1))
#: at a mode that counts as found. Measured on good fits of every model (tiny to moderate data, MAP
#: with the default settings): wsc 9e-7 to 2.2e-4 (wh 10, 1e4, inf; up to 5e-4 at wh 1e5-1e6), proportions
#: 2e-7 to 1.8e-6 (gaussian, categorical, logistic), pcmix 1.4e-7 to 1e-6 (lam 0, 4, 16), experts 5e-7 to
#: 7e-7, perception 8e-7 to 4.6e-6; the shipped variants (models/) 5e-8 to 2.1e-4; wsc at the paper's
#: scale (2000 x 100, 2000 x 5, 10,000 x 20 groups x clicks; WH 4, 10, 1e5, inf) 1.5e-6 to 1.5e-4; the
#: centres of Laplace fits (wsc, proportions, perception) 1e-6 to 8e-5. Stops that were not optima: wsc
#: at WH 1e9-1e10, 1e-2 to 0.18 (a collapsing shrinkage scale, tests/test_optimizer_checks.py: 0.5 to 6).
RELATIVE_GRADIENT_MAX = 1e-3
#: a search that gained less than its tolerance from its start counts as stalled when the relative
#: gradient there is above this (a start already at a mode has a smaller one)
STALLED_GRADIENT = 1e-4


def map_messages(info: dict) -> list[str]:
    """An optimizer's result in plain words when it should not be trusted: not converged, stalled at its
    start, a gradient that is not small at the reported mode, a degenerate mode (see
    `map_program.optimum_check` and `map_program.degenerate_values`)."""
    messages = []
    reason = info.get("optimizer_message", "")
    gradient = info.get("relative_gradient")
    if not info.get("converged", True):
        messages.append(f"the optimizer stopped before converging ({reason}); "
                        "the MAP may be inaccurate. Check the data or fit with NUTS.")
    elif gradient is not None and info.get("start_gain", np.inf) <= info.get("tolerance_nats", 0.0) \
            and gradient > STALLED_GRADIENT:
        messages.append(
            f"the optimizer stopped after {info.get('iterations')} iteration(s) having gained "
            f"{info['start_gain']:.2g} nats of log density, less than its tolerance, although the gradient "
            f"there is not small (relative gradient {gradient:.2g}): it stalled at its start and did not find "
            "the mode. The problem is badly scaled (look for a setting or data value of extreme size), or "
            "fit with NUTS.")
    elif gradient is not None and gradient > RELATIVE_GRADIENT_MAX:
        messages.append(
            f"the optimizer reported convergence but the gradient at its point is not small (relative gradient "
            f"{gradient:.2g}, above {RELATIVE_GRADIENT_MAX:g}): it stopped short of the mode, and the MAP may "
            "be inaccurate. The problem is badly scaled (look for a setting or data value of extreme size), "
            "or fit with NUTS.")
    degenerate = info.get("degenerate") or []
    if degenerate:
        messages.append(
            f"the MAP sits at a degenerate mode: {'; '.join(degenerate)}. There the density grows without bound "
            "or piles up at an edge, so this point is not a summary of the posterior. Hold that variable at "
            "an estimate (map_fixed), give it a prior that keeps it away from the edge, or fit with NUTS.")
    return messages


def laplace_messages(info: dict) -> list[str]:
    """The search for the centre of a Laplace approximation, checked like a MAP (`map_messages`)."""
    if not info.get("centre_converged", True):
        return []  # `laplace.run_laplace` already says that it stopped before converging
    gradient = info.get("centre_relative_gradient")
    if gradient is None or gradient <= RELATIVE_GRADIENT_MAX:
        return []
    return [f"the search for the centre of the Laplace approximation reported convergence but the gradient "
            f"there is not small (relative gradient {gradient:.2g}, above {RELATIVE_GRADIENT_MAX:g}): the "
            "Gaussian is centred off the mode and its intervals may be off. Check the fit with NUTS."]


# ---------------------------------------------------------------------- data that cannot identify the estimand
#: what a Gaussian emission does on a feature column that takes one value (`constant_features_message`)
GAUSSIAN_ON_CONSTANT = ("they tell nothing apart, and every Gaussian sd on them shrinks to its floor (a point mass), "
                        "which dominates the log density and can mislead the optimizer")


def constant_features_message(features: np.ndarray, names, what: str, consequence: str | None = None) -> str | None:
    """Plain words when some feature columns take one value on every item (`features` as the model sees
    them; `data.tables.FeatureScaling` keeps such a column, as zeros): a model that weighs features
    (`what`, e.g. "the cluster weights") learns nothing about those columns' weights from the data, only
    their prior; a model that describes them otherwise says what happens in `consequence`. None when
    every column varies."""
    features = np.asarray(features, dtype=float)
    if features.ndim != 2 or features.shape[0] == 0:
        return None
    flat = np.ptp(features, axis=0) <= 1e-12 * np.maximum(np.abs(features).max(axis=0), 1.0)
    if not flat.any():
        return None
    which = ", ".join(repr(str(n)) for n in np.asarray(names)[flat][:3]) + (", ..." if flat.sum() > 3 else "")
    consequence = consequence or f"the data say nothing about {what} for them, which stay at their prior"
    return (f"{int(flat.sum())} of {flat.size} feature columns take one value on every item ({which}): "
            f"{consequence}. Leave such columns out.")


def weightless_data_message(total: float, unit: str) -> str | None:
    """Plain words when all the data together weigh less than one `unit` (weights normalized to sum to
    1, or near zero): each unit's weight counts as that many units in the likelihood, so such data barely
    move the posterior from the prior. None otherwise."""
    if not total < 1.0:
        return None
    return (f"the {unit}s weigh {total:.3g} in all, less than one {unit}: a {unit}'s weight counts as that many "
            f"{unit}s, so these data barely move the posterior from the prior, and what the fit reports is "
            f"mostly the prior. Give weights on the scale of {unit} counts (for example, rescaled to average 1).")


def one_class_message(classes: np.ndarray, names, labelled: str, consequence: str) -> str | None:
    """Plain words when every labelled unit (`labelled`, e.g. "labelled item") carries the same class:
    nothing then tells the classes apart (`consequence` says what the fit cannot learn). None when at
    least two classes appear (or there are no labels, which a model says otherwise)."""
    classes = np.asarray(classes)
    present = np.unique(classes)
    if classes.size == 0 or present.size > 1:
        return None
    return (f"every {labelled} ({classes.size}) has the same class, {str(np.asarray(names)[present[0]])!r}: "
            f"{consequence}")
