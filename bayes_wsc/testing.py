"""The public contract suite: every check a model of bayes_wsc keeps, runnable on any model, registered in
the package or written by a user (in the spirit of scikit-learn's `utils/estimator_checks.py`). ::

    from bayes_wsc.testing import check_model
    check_model(MyModel, my_small_data, new_items)        # raises AssertionError naming each failed check

    from bayes_wsc.testing import parametrize_with_checks
    @parametrize_with_checks([ModelFits(MyModel, my_small_data, Case(new_items))])
    def test_my_model(model, check):                      # one pytest case per check, named
        check(model)

A model is checked on small data of its own (a fit takes seconds): a MAP, a Laplace and a short NUTS fit,
made once and shared by the checks (`ModelFits`). The checks: the estimator refuses any data but its
container; a MAP is one checked point whose summary is the estimands (`contract.unclassified_variables`);
Laplace and NUTS give draws and intervals; save -> load loses nothing; `predict` keeps the contract's rules
(`contract.prediction_problems`) and its intervals narrow with the level; a bad credible level is an
`InputError` everywhere; the constructor's settings declared and checked (`check_settings_declared`); LOO,
WAIC and `compare` from draws only; one log-likelihood value per unit and draw; a MAP stopped early says so;
the default seed reproduces a fit. A model whose parts the package knows (registered, `registry.py`) is
checked further: its replicated data and checks (`models/<name>/checks.py`), a variant with a parameter of its
own scored by the variant's own log-likelihood (`Case.variant`, `Case.density`), and every command of `bayes-wsc` on it. A check that does not apply to a model is
skipped with its reason; a check known to fail is named in `expected_failures` with its reason.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import io
import shlex
import shutil
import tempfile
import textwrap
import warnings
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from bayes_wsc import contract, criticism, diagnostics, inference, registry
from bayes_wsc.errors import FitWarning, InputError

#: the short fits the checks share: enough draws for LOO and intervals, not for inference
FIT_SETTINGS = {"map": {}, "laplace": {"draws": 100}, "nuts": {"draws": 60, "tune": 60, "chains": 2}}
#: credible levels every entry point refuses
BAD_CI = ("0.9", 0, 1.5)
METHODS = ("map", "laplace", "nuts")


@dataclass(frozen=True)
class Case:
    """What the suite needs of a model beyond its class and data.

    new_items(data) -> a DataFrame of items to predict (the model's item columns, as a user gives them).
    simulate : `bayes-wsc simulate NAME` options for small data (registered models; empty: that check skips).
    predict_file : which simulated table `bayes-wsc predict --items` reads.
    variant : a variant file's source (indented text is dedented) with a free parameter of its own, `own`;

    density(data, posterior, estimator, own=True) -> (draws, units): that variant's pointwise
        log-likelihood at the posterior's draws written out independently in NumPy (own=False: the
        default model's, which must differ from it).
    """

    new_items: Callable
    simulate: tuple[str, ...] = ()
    predict_file: str = "items.csv"
    variant: str | None = None
    own: str | None = None
    density: Callable | None = None

    def variant_source(self) -> str:
        return textwrap.dedent(self.variant or "")


def quietly(est, data):
    """`est.fit(data)` with short chains' FitWarnings (low ESS, said so in the fit) kept quiet."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return est.fit(data)


class ModelFits:
    """A model under test: its estimator class, small data (or a function of no argument making them, called
    on first use), its `Case`, and its fits by method, each made once on first use (`fits["map"]`)."""

    def __init__(self, estimator_class: type, data, case: Case | pd.DataFrame, *, settings: Mapping | None = None):
        self.cls = estimator_class
        self.name = estimator_class.model_name
        self.case = case if isinstance(case, Case) else Case(new_items=lambda data, items=case: items)
        self.settings = {m: {**FIT_SETTINGS[m], **(settings or {}).get(m, {})} for m in METHODS}
        self._data = data
        self._fits: dict[str, object] = {}
        self._variant = None

    def __repr__(self) -> str:
        return self.name

    @classmethod
    def registered(cls, spec: registry.ModelSpec, case: Case) -> ModelFits:
        """A registered model, on its registry's `example` data."""
        return cls(spec.estimator_class(), lambda: spec.example(seed=0), case)

    @property
    def spec(self) -> registry.ModelSpec | None:
        """The registry's entry when this very class is registered, else None."""
        if self.name not in registry.NAMES:
            return None
        spec = registry.get(self.name)
        return spec if spec.estimator_class() is self.cls else None

    @functools.cached_property
    def data(self):
        return self._data() if callable(self._data) else self._data

    @functools.cached_property
    def items(self) -> pd.DataFrame:
        return self.case.new_items(self.data)

    def estimator(self, method: str = "map", **settings):
        return self.cls(method=method, progressbar=False, **{**self.settings[method], **settings})

    def __getitem__(self, method: str):
        if method not in self._fits:
            self._fits[method] = quietly(self.estimator(method), self.data)
        return self._fits[method]

    def variant(self):
        """A Laplace fit of the case's variant file (written to a temporary folder kept until the process ends:
        the fit reads its file again)."""
        if self._variant is None:
            folder = Path(tempfile.mkdtemp(prefix=f"bayes_wsc_{self.name}_variant_"))
            atexit.register(shutil.rmtree, folder, True)
            path = folder / f"{self.name}_own_parameter.py"
            path.write_text(self.case.variant_source())
            self._variant = quietly(self.estimator("laplace", draws=60, model_file=str(path)), self.data)
        return self._variant


# ---------------------------------------------------------------------- what a check needs beyond any model
def _no_checks_module(fits) -> str | None:
    return None if fits.spec is not None else "the model has no checks module: it is not registered (registry.py)"


def _no_variant(fits) -> str | None:
    return _no_checks_module(fits) or (None if fits.case.variant else "its Case gives no variant")


def _no_command_line(fits) -> str | None:
    return None if fits.spec is not None else "the command line knows registered models only (registry.py)"


def _no_simulate_options(fits) -> str | None:
    return _no_command_line(fits) or (None if fits.case.simulate else "its Case gives no simulate options")


@dataclass(frozen=True)
class Check:
    """One named check: `function(fits, **params)`, skipped with a reason when `skip(fits)` gives one."""

    name: str
    function: Callable
    params: dict
    skip: Callable | None = None
    slow: bool = False

    def __call__(self, fits: ModelFits):
        return self.function(fits, **self.params)

    def __repr__(self) -> str:
        return self.name


_CHECKS: list[tuple[Callable, tuple, Callable | None, bool]] = []


def _check(*methods, skip=None, slow=False):
    """Register a check function; with `methods`, one named check per method (`check_x[map]`)."""
    def register(function):
        _CHECKS.append((function, methods, skip, slow))
        return function
    return register


def all_checks() -> list[Check]:
    """Every check of the suite, named, in order."""
    out = []
    for function, methods, skip, slow in _CHECKS:
        if methods:
            out += [Check(f"{function.__name__}[{m}]", function, {"method": m}, skip, slow) for m in methods]
        else:
            out.append(Check(function.__name__, function, {}, skip, slow))
    return out


# ---------------------------------------------------------------------- the checks
@_check()
def check_refuses_other_data(fits):
    """The estimator refuses anything but its data container, in one line naming both."""
    data_class = fits.cls.data_class
    try:
        fits.cls().fit(pd.DataFrame({"x": [1.0, 2.0]}))
    except InputError as exc:
        assert f"{fits.cls.__name__}.fit expects {data_class.__name__}" in str(exc), str(exc)
    else:
        raise AssertionError(f"{fits.cls.__name__}.fit took a DataFrame")


@_check()
def check_settings_declared(fits):
    """The constructor's keywords are the estimator's settings (`get_params`: its declared `Settings` and every
    estimator's, or a hand-written `__init__`'s): the defaults pass `check_params`, the estimator rebuilt from
    them has the same, and a value that no declared setting's rule takes is one `InputError` line naming that
    setting, before any data."""
    from bayes_wsc.estimator import CommonSettings
    from bayes_wsc.settings import declared

    params = fits.cls().get_params()
    assert set(params) >= {d.name for d in declared(CommonSettings)}, sorted(params)
    fits.cls(**params).check_params()
    assert fits.cls(**params).get_params() == params
    for name, _, spec in (*declared(fits.cls.Settings), *declared(CommonSettings)):
        if spec.rule is None and spec.parse is None:
            continue
        unusable = object()
        try:
            fits.cls(**{name: unusable}).check_params()
        except InputError as exc:
            words = str(exc)
            assert (spec.label or name) in words and "\n" not in words, words
        else:
            raise AssertionError(f"{name}={unusable!r} was taken")


@_check()
def check_map_is_one_checked_point(fits):
    """A MAP is one point, converged and checked; its summary is the estimands alone, no interval."""
    est = fits["map"]
    post = est.idata_.posterior
    assert post.sizes["chain"] == 1 and post.sizes["draw"] == 1
    assert [n for n in est.estimands if n in post] and set(est.diagnosed_names()) <= set(post.data_vars)
    attrs = inference.get_attrs(est.idata_)
    assert attrs["model"] == fits.name and attrs["method"] == "map"
    info = attrs["fit_info"]["map"]
    assert info["converged"] and info["relative_gradient"] < diagnostics.RELATIVE_GRADIENT_MAX / 3, info
    assert diagnostics.map_messages(info) == []
    unclassified = contract.unclassified_variables({n: v.dims[2:] for n, v in post.data_vars.items()}, est.estimands,
                                                   est.internal_variables, est.unit_dims)
    assert unclassified == [], f"posterior variables neither estimands, internal nor per unit: {unclassified}"
    table = est.summary()
    assert list(table.columns) == ["map"] and np.isfinite(table["map"]).all()
    assert {r.split("[")[0] for r in table.index} == {n for n in est.estimands if n in post}


@_check("laplace", "nuts")
def check_draws_and_intervals(fits, method):
    """Laplace and NUTS give the draws asked for, and HDIs around the means that vary."""
    est = fits[method]
    post = est.idata_.posterior
    settings = fits.settings[method]
    assert post.sizes["chain"] == settings.get("chains", 1) and post.sizes["draw"] == settings["draws"]
    assert inference.get_attrs(est.idata_)["fit_info"][method]
    table = est.summary(hdi_prob=0.9)
    low, high = table.filter(like="hdi_5%").iloc[:, 0], table.filter(like="hdi_95%").iloc[:, 0]
    assert (low <= table["mean"] + 1e-12).all() and (table["mean"] <= high + 1e-12).all()
    assert (high > low).any()  # draws that vary, not one point repeated
    if method == "nuts":
        assert "sample_stats" in inference.group_names(est.idata_) and "r_hat" in table


def assert_lossless_round_trip(est, items, path):
    """Save `est`, load it back (with its class's `load`): same class and settings, same predictions on
    `items`, every group, variable, value and attribute kept, no temporary file left beside `path`. The fit
    is made whole first (`idata_`): a log-likelihood still waiting for first use is left out of the file and
    rebuilt on load by another computation, within its stated tolerance (tests/test_nested_laplace.py), so
    comparing it bit for bit would depend on whether an earlier call had asked for it."""
    est.idata_  # noqa: B018 -- completes a pending log-likelihood, so that the file holds it
    est.save(path)
    back = type(est).load(path)
    assert type(back) is type(est) and back.get_params() == est.get_params()
    pd.testing.assert_frame_equal(est.predict(items), back.predict(items))
    assert set(inference.group_names(est.idata_)) == set(inference.group_names(back.idata_))
    for group in inference.group_names(est.idata_):
        a, b = est.idata_[group], back.idata_[group]
        assert set(a.data_vars) == set(b.data_vars)
        for name in a.data_vars:
            np.testing.assert_array_equal(a[name].values, b[name].values)
    assert inference.get_attrs(est.idata_) == inference.get_attrs(back.idata_)
    path = Path(path)
    assert sorted(p.name for p in path.parent.iterdir() if p.name.startswith(".") or p.suffix == ".tmp") == []
    return back


@_check(*METHODS)
def check_save_and_load_round_trip(fits, method):
    """save -> load loses nothing: draws, data, attrs, diagnostics, checks and predictions."""
    with tempfile.TemporaryDirectory() as folder:
        back = assert_lossless_round_trip(fits[method], fits.items, Path(folder) / "fit.nc")
    assert back.diagnostics_ == fits[method].diagnostics_
    pd.testing.assert_frame_equal(back.checks_, fits[method].checks_)


@_check(*METHODS)
def check_predict(fits, method):
    """`predict` keeps the contract's rules (`contract.prediction_problems`); from draws its intervals are
    finite and narrower at a lower level."""
    est, items = fits[method], fits.items
    pred = est.predict(items)
    assert contract.prediction_problems(pred, items, has_draws=method != "map") == []
    pairs = contract.interval_columns(pred)
    if method != "map":
        for low, high in pairs:
            assert np.isfinite(pred[low]).all() and np.isfinite(pred[high]).all(), (low, high)
        narrow = est.predict(items, ci=0.5)
        for low, high in pairs:
            assert (narrow[high] - narrow[low]).sum() < (pred[high] - pred[low]).sum(), (low, high)


@_check()
def check_bad_credible_level(fits):
    """A credible level that is not a number in (0, 1) is one `InputError` in predict, summary and report,
    before anything is written."""
    est = fits["laplace"]
    for ci in BAD_CI:
        for call in (lambda out: est.predict(fits.items, ci=ci), lambda out: est.summary(hdi_prob=ci),
                     lambda out: est.report(out, ci=ci)):
            with tempfile.TemporaryDirectory() as folder:
                out = Path(folder) / "report"
                try:
                    call(out)
                except InputError as exc:
                    assert any(w in str(exc) for w in ("ci", "hdi_prob", "credible")), str(exc)
                else:
                    raise AssertionError(f"the credible level {ci!r} was taken")
                assert not out.exists()


@_check()
def check_loo_waic_and_compare(fits):
    """LOO, WAIC and `compare` from draws (one value per unit), and refused for a MAP."""
    import bayes_wsc

    try:
        fits["map"].loo()
    except InputError as exc:
        assert "MAP" in str(exc)
    else:
        raise AssertionError("LOO of a MAP fit was computed")
    nuts, laplace = fits["nuts"], fits["laplace"]
    for est in (nuts, laplace):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)  # few draws: Pareto k may be high, said so
            elpd = est.loo()
        units = next(iter(est.idata_.log_likelihood.data_vars.values())).shape[2:]
        values = inference.elpd_values(elpd)
        assert np.isfinite(values.elpd) and values.pointwise.shape == units
        assert np.isfinite(est.waic().elpd_waic)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        ranked = bayes_wsc.compare({"nuts": nuts, "laplace": laplace})
    assert sorted(ranked.index) == ["laplace", "nuts"] and ranked["elpd_diff"].min() == 0
    try:
        bayes_wsc.compare({"nuts": nuts, "map": fits["map"]})
    except InputError as exc:
        assert "MAP fit" in str(exc)
    else:
        raise AssertionError("compare took a MAP fit")


@_check(*METHODS)
def check_log_likelihood_per_unit_and_draw(fits, method):
    """One log-likelihood variable, one finite value per unit (more than one unit) and draw."""
    group = fits[method].idata_.log_likelihood
    [(name, values)] = group.data_vars.items()
    assert values.dims[:2] == ("chain", "draw") and len(values.dims) == 3, values.dims
    posterior = fits[method].idata_.posterior
    assert values.shape[:2] == (posterior.sizes["chain"], posterior.sizes["draw"])
    assert np.isfinite(values.values).all() and values.sizes[values.dims[2]] > 1


@_check("map", "nuts", skip=_no_checks_module)
def check_replicated_data(fits, method):
    """Replicated data have the data's shape, are seeded, and vary over draws (drawn anew, even from a MAP)."""
    ppc = fits[method].posterior_predictive(draws=20, seed=1)
    replicated, observed = ppc.posterior_predictive, ppc.observed_data
    assert set(inference.group_names(ppc)) == {"posterior_predictive", "observed_data"}
    assert replicated.equals(fits[method].posterior_predictive(draws=20, seed=1).posterior_predictive)
    assert list(replicated.data_vars) and set(replicated.data_vars) == set(observed.data_vars)
    for name, values in replicated.data_vars.items():
        assert values.dims[:2] == ("chain", "draw") and values.dims[2:] == observed[name].dims, name
        assert values.shape[2:] == observed[name].shape, name
        assert values.sizes["chain"] * values.sizes["draw"] >= 20, name
        flat = values.values.reshape(-1, *values.shape[2:])
        assert np.isfinite(flat).all() and flat.std(axis=0).max() > 0, name


@_check("map", "nuts", skip=_no_checks_module)
def check_run_checks(fits, method):
    """`run_checks` repeats the fit-time checks, with messages; on data simulated from the model none flags
    but LOO's (whose Pareto k at a few draws may pass its threshold)."""
    est = fits[method]
    table = est.run_checks(draws=40)
    assert list(table.columns) == list(criticism.COLUMNS) == list(est.checks_.columns)
    assert list(table["check"]) == list(est.checks_["check"])
    assert ("loo_pareto_k" in set(table["check"])) == (method == "nuts")
    assert table["message"].map(lambda m: isinstance(m, str) and m != "").all()
    fit_time = est.checks_
    assert not fit_time[fit_time["check"] != "loo_pareto_k"]["flagged"].any(), fit_time.to_string()


@_check(skip=_no_variant)
def check_variant_log_likelihood(fits):
    """A variant's stored log-likelihood is its own density at its draws (written out in NumPy by the case),
    not the default model's (which differs at the same draws); LOO scores it."""
    case, variant = fits.case, fits.variant()
    post = {n: v.values.reshape(-1, *v.shape[2:]) for n, v in variant.idata_.posterior.data_vars.items()}
    assert case.own in post and post[case.own].std() > 0  # the variant's own parameter, with its own draws
    [stored] = variant.idata_.log_likelihood.data_vars.values()
    stored = stored.values.reshape(-1, *stored.shape[2:])
    own = case.density(fits.data, post, variant)
    default = case.density(fits.data, post, variant, own=False)
    known = np.isfinite(own)
    assert known.sum() >= 6
    np.testing.assert_allclose(stored[known], own[known], rtol=1e-6, atol=1e-3)
    assert np.abs(default[known] - own[known]).max() > 1e-2  # the check can tell the two apart
    assert "own" in inference.get_attrs(variant.idata_)["log_likelihood_holds"]
    assert np.isfinite(inference.elpd_values(variant.loo()).elpd)


@_check()
def check_map_stopped_early_says_so(fits):
    """An optimizer stopped before converging is a FitWarning kept in the fit and its status line."""
    from bayes_wsc import map_program
    from bayes_wsc.status import status_lines

    run_map = map_program.run_map
    map_program.run_map = functools.partial(run_map, maxiter=2)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FitWarning)
            est = fits.estimator("map", checks=False).fit(fits.data)
    finally:
        map_program.run_map = run_map
    assert any("stopped before converging" in str(w.message) for w in caught), [str(w.message) for w in caught]
    assert not inference.get_attrs(est.idata_)["fit_info"]["map"]["converged"]
    assert any("stopped before converging" in m for m in est.diagnostics_)
    assert "No problems found" not in " ".join(status_lines(est))


@_check()
def check_default_seed_reproduces_the_fit(fits):
    """The default seed (0) gives the same Laplace draws and predictions twice."""
    assert fits.cls().seed == 0
    first, again = fits["laplace"], quietly(fits.estimator("laplace"), fits.data)
    for name, values in first.idata_.posterior.data_vars.items():
        np.testing.assert_array_equal(values.values, again.idata_.posterior[name].values, err_msg=name)
    pd.testing.assert_frame_equal(first.predict(fits.items), again.predict(fits.items))


@_check(slow=True)
def check_default_seed_reproduces_nuts(fits):
    """The default seed gives the same NUTS draws twice."""
    again = quietly(fits.estimator("nuts"), fits.data)
    for name, values in fits["nuts"].idata_.posterior.data_vars.items():
        np.testing.assert_array_equal(values.values, again.idata_.posterior[name].values, err_msg=name)


def cli(argv) -> tuple[int, str, str]:
    """`bayes-wsc argv`: its exit code, standard output and standard error."""
    from bayes_wsc.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exit_:
            code = exit_.code
    return code, out.getvalue(), err.getvalue()


@_check(skip=_no_simulate_options)
def check_simulate_and_fit_from_the_command_line(fits):
    """`bayes-wsc simulate NAME` writes the files and the command that fits them; that command runs, and
    `predict` reads the simulated items."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        name, folder = fits.name, tmp / "sim"
        code, out, err = cli(["simulate", name, "--out", folder, *fits.case.simulate])
        assert code == 0, err
        [command] = [line.strip() for line in out.splitlines() if line.strip().startswith(f"bayes-wsc fit {name} ")]
        argv = shlex.split(command)[1:]
        code, out, err = cli([*argv, "--report", tmp / "report"])
        assert code == 0, err
        fit = argv[argv.index("--out") + 1]
        assert "Status:" in out and (tmp / "report" / "report.html").is_file()
        code, _, err = cli(["predict", fit, "--items", folder / fits.case.predict_file, "--out", tmp / "pred.csv"])
        assert code == 0, err
        assert len(pd.read_csv(tmp / "pred.csv")) == len(pd.read_csv(folder / fits.case.predict_file))


@_check(skip=_no_command_line)
def check_every_command_on_a_fit_file(fits):
    """summary, predict, report, check and ppc on a saved NUTS fit; `--ci 1.5` refused by each in one line."""
    import arviz as az

    est = fits["nuts"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        fit = est.save(tmp / "fit.nc")
        fits.items.to_csv(tmp / "items.csv", index=False)
        code, out, _ = cli(["summary", fit, "--ci", "0.8"])
        assert code == 0
        assert f"model: {fits.name}  method: nuts" in out and "Status:" in out and "hdi_10%" in out
        assert cli(["predict", fit, "--items", tmp / "items.csv", "--out", tmp / "pred.csv"])[0] == 0
        pred = pd.read_csv(tmp / "pred.csv", keep_default_na=False, na_values=[""])
        assert len(pred) == len(fits.items) and contract.interval_columns(pred)
        assert cli(["report", fit, "--out", tmp / "report"])[0] == 0
        html = (tmp / "report" / "report.html").read_text()
        assert "Status" in html and "elpd_loo" in html
        for heading in ("Convergence: rank plots", "Posterior predictive checks",
                        "Leave-one-out cross-validation (LOO)", "Model checks"):
            assert f"<h2>{heading}</h2>" in html, heading
        code, out, _ = cli(["check", fit, "--out", tmp / "checks.csv", "--draws", "40"])
        assert code == 0
        table = pd.read_csv(tmp / "checks.csv")
        assert list(table.columns) == list(criticism.COLUMNS) and list(table["check"]) == list(est.checks_["check"])
        flagged = table[table["flagged"]]
        assert ("No check is flagged" in out) == flagged.empty and all(f"{n}:" in out for n in flagged["check"])
        code, _, _ = cli(["ppc", fit, "--out", tmp / "ppc.nc", "--draws", "20", "--plot", tmp / "ppc.png"])
        assert code == 0 and (tmp / "ppc.png").stat().st_size > 0
        assert set(inference.group_names(az.from_netcdf(tmp / "ppc.nc"))) >= {"posterior_predictive", "observed_data"}
        for command in (["summary", fit], ["report", fit, "--out", tmp / "other"],
                        ["predict", fit, "--items", tmp / "items.csv", "--out", tmp / "other.csv"]):
            code, _, err = cli([*command, "--ci", "1.5"])
            assert code == 2 and err.count("\n") == 1 and "--ci" in err and "Traceback" not in err, err


# ---------------------------------------------------------------------- running the checks
def _reasons(expected_failures, fits) -> dict[str, str]:
    if expected_failures is None:
        return {}
    return dict(expected_failures(fits) if callable(expected_failures) else expected_failures)


def _expected(reasons: dict[str, str], check: Check) -> str | None:
    """The reason a check is expected to fail: by its full name (`check_predict[map]`) or its base name."""
    return reasons.get(check.name, reasons.get(check.name.partition("[")[0]))


def check_model(estimator_class: type, example_data, case: Case | pd.DataFrame, *,
                expected_failures: Mapping[str, str] | None = None, slow: bool = False,
                settings: Mapping | None = None, only: Collection[str] | None = None) -> dict[str, str]:
    """Run every check of the suite on a model, registered or not.

    estimator_class : an `Estimator` subclass. example_data : small data of its `data_class` (a fit takes
    seconds), or a function of no argument returning them. case : a `Case`, or simply a DataFrame of new
    items to predict. expected_failures : {check name: reason} for checks known to fail (a check passing
    while listed is a failure too: the list stays true). slow : also the slow checks. settings : {method:
    settings} added to `FIT_SETTINGS`. only : names of the checks to run (full or base names; all by default).

    Returns {check name: "passed" | "skipped: reason" | "expected failure: reason"}; raises AssertionError
    naming every check that failed, with its first line."""
    fits = ModelFits(estimator_class, example_data, case, settings=settings)
    reasons, outcome, failed = _reasons(expected_failures, fits), {}, []
    for check in all_checks():
        if only is not None and check.name not in only and check.name.partition("[")[0] not in only:
            continue
        skip = check.skip(fits) if check.skip else None
        if skip or (check.slow and not slow):
            outcome[check.name] = f"skipped: {skip or 'slow'}"
            continue
        expected = _expected(reasons, check)
        try:
            check(fits)
        except Exception as exc:  # noqa: BLE001 - every failure is reported by the check's name
            if expected:
                outcome[check.name] = f"expected failure: {expected}"
                continue
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            failed.append(f"{check.name}: {type(exc).__name__}: {first}")
            outcome[check.name] = "failed"
            continue
        if expected:
            failed.append(f"{check.name}: passed, but is listed as an expected failure ({expected})")
        outcome[check.name] = "passed"
    if failed:
        raise AssertionError(f"{fits.name} fails {len(failed)} contract check(s):\n" + "\n".join(failed))
    return outcome


def parametrize_with_checks(models, *, expected_failures=None):
    """A pytest parametrization of `(model, check)`, one case per model and check, named `name-check`.

    models : `ModelFits` (a model, its data and case; `ModelFits.registered(spec, case)` for a registered
    one). expected_failures : {check name: reason}, or a function of the `ModelFits` returning one: those
    cases are marked xfail (strict: passing one fails, so the list stays true). A check that does not apply
    to a model is marked skip with its reason; slow checks are marked `slow`. ::

        @parametrize_with_checks([ModelFits(MyModel, data, Case(new_items))])
        def test_contract(model, check):
            check(model)
    """
    import pytest

    params = []
    for fits in models:
        reasons = _reasons(expected_failures, fits)
        for check in all_checks():
            marks = [pytest.mark.slow] if check.slow else []
            skip = check.skip(fits) if check.skip else None
            if skip:
                marks.append(pytest.mark.skip(reason=skip))
            expected = _expected(reasons, check)
            if expected:
                marks.append(pytest.mark.xfail(reason=expected, strict=True))
            params.append(pytest.param(fits, check, marks=marks, id=f"{fits.name}-{check.name}"))
    return pytest.mark.parametrize(("model", "check"), params)

