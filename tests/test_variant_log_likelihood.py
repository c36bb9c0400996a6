"""A variant's log-likelihood and checks come from the model that was fitted (issue 26).

For every model, a variant written from its blocks with a term of its own (a Student-t rater noise,
junk pairs, Student-t components or emissions, mislabeled seeds): its stored log-likelihood equals
its own density at the same draws, computed independently (NumPy, SciPy quadrature: the variants and
densities are the contract cases', contract_cases.py, with their own parameter fixed by a setting); the fit
says what its log-likelihood holds; the checks that would replicate from the default model's formula
replicate from the variant's own term or say that they did not run; and LOO prefers the variant on
data it fits better. A variant that changes nothing of the default's terms keeps them (and the
first model's integrated log-likelihood).
"""

import functools
import json
import math
import textwrap
import warnings

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit

from bayes_wsc import compare, inference
from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.models.wsc import WSC
from contract_cases import CASES


def quietly(est, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return est.fit(data)


def write(tmp_path_factory, name, source):
    path = tmp_path_factory.mktemp("variants") / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return str(path)


def flat(est, name, group="posterior"):
    values = est.idata_[group][name].values
    return values.reshape(-1, *values.shape[2:])


# ---------------------------------------------------------------------- the first model: Student-t rater noise
#: each model's variant with a term of its own is its contract case's (contract_cases.py), its own parameter
#: fixed by a setting here (nu = 2, a share 0.3 of junk pairs, 0.25 of mislabeled seeds)
WH = 11.0  # sigma_H = 0.3


def student_he_data(seed=3, n_groups=80, per_group=40):
    """Groups whose HE has Student-t errors (2 degrees of freedom): most raters close, a few far off."""
    rng = np.random.default_rng(seed)
    w0, w1 = np.array([0.5, 0.3, 0.15, 0.05]), np.array([0.05, 0.15, 0.3, 0.5])
    mu = rng.normal(0.0, 1.0, n_groups)
    counts = np.zeros((n_groups, 4), dtype=int)
    for i in range(n_groups):
        n1 = rng.binomial(per_group, expit(mu[i]))
        counts[i] = rng.multinomial(n1, w1) + rng.multinomial(per_group - n1, w0)
    he = mu + math.sqrt(1 / WH) * rng.standard_t(2.0, n_groups)
    return GroupedCounts.from_counts(counts, he, group_ids=[f"g{i}" for i in range(n_groups)],
                                     bin_labels=["a", "b", "c", "d"])


@pytest.fixture(scope="module")
def wsc_fits(tmp_path_factory):
    data = student_he_data()
    path = write(tmp_path_factory, "student_he", CASES["wsc"].variant)
    settings = dict(wh=WH, method="laplace", draws=400, seed=0, progressbar=False)
    return (data, quietly(WSC(model_file=path, model_settings={"nu": 2.0}, **settings), data),
            quietly(WSC(**settings), data))


def test_student_t_variant_scores_its_own_term(wsc_fits):
    """The stored log-likelihood is the variant's own: each group's clicks and Student-t HE with mu_i
    integrated out over F0, as SciPy integrates it; not the default's Normal-HE formula."""
    data, variant, _ = wsc_fits
    stored = flat(variant, "groups", "log_likelihood")
    post = {k: flat(variant, k) for k in ("w0", "w1", "mu_loc", "mu_scale")}
    draws, groups = (0, 137, 399), (0, 5, int(np.argmax(np.abs(data.he - data.he.mean()))), 41)
    own = CASES["wsc"].density(data, post, variant, draws=draws, groups=groups, nu=2.0)
    for s in draws:
        for i in groups:
            assert stored[s, i] == pytest.approx(own[s, i], abs=1e-3)
    attrs = inference.get_attrs(variant.idata_)
    assert attrs["likelihood_terms"] == {"clicks": "default", "he": "own", "group_quality": "default"}
    assert "own recorded term" in attrs["log_likelihood_holds"]
    assert any("own recorded term" in note for note in variant.log_likelihood_notes())


def test_student_t_variant_checks_replicate_its_own_he(wsc_fits):
    """`ppc` replicates HE from the variant's Student-t, not from a Normal, and the click statistics
    from the clicks (the click term is the default's); the aggregation check, which refits the default
    model, says it did not run."""
    data, variant, _ = wsc_fits
    rows = variant.checks_.set_index("check")
    assert np.isnan(rows.loc["aggregation_bias", "p_value"]) and not rows.loc["aggregation_bias", "flagged"]
    assert rows.loc["aggregation_bias", "message"].startswith("not run")
    ppc = variant.posterior_predictive(draws=200)
    assert {"he", "bin_share", "group_share"} <= set(ppc.posterior_predictive.data_vars)
    assert json.loads(ppc.posterior_predictive.attrs["ppc_not_run"]) == {}
    he = ppc.posterior_predictive["he"].values.reshape(-1, data.n_groups)
    residual = np.abs(he - np.median(he, axis=0))
    # a Normal(mu_i, 0.3) with mu_i's own spread puts almost nothing beyond 1.5; a t with 2 d.f. about 4%
    assert np.mean(residual > 1.5) > 0.01


def test_loo_prefers_the_student_t_variant_on_student_t_data(wsc_fits):
    data, variant, default = wsc_fits
    ranked = compare({"default": default, "student-t": variant})
    assert ranked.index[0] == "student-t"
    assert ranked.loc["default", "elpd_diff"] > ranked.loc["default", "dse"]
    # measured: 8.6 lower, SE 4.9 (1.75 SE): LOO leans to the variant, not decisively at 80 groups
    assert ranked.loc["default", "conclusion"].startswith(("below 'student-t'", "worse than 'student-t'")), \
        ranked["conclusion"].tolist()


def test_compare_says_plainly_when_loo_cannot_tell_fits_apart():
    """Issue 38's tie (a Student-t rater-noise variant on its own data against the default: elpd -6628.0
    against -6628.7, SE of the difference 0.53) reads as a tie in words; 1-2 SE as a lean; more as a preference."""
    import pandas as pd

    from bayes_wsc.comparison import conclusions

    table = pd.DataFrame({"elpd_diff": [0.0, 0.7, 12.0, 5.0, 8.6], "dse": [0.0, 0.53, 3.0, 6.0, 4.9]},
                         index=["student-t", "default", "worse", "noisy", "leaning"])
    best, tie, worse, noisy, leaning = conclusions(table)
    assert best == "best by LOO; tied with 'default', 'noisy' (see their rows)"
    assert tie.startswith("tied with 'student-t': elpd 0.7 lower, SE of the difference 0.5") \
        and "LOO cannot tell these fits apart" in tie
    assert worse == "worse than 'student-t': elpd 12.0 lower, 4.0 SE of the difference; LOO prefers 'student-t'"
    assert noisy.startswith("tied with 'student-t'")  # 5 nats, but within 1 SE of the difference
    assert leaning.startswith("below 'student-t': elpd 8.6 lower, 1.8 SE") and "not decisively" in leaning


# ---------------------------------------------------------------------- the first model: what it integrates, and when
DEFAULT_WRITTEN_OUT = """
    import pymc as pm

    from bayes_wsc.models.wsc import (add_click_likelihood, add_emissions, add_estimands, add_group_quality,
                                      hierarchical_scale_fixed)


    def build_model(data, *, wh=10.0, mu_prior="hierarchical", w_concentration=1.0):
        with pm.Model(coords=data.coords) as model:
            mu = add_group_quality(data, wh=wh, mu_prior=mu_prior)
            w = add_emissions(data, w_concentration=w_concentration)
            add_click_likelihood(data, mu, w)
            add_estimands(data, mu, w)
        return model


    def map_fixed(data, estimator):
        return hierarchical_scale_fixed(data, estimator.wh, estimator.mu_prior)
"""
STUDENT_F0 = """
    import math

    import pymc as pm

    from bayes_wsc.models.wsc import add_click_likelihood, add_emissions, add_estimands


    def build_model(data, *, wh=10.0, mu_prior="hierarchical", w_concentration=1.0):
        with pm.Model(coords=data.coords) as model:
            he = pm.Data("he_data", data.he, dims="group")
            mu_loc, mu_scale = pm.Normal("mu_loc", 0.0, 2.0), pm.HalfNormal("mu_scale", 2.0)
            mu = pm.StudentT("mu", nu=3.0, mu=mu_loc, sigma=mu_scale, dims="group")
            pm.Normal("he", mu=mu, sigma=1.0 / math.sqrt(wh), observed=he, dims="group")
            w = add_emissions(data, w_concentration=w_concentration)
            add_click_likelihood(data, mu, w)
            add_estimands(data, mu, w)
        return model


    def map_fixed(data):
        return {"mu_scale": 1.0}
"""


@pytest.mark.slow
def test_a_variant_with_the_default_terms_is_integrated_and_one_with_its_own_f0_is_not(tmp_path_factory):
    """The default model written out from the blocks has the default's terms (decided from the built
    model): its groups are integrated with the default formula, which the own-term quadrature
    reproduces. A Student-t F0 is not Normal(mu_loc, mu_scale): the recorded values, conditional on
    mu_i, are kept, and the fit says so."""
    from bayes_wsc.models.wsc import integrated_group_loglik, integrated_own_loglik

    data = student_he_data(n_groups=30)
    settings = dict(wh=WH, method="laplace", draws=40, seed=0, progressbar=False)
    same = quietly(WSC(model_file=write(tmp_path_factory, "written_out", DEFAULT_WRITTEN_OUT), **settings), data)
    assert inference.get_attrs(same.idata_)["likelihood_terms"] == dict.fromkeys(("clicks", "he", "group_quality"),
                                                                                   "default")
    post = {k: flat(same, k) for k in ("mu", "w0", "w1", "mu_loc", "mu_scale")}
    stored = flat(same, "groups", "log_likelihood")
    sigma = np.full(40, math.sqrt(1 / WH))
    expected = integrated_group_loglik(data.counts, data.he, post["mu"], post["w0"], post["w1"], post["mu_loc"],
                                       post["mu_scale"], sigma)
    np.testing.assert_allclose(stored, expected, rtol=1e-12)
    np.testing.assert_allclose(integrated_own_loglik(same.model_, post), stored, atol=2e-3)

    f0 = quietly(WSC(model_file=write(tmp_path_factory, "student_f0", STUDENT_F0), **settings), data)
    attrs = inference.get_attrs(f0.idata_)
    assert attrs["likelihood_terms"] == {"clicks": "default", "he": "default", "group_quality": "own"}
    assert "given its own mu_i" in attrs["log_likelihood_holds"]
    mu, w0, w1 = (flat(f0, k) for k in ("mu", "w0", "w1"))
    clicks = np.sum(data.counts * np.log(expit(-mu)[..., None] * w0[:, None] + expit(mu)[..., None] * w1[:, None]),
                    axis=-1)
    he = stats.norm.logpdf(data.he, mu, math.sqrt(1 / WH))
    np.testing.assert_allclose(flat(f0, "groups", "log_likelihood"), clicks + he, rtol=1e-9)
    with pytest.warns(FitWarning, match="integrated out"):
        compare({"Normal F0": same, "Student-t F0": f0})


# ---------------------------------------------------------------------- the other four models: a term of their own
def experts_data(seed=1):
    """Two clusters, three experts rating the same 200 pairs; 30% of the pairs answered at random."""
    import pandas as pd

    from bayes_wsc.data.pairwise import PairwiseConstraints
    from bayes_wsc.simulate.experts import simulate_experts_model

    items, constraints, _ = simulate_experts_model(n_items=60, n_features=2, n_clusters=2, alpha=(0.95, 0.9, 0.85),
                                                   beta=(0.95, 0.9, 0.85), pairs_per_expert=200, common_pairs=True,
                                                   separation=3.0, seed=seed)
    rng = np.random.default_rng(seed)
    pair = constraints["i"].astype(str) + "-" + constraints["j"].astype(str)
    junk = pd.Series(rng.random(pair.nunique()) < 0.3, index=pair.unique())
    random_links = rng.integers(0, 2, len(constraints))
    constraints = constraints.assign(link=np.where(junk[pair].to_numpy(), random_links, constraints["link"]))
    return PairwiseConstraints.from_frames(items, constraints)


def pcmix_data(seed=2, n=300):
    """Two clusters in two features with Student-t (2 d.f.) noise; a third of the items labeled."""
    from bayes_wsc.data.labeled import LabeledItems

    rng = np.random.default_rng(seed)
    z = rng.random(n) < 0.5
    x = np.where(z[:, None], 2.0, -2.0) + 0.7 * rng.standard_t(2.0, (n, 2))
    y = np.where(rng.random(n) < 0.33, np.where(rng.random(n) < 0.9, z, ~z).astype(int).astype(object), None)
    return LabeledItems.from_arrays(x, y)


def proportions_data(seed=4, n_groups=30, size=8):
    """Two classes whose features have Student-t (2 d.f.) noise, in groups of 8 with known shares."""
    from bayes_wsc.data.proportions import LabelProportions

    rng = np.random.default_rng(seed)
    theta = rng.dirichlet([0.5, 0.5], n_groups)
    groups = np.repeat(np.arange(n_groups), size)
    z = (rng.random(groups.size) < theta[groups, 1]).astype(int)
    x = np.where(z[:, None] == 1, 1.5, -1.5) + 0.5 * rng.standard_t(2.0, (groups.size, 2))
    counts = np.stack([np.bincount(z[groups == g], minlength=2) for g in range(n_groups)])
    return LabelProportions.from_arrays(x, groups, counts / size)


def perception_data(seed=5):
    """Data from the perception model, a quarter of the seeds then moved to a random set."""
    from bayes_wsc.simulate.perception import simulate_model

    study, _ = simulate_model(n_items=240, n_features=3, seeds_per_cluster=25, coarsen=0.0, seed=seed)
    rng = np.random.default_rng(seed)
    clusters = study.seeds["cluster"].unique()
    moved = rng.random(len(study.seeds)) < 0.25
    seeds = study.seeds.assign(cluster=np.where(moved, rng.choice(clusters, len(study.seeds)), study.seeds["cluster"]))
    from bayes_wsc.data.seeded import SeedSets

    return SeedSets.from_frames(study.items, seeds.drop_duplicates(), study.perception)


def own_term_cases():
    from bayes_wsc.models.experts import NoisyExperts
    from bayes_wsc.models.pcmix import PCMixture
    from bayes_wsc.models.perception import PerceptionClustering
    from bayes_wsc.models.proportions import ProportionsClassifier

    own = {"experts": {"junk": 0.3}, "pcmix": {"nu": 2.0}, "proportions": {"nu": 2.0}, "perception": {"noise": 0.25}}
    cases = {name: (CASES[name].variant, own[name], functools.partial(CASES[name].density, est=None, **own[name]))
             for name in own}
    return {
        "experts": (NoisyExperts, {"n_clusters": 2, "restarts": 3}, *cases["experts"], experts_data,
                    ("W", "b", "alpha", "beta"), "pairs"),
        "pcmix": (PCMixture, {"components": 2, "lam": 1.0, "restarts": 3}, *cases["pcmix"], pcmix_data,
                  ("pi", "mean", "sd", "rho"), "items"),
        "proportions": (ProportionsClassifier, {"emission": "gaussian", "bag_likelihood": "independent"},
                        *cases["proportions"], proportions_data, ("mean", "sd"), "groups"),
        "perception": (PerceptionClustering, {"restarts": 1}, *cases["perception"], perception_data,
                       ("W", "b"), "seed_items"),
    }


@pytest.fixture(scope="module", params=["experts", "pcmix", "proportions", "perception"])
def own_term_map(request, tmp_path_factory):
    """Each model's variant with a term of its own, and the model itself, fitted by MAP to data the
    variant describes."""
    cls, settings, source, own, density, make_data, names, unit = own_term_cases()[request.param]
    data = make_data()
    path = write(tmp_path_factory, f"{request.param}_own_term", source)
    variant = quietly(cls(model_file=path, model_settings=own, **settings), data)
    return request.param, data, variant, quietly(cls(**settings), data), density, names, unit


def test_own_term_variant_stores_its_own_density(own_term_map):
    """The stored log-likelihood is the variant's density at its fitted point, computed here in NumPy;
    the fit records that its likelihood is its own and says what LOO scores."""
    model, data, variant, _, density, names, unit = own_term_map
    post = {k: flat(variant, k) for k in names}
    np.testing.assert_allclose(flat(variant, unit, "log_likelihood"), density(data, post), rtol=1e-6, atol=1e-6)
    attrs = inference.get_attrs(variant.idata_)
    assert attrs["likelihood_terms"] == {"likelihood": "own"}
    assert "from its own terms" in attrs["log_likelihood_holds"]


def test_own_term_variant_checks_do_not_replicate_the_default_model(own_term_map):
    """The checks of these models replicate from the default model's formula: for a variant with its
    own likelihood they do not run, one row says why, and the posterior predictive refuses."""
    model, data, variant, _, _, _, _ = own_term_map
    rows = variant.checks_
    assert list(rows["check"]) == ["ppc"] and not rows["flagged"].any()
    assert "not run" in rows["message"].iloc[0] and "default" in rows["message"].iloc[0]
    with pytest.raises(InputError, match="not run"):
        variant.posterior_predictive(draws=10)


def test_the_default_formula_is_what_each_model_records(own_term_map):
    """The NumPy formula that decides whether a variant's terms are the default's is exactly what the
    model itself records (so a variant that only reparameterizes keeps its checks)."""
    from bayes_wsc import criticism as checks

    model, data, _, default, _, names, unit = own_term_map
    params = {k: flat(default, k) for k in default.idata_.posterior.data_vars}
    computed = checks.module_of(default).default_log_likelihood(default, data, params)
    np.testing.assert_allclose(flat(default, unit, "log_likelihood"), computed, rtol=1e-6, atol=1e-6)
    assert inference.get_attrs(default.idata_)["likelihood_terms"] == {"likelihood": "default"}


@pytest.mark.slow
@pytest.mark.parametrize("model", ["experts", "pcmix", "proportions", "perception"])
def test_loo_prefers_the_own_term_variant_on_data_it_describes(model, tmp_path_factory):
    cls, settings, source, own, _, make_data, _, _ = own_term_cases()[model]
    data = make_data()
    path = write(tmp_path_factory, f"{model}_own_term", source)
    laplace = dict(settings, method="laplace", draws=400, seed=0)
    variant = quietly(cls(model_file=path, model_settings=own, **laplace), data)
    default = quietly(cls(**laplace), data)
    ranked = compare({"default": default, "own term": variant})
    assert ranked.index[0] == "own term"


@pytest.mark.slow
def test_student_t_variant_by_nuts_saved_and_summarized(wsc_fits, tmp_path, capsys):
    """The issue's case: the Student-t variant fitted by NUTS stores its own integral, and the saved fit
    says what LOO scores, in its attrs and in `bayes-wsc summary`."""
    from bayes_wsc.cli import main
    from bayes_wsc.estimator import load

    data, laplace, _ = wsc_fits
    nuts = quietly(WSC(model_file=laplace.model_file, model_settings={"nu": 2.0}, wh=WH, method="nuts", draws=150,
                       tune=150, chains=2, seed=1, progressbar=False), data)
    stored = flat(nuts, "groups", "log_likelihood")
    post = {k: flat(nuts, k) for k in ("w0", "w1", "mu_loc", "mu_scale")}
    draws, groups = (0, 299), (0, int(np.argmax(np.abs(data.he - data.he.mean()))))
    own = CASES["wsc"].density(data, post, nuts, draws=draws, groups=groups, nu=2.0)
    for s in draws:
        for i in groups:
            assert stored[s, i] == pytest.approx(own[s, i], abs=1e-3)
    nuts.save(tmp_path / "fit.nc")
    back = load(tmp_path / "fit.nc")
    assert inference.get_attrs(back.idata_)["likelihood_terms"]["he"] == "own"
    try:
        code = main(["summary", str(tmp_path / "fit.nc")])
    except SystemExit as exit_:
        code = exit_.code
    assert not code
    assert "LOO scores each group's log-likelihood with its own mu_i integrated out" in capsys.readouterr().out
    ppc = back.posterior_predictive(draws=50)  # a loaded fit has no model to draw its own HE from
    assert "he" not in ppc.posterior_predictive and "bin_share" in ppc.posterior_predictive
    assert json.loads(ppc.posterior_predictive.attrs["ppc_not_run"])["ppc_he"].startswith("not run")


def test_a_damaged_record_of_the_terms_is_refused_on_load(wsc_fits, tmp_path):
    from bayes_wsc.estimator import load

    _, variant, _ = wsc_fits
    variant.save(tmp_path / "fit.nc")
    idata = load(tmp_path / "fit.nc").idata_
    inference.set_attrs(idata, {"likelihood_terms": {"he": "maybe"}})
    with pytest.raises(InputError, match="likelihood_terms"):
        WSC.from_idata(idata)
