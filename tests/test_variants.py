"""Model variants are first-class for every model: every file in models/ fits from the API and the
command line, takes its own settings (`--set`, `model_settings`), never inherits the base model's
`map_fixed`, and shows its own variables in the summary. Also: fits are reproducible without a
seed, exchangeable clusters come out in one canonical order, and a MAP prints no interval."""

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayes_wsc import inference, registry
from bayes_wsc.cli import main
from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.data.pairwise import PairwiseConstraints
from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.estimator import load
from bayes_wsc.models.wsc import WSC
from bayes_wsc.relabel import canonical_permutation
from bayes_wsc.simulate import simulate_intervals, simulate_wsc, toy_items
from bayes_wsc.simulate.experts import simulate_experts_model
from bayes_wsc.simulate.perception import simulate_study
from bayes_wsc.simulate.proportions import simulate_proportions

MODELS = Path(__file__).resolve().parents[1] / "models"
VARIANTS = {p.stem: p for p in MODELS.glob("*.py")}
#: the model each shipped variant belongs to
MODEL_OF = {"learned_rater_noise": "wsc", "product_emissions": "wsc", "ecological_inference": "wsc",
            "experts_symmetric": "experts",
            "pcmix_tied_variances": "pcmix", "proportions_shared_sd": "proportions",
            "perception_nonnegative": "perception"}


def quietly(est, data, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)  # a variant's mode may be a poor summary; it says so
        return est.fit(data, **kwargs)


def cli(argv):
    try:
        return main([str(a) for a in argv])
    except SystemExit as exit_:
        return exit_.code


def test_every_shipped_variant_is_tested_and_short():
    assert set(VARIANTS) == set(MODEL_OF)
    assert set(MODEL_OF.values()) <= set(registry.NAMES)
    for name in ("experts_symmetric", "pcmix_tied_variances"):
        assert len(VARIANTS[name].read_text().splitlines()) <= 30


# ---------------------------------------------------------------------- data, as arrays and as files
def crossed_data(seed=0, n_groups=80, per_group=40):
    """Two behavior columns (3 x 2 levels) whose class-conditional distributions are independent."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(0, 1, n_groups)
    rows = []
    p_speed = {0: [0.6, 0.3, 0.1], 1: [0.1, 0.3, 0.6]}
    p_colour = {0: [0.7, 0.3], 1: [0.3, 0.7]}
    for g in range(n_groups):
        z = rng.random(per_group) < 1 / (1 + np.exp(-mu[g]))
        for zi in z.astype(int):
            rows.append((f"g{g}", ["slow", "mid", "fast"][rng.choice(3, p=p_speed[zi])],
                         ["red", "blue"][rng.choice(2, p=p_colour[zi])]))
    clicks = pd.DataFrame(rows, columns=["group", "speed", "colour"])
    groups = pd.DataFrame({"group": [f"g{g}" for g in range(n_groups)], "he": mu + rng.normal(0, 0.3, n_groups)})
    return GroupedCounts.from_frames(clicks, groups), clicks, groups


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Each model's data as a user has them on disk, and as the API's containers."""
    path = tmp_path_factory.mktemp("variants")
    wsc, clicks, groups = crossed_data()
    clicks.to_csv(path / "clicks.csv", index=False)
    groups.to_csv(path / "groups.csv", index=False)
    items, constraints, _ = simulate_experts_model(n_items=80, n_features=2, n_clusters=3, alpha=(0.95, 0.8, 0.7),
                                                   beta=(0.9, 0.8, 0.7), pairs_per_expert=150, separation=3.0, seed=1)
    items.to_csv(path / "items.csv", index=False)
    constraints.to_csv(path / "constraints.csv", index=False)
    frame, _ = simulate_intervals(seed=0)
    frame.to_csv(path / "toy.csv", index=False)
    proportions, _ = simulate_proportions("gaussian", n_groups=20, group_size=5, n_classes=2, n_features=2, seed=2)
    sticks = pd.DataFrame(proportions.x_raw, columns=["x1", "x2"]).assign(group=proportions.group_ids[proportions.item_group])
    sticks.to_csv(path / "sticks.csv", index=False)
    pd.DataFrame(proportions.proportions, columns=["a", "b"]).assign(group=proportions.group_ids).to_csv(
        path / "shares.csv", index=False)
    study = simulate_study(n_items=300, seed=6)
    for name, table in (("seed_items", study.items), ("seeds", study.seeds), ("perception", study.perception)):
        table.to_csv(path / f"{name}.csv", index=False)
    data = {"wsc": wsc, "experts": PairwiseConstraints.from_frames(items, constraints), "pcmix": toy_items(frame),
            "proportions": proportions, "perception": study.data()}
    return path, data


def cli_fit_args(model, path):
    """`bayes-wsc fit MODEL` with each model's data files and small settings."""
    return {"wsc": ["fit", "wsc", "--clicks", path / "clicks.csv", "--groups", path / "groups.csv"],
            "experts": ["fit", "experts", "--items", path / "items.csv", "--constraints", path / "constraints.csv",
                        "--clusters", "3", "--restarts", "3"],
            "pcmix": ["fit", "pcmix", "--items", path / "toy.csv", "--components", "2", "--lam", "4",
                      "--restarts", "3"],
            "proportions": ["fit", "proportions", "--items", path / "sticks.csv", "--proportions", path / "shares.csv",
                            "--emission", "gaussian"],  # the variant's emission
            "perception": ["fit", "perception", "--items", path / "seed_items.csv", "--seeds", path / "seeds.csv",
                           "--perception", path / "perception.csv", "--restarts", "1"]}[model]


#: small settings of each model that has a shipped variant (the models tested here are those of `MODEL_OF`)
SMALL = {"experts": {"n_clusters": 3, "restarts": 3}, "pcmix": {"components": 2, "lam": 4.0, "restarts": 3},
         "proportions": {"emission": "gaussian"}, "perception": {"restarts": 1}}


def estimator(model, **settings):
    return registry.get(model).estimator_class()(**SMALL.get(model, {}), **settings)


# ---------------------------------------------------------------------- every variant, API and CLI
@pytest.fixture(scope="module")
def variant_fits(files):
    _, data = files
    return {name: quietly(estimator(MODEL_OF[name], model_file=str(VARIANTS[name])), data[MODEL_OF[name]])
            for name in sorted(MODEL_OF)}


def test_predict_of_a_variant_lacking_a_variable_says_so(variant_fits, files):
    """A variant's fit without a variable that predict reads: one line naming the file and the variable."""
    _, data = files
    est = variant_fits["pcmix_tied_variances"]
    items = pd.DataFrame(data["pcmix"].x_raw, columns=list(data["pcmix"].features))
    idata = est._fitted()
    kept = idata.posterior
    try:
        idata.posterior = kept.drop_vars("rho")
        with pytest.raises(InputError, match=r"pcmix_tied_variances.py'.* no variable 'rho', which the pcmix "
                                             r"model's predict reads"):
            est.predict(items)
    finally:
        idata.posterior = kept


@pytest.mark.parametrize("name", sorted(MODEL_OF))
def test_variant_from_the_api(variant_fits, files, name):
    est = variant_fits[name]
    post = est.idata_.posterior
    assert "model_source" in post.attrs and inference.get_attrs(est.idata_)["settings"]["model_file"].endswith(
        f"{name}.py")
    table = est.summary()
    # the variant's own free variables sit beside the model's estimands
    own = {"learned_rater_noise": ["sigma_h"], "product_emissions": ["w0_speed[fast]", "w1_colour[red]"],
           "ecological_inference": ["tau"],
           "experts_symmetric": ["accuracy_raw[expert1]"], "pcmix_tied_variances": ["sd_tied_excess[x]"],
           "proportions_shared_sd": ["sd_shared_excess[x1]"], "perception_nonnegative": ["W[x1, a1]", "b[a1]"]}[name]
    assert set(own) <= set(table.index), table.index
    assert set(est.estimands) & {r.split("[")[0] for r in table.index}
    if name == "learned_rater_noise":  # per-group values are named, not printed
        assert any("rater_error[group]" in note for note in est.summary_notes())
        assert not any(r.startswith("rater_error") for r in table.index)
    if name == "experts_symmetric":
        np.testing.assert_array_equal(post["alpha"].values, post["beta"].values)
        assert list(est.expert_table().index) == ["expert1", "expert2", "expert3"]  # most accurate first
    if name == "pcmix_tied_variances":
        sd = post["sd"].values[0, 0]
        np.testing.assert_allclose(sd[0], sd[1])
        assert est.map_point_.keys() == {"pi", "mean_z", "sd_tied_excess", "rho"}
    if name == "proportions_shared_sd":  # every class has the same sd per feature
        sd = post["sd"].values[0, 0]
        np.testing.assert_allclose(sd[0], sd[1])
        assert set(est.predict(pd.DataFrame({"x1": [0.0], "x2": [1.0]})).columns) >= {"class", "prob_0", "prob_1"}
    if name == "perception_nonnegative":  # LPE's constraint, W and b >= 0
        assert (post["W"].values >= 0).all() and (post["b"].values >= 0).all()
    if name == "product_emissions":  # the emissions factorize over the columns
        w1 = post["w1"].values[0, 0].reshape(3, 2)  # speed x colour, row-major crossing
        np.testing.assert_allclose(w1, np.outer(w1.sum(1), w1.sum(0)), rtol=1e-8)


@pytest.mark.parametrize("name", sorted(MODEL_OF))
def test_variant_from_the_command_line(files, tmp_path, capsys, name):
    path, _ = files
    model = MODEL_OF[name]
    report = [] if name == "product_emissions" else ["--report", tmp_path / "report"]  # one wsc report is enough
    code = cli([*cli_fit_args(model, path), "--model", VARIANTS[name], "--out", tmp_path / "fit.nc", *report])
    out = capsys.readouterr().out
    assert code == 0, out
    own = {"learned_rater_noise": "sigma_h", "product_emissions": "w0_speed[fast]", "ecological_inference": "tau",
           "experts_symmetric": "accuracy_raw[expert1]", "pcmix_tied_variances": "sd_tied_excess[x]",
           "proportions_shared_sd": "sd_shared_excess[x1]", "perception_nonnegative": "W[x1, a1]"}[name]
    assert own in out and "Diagnostics" in out
    if report:
        assert own in (tmp_path / "report" / "report.html").read_text()
    if name == "learned_rater_noise":
        assert "rater_error[group]" in out and "rater_error[group]" in (tmp_path / "report" / "report.html").read_text()
    assert cli(["summary", tmp_path / "fit.nc"]) == 0
    assert own in capsys.readouterr().out
    assert load(tmp_path / "fit.nc").model_file == str(VARIANTS[name])


@pytest.mark.parametrize("name", ["learned_rater_noise", pytest.param("product_emissions", marks=pytest.mark.slow)])
def test_wsc_variants_by_nuts(files, name):
    """A wsc variant samples by NUTS (the learned-noise one in the default tier: it adds a variable)."""
    _, data = files
    nuts = quietly(WSC(model_file=str(VARIANTS[name]), method="nuts", draws=60, tune=60, chains=1,
                       progressbar=False), data["wsc"])
    assert np.all(np.isfinite(nuts.idata_.posterior["rho"].values))
    assert "sigma_h" in nuts.summary().index or name != "learned_rater_noise"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["experts_symmetric", "pcmix_tied_variances"])
def test_new_variants_by_nuts_are_relabelled(files, name):
    """NUTS from the variant's MAP, relabelled along its own cluster dims (the tied sd has none)."""
    _, data = files
    model = MODEL_OF[name]
    est = quietly(estimator(model, model_file=str(VARIANTS[name]), method="nuts", draws=150, tune=150, chains=2,
                            progressbar=False), data[model])
    agreement = inference.get_attrs(est.idata_)["fit_info"]["nuts"]["chain_agreement"]
    assert min(agreement) > 0.9 and not any("sits in a different mode" in m for m in est.diagnostics_)
    assert est.summary()["r_hat"].max() < 1.2
    pred = est.predict({"experts": pd.DataFrame({"x1": [0.0], "x2": [1.0]}),
                        "pcmix": pd.DataFrame({"x": [0.0, 1.7]})}[model])
    assert np.all(pred["prob_high"] > pred["prob_low"])


@pytest.mark.slow
def test_learned_rater_noise_recovers_sigma_h():
    data, _ = simulate_wsc(n_groups=300, items_per_group=20, n_bins=6, sigma_h=0.5, seed=4)
    est = quietly(WSC(model_file=str(VARIANTS["learned_rater_noise"]), method="nuts", draws=300, tune=300, chains=2,
                      seed=3, progressbar=False), data)
    sigma_h = est.idata_.posterior["sigma_h"].values
    assert 0.35 < float(np.median(sigma_h)) < 0.7


# ---------------------------------------------------------------------- settings of a variant's own
SETTING_VARIANT = '''
import pymc as pm

from bayes_wsc.models.wsc import build_model as default_model


def build_model(data, *, nu=1.0, label="none", **settings):
    """The default model, reporting the settings it was given."""
    model = default_model(data, **settings)
    with model:
        pm.Deterministic("nu_seen", pm.math.constant(float(nu)))
        pm.Deterministic("label_length", pm.math.constant(float(len(str(label)))))
    return model
'''


def test_set_reaches_build_model_and_no_map_fixed_is_inherited(files, base_fits, tmp_path, capsys):
    """--set and model_settings reach the variant's build_model and are stored; the default model holds
    mu_scale in its MAP, and this variant, which states no map_fixed, holds nothing."""
    path, data = files
    variant = tmp_path / "with_settings.py"
    variant.write_text(SETTING_VARIANT)
    code = cli([*cli_fit_args("wsc", path), "--model", variant, "--set", "nu=3.5", "--set", "label=student_t",
                "--out", tmp_path / "fit.nc"])
    assert code == 0, capsys.readouterr()
    fit = load(tmp_path / "fit.nc")
    assert fit.model_settings == {"nu": 3.5, "label": "student_t"}
    post = fit.idata_.posterior
    assert post["nu_seen"].item() == 3.5 and post["label_length"].item() == len("student_t")
    assert "nu_seen" in fit.summary().index
    held = inference.get_attrs(base_fits["wsc"][0].idata_)["fit_info"]["map"]["held_fixed"]
    assert set(held) == {"mu_scale"}
    assert "held_fixed" not in inference.get_attrs(fit.idata_)["fit_info"]["map"]
    assert post["mu_scale"].item() != pytest.approx(held["mu_scale"])
    # the API's model_settings take the same path to build_model
    model = WSC(model_file=str(variant), model_settings={"nu": 7})._recipe().build(data["wsc"])
    assert float(model["nu_seen"].eval()) == 7.0


def test_a_variant_that_states_map_fixed_gets_exactly_it(files, variant_fits):
    est = variant_fits["learned_rater_noise"]
    info = inference.get_attrs(est.idata_)["fit_info"]["map"]
    assert info["held_fixed"] == {"mu_scale": max(float(np.std(files[1]["wsc"].he)), 0.1)}


def test_the_shipped_wsc_variants_state_their_hooks():
    """Each says where its MAP starts and what it holds, rather than relying on the default model's."""
    for name in ("learned_rater_noise", "product_emissions"):
        text = VARIANTS[name].read_text()
        assert "def map_fixed" in text and "def initial_values" in text


BAD_SETTINGS = {
    "no equals sign": (["--model", VARIANTS["learned_rater_noise"], "--set", "nu"], "expected KEY=VALUE"),
    "a setting of the model itself": (["--model", VARIANTS["learned_rater_noise"], "--set", "wh=3"],
                                      "'wh' is a setting of the wsc model itself"),
    "no variant": (["--set", "nu=3"], "the wsc model takes no setting 'nu'"),
    "given twice": (["--model", VARIANTS["learned_rater_noise"], "--set", "nu=3", "--set", "nu=4"],
                    "--set nu is given twice"),
    "not taken by build_model": (["--model", VARIANTS["learned_rater_noise"], "--set", "nu=3"],
                                 "learned_rater_noise.py': build_model takes no setting 'nu'"),
    "a variant of another model": (["--model", VARIANTS["experts_symmetric"]], "build_model takes no setting 'wh'"),
}


@pytest.mark.parametrize("case", list(BAD_SETTINGS))
def test_bad_set_is_one_line(files, tmp_path, capsys, case):
    path, _ = files
    extra, expected = BAD_SETTINGS[case]
    code = cli([*cli_fit_args("wsc", path), *extra, "--out", tmp_path / "fit.nc"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and expected in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "fit.nc").exists()


def test_a_failing_variant_is_one_line_naming_its_file(files, tmp_path):
    """A failure after the build (here at the MAP's start) names the file too, in one line."""
    _, data = files
    variant = tmp_path / "broken_start.py"
    variant.write_text(SETTING_VARIANT + "\n\ndef initial_values(data):\n    return {'w0': 'not a number'}\n")
    with pytest.raises(InputError, match=r"broken_start.py': the MAP failed: ValueError") as err:
        WSC(model_file=str(variant)).fit(data["wsc"])
    assert "\n" not in str(err.value)


NO_LIKELIHOOD = '''
import pymc as pm


def build_model(data, **settings):
    """Priors only: nothing observed."""
    with pm.Model(coords={"bin": list(data.bins.labels)}) as model:
        pm.Beta("rho", 1.0, 1.0, dims="bin")
        pm.Beta("pi", 1.0, 1.0)
    return model
'''


def test_a_variant_that_observes_nothing_is_refused_before_the_fit(files, tmp_path):
    """No observed variable and no Potential: its fit would be its prior (and said "No problems found");
    it is one line naming the file, before the MAP."""
    _, data = files
    variant = tmp_path / "priors_only.py"
    variant.write_text(NO_LIKELIHOOD)
    for method in ("map", "nuts"):
        est = WSC(model_file=str(variant), method=method, draws=10, tune=10, chains=1, progressbar=False)
        with pytest.raises(InputError, match=r"priors_only.py': its build_model's model observes nothing") as err:
            est.fit(data["wsc"])
        assert "\n" not in str(err.value) and getattr(est, "_groups", None) is None


@pytest.mark.parametrize("checks", ["'x'", "(1, 2)", "{'a': print}"])
def test_a_variant_with_checks_of_the_wrong_kind_is_refused_before_the_fit(files, tmp_path, checks):
    _, data = files
    variant = tmp_path / "bad_checks.py"
    variant.write_text(SETTING_VARIANT + f"\nCHECKS = {checks}\n")
    with pytest.raises(InputError, match=r"bad_checks.py': CHECKS must be a tuple of functions") as err:
        WSC(model_file=str(variant)).fit(data["wsc"])
    assert "\n" not in str(err.value)


def test_a_variant_check_returning_other_rows_is_one_line(files, tmp_path):
    """A check returning dicts: the fit says its checks did not run (one line), and run_checks is an
    InputError naming the file and the check."""
    _, data = files
    variant = tmp_path / "dict_checks.py"
    variant.write_text(SETTING_VARIANT + "\n\ndef my_check(est, data, seed):\n    return [{'check': 'x'}]\n\n"
                       "CHECKS = (my_check,)\n")
    with pytest.warns(FitWarning, match="the model checks did not run on this variant"):
        est = WSC(model_file=str(variant), progressbar=False).fit(data["wsc"])
    with pytest.raises(InputError, match=r"dict_checks.py': its check my_check returned list"):
        est.run_checks(draws=5)


# ---------------------------------------------------------------------- summaries of the models themselves


# ---------------------------------------------------------------------- reproducible, canonical order
@pytest.fixture(scope="module")
def base_fits(files):
    """Each model fitted with no seed given; experts and pcmix once more with another seed."""
    _, data = files
    fits = {model: (quietly(estimator(model), data[model]), quietly(estimator(model, seed=11), data[model]))
            for model in ("experts", "pcmix")}
    return {"wsc": (WSC().fit(data["wsc"]),), **fits}


def test_clusters_come_in_the_canonical_order(base_fits, files):
    """Largest cluster first, whichever seed (and so whichever restart) found the mode."""
    _, data = files
    first, other_seed = base_fits["experts"]
    a, b = first.memberships(), other_seed.memberships()
    assert np.mean(a["cluster"].to_numpy() == b["cluster"].to_numpy()) > 0.95
    shares = a[[f"prob_{k}" for k in range(3)]].mean().to_numpy()
    assert np.all(np.diff(shares) <= 0.02)
    first, other_seed = base_fits["pcmix"]
    pi = first.idata_.posterior["pi"].values[0, 0]
    assert pi[0] > pi[1]
    np.testing.assert_allclose(other_seed.idata_.posterior["pi"].values[0, 0], pi, atol=0.05)


def test_canonical_permutation_orders_by_size_then_first_feature():
    x = np.array([0.0, 0.1, 5.0, 5.1, 9.0, 9.2, 9.4])
    members = np.eye(3)[[1, 1, 2, 2, 0, 0, 0]]  # clusters 1 and 2 tie in size
    assert list(canonical_permutation(members, x)) == [0, 1, 2]
    assert list(canonical_permutation(members[:, [2, 0, 1]], x)) == [1, 2, 0]
    assert list(canonical_permutation(members[:, [0, 2, 1]], -x)) == [0, 1, 2]  # lower first-feature mean first


# ---------------------------------------------------------------------- honest MAP intervals
def test_a_map_prints_no_interval(base_fits, files, tmp_path):
    path, data = files
    wsc, experts, pcmix = (base_fits[m][0] for m in ("wsc", "experts", "pcmix"))
    frames = [wsc.predict(pd.read_csv(path / "clicks.csv").head(5)), experts.memberships(),
              experts.predict(pd.read_csv(path / "items.csv").drop(columns="id").head(5)),
              pcmix.predict(pd.read_csv(path / "toy.csv").head(5))]
    for frame in frames:
        assert frame["prob_low"].isna().all() and frame["prob_high"].isna().all()
        probs = frame["prob"] if "prob" in frame else frame["prob_0"]
        assert probs.notna().all() and probs.between(0, 1).all()
    table = experts.expert_table()
    assert table[["alpha_low", "alpha_high", "omega_low"]].isna().all().all() and table["alpha"].notna().all()
    assert np.isnan(wsc.class_probability(["g0"])["low"].values).all()
    # the command line writes empty cells
    pcmix.save(tmp_path / "fit.nc")
    pd.read_csv(path / "toy.csv").head(3).to_csv(tmp_path / "new.csv", index=False)
    assert cli(["predict", tmp_path / "fit.nc", "--items", tmp_path / "new.csv", "--out", tmp_path / "p.csv"]) == 0
    rows = (tmp_path / "p.csv").read_text().splitlines()
    header = rows[0].split(",")
    low, high = header.index("prob_low"), header.index("prob_high")
    for row in rows[1:]:
        cells = row.split(",")
        assert cells[low] == cells[high] == "" and float(cells[header.index("prob")]) > 0
