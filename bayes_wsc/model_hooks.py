"""The hooks of `Estimator` that every model may override, with the default that is right for a model
that does not: where the MAP starts and what it holds (`initial_values`, `map_fixed`), what the data cannot
identify (`data_messages`), settings resolved against the data (`settings_for`), the model's own checks of
its data (`check_data`), its inputs in NumPy (`model_inputs`), NUTS's starts and options, relabeling
(`order_clusters`, `align_draws`), variables integrated out (`complete_draws`), the pointwise
log-likelihood (`pointwise_log_likelihood`, `log_likelihood_from_file`), `model_checks`, `write_report` and
`key_columns`. `ModelHooks` is a base of `Estimator`: a model overrides a hook by defining it.
"""

from __future__ import annotations

from bayes_wsc import inference
from bayes_wsc.class_checks import _check_levels


class ModelHooks:
    """The overridable hooks of `Estimator`, each with its default (the module docstring lists them)."""

    def initial_values(self, data) -> dict | list[dict]:
        """Where the MAP starts (constrained scale); a list of starts means random restarts,
        of which the best log density is kept (and starts NUTS)."""
        return {}

    def map_fixed(self, data) -> dict:
        """Free variables held at these values (constrained scale) while the MAP is sought.

        The joint mode of a hierarchical model is degenerate: its density grows
        without bound as a group-level scale goes to 0 with every group at the
        common location, and L-BFGS can slide there (seen by simulation-based
        calibration: chains started at such a mode never leave it). Holding the
        scale at an estimate gives the conditional mode instead. None by default.
        """
        return {}

    def data_messages(self, data) -> list[str]:
        """Plain words, before anything is fitted, for data (or settings) that cannot identify what the
        model estimates: one group, one class in every label, a constant feature. `fit` warns with them
        at once and keeps them with the fit's diagnostics; a model raises `InputError` instead where no
        fit could mean anything. None by default."""
        return []

    def settings_for(self, data) -> dict:
        """The settings `build_model` takes for these data: `build_settings`, with any setting that the
        model resolves against its data (proportions' bag likelihood "auto") resolved. What builds the
        model, keys its cached program and reaches a variant's `build_model`."""
        return self.build_settings()

    def check_data(self, data) -> None:
        """The model's own checks of `data` against its settings (a container validates itself when
        built; an emission that needs numeric features, or a likelihood that needs whole counts, is the
        model's to check): one `InputError` line. `fit` runs it after `check_data_type` and
        `check_params`, before any work. Nothing by default."""

    def model_inputs(self, data) -> tuple[dict, dict] | None:
        """(coords, values): the model's coordinates and every data-derived value its graph reads
        as `pm.Data`, by name, computed in NumPy without PyMC, with the data's checks. With them a
        MAP program is cached by structure and runs on new data of the same shapes (`map_program`).
        None (the default): no program is cached."""
        return None

    def nuts_start(self, start: dict) -> dict:
        """Where a NUTS chain starts, given the MAP's point (constrained scale): by default that point.
        A model whose MAP may sit on a boundary of a parameter's support (a simplex share of 0) moves
        it inside, where the sampler can adapt."""
        return start

    def order_clusters(self, draws, dims: dict, data) -> None:
        """Put the clusters of a MAP (`draws`, a single point) in the canonical order, in place
        (`relabel.canonical_permutation`), so that two fits number them alike; NUTS then relabels
        its draws against this point. Models without exchangeable clusters keep this no-op."""

    def align_draws(self, draws, map_draws, data, *, free: list[str], dims: dict) -> list[str]:
        """Relabel exchangeable clusters in `draws.posterior` in place (see `relabel.py`) before
        diagnostics; returns warnings. `free` names the fit's free variables and `dims` every
        variable's dims (from the program or the model, so that a cached fit builds no model).
        Models without exchangeable labels keep this no-op."""
        return []

    def model_checks(self, idata) -> list[str]:
        """Model-specific warnings (orientation, label switching); none by default."""
        return []

    def nuts_warnings(self, start) -> list[str]:
        """What NUTS's start (`nuts_start`'s point, or a list of them, one per chain) already says about the
        run, warned before sampling begins (a run of an hour would otherwise say it at its end) and kept
        with the fit's diagnostics; none by default."""
        return []

    def nuts_options(self) -> dict:
        """Further settings of `fit.fit_nuts` for this model (e.g. `dense_mass`); none by default."""
        return {}

    def complete_draws(self, draws, data) -> dict:
        """Add to the draws of NUTS or Laplace (`draws.posterior`), in place, variables the model
        integrated out (drawn from their conditionals); returns their dims. None by default."""
        return {}

    def pointwise_log_likelihood(self, draws, data) -> str | None:
        """Rework, in place, the per-unit log-likelihood the model recorded (`likelihoods.record_pointwise`)
        before it becomes the `log_likelihood` group, and say in words what it then holds (kept in the
        fit's attrs as `log_likelihood_holds`); by default it is kept as the graph computed it (None).
        A rework may only use the default model's formulas where `self._fit_terms` (`model_terms`) says
        the fitted model's terms are the default's."""
        return None

    def log_likelihood_from_file(self):
        """How to rebuild this fit's `log_likelihood` group from its saved draws and data alone: a function
        returning ({LOG_LIKELIHOOD_PREFIX + name: (chain, draw, ...) array}, their dims, what they hold in
        words), or None when the model cannot (the default). Where it can, a fit whose log-likelihood is
        still pending (a Laplace fit) is saved without it, and a loaded fit computes it on first use."""
        return None

    def write_report(self, out_dir, **kwargs):
        """The model's report; a model without its own gets the estimands, the criticism sections and
        the warnings (`report.basic`)."""
        from bayes_wsc.report.basic import write_report

        return write_report(self, out_dir, **kwargs)

    def key_columns(self) -> list[str]:
        """The columns of new items that hold ids (the fit's group or id column), which readers
        keep as text: '001' stays '001' (`data.tables.read_table(text_columns=...)`)."""
        self._check_fitted()
        settings = inference.get_attrs(self._fitted()).get("data_settings", {})
        return [settings[k] for k in ("group_col", "id_col") if isinstance(settings.get(k), str)]


_check_levels(ModelHooks)
