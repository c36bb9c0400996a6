"""The contract every registered model keeps, run on each model's small simulated data (in the spirit of
scikit-learn's `parametrize_with_checks`): MAP, Laplace and a short NUTS fit; save -> load exact;
`predict` with and without intervals; LOO and `compare`; replicated data of the data's shape; the
checks; a variant with a parameter of its own scored by its own log-likelihood; every optimizer result
checked; a bad credible level refused; the default seed reproducible; every command of `bayes-wsc` on a
fit file. A model gets all of it by registering (and giving its case in contract_cases.py).

The fits of one model are made once and shared by its tests (`conftest.model_fits`)."""

from __future__ import annotations

import functools
import shlex
import warnings

import numpy as np
import pandas as pd
import pytest

import bayes_wsc
from bayes_wsc import criticism, diagnostics, inference
from bayes_wsc.cli import main
from bayes_wsc.errors import FitWarning, InputError
from conftest import FIT_SETTINGS as SETTINGS
from conftest import model_fits, registry
from contract_cases import CASES, variant_source
from roundtrip import assert_lossless_round_trip

NAMES = [spec.name for spec in registry.MODELS]
BAD_CI = ["0.9", 0, 1.5]


def quietly(est, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)  # short chains: low ESS, said so in the fit
        return est.fit(data)


def cli(argv) -> int:
    try:
        return main([str(a) for a in argv])
    except SystemExit as exit_:
        return exit_.code


@pytest.fixture(scope="module", params=NAMES)
def fits(request):
    return model_fits(request.param)


def test_every_model_has_a_contract_case():
    assert sorted(CASES) == sorted(NAMES)
    assert NAMES == ["wsc", "pcmix", "experts", "proportions", "perception", "combined"]


def test_the_estimator_refuses_anything_but_its_data_container(fits):
    spec = fits.spec
    cls = spec.estimator_class()
    with pytest.raises(InputError, match=f"{cls.__name__}.fit expects {spec.data_class().__name__}"):
        cls().fit(pd.DataFrame({"x": [1.0, 2.0]}))


# ---------------------------------------------------------------------- the three fits
def test_map_is_one_checked_point(fits):
    est = fits["map"]
    post = est.idata_.posterior
    assert post.sizes["chain"] == 1 and post.sizes["draw"] == 1
    assert [n for n in est.estimands if n in post] and set(est.diagnosed_names()) <= set(post.data_vars)
    attrs = inference.get_attrs(est.idata_)
    assert attrs["model"] == fits.spec.name and attrs["method"] == "map"
    info = attrs["fit_info"]["map"]
    assert info["converged"] and info["relative_gradient"] < diagnostics.RELATIVE_GRADIENT_MAX / 3, info
    assert diagnostics.map_messages(info) == []
    table = est.summary()  # the point, and no interval: none was computed
    assert list(table.columns) == ["map"] and np.isfinite(table["map"]).all()
    # the model's own summary: its estimands, nothing of a variant's, no note on per-unit variables
    assert {r.split("[")[0] for r in table.index} == {n for n in est.estimands if n in post}
    assert est.summary_notes() == []


@pytest.mark.parametrize("method", ["laplace", "nuts"])
def test_laplace_and_nuts_give_draws_and_intervals(fits, method):
    est = fits[method]
    post = est.idata_.posterior
    settings = SETTINGS[method]
    assert post.sizes["chain"] == settings.get("chains", 1) and post.sizes["draw"] == settings["draws"]
    assert inference.get_attrs(est.idata_)["fit_info"][method]
    table = est.summary(hdi_prob=0.9)
    low, high = table.filter(like="hdi_5%").iloc[:, 0], table.filter(like="hdi_95%").iloc[:, 0]
    assert (low <= table["mean"] + 1e-12).all() and (table["mean"] <= high + 1e-12).all()
    assert (high > low).any()  # draws that vary, not one point repeated
    if method == "nuts":
        assert "sample_stats" in est.idata_.groups() and "r_hat" in table


# ---------------------------------------------------------------------- save and load
@pytest.mark.parametrize("method", ["map", "laplace", "nuts"])
def test_save_and_load_round_trip_exactly(fits, method, tmp_path):
    back = assert_lossless_round_trip(fits[method], fits.items, tmp_path / "fit.nc")
    assert back.diagnostics_ == fits[method].diagnostics_
    pd.testing.assert_frame_equal(back.checks_, fits[method].checks_)


# ---------------------------------------------------------------------- predict
def interval_columns(pred) -> list[tuple[str, str]]:
    return [(c, c[:-4] + "_high") for c in pred.columns if str(c).endswith("_low")]


@pytest.mark.parametrize("method", ["map", "laplace", "nuts"])
def test_predict_keeps_the_items_and_gives_intervals_from_draws_only(fits, method):
    est, items = fits[method], fits.items
    pred = est.predict(items)
    assert len(pred) == len(items)
    pd.testing.assert_frame_equal(pred[list(items.columns)], items)  # every input column, as given
    probs = [c for c in pred.columns if str(c).startswith(("prob", "cluster_prob")) and c not in items
             and not str(c).endswith(("_low", "_high"))]
    assert probs and all(((pred[c] >= 0) & (pred[c] <= 1)).all() for c in probs)
    pairs = interval_columns(pred)
    assert pairs
    for low, high in pairs:
        if method == "map":  # a MAP has no interval unless one is computed
            assert pred[low].isna().all() and pred[high].isna().all()
        else:
            assert np.isfinite(pred[low]).all() and (pred[low] <= pred[high]).all()
    if method != "map":
        narrow = est.predict(items, ci=0.5)
        for low, high in pairs:
            assert (narrow[high] - narrow[low]).sum() < (pred[high] - pred[low]).sum()


@pytest.mark.parametrize("ci", BAD_CI, ids=repr)
def test_a_bad_credible_level_is_an_input_error(fits, ci, tmp_path):
    est = fits["laplace"]
    with pytest.raises(InputError, match="ci|hdi_prob|credible"):
        est.predict(fits.items, ci=ci)
    with pytest.raises(InputError, match="ci|hdi_prob|credible"):
        est.summary(hdi_prob=ci)
    with pytest.raises(InputError, match="ci|hdi_prob|credible"):
        est.report(tmp_path / "report", ci=ci)
    assert not (tmp_path / "report").exists()


# ---------------------------------------------------------------------- LOO, replicates, checks
def test_loo_waic_and_compare_from_draws_but_not_from_a_map(fits):
    with pytest.raises(InputError, match="MAP"):
        fits["map"].loo()
    nuts, laplace = fits["nuts"], fits["laplace"]
    for est in (nuts, laplace):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)  # few draws: Pareto k may be high, said so
            elpd = est.loo()
        units = next(iter(est.idata_.log_likelihood.data_vars.values())).shape[2:]
        assert np.isfinite(elpd.elpd_loo) and elpd.loo_i.shape == units
        assert np.isfinite(est.waic().elpd_waic)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        ranked = bayes_wsc.compare({"nuts": nuts, "laplace": laplace})
    assert sorted(ranked.index) == ["laplace", "nuts"] and ranked["elpd_diff"].min() == 0
    with pytest.raises(InputError, match="MAP fit"):
        bayes_wsc.compare({"nuts": nuts, "map": fits["map"]})


@pytest.mark.parametrize("method", ["map", "laplace", "nuts"])
def test_the_log_likelihood_is_one_value_per_unit_and_draw(fits, method):
    group = fits[method].idata_.log_likelihood
    [(name, values)] = group.data_vars.items()
    assert values.dims[:2] == ("chain", "draw") and len(values.dims) == 3, values.dims
    posterior = fits[method].idata_.posterior
    assert values.shape[:2] == (posterior.sizes["chain"], posterior.sizes["draw"])
    assert np.isfinite(values.values).all() and values.sizes[values.dims[2]] > 1


@pytest.mark.parametrize("method", ["map", "nuts"])
def test_replicated_data_have_the_datas_shape_and_vary_over_draws(fits, method):
    ppc = fits[method].posterior_predictive(draws=20, seed=1)
    replicated, observed = ppc.posterior_predictive, ppc.observed_data
    assert set(ppc.groups()) == {"posterior_predictive", "observed_data"}
    assert replicated.equals(fits[method].posterior_predictive(draws=20, seed=1).posterior_predictive)  # seeded
    assert list(replicated.data_vars) and set(replicated.data_vars) == set(observed.data_vars)
    for name, values in replicated.data_vars.items():
        assert values.dims[:2] == ("chain", "draw") and values.dims[2:] == observed[name].dims, name
        assert values.shape[2:] == observed[name].shape, name
        assert values.sizes["chain"] * values.sizes["draw"] >= 20, name
        flat = values.values.reshape(-1, *values.shape[2:])
        assert np.isfinite(flat).all() and flat.std(axis=0).max() > 0, name  # drawn anew, even from one point


@pytest.mark.parametrize("method", ["map", "nuts"])
def test_run_checks_repeats_the_fit_time_checks(fits, method):
    est = fits[method]
    table = est.run_checks(draws=40)
    assert list(table.columns) == list(criticism.COLUMNS) == list(est.checks_.columns)
    assert list(table["check"]) == list(est.checks_["check"])
    assert ("loo_pareto_k" in set(table["check"])) == (method == "nuts")
    assert table["message"].map(lambda m: isinstance(m, str) and m != "").all()
    # data simulated from the model: no check but LOO's (whose Pareto k at 120 draws may pass its threshold) flags
    fit_time = est.checks_
    assert not fit_time[fit_time["check"] != "loo_pareto_k"]["flagged"].any(), fit_time.to_string()


# ---------------------------------------------------------------------- a variant with a parameter of its own
@pytest.fixture(scope="module")
def variant(fits, tmp_path_factory):
    path = tmp_path_factory.mktemp("variant") / f"{fits.spec.name}_own_parameter.py"
    path.write_text(variant_source(fits.case))
    return quietly(fits.estimator("laplace", draws=60, model_file=str(path)), fits.data)


def test_a_variants_log_likelihood_is_the_variants_own(fits, variant):
    """The values LOO scores are the variant's density at the fit's draws, written out here in NumPy,
    and not the default model's (which differs at the same draws)."""
    case = fits.case
    post = {n: v.values.reshape(-1, *v.shape[2:]) for n, v in variant.idata_.posterior.data_vars.items()}
    assert case.own in post and post[case.own].std() > 0  # the variant's own parameter, with its own draws
    [stored] = variant.idata_.log_likelihood.data_vars.values()
    stored = stored.values.reshape(-1, *stored.shape[2:])
    own = case.density(fits.data, post, variant)
    default = case.density(fits.data, post, variant, own=False)
    known = np.isfinite(own)
    assert known.sum() >= 6
    np.testing.assert_allclose(stored[known], own[known], rtol=1e-6, atol=1e-3)
    assert np.abs(default[known] - own[known]).max() > 1e-2  # the test can tell the two apart
    assert "own" in inference.get_attrs(variant.idata_)["log_likelihood_holds"]
    assert np.isfinite(variant.loo().elpd_loo)


# ---------------------------------------------------------------------- every optimizer result is checked
def test_a_map_stopped_early_says_so(fits, monkeypatch):
    from bayes_wsc import map_program
    from bayes_wsc.status import status_lines

    monkeypatch.setattr(map_program, "run_map", functools.partial(map_program.run_map, maxiter=2))
    with pytest.warns(FitWarning, match="stopped before converging"):
        est = fits.estimator("map", checks=False).fit(fits.data)
    assert not inference.get_attrs(est.idata_)["fit_info"]["map"]["converged"]
    assert any("stopped before converging" in m for m in est.diagnostics_)
    assert "No problems found" not in " ".join(status_lines(est))


# ---------------------------------------------------------------------- reproducible by default
def test_the_default_seed_gives_the_same_fit_twice(fits):
    cls = fits.spec.estimator_class()
    assert cls().seed == 0
    first = fits["laplace"]
    again = quietly(fits.estimator("laplace"), fits.data)
    for name, values in first.idata_.posterior.data_vars.items():
        np.testing.assert_array_equal(values.values, again.idata_.posterior[name].values, err_msg=name)
    pd.testing.assert_frame_equal(first.predict(fits.items), again.predict(fits.items))


@pytest.mark.slow
def test_the_default_seed_gives_the_same_nuts_draws_twice(fits):
    again = quietly(fits.estimator("nuts"), fits.data)
    for name, values in fits["nuts"].idata_.posterior.data_vars.items():
        np.testing.assert_array_equal(values.values, again.idata_.posterior[name].values, err_msg=name)


# ---------------------------------------------------------------------- the command line
def test_simulate_and_fit_from_the_command_line(fits, tmp_path, capsys):
    """`bayes-wsc simulate MODEL` writes the files and the command that fits them; that command runs."""
    name, folder = fits.spec.name, tmp_path / "sim"
    assert cli(["simulate", name, "--out", folder, *fits.case.simulate]) == 0
    out = capsys.readouterr().out
    [command] = [line.strip() for line in out.splitlines() if line.strip().startswith(f"bayes-wsc fit {name} ")]
    argv = shlex.split(command)[1:]
    assert cli([*argv, "--report", tmp_path / "report"]) == 0, capsys.readouterr().err
    fit = argv[argv.index("--out") + 1]
    assert "Status:" in capsys.readouterr().out and (tmp_path / "report" / "report.html").is_file()
    assert cli(["predict", fit, "--items", folder / fits.case.predict_file, "--out", tmp_path / "pred.csv"]) == 0
    assert len(pd.read_csv(tmp_path / "pred.csv")) == len(pd.read_csv(folder / fits.case.predict_file))


def test_every_command_on_a_fit_file(fits, tmp_path, capsys):
    import arviz as az

    est = fits["nuts"]
    fit = est.save(tmp_path / "fit.nc")
    fits.items.to_csv(tmp_path / "items.csv", index=False)
    capsys.readouterr()
    assert cli(["summary", fit, "--ci", "0.8"]) == 0
    out = capsys.readouterr().out
    assert f"model: {fits.spec.name}  method: nuts" in out and "Status:" in out and "hdi_10%" in out
    assert cli(["predict", fit, "--items", tmp_path / "items.csv", "--out", tmp_path / "pred.csv"]) == 0
    pred = pd.read_csv(tmp_path / "pred.csv", keep_default_na=False, na_values=[""])
    assert len(pred) == len(fits.items) and {c for pair in interval_columns(pred) for c in pair}
    assert cli(["report", fit, "--out", tmp_path / "report"]) == 0
    html = (tmp_path / "report" / "report.html").read_text()
    assert "Status" in html
    for heading in ("Convergence: rank plots", "Posterior predictive checks", "Leave-one-out cross-validation (LOO)",
                    "Model checks"):
        assert f"<h2>{heading}</h2>" in html, heading
    assert "elpd_loo" in html
    capsys.readouterr()
    assert cli(["check", fit, "--out", tmp_path / "checks.csv", "--draws", "40"]) == 0
    table, out = pd.read_csv(tmp_path / "checks.csv"), capsys.readouterr().out
    assert list(table.columns) == list(criticism.COLUMNS) and list(table["check"]) == list(est.checks_["check"])
    flagged = table[table["flagged"]]
    assert ("No check is flagged" in out) == flagged.empty and all(f"{n}:" in out for n in flagged["check"])
    assert cli(["ppc", fit, "--out", tmp_path / "ppc.nc", "--draws", "20", "--plot", tmp_path / "ppc.png"]) == 0
    assert (tmp_path / "ppc.png").stat().st_size > 0
    assert set(az.from_netcdf(tmp_path / "ppc.nc").groups()) >= {"posterior_predictive", "observed_data"}
    capsys.readouterr()
    for command in (["summary", fit], ["report", fit, "--out", tmp_path / "other"],
                    ["predict", fit, "--items", tmp_path / "items.csv", "--out", tmp_path / "other.csv"]):
        assert cli([*command, "--ci", "1.5"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--ci" in err and "Traceback" not in err
