"""What a fitted estimator says of itself, read from the fit: `summary` (the estimands and a variant's own
variables; `diagnosed_names`, `summary_notes`), `diagnostics_`, `settings_used_`, `report`, the checks
(`checks_` kept from fit time, `_fit_time_checks`, `run_checks`), `posterior_predictive`, and LOO and WAIC:
thin entry points to `criticism.py` and `inference.py`. `FitCriticism` is a base of `Estimator`, which
gives it `_fitted`, `_check_fitted` and `_complete_log_likelihood`.
"""

from __future__ import annotations

import warnings

from bayes_wsc import criticism, fit_log_likelihood, inference
from bayes_wsc.class_checks import _check_levels
from bayes_wsc.defaults import DEFAULT_CI
from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.value_checks import check_path, check_whole


class FitCriticism:
    """The reading and criticism of a fit (the module docstring lists them)."""

    def log_likelihood_notes(self) -> list[str]:
        """Plain words on what LOO scores for this fit (the fit's `log_likelihood_holds`), or none."""
        self._check_fitted()
        holds = inference.get_attrs(self._fitted()).get("log_likelihood_holds")
        return [f"LOO scores {holds}."] if holds else []

    def _fit_time_checks(self, data) -> list[str]:
        """Run the model's checks, store their rows in the fit, and return the flagged ones as messages.
        A variant whose variables the checks cannot use gets one line saying so, not a failed fit."""
        try:
            rows = criticism.run(self, data, draws=None, loo="_pending_log_likelihood" not in self.__dict__
                                 or fit_log_likelihood.thinned_fit(self))
        except (InputError, KeyError, IndexError, ValueError) as exc:
            if self.model_file is None:
                raise
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return [f"the model checks did not run on this variant ({type(exc).__name__}: {reason})"]
        inference.set_attrs(self._fitted(), {"checks": [r.as_dict() for r in rows]})
        return criticism.flagged_messages(rows)

    def diagnosed_names(self) -> list[str]:
        """What `summary` shows and the diagnostics check: the model's estimands, then every other
        posterior variable that is not internal to the model (a variant's own), except the ones per
        unit of the data (see `summary_notes`)."""
        post = self._fitted().posterior
        own = [n for n in self._other_variables() if not self._per_unit(post[n])]
        return [n for n in self.estimands if n in post] + own

    def summary_notes(self) -> list[str]:
        """Plain words naming the variables left out of `summary` because they hold one value per
        unit of the data (a variant's per-group or per-item parameters); empty when there are none."""
        post = self._fitted().posterior
        long = [f"{n}[{', '.join(map(str, post[n].dims[2:]))}]" for n in self._other_variables()
                if self._per_unit(post[n])]
        if not long:
            return []
        return [f"Not in the table, with one value per unit of the data: {', '.join(long)}. They are in the "
                "fit's posterior (est.idata_.posterior, or the saved netCDF file)."]

    def _other_variables(self) -> list[str]:
        post = self._fitted().posterior
        return [str(n) for n in post.data_vars if n not in self.estimands and n not in self.internal_variables]

    def _per_unit(self, variable) -> bool:
        return any(d in self.unit_dims for d in variable.dims)

    @property
    def settings_used_(self) -> dict:
        """The settings the fitted model was built with (`settings_for` its data: what the model resolved,
        such as a WH above its limit fitted as inf), as the fit stores them; what reports describe, rather
        than the settings asked for. A fit written before they were stored gives `build_settings`."""
        self._check_fitted()
        return dict(inference.get_attrs(self._fitted()).get("settings_used") or self.build_settings())

    @property
    def diagnostics_(self) -> list[str]:
        self._check_fitted()
        return list(inference.get_attrs(self._fitted()).get("diagnostics", []))

    def summary(self, var_names: list[str] | None = None, hdi_prob: float = DEFAULT_CI):
        """`az.summary` of the estimands and a variant's own variables (mean, sd, HDI, and R-hat/ESS
        after NUTS); `summary_notes` names what is too long for the table."""
        from bayes_wsc.posterior import check_ci

        self._check_fitted()
        check_ci(hdi_prob, "hdi_prob")
        if var_names is not None:
            names = [var_names] if isinstance(var_names, str) else var_names
            have = list(self._fitted().posterior.data_vars)
            unknown = [n for n in names if not isinstance(n, str) or n not in have] if isinstance(names, list) \
                else [names]
            if unknown:
                raise InputError(f"summary: var_names holds {unknown[0]!r}, which is not a variable of this fit "
                                 f"(its variables: {', '.join(map(str, have[:12]))})")
            var_names = names
        with self.variant_errors("summary"):
            return inference.summary(self._fitted(), var_names or self.diagnosed_names(), hdi_prob)

    def report(self, out_dir, **kwargs):
        """Write `out_dir/report.html` (the model's `write_report`). Reports read the fit as `_fitted()` (a loaded
        fit's groups, the same Datasets as `idata_`), its log-likelihood completed here for LOO: wrapping it for
        ArviZ 0.2x (`idata_`) imported ArviZ, 2-3 s of CPU that drew nothing (benchmarks/RESULTS.md, issue 38)."""
        self._check_fitted()
        check_path(out_dir, "report", "a report folder")
        self._complete_log_likelihood()
        with self.variant_errors("report"):
            return self.write_report(out_dir, **kwargs)

    @property
    def checks_(self):
        """The checks run when the fit was made (a DataFrame, one row per check; empty when the fit ran
        with checks=False or was written before fits kept them)."""
        self._check_fitted()
        return criticism.table(criticism.rows_from_attrs(inference.get_attrs(self._fitted()).get("checks")))

    def run_checks(self, *, draws: int = criticism.PPC_DRAWS, seed: int = 0):
        """Run the model's checks now (posterior predictive checks, its targeted check, LOO's Pareto k):
        a DataFrame with columns check, statistic, reference, p_value, flagged, message."""
        self._check_fitted()
        _check_draws_and_seed(draws, seed)
        self._complete_log_likelihood()
        return criticism.table(criticism.run(self, draws=draws, seed=seed))

    def posterior_predictive(self, *, draws: int = criticism.PPC_DRAWS, seed: int = 0):
        """Replicated data from the fit, summarized by the model's statistics: InferenceData with
        `posterior_predictive` (chain, draw, ...) and `observed_data` groups holding the same variables,
        ready for `az.plot_ppc`. About `draws` posterior draws are used (evenly spaced in each chain; a
        MAP's point `draws` times), every latent class drawn anew."""
        self._check_fitted()
        _check_draws_and_seed(draws, seed)
        return inference.to_inference_data(criticism.posterior_predictive(self, draws=draws, seed=seed))

    def loo(self, pointwise: bool = True):
        """PSIS-LOO (`az.loo`) on the fit's pointwise log-likelihood; a FitWarning in plain words when
        some Pareto k values are too large for it to be trusted. A MAP fit raises `InputError`: LOO needs
        posterior draws."""
        self._check_fitted()
        fitted = self._complete_log_likelihood()
        reason = inference.loo_unavailable(fitted)
        if reason:
            raise InputError(reason)
        elpd = inference.loo(fitted, pointwise)
        row = criticism.pareto_row(elpd, criticism.unit_noun(fitted), fitted)
        if row.flagged:
            warnings.warn(row.message, FitWarning, stacklevel=2)
        return elpd

    def waic(self, pointwise: bool = True):
        """WAIC (`az.waic`) on the fit's pointwise log-likelihood; a MAP fit raises `InputError`."""
        self._check_fitted()
        fitted = self._complete_log_likelihood()
        reason = inference.loo_unavailable(fitted)
        if reason:
            raise InputError(reason.replace("LOO", "WAIC"))
        return inference.waic(fitted, pointwise)


_check_levels(FitCriticism)


def _check_draws_and_seed(draws, seed) -> None:
    """The replicates' settings of `run_checks` and `posterior_predictive`: whole numbers, draws >= 1."""
    check_whole("draws", draws, 1)
    check_whole("seed", seed, 0)
