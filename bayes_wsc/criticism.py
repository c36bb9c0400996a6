"""Model criticism: posterior predictive checks and each model's targeted check, one row per check.

A check puts a statistic of the observed data beside the same statistic of
data replicated from the fit: posterior draws (subsampled; a MAP fit's one
point for every replicate), with every latent class drawn anew, never copied
from the data. Each model's module (`models/<model>/checks.py`, registered in `registry.py`)
says which statistics it replicates (`replicate`) and which rows it reports
(`rows`); this module draws the replicates, turns statistics into p-values
and rows, and runs a model's checks at fit time or on a saved fit.

Rows are `Check`s: `check`, `statistic` (observed), `reference` (what the fit
expects), `p_value`, `effect` (how far off, in the check's own units) against
its stated `tolerance`, and `flagged`, with a `message` in plain words. A
vector statistic (one value per bin, group, expert or feature) is judged as a
whole, by a chi-square discrepancy against its replicates (`omnibus`; its
effect is the ratio of the observed discrepancy to the replicates'), or by
its worst element with a Bonferroni correction (`worst_element`), so that a
fit with many groups does not flag by chance. A row flags when its p-value is
below `ALPHA` and its effect exceeds its tolerance: with hundreds of groups
of hundreds of items a pure significance test rejects every real data set,
so a flag says the misfit is large, not only that it is there.

A statistic that the fitted parameters reproduce by construction (the bins'
pooled shares under free class distributions, each expert's link rate under
its own sensitivity and specificity, a mixture's feature means and standard
deviations, each cluster's seed count under its own intercept) is not a
check: its p-value is near 1 on every fit, whatever the data. Such
statistics may still be replicated for `ppc` plots, but no row reports them.

Nothing here imports PyMC or ArviZ: a MAP fit is checked from its arrays.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import pandas as pd

from bayes_wsc import inference, psis, registry
from bayes_wsc.errors import InputError

#: replicated data sets per check (posterior draws are subsampled to about this many)
PPC_DRAWS = 200
#: at fit time, fewer replicates (down to `MIN_DRAWS`) for big data: at most this many random variates in all
FIT_TIME_VARIATES = 2_000_000
MIN_DRAWS = 100
#: a check flags when its p-value is below this
ALPHA = 0.01
COLUMNS = ("check", "statistic", "reference", "p_value", "flagged", "message", "effect", "tolerance")
#: what a stored row must hold: fits saved before checks had effect sizes lack the last two (read as NaN)
REQUIRED_COLUMNS = COLUMNS[:6]
#: an omnibus check flags only when the observed discrepancy is more than this many times the replicates'
PHI_TOLERANCE = 2.0
#: model name -> the module with its `replicate` and `rows` (from `registry.MODELS`)
MODULES = {spec.name: spec.checks for spec in registry.MODELS}

_RUNNING = contextvars.ContextVar("bayes_wsc_checks_running", default=False)


@dataclass
class Check:
    """One row of a model's checks."""

    check: str
    statistic: float
    reference: float
    p_value: float
    flagged: bool
    message: str
    effect: float = float("nan")
    tolerance: float = float("nan")

    def as_dict(self) -> dict:
        row = asdict(self)
        row.update(statistic=float(self.statistic), reference=float(self.reference), p_value=float(self.p_value),
                   flagged=bool(self.flagged), effect=float(self.effect), tolerance=float(self.tolerance))
        return row


@dataclass
class Replicates:
    """Statistics of the replicated data sets (each (S, ...) over S replicates) and of the observed data
    (same names, without the leading axis), with their dims; `realized` holds discrepancies that depend
    on the parameters too, as (observed, replicated) pairs per draw (Gelman, Meng and Stern 1996)."""

    replicated: dict[str, np.ndarray]
    observed: dict[str, np.ndarray]
    dims: dict[str, list[str]] = field(default_factory=dict)
    coords: dict[str, Sequence] = field(default_factory=dict)
    realized: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    #: checks left out because the fitted model replaced the term they replicate from: {check: why}
    not_run: dict[str, str] = field(default_factory=dict)


def running() -> bool:
    """True while a model's checks run: fits made by a check (half-sample refits) skip their own checks."""
    return _RUNNING.get()


@contextlib.contextmanager
def _checks_running():
    token = _RUNNING.set(True)
    try:
        yield
    finally:
        _RUNNING.reset(token)


def module_of(est):
    name = getattr(est, "model_name", None)
    if name not in MODULES:
        raise InputError(f"there are no checks for a {name!r} fit")
    return registry.get(name).module("checks")


def _posterior(est):
    fitted = est._fitted()
    if fitted is None:
        raise InputError(f"this {type(est).__name__} is not fitted yet: call fit(data) first")
    return fitted


# ---------------------------------------------------------------------- replicates
def subsample(posterior, names: Sequence[str], draws: int) -> tuple[dict[str, np.ndarray], tuple[int, int]]:
    """The posterior variables `names` at about `draws` draws, evenly spaced within each chain, as
    (S, ...) arrays, and the (chain, draw) shape they came from. A MAP fit (one draw) gives its point
    `draws` times: the replicates then vary only by the data drawn from that point."""
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 1:
        raise InputError(f"draws must be a whole number >= 1, got {draws!r}")
    chains, n = posterior.sizes["chain"], posterior.sizes["draw"]
    missing = [k for k in names if k not in posterior]
    if missing:
        raise InputError(f"the checks need the posterior variables {missing}, which this fit does not have")
    if chains * n == 1:
        return {k: np.repeat(np.asarray(posterior[k].values)[0, :1], draws, axis=0) for k in names}, (1, int(draws))
    per_chain = max(1, min(n, math.ceil(draws / chains)))
    index = np.unique(np.linspace(0, n - 1, per_chain).round().astype(int))
    out = {k: np.asarray(posterior[k].values)[:, index].reshape(chains * index.size, *posterior[k].shape[2:])
           for k in names}
    return out, (chains, index.size)


def likelihood_terms(est) -> dict[str, str]:
    """The fit's `likelihood_terms` (`model_terms`): which of its terms are the default model's. A fit
    made before they were recorded is taken as the default model's, as it was then."""
    return dict(inference.get_attrs(_posterior(est)).get("likelihood_terms") or {})


def replaced_message(est, replaced: Sequence[str]) -> str:
    """Why a model's checks did not run: the fitted model replaced the terms they replicate from (its
    recorded log-likelihood differs from the default formula at the fit's draws), or they could not be
    compared (a variant without the reported variables the formula reads, or that records nothing)."""
    terms = likelihood_terms(est)
    own = all(terms.get(t) == "own" for t in replaced)
    verb = "is" if len(replaced) == 1 else "are"
    how = (f"{verb} its own (it differs from the default {est.model_name} model's at the fit's draws)" if own else
           f"{verb} not known to be the default {est.model_name} model's (it could not be compared with it)")
    return (f"not run: the fitted model's {', '.join(replaced)} {how}, and these checks would replicate the data "
            "from the default model's formula instead of the fitted model's.")


def _replicates_default_only(est, module) -> list[str]:
    """The fit's replaced terms, for a model whose checks replicate from the default formula alone."""
    from bayes_wsc import model_terms

    return [] if hasattr(module, "likelihood_terms") else model_terms.replaced(likelihood_terms(est))


def draw_replicates(est, data=None, *, draws: int = PPC_DRAWS, seed: int = 0) -> tuple[Replicates, tuple[int, int]]:
    """The model's replicated statistics (`checks/<model>.replicate`) on subsampled posterior draws.
    A fit whose model replaced a term the replicates come from raises `InputError` (they would be the
    default model's data, not the fitted model's)."""
    fitted = _posterior(est)
    module = module_of(est)
    replaced = _replicates_default_only(est, module)
    if replaced:
        raise InputError("the posterior predictive checks were " + replaced_message(est, replaced))
    data = est.data_from_fit() if data is None else data
    params, shape = subsample(fitted.posterior, module.parameters(fitted.posterior), draws)
    rng = np.random.default_rng(seed)
    return module.replicate(est, data, params, rng), shape


def posterior_predictive(est, data=None, *, draws: int = PPC_DRAWS, seed: int = 0) -> inference.Groups:
    """`posterior_predictive` and `observed_data` groups with the same variables: statistics of the
    replicated data sets and of the observed data (what `az.plot_ppc` draws)."""
    replicates, (chains, per_chain) = draw_replicates(est, data, draws=draws, seed=seed)
    if not replicates.replicated:
        raise InputError("the posterior predictive checks were " + " ".join(replicates.not_run.values()))
    replicated = {k: v.reshape(chains, per_chain, *v.shape[1:]) for k, v in replicates.replicated.items()}
    groups = inference.from_draws({}, coords=replicates.coords, dims=replicates.dims,
                                  observed_data=replicates.observed)
    predictive = inference.from_draws(replicated, coords=replicates.coords, dims=replicates.dims)
    out = inference.Groups(posterior_predictive=predictive["posterior"], observed_data=groups["observed_data"])
    inference.set_attrs(out, {"model": est.model_name, "ppc_draws": int(chains * per_chain), "ppc_seed": int(seed),
                              "ppc_not_run": replicates.not_run,
                              "method": inference.get_attrs(_posterior(est))["method"]})
    return out


# ---------------------------------------------------------------------- running the checks
def run(est, data=None, *, draws: int | None = PPC_DRAWS, seed: int = 0,
        targeted: Sequence[Callable] | None = None, loo=True) -> list[Check]:
    """Every check of a fitted estimator: the posterior predictive checks and targeted checks of its
    model, and, for a fit with draws, the Pareto k values of LOO. Fits that a check makes (refits on
    halves of the data) do not run checks themselves.

    draws : replicated data sets; None (at fit time) takes `PPC_DRAWS`, or fewer for big data so that
        the replicates need at most `FIT_TIME_VARIATES` random numbers (but `MIN_DRAWS` at least).

    targeted : functions (est, data, seed) -> list of `Check` run instead of the model's own targeted
        checks (`checks/<model>.targeted`): tests pass stand-ins here.

    loo : False leaves out the Pareto k row (a Laplace fit at fit time, whose log-likelihood waits); a fit
        (`inference.Groups`) computes it there instead (a NUTS fit at fit time: some of its draws, with
        their log-likelihood, while the rest waits for first use).
    """
    module = module_of(est)
    data = est.data_from_fit() if data is None else data
    if draws is None:
        draws = int(min(PPC_DRAWS, max(MIN_DRAWS, FIT_TIME_VARIATES // max(1, module.variates(data)))))
    replaced = _replicates_default_only(est, module)
    # a variant file's own checks (`Estimator.variant_checks`: its `CHECKS`) replace the model's
    own = est.variant_checks() if targeted is None and hasattr(est, "variant_checks") else None
    with _checks_running():
        if own is not None:  # the variant says what to check: none of the default model's checks apply
            rows = _variant_rows(est, own, data, seed)
        elif replaced:  # one row says why, instead of checks of a model that was not fitted
            rows = [Check("ppc", float("nan"), float("nan"), float("nan"), False,
                          "The posterior predictive and targeted checks were " + replaced_message(est, replaced))]
        else:
            rows = []
            if getattr(module, "REPLICATE_ROWS", True):  # a model whose replicates feed `ppc` only skips them
                replicates, _ = draw_replicates(est, data, draws=draws, seed=seed)
                rows = list(module.rows(est, data, replicates))
                rows += [Check(name, float("nan"), float("nan"), float("nan"), False, message)
                         for name, message in replicates.not_run.items()]
            for check in (module.targeted() if targeted is None else targeted):
                rows += check(est, data, seed)
        if loo is not False:
            rows += loo_rows(est, None if loo is True else loo)
    return rows


def _variant_rows(est, checks, data, seed: int) -> list[Check]:
    """A variant's own checks run: each must return a list of `Check` rows, else one line naming its file."""
    rows = []
    with est.variant_errors("its checks (CHECKS)"):
        for check in checks:
            got = check(est, data, seed)
            if not isinstance(got, (list, tuple)) or not all(isinstance(row, Check) for row in got):
                name = getattr(check, "__name__", repr(check))
                raise InputError(f"model file {str(est.model_file)!r}: its check {name} returned {type(got).__name__} "
                                 f"{str(got)[:60]!r}, not a list of bayes_wsc.checks.Check rows")
            rows += got
    return rows


def loo_rows(est, fitted=None) -> list[Check]:
    """A row on the Pareto k values of LOO, for a fit with draws and a log-likelihood (none otherwise):
    the estimator's, or `fitted`, some of its draws (the row then says how many)."""
    whole = _posterior(est)
    fitted = est._complete_log_likelihood() if fitted is None else fitted  # one waiting for first use: now
    if inference.loo_unavailable(fitted) is not None:
        return []
    elpd = inference.psis_loo(fitted)  # NumPy: `check` imports no ArviZ
    used, of = (f.posterior.sizes["chain"] * f.posterior.sizes["draw"] for f in (fitted, whole))
    if used == of:
        return [pareto_row(elpd, unit_noun(fitted), fitted)]
    # k judged against the threshold of the whole fit's draws, which LOO on the fit uses
    row = pareto_row(elpd, unit_noun(fitted), fitted, threshold=psis.good_k(of))
    return [replace(row, message=f"{row.message} (Checked when fitting on {used} of the {of} draws, evenly spaced "
                                 "in each chain; LOO on the fit uses them all.)")]


def unit_noun(idata) -> str:
    """'group', 'pair', 'item': the dim of the log-likelihood, what LOO leaves out."""
    variables = list(idata["log_likelihood"].data_vars.values())
    dims = [d for d in variables[0].dims if d not in ("chain", "draw")] if variables else []
    return dims[0] if dims else "observation"


def unit_label(idata, label) -> str:
    """A unit of the log-likelihood (a coordinate of its dim) named as the user knows it: a model's checks
    module may define `unit_label(groups, label)` (the noisy-experts model names a pair by its items' ids),
    handed the fit's groups as xarray Datasets whichever ArviZ family the fit was made for."""
    name = inference.get_attrs(idata).get("model")
    namer = getattr(registry.get(name).module("checks"), "unit_label", None) if name in MODULES else None
    return str(label) if namer is None else namer(inference.groups_of(idata), label)


def plural(noun: str) -> str:
    """'bins', 'classes', 'group-class pairs' (a noun 'group and class' names a pair of labels)."""
    noun = noun.replace("_", " ")
    if " and " in noun:
        return "-".join(noun.split(" and ")) + " pairs"
    return noun + ("es" if noun.endswith(("s", "x", "ch", "sh")) else "s")


def distinct_figures(a: float, b: float) -> tuple[str, str]:
    """Two numbers with two decimals, or as many more as it takes for unequal numbers to read unequal
    (a Pareto k of 0.6412 above the threshold 0.6389 is not "above 0.64, worst 0.64")."""
    for places in range(2, 7):
        first, second = f"{a:.{places}f}", f"{b:.{places}f}"
        if first != second or a == b:
            break
    return first, second


def pareto_row(elpd, noun: str, idata=None, threshold: float | None = None) -> Check:
    """The LOO row; with the fit's `idata`, the worst unit is named as the user knows it (`unit_label`);
    `threshold` instead of the one for the draws `elpd` used."""
    k = inference.pareto_k_summary(elpd, threshold)
    flagged = k["bad"] > 0
    noun = noun.replace("_", " ")  # a dim name: "seed item"
    worst = k["worst"] if idata is None else unit_label(idata, k["worst"])
    threshold, largest = distinct_figures(k["threshold"], k["max_k"])
    if flagged:
        message = (f"LOO is unreliable for {k['bad']} of {k['units']} {plural(noun)} (Pareto k above "
                   f"{threshold}, worst {largest} at {noun} {worst}): for them the posterior "
                   f"without the {noun} is too far from the posterior with it for importance sampling to stand in "
                   "for refitting. Compare models by refitting without those units (K-fold), or draw more samples "
                   "if k is close to the threshold.")
    else:
        message = (f"LOO is reliable: every Pareto k is at most {threshold} (largest {largest}, "
                   f"at {noun} {worst}).")
    return Check("loo_pareto_k", k["max_k"], k["threshold"], float("nan"), flagged, message)


def table(rows: Sequence[Check]) -> pd.DataFrame:
    """The rows as a DataFrame with `COLUMNS`."""
    return pd.DataFrame([r.as_dict() for r in rows], columns=list(COLUMNS))


def rows_from_attrs(records) -> list[Check]:
    """Rows stored in a fit's attrs (a list of dicts) as `Check`s."""
    return [Check(**{k: r.get(k, float("nan")) for k in COLUMNS}) for r in records or []]


def flagged_messages(rows: Sequence[Check]) -> list[str]:
    return [f"check {r.check} flagged: {r.message}" for r in rows if r.flagged]


# ---------------------------------------------------------------------- p-values
#: below this many replicates beyond the observed value, a tail is read from a normal fit to the replicates
MIN_TAIL_COUNT = 5


def _tail(count: np.ndarray, n: np.ndarray, z: np.ndarray) -> np.ndarray:
    """P(replicate beyond the observed value) from `count` of `n` replicates, the observed value counted as
    one more; where fewer than `MIN_TAIL_COUNT` are beyond it, from the normal tail at `z` standard
    deviations instead, which can go below 1 / (n + 1) (a check with many elements needs that, after
    Bonferroni)."""
    from scipy.special import ndtr

    empirical = (1 + count) / (1 + n)
    return np.where(count < MIN_TAIL_COUNT, np.minimum(empirical, ndtr(-z)), empirical)


def _standardized(observed, replicated):
    replicated = np.asarray(replicated, dtype=float)
    finite = np.isfinite(replicated)
    n = np.sum(finite, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        centre = np.nanmean(np.where(finite, replicated - observed, np.nan), axis=0)  # replicate - observed
        spread = np.nanstd(np.where(finite, replicated - observed, np.nan), axis=0, ddof=1)
        z = np.where(spread > 0, centre / spread, np.where(centre > 0, np.inf, np.where(centre < 0, -np.inf, 0.0)))
    return replicated, n, z


def p_value_upper(observed: np.ndarray, replicated: np.ndarray) -> np.ndarray:
    """P(T_rep >= T) per element over replicates (axis 0). `observed` may vary by replicate too (a
    realized discrepancy: then each replicate is compared with the observed value under its draw)."""
    replicated, n, z = _standardized(observed, replicated)
    return _tail(np.sum(replicated >= observed, axis=0), n, -z)


def p_value_two_sided(observed: np.ndarray, replicated: np.ndarray) -> np.ndarray:
    """2 min(P(T_rep >= T), P(T_rep <= T)) per element over replicates (axis 0); see `p_value_upper`."""
    replicated, n, z = _standardized(observed, replicated)
    above = _tail(np.sum(replicated >= observed, axis=0), n, -z)
    below = _tail(np.sum(replicated <= observed, axis=0), n, z)
    return np.minimum(1.0, 2 * np.minimum(above, below))


def omnibus(name: str, observed: np.ndarray, replicated: np.ndarray, labels: Sequence, noun: str, what: str,
            advice: str, tolerance: float = PHI_TOLERANCE) -> Check:
    """One row for a vector statistic: the chi-square discrepancy D = sum_j (T_j - m_j)^2 / v_j, with m_j,
    v_j the mean and variance of element j over the replicates, of the observed data and of every
    replicate; p = P(D_rep >= D_obs) (`p_value_upper`). Elements that never vary, and replicates where an element is
    undefined, are left out. `statistic` is D of the observed data, `reference` its replicates' mean, and
    the effect their ratio phi (1 under the model; below 1 when the fit has seen the data): the row flags
    when p < `ALPHA` and phi > `tolerance`."""
    obs = np.asarray(observed, dtype=float).ravel()
    rep = np.asarray(replicated, dtype=float).reshape(np.shape(replicated)[0], -1)
    labels = np.asarray(labels, dtype=object).ravel()
    with np.errstate(invalid="ignore", divide="ignore"):
        mean, var = np.nanmean(rep, axis=0), np.nanvar(rep, axis=0, ddof=1)
    used = np.isfinite(obs) & np.isfinite(var) & (var > 1e-300) & (np.mean(np.isfinite(rep), axis=0) > 0.95)
    if not used.any():
        return Check(name, float("nan"), float("nan"), float("nan"), False,
                     f"{what}: no {noun} varies between replicates, so there is nothing to check.",
                     float("nan"), float(tolerance))
    rep, obs, mean, var, labels = rep[:, used], obs[used], mean[used], var[used], labels[used]
    rep = rep[np.isfinite(rep).all(axis=1)]
    d_rep = np.sum((rep - mean) ** 2 / var, axis=1)
    z2 = (obs - mean) ** 2 / var
    d_obs = float(np.sum(z2))
    p = float(p_value_upper(d_obs, d_rep))
    phi = d_obs / max(float(np.mean(d_rep)), 1e-300)
    worst = int(np.argmax(z2))
    flagged = p < ALPHA and phi > tolerance
    detail = (f"{noun} {labels[worst]} is furthest off: {_number(obs[worst])} observed against "
              f"{_number(mean[worst])} +- {_number(math.sqrt(var[worst]))} in the replicates")
    size = f"{phi:.3g} times the replicates' discrepancy, tolerance {tolerance:g}"
    if flagged:
        message = (f"{what} differ from data replicated from the fit far more than chance allows ({size}; "
                   f"p = {p:.3g} over {obs.size} {plural(noun)}; {detail}). {advice}")
    elif p < ALPHA:
        message = (f"{what} differ from the replicates beyond chance but within the tolerance ({size}; "
                   f"p = {p:.3g} over {obs.size} {plural(noun)}; {detail}).")
    else:
        message = (f"{what} are consistent with the fit ({size}; p = {p:.3g} over {obs.size} {plural(noun)}; "
                   f"{detail}).")
    return Check(name, d_obs, float(np.mean(d_rep)), p, flagged, message, phi, float(tolerance))


def worst_element(name: str, p_values: np.ndarray, observed: np.ndarray, reference: np.ndarray, labels: Sequence,
                  noun: str, what: str, advice: str, *, tolerance: float, unit: str = "",
                  relative: bool = False) -> Check:
    """One row for per-element p-values: the smallest, Bonferroni-corrected for the number of elements,
    among the elements whose effect exceeds `tolerance`: |observed - reference| in the statistic's own
    units (`unit` naming them), or with `relative` the ratio observed / reference (for discrepancies,
    1 under the model); the row flags when that p-value is below `ALPHA`. Without such an
    element the row reports the smallest p-value of all and does not flag. `statistic` and `reference`
    are the reported element's observed value and what the replicates give."""
    p_values = np.asarray(p_values, dtype=float)
    observed, reference = np.asarray(observed, dtype=float), np.asarray(reference, dtype=float)
    finite = np.isfinite(p_values)
    if not finite.any():
        return Check(name, float("nan"), float("nan"), float("nan"), False,
                     f"{what}: no {noun} could be checked.", float("nan"), float(tolerance))
    with np.errstate(invalid="ignore", divide="ignore"):
        effect = observed / reference if relative else np.abs(observed - reference)
    large = finite & (effect > tolerance)
    pool = large if large.any() else finite
    worst = int(np.argmin(np.where(pool, p_values, np.inf)))
    p = float(min(1.0, p_values[worst] * finite.sum()))
    flagged = bool(large.any()) and p < ALPHA
    label = np.asarray(labels, dtype=object)[worst]
    off = (f"{_number(effect[worst])} times that, tolerance {tolerance:g}" if relative
           else f"off by {_number(effect[worst])}{unit} with tolerance {tolerance:g}{unit}")
    values = f"{_number(observed[worst])} observed against {_number(reference[worst])} in the replicates, {off}"
    if flagged:
        message = (f"{what} for {noun} {label} ({values}; p = {p:.3g}, Bonferroni over {finite.sum()} "
                   f"{plural(noun)}). {advice}")
    else:
        message = (f"{what}: no {noun} stands out (smallest p = {p:.3g} after Bonferroni over {finite.sum()}, "
                   f"{noun} {label}: {values}).")
    return Check(name, float(observed[worst]), float(reference[worst]), p, flagged, message, float(effect[worst]),
                 float(tolerance))


def _number(x: float) -> str:
    return f"{x:.4g}"
