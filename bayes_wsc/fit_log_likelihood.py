"""A fit's pointwise log-likelihood, what LOO, WAIC and the Pareto k check read: made at fit time or
left to first use, and said in words.

Which of the fitted model's terms are the default model's (`likelihood_terms`, so that checks replicate
only from a formula the fit shares); a NUTS or Laplace fit's log-likelihood computed on first use
(`complete`), as it can cost as much as the fit, and at fit time on `FIT_TIME_LOO_DRAWS` draws of
each chain only, for the Pareto k check (`thinned_fit`); a loaded fit's rebuilt from its file when the
file left it out, or read from its file on first use when the fit was loaded so (`read_from_file`). Apart
from the fit's lifecycle because it has a life of its own after the fit; the estimator's
`_complete_log_likelihood` delegates here.
"""

from __future__ import annotations

from bayes_wsc import criticism, fit_files, inference
from bayes_wsc.fit_files import LOG_LIKELIHOOD_LEFT_OUT, SAVED_WITHOUT_LOG_LIKELIHOOD, LogLikelihoodInFile
from bayes_wsc.value_checks import check_finite
from bayes_wsc.variant_files import _one_line

#: draws per chain whose pointwise log-likelihood a NUTS fit computes at fit time, for its Pareto k check
#: (`thinned_fit`); the rest wait for first use (at 10,000 groups with mu integrated out, all 4000 draws
#: cost 30-50 s, a fifth of the run)
FIT_TIME_LOO_DRAWS = 250


def likelihood_terms(est, draws, data) -> tuple[dict | None, list[str]]:
    """Which of the fitted model's terms are the default model's (`model_terms`), and warnings.
    The package's own model is the default by construction; a variant is compared at its draws
    (a Laplace fit of a variant computes its pointwise log-likelihood now, for the comparison)."""
    from bayes_wsc import model_terms

    if est.model_name not in criticism.MODULES:
        return None, []
    module = criticism.module_of(est)
    names = getattr(module, "TERMS", ("likelihood",))
    if est.model_file is None and type(est).build_model.__module__.startswith("bayes_wsc."):
        return {t: model_terms.DEFAULT for t in names}, []
    if draws.deferred is not None:
        draws.posterior.update(draws.deferred())
        draws.deferred = None
    try:
        return model_terms.likelihood_terms(est, draws.posterior, data, est.model_), []
    except Exception as exc:  # noqa: BLE001 - user code: say so, and trust nothing of the default's
        return {t: model_terms.UNVERIFIED for t in names}, [
            f"the variant's terms could not be compared with the default model's ({_one_line(exc)}): its "
            "log-likelihood is kept as it recorded it, and checks that replicate from the default model's "
            "formula do not run"]


def recorded_words(est) -> str:
    """What the `log_likelihood` group holds when the model keeps what it recorded."""
    from bayes_wsc import model_terms

    replaced = model_terms.replaced(getattr(est, "_fit_terms", None))
    if not replaced:
        return "the log-likelihood of each unit as the fitted model recorded it (its terms are the default model's)"
    return (f"the log-likelihood of each unit as the fitted model recorded it, from its own terms (its "
            f"{', '.join(replaced)} {'is' if len(replaced) == 1 else 'are'} not the default model's)")


def complete(est):
    """The fit with its `log_likelihood` group. A Laplace fit, made for intervals in seconds, leaves
    that group to first use (`idata_`, `loo`, `waic`, `compare`, `save`, `run_checks`): for the first
    model it integrates every group's mu_i out for every draw, longer than the approximation itself
    at 10,000 groups."""
    pending = est.__dict__.pop("_pending_log_likelihood", None)
    if isinstance(pending, LogLikelihoodInFile):
        read_from_file(est, pending)
    elif pending == SAVED_WITHOUT_LOG_LIKELIHOOD:
        values, dims, holds = est.log_likelihood_from_file()()
        check_finite(values)
        inference.add_log_likelihood(est._groups, values, dims)
        inference.set_attrs(est._groups, {"log_likelihood_holds": holds, LOG_LIKELIHOOD_LEFT_OUT: False})
    elif pending is not None:
        draws, data, dims = pending
        values, holds = deferred_log_likelihood(est, draws, data)
        inference.add_log_likelihood(est._groups, values, dims or {})
        inference.set_attrs(est._groups, {"log_likelihood_holds": holds or recorded_words(est)})
    return est._fitted()


def read_from_file(est, pending: LogLikelihoodInFile) -> None:
    """The `log_likelihood` group a loaded fit left in its file, read now and checked as `load` checks
    every group (`fit_files._usable_draws`): the draws the fit left out of its posterior are left out of
    it, and a draw it holds damaged is left out of the whole fit, with a `FitWarning`."""
    group = pending.read(est._source)
    kept = getattr(est, "_source_draws", None)
    if kept is not None:
        group = inference.select_draws(inference.Groups(log_likelihood=group), kept)["log_likelihood"]
    est._groups["log_likelihood"] = group
    est._groups, _ = fit_files._usable_draws(est._groups, type(est).bounds, est._source)


def thinned_fit(est):
    """For the Pareto k check at fit time of a NUTS fit whose log-likelihood waits for first use: the fit
    at `FIT_TIME_LOO_DRAWS` draws of each chain, evenly spaced, with their log-likelihood (the waiting
    function at those draws only, then `pointwise_log_likelihood`, as on first use). False for a
    Laplace fit, whose check waits with its log-likelihood."""
    import numpy as np

    pending = est.__dict__.get("_pending_log_likelihood")
    if est.method != "nuts" or not isinstance(pending, tuple):
        return False
    draws, data, dims = pending
    n = est._groups["posterior"].sizes["draw"]
    keep = np.unique(np.linspace(0, n - 1, min(n, FIT_TIME_LOO_DRAWS)).round().astype(int))
    values, _ = deferred_log_likelihood(est, draws, data, keep)
    fit = inference.select_draws(est._groups, keep)
    inference.add_log_likelihood(fit, values, dims or {})
    return fit


def deferred_log_likelihood(est, draws, data, keep=None) -> tuple[dict, str | None]:
    """The pointwise log-likelihood that waited in `draws.deferred`, at every draw or at the draws
    `keep` of each chain, completed by `pointwise_log_likelihood`: its values (checked finite) and what
    they hold. One path for first use and for the fit-time check on some draws."""
    import numpy as np

    from bayes_wsc.draws import Draws

    recorded = draws.deferred() if keep is None else draws.deferred(keep)
    target = draws if keep is None else Draws({k: np.asarray(v)[:, keep] for k, v in draws.posterior.items()},
                                              info=draws.info)
    target.posterior.update(recorded)
    holds = est.pointwise_log_likelihood(target, data)
    values = {name: target.posterior.pop(name) for name in recorded}
    check_finite(values)
    return values, holds
