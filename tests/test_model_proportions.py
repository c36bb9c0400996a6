"""The label-proportions model (issue 14): recovery, agreement with the first model, the LLP baseline,
the command line end to end, and every bad input as one line.

The likelihoods against enumeration are in test_model_proportions_likelihood.py; NUTS recovery and SBC are
in the slow tier (test_model_proportions_slow.py).
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import logit

import bayes_wsc
from bayes_wsc.baselines.proportions import fit_llp, label_proportion_errors
from bayes_wsc.cli import main
from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.data.proportions import LabelProportions
from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.estimator import load
from bayes_wsc.models.proportions import ProportionsClassifier, build_model, identifiability_message
from bayes_wsc.models.wsc import WSC
from bayes_wsc.simulate.proportions import simulate_proportions
from bayes_wsc.inference import LOG_LIKELIHOOD_PREFIX as PREFIX


def cli(argv):
    try:
        return main([str(a) for a in argv])
    except SystemExit as exit_:
        return exit_.code


# ---------------------------------------------------------------------- recovery (MAP)
@pytest.mark.parametrize("emission, bag", [("gaussian", "exact-counts"), ("categorical", "independent"),
                                           ("logistic", "exact-counts")])
def test_map_recovers_simulated_parameters(emission, bag):
    n_groups = 200 if emission == "categorical" else 60  # six bins per class: more items to learn them from
    data, truth = simulate_proportions(emission, n_groups=n_groups, group_size=6, n_classes=3, n_features=2, seed=3)
    est = ProportionsClassifier(emission=emission, bag_likelihood=bag).fit(data)
    if emission == "logistic":  # the true classifier is right for 0.62 of the items (3 classes, 2 features): the
        # held-out groups' proportions, predicted by refits without them, say that they cannot tell
        assert len(est.diagnostics_) == 1 and "held_out_groups flagged: The held-out groups are too few or too alike" \
            in est.diagnostics_[0], est.diagnostics_
    else:
        assert est.diagnostics_ == []
    post = {k: v.values[0, 0] for k, v in est.idata_.posterior.items()}
    items = est.item_probabilities()
    accuracy = np.mean(items["class"].astype(int).to_numpy() == truth.z)
    if emission == "gaussian":
        np.testing.assert_allclose(post["mean"], truth.params["mean"], atol=0.35)
        np.testing.assert_allclose(post["sd"], truth.params["sd"], atol=0.3)
        assert accuracy > 0.9
    elif emission == "categorical":
        np.testing.assert_allclose(post["w"], truth.params["w"], atol=0.1)
        assert accuracy > 0.7
    else:
        assert np.corrcoef(post["W"].ravel(), truth.params["W"].ravel())[0, 1] > 0.9
        true_rule = np.argmax(data.x @ truth.params["W"].T + truth.params["b"], axis=1)
        assert accuracy >= np.mean(true_rule == truth.z)  # the counts tell more than the features alone
    np.testing.assert_allclose(post["eta"], data.eta)  # the proportions are known: eta is eq. 2


def test_binary_categorical_agrees_with_the_first_model_at_infinite_wh():
    """Two classes, known proportions: Z ~ Bernoulli(Pi_i1), bins ~ Categorical(w_Z) is seed 000 with
    WH = inf and HE = logit(Pi_i1); same priors, same MAP."""
    rng = np.random.default_rng(0)
    n_groups, size, n_bins = 40, 10, 5
    share = rng.uniform(0.1, 0.9, n_groups)
    groups = np.repeat(np.arange(n_groups), size)
    w = rng.dirichlet(np.ones(n_bins), 2)
    z = (rng.random(groups.size) < share[groups]).astype(int)
    item_bin = np.array([rng.choice(n_bins, p=w[c]) for c in z])
    proportions = np.column_stack([1 - share, share])
    data = LabelProportions.from_bins(item_bin, groups, proportions, n_bins)
    ours = ProportionsClassifier(emission="categorical", w_concentration=2.0).fit(data).idata_.posterior
    counts = np.zeros((n_groups, n_bins))
    np.add.at(counts, (groups, item_bin), 1)
    first = WSC(wh=np.inf, w_concentration=2.0).fit(GroupedCounts.from_counts(counts, logit(share))).idata_.posterior
    np.testing.assert_allclose(ours["w"].values[0, 0], np.stack([first["w0"].values[0, 0], first["w1"].values[0, 0]]),
                               atol=2e-4)
    np.testing.assert_allclose(ours["rho"].values[0, 0][:, 1], first["rho"].values[0, 0], atol=2e-4)
    assert ours["eta"].values[0, 0][1] == pytest.approx(float(first["pi"].values[0, 0]))


def test_identical_proportions_leave_the_classes_unidentified():
    x = np.random.default_rng(0).normal(size=(40, 2))
    same = LabelProportions.from_arrays(x, np.repeat(np.arange(8), 5), np.tile([0.4, 0.6], (8, 1)))
    assert "every group has the same class proportions" in identifiability_message(same)
    few = LabelProportions.from_arrays(x, np.repeat(np.arange(8), 5),
                                       np.tile([[0.2, 0.4, 0.4], [0.6, 0.2, 0.2]], (4, 1)))
    assert "fewer than 3 directions" in identifiability_message(few)
    varied = LabelProportions.from_arrays(x, np.repeat(np.arange(8), 5), np.tile([[0.2, 0.8], [0.6, 0.4]], (4, 1)))
    assert identifiability_message(varied) is None


def test_exact_counts_need_whole_counts():
    x = np.random.default_rng(0).normal(size=(6, 1))
    data = LabelProportions.from_arrays(x, [0, 0, 0, 1, 1, 1], [[0.5, 0.5], [0.2, 0.8]])
    assert data.counts is None
    with pytest.raises(InputError, match="not a whole number of items"):
        ProportionsClassifier(bag_likelihood="exact-counts").fit(data)
    with pytest.raises(InputError, match="need bag_likelihood='independent'"):
        ProportionsClassifier(bag_likelihood="exact-counts", concentration=5.0).fit(data)
    with pytest.raises(InputError, match="needs categorical features"):
        ProportionsClassifier(emission="categorical").fit(data)


def test_random_fourier_features_are_the_logistic_emissions_alone():
    x = np.random.default_rng(0).normal(size=(6, 1))
    data = LabelProportions.from_arrays(x, [0, 0, 0, 1, 1, 1], [[1 / 3, 2 / 3], [2 / 3, 1 / 3]])
    with pytest.raises(InputError, match="feature_map='rff' expands the inputs of the logistic emission's softmax; "
                                         "the gaussian emission"):
        ProportionsClassifier(emission="gaussian", feature_map="rff").fit(data)
    with pytest.raises(InputError, match="feature_map"):
        ProportionsClassifier(feature_map="poly").fit(data)
    with pytest.raises(InputError, match="n_basis"):
        ProportionsClassifier(feature_map="rff", n_basis=0).fit(data)


# ---------------------------------------------------------------------- the LLP baseline
def test_llp_recovers_the_labels_of_pure_groups():
    """The best case of Sec. 2.3: every group holds one class."""
    from bayes_wsc.simulate.experts import load_uci

    items, labels = load_uci("breast_cancer")
    x = items.drop(columns="id").to_numpy()
    rng = np.random.default_rng(1)
    groups = labels * 10 + rng.integers(0, 10, labels.size)  # 10 pure groups per class
    proportions = np.eye(2)[np.arange(20) // 10]
    for labeling in ("exhaustive", "greedy"):
        model = fit_llp(x, groups, proportions, k=4, labeling=labeling, maxgen=3, psize=8, seed=0)
        assert np.mean(model.predict_codes(x) == labels) > 0.9, labeling
        assert model.err_mse == pytest.approx(0.0, abs=0.02)


def test_err_pi_is_the_papers_measure_with_its_zero_floored():
    pi = np.array([[1.0, 0.0], [0.5, 0.5]])
    sizes = np.array([2.0, 2.0])
    gamma = np.array([[0.5, 0.5], [1.0, 0.0]])  # class totals match: Err_prior = 0 as printed
    printed = label_proportion_errors(pi, gamma, sizes, floors=False)
    assert printed["err_prior"] == 0 and printed["err_pi"] == 0 and printed["err_mse"] == pytest.approx(0.25)
    floored = label_proportion_errors(pi, gamma, sizes)
    assert floored["err_prior"] == pytest.approx(1 / (2 * 16)) and floored["err_pi"] > 0


# ---------------------------------------------------------------------- the command line
@pytest.fixture(scope="module")
def files(tmp_path_factory):
    path = tmp_path_factory.mktemp("proportions")
    data, truth = simulate_proportions("gaussian", n_groups=24, group_size=5, n_classes=3, n_features=2, seed=4)
    items = pd.DataFrame(data.x_raw, columns=["height", "weight"])
    items.insert(0, "group", np.char.add("c", data.group_ids[data.item_group]))
    items.insert(0, "id", [f"stick{i}" for i in range(data.n_items)])
    items.to_csv(path / "items.csv", index=False)
    counts = pd.DataFrame(data.counts, columns=["ok", "crack", "bend"])
    counts.insert(0, "group", np.char.add("c", data.group_ids))
    counts.to_csv(path / "counts.csv", index=False)
    shares = counts.copy()
    shares[["ok", "crack", "bend"]] = counts[["ok", "crack", "bend"]] / 5
    shares.to_csv(path / "proportions.csv", index=False)
    return path, truth


def test_fit_predict_report_and_llp_from_the_command_line(files, capsys):
    path, truth = files
    fit = path / "fit.nc"
    assert cli(["fit", "proportions", "--items", path / "items.csv", "--proportions", path / "counts.csv", "--counts",
                "--id-col", "id", "--out", fit, "--report", path / "report"]) == 0
    out = capsys.readouterr().out
    # the defaults: the logistic emission, and exact counts because the counts are given
    assert "features height, weight" in out and "W[crack, height]" in out and "Diagnostics" in out
    html = (path / "report" / "report.html").read_text()
    assert "Fit to the proportions" in html and "the exact-counts likelihood" in html and "bag_likelihood=&#x27;auto&#x27;" in html
    new = pd.DataFrame({"weight": [0.0, 1.0], "height": [1.0, -2.0], "other": ["a", "b"]})  # no group: features only
    new.to_csv(path / "new.csv", index=False)
    assert cli(["predict", fit, "--items", path / "new.csv", "--out", path / "pred.csv"]) == 0
    pred = pd.read_csv(path / "pred.csv")
    assert list(pred.columns) == ["weight", "height", "other", "class", "prob_ok", "prob_crack", "prob_bend",
                                  "prob_low", "prob_high"]
    np.testing.assert_allclose(pred[["prob_ok", "prob_crack", "prob_bend"]].sum(axis=1), 1.0)
    assert pred["prob_low"].isna().all()  # a MAP has no interval
    assert cli(["baseline", "llp", "--items", path / "items.csv", "--proportions", path / "proportions.csv",
                "--id-col", "id", "--k", "3", "--out", path / "llp.json"]) == 0
    assert "Err_Pi" in capsys.readouterr().out
    assert cli(["predict", path / "llp.json", "--items", path / "new.csv", "--out", path / "pred_llp.csv"]) == 0
    llp = pd.read_csv(path / "pred_llp.csv")
    assert set(llp["class"]) <= {"ok", "crack", "bend"} and (llp[["prob_ok", "prob_crack", "prob_bend"]].sum(axis=1) == 1).all()


@pytest.fixture(scope="module")
def nuts_fit(files):
    """A small NUTS fit with noisy proportions (theta a parameter of each group)."""
    path, _ = files
    items = pd.read_csv(path / "items.csv")
    data = LabelProportions.from_frames(items, pd.read_csv(path / "proportions.csv"), id_col="id")
    est = ProportionsClassifier(emission="gaussian", concentration=20.0, method="nuts", draws=60, tune=60, chains=2,
                                progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)  # 60 draws: low ESS, said so
        return est.fit(data), items


def test_noisy_proportions_name_each_groups_theta_outside_the_summary(nuts_fit, tmp_path):
    est, _ = nuts_fit
    back = load(est.save(tmp_path / "fit.nc"))
    assert any("theta[group, class]" in note for note in back.summary_notes())


def test_the_default_bag_likelihood_follows_the_data(tmp_path):
    """"auto" takes the exact counts when the proportions are whole counts and known exactly, and the
    independent form for shares that are not counts or with a concentration; the fit keeps its choice."""
    from bayes_wsc.commands import proportions as command
    from bayes_wsc.models import proportions as model

    assert command.ProportionsSettings is model.ProportionsClassifier.Settings  # one declaration of the defaults
    assert (model.ProportionsClassifier().emission, model.ProportionsClassifier().bag_likelihood) == (
        model.DEFAULT_EMISSION, model.DEFAULT_BAG_LIKELIHOOD)
    data, _ = simulate_proportions("logistic", n_groups=12, group_size=4, n_classes=2, n_features=2, seed=1)
    shares = 0.1 + 0.8 * data.proportions  # 0.1 of a group of 4 is 0.4 items: not counts
    votes = LabelProportions.from_arrays(data.x, data.item_group, shares)
    assert votes.counts is None and data.counts is not None
    cases = [(data, None, "exact-counts"), (votes, None, "independent"), (data, 5.0, "independent")]
    for fit_data, concentration, expected in cases:
        est = ProportionsClassifier(concentration=concentration).fit(fit_data)
        assert est.bag_likelihood == "auto" and est.bag_likelihood_ == expected
    exact = ProportionsClassifier().fit(data)
    back = bayes_wsc.load(exact.save(tmp_path / "fit.nc"))
    assert back.bag_likelihood_ == "exact-counts" and back.get_params()["bag_likelihood"] == "auto"
    np.testing.assert_array_equal(back.item_probabilities()["prob_low"], exact.item_probabilities()["prob_low"])


def test_compare_refuses_fits_that_score_different_things():
    """The logistic emission's log-likelihood is of the counts given the features, the gaussian's of the
    features given the counts: LOO cannot rank one against the other."""
    data, _ = simulate_proportions("gaussian", n_groups=16, group_size=4, n_classes=2, n_features=2, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        fits = {e: ProportionsClassifier(emission=e, method="laplace", draws=200).fit(data)
                for e in ("logistic", "gaussian")}
        same = ProportionsClassifier(emission="gaussian", bag_likelihood="independent", method="laplace",
                                     draws=200).fit(data)
        assert len(bayes_wsc.compare({"exact": fits["gaussian"], "independent": same})) == 2
    with pytest.raises(InputError, match="score different things .*the class counts given the features"):
        bayes_wsc.compare(fits)


BAD = {
    "proportions that do not sum to 1": ("proportions.csv", lambda p: p.assign(ok=0.98 * p.ok, crack=0.98 * p.crack,
                                                                               bend=0.98 * p.bend), [],
                                         "sum to 0.98, not 1 (within 1e-06)"),
    "negative counts": ("counts.csv", lambda p: p.assign(ok=-p.ok), ["--counts"], "must be >= 0"),
    "non-integer counts": ("counts.csv", lambda p: p.assign(ok=p.ok + 0.5), ["--counts"], "must be whole numbers"),
    "counts that miss the group's items": ("counts.csv", lambda p: p.assign(ok=p.ok + 1), ["--counts"],
                                           "add up to"),
    "a group without items": ("proportions.csv", lambda p: pd.concat([p, p.head(1).assign(group="empty")]), [],
                              "'empty' has no items"),
    "items in a group absent from P": ("proportions.csv", lambda p: p.iloc[1:], [], "absent from proportions"),
    "fewer than 2 classes": ("proportions.csv", lambda p: p[["group", "ok"]].assign(ok=1.0), [],
                             "need at least 2 classes"),
    "a class column that is all zero": ("proportions.csv", lambda p: p.assign(ok=p.ok + p.bend, bend=0.0), [],
                                        "'bend' is 0 in every row"),
    "a duplicated group": ("proportions.csv", lambda p: pd.concat([p, p.head(1)]), [], "second row for group"),
    "NaN feature": ("items.csv", lambda t: t.assign(height=t.height.where(t.index != 3)), [],
                    "'height' has a missing value (row 4)"),
    "infinite feature": ("items.csv", lambda t: t.assign(weight=t.weight.where(t.index != 2, np.inf)), [],
                         "non-finite value inf (row 3)"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_and_exit_2(files, tmp_path, capsys, case):
    path, _ = files
    which, change, flags, expected = BAD[case]
    tables = {name: path / name for name in ("items.csv", "proportions.csv", "counts.csv")}
    change(pd.read_csv(tables[which])).to_csv(tmp_path / which, index=False)
    tables[which] = tmp_path / which
    table = tables["counts.csv"] if "--counts" in flags else tables["proportions.csv"]
    if which == "items.csv":
        table = path / "proportions.csv"
    for command in (["fit", "proportions"], ["baseline", "llp"]):
        argv = [*command, "--items", tables["items.csv"], "--proportions", table, "--id-col", "id", *flags,
                "--out", tmp_path / "out.nc"]
        assert cli(argv) == 2
        err = capsys.readouterr().err.strip()
        assert expected in err and len(err.splitlines()) == 1, err
        assert not (tmp_path / "out.nc").exists()


@pytest.mark.parametrize("flags, expected", [
    (["--emission", "gaussian", "--feature-map", "rff"], "feature_map='rff' expands the inputs of the logistic"),
    (["--feature-map", "spline"], "feature-map"), (["--feature-map", "rff", "--n-basis", "0"], "--n-basis")])
def test_a_bad_feature_map_is_one_line_and_exit_2(files, tmp_path, capsys, flags, expected):
    path, _ = files
    argv = ["fit", "proportions", "--items", path / "items.csv", "--proportions", path / "proportions.csv",
            "--id-col", "id", *flags, "--out", tmp_path / "out.nc"]
    assert cli(argv) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "out.nc").exists()


def test_an_output_never_replaces_an_input(files, capsys):
    path, _ = files
    before = (path / "items.csv").read_bytes()
    assert cli(["fit", "proportions", "--items", path / "items.csv", "--proportions", path / "proportions.csv",
                "--out", path / "items.csv"]) == 2
    assert "which it would replace" in capsys.readouterr().err
    assert (path / "items.csv").read_bytes() == before


# ---------------------------------------------------------------------- criticism (issue 16)
@pytest.mark.parametrize("emission", ["gaussian", "categorical", "logistic"])
@pytest.mark.parametrize("bag", ["independent", "exact-counts"])
def test_pointwise_loglik_is_the_data_loglik(emission, bag):
    """Per group; the sum is the model's log density less its priors, at a random point."""
    import pytensor

    data, _ = simulate_proportions(emission, n_groups=5, group_size=4, n_classes=3, n_features=2, n_bins=3, seed=2)
    model = build_model(data, emission=emission, bag_likelihood=bag)
    outputs = model.replace_rvs_by_values([model[PREFIX + "groups"], model.logp(), model.logp(vars=model.free_RVs)])
    fn = pytensor.function(model.value_vars, outputs, on_unused_input="ignore", mode="FAST_COMPILE")
    rng = np.random.default_rng(0)
    point = [rng.normal(0, 0.5, v.type.shape if None not in v.type.shape else model.initial_point()[v.name].shape)
             for v in model.value_vars]
    pointwise, total, priors = fn(*point)
    assert pointwise.shape == (data.n_groups,) and np.all(np.isfinite(pointwise))
    assert abs(pointwise.sum() - (total - priors)) < 1e-8


def test_noisy_proportions_keep_their_groups_and_checks(nuts_fit):
    """With a concentration (theta a parameter of each group) LOO scores groups, the replicates are the
    groups' feature means, and group_misfit runs (what the contract suite asserts of the default settings)."""
    est, _ = nuts_fit
    group = est.idata_.log_likelihood
    assert list(group.data_vars) == ["groups"] and group["groups"].dims == ("chain", "draw", "group")
    ppc = est.posterior_predictive(draws=40, seed=1)
    assert set(ppc.posterior_predictive.data_vars) == set(ppc.observed_data.data_vars) == {
        "feature_mean", "feature_sd", "group_mean"}
    replicated, observed = ppc.posterior_predictive["group_mean"], ppc.observed_data["group_mean"]
    assert replicated.dims[2:] == observed.dims == ("group", "feature")
    table = est.checks_
    assert {"group_misfit", "loo_pareto_k"} <= set(table["check"])
    assert not table[table["check"] != "loo_pareto_k"]["flagged"].any(), table.to_string()


@pytest.mark.parametrize("emission", ["gaussian", "logistic"])
def test_group_misfit_flags_wrong_proportions(emission):
    """Three of 60 groups given another class's counts (their largest class moved on by one). On the same
    data unchanged no check flags: `test_map_recovers_simulated_parameters` fits them with no diagnostics."""
    data, _ = simulate_proportions(emission, n_groups=60, group_size=6, n_classes=3, n_features=2, seed=3)
    est = ProportionsClassifier(emission=emission, bag_likelihood="exact-counts")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        counts = np.array(data.counts)
        wrong = np.argsort(-counts.max(axis=1), kind="stable")[:3]
        counts[wrong] = np.roll(counts[wrong], 1, axis=1)
        with pytest.warns(FitWarning, match="check group_misfit flagged"):
            est.fit(data.with_proportions(counts / counts.sum(axis=1, keepdims=True), counts))
    row = est.checks_.set_index("check").loc["group_misfit"]
    assert row["flagged"] and any(f"group {data.group_ids[g]} " in row["message"] for g in wrong)


def test_the_basic_report_of_a_model_without_its_own(nuts_fit, tmp_path):
    """The base estimator's report (what a model without a report module gets): estimands with intervals,
    the shared criticism sections and the warnings."""
    from bayes_wsc.estimator import Estimator

    est, _ = nuts_fit
    page = Estimator.write_report(est, tmp_path, ci=0.8).read_text()
    for heading in ("Estimands", "Diagnostics", "80% HDI", "eta"):
        assert heading in page
    with pytest.raises(InputError, match="ci must be"):
        Estimator.write_report(est, tmp_path, ci=1.5)
