"""A variant's log-likelihood and checks come from the model that was fitted (issue 26).

For every model, a variant written from its blocks with a term of its own (a Student-t rater noise,
junk pairs, Student-t components or emissions, mislabeled seeds): its stored log-likelihood equals
its own density at the same draws, computed here independently (NumPy, SciPy quadrature); the fit
says what its log-likelihood holds; the checks that would replicate from the default model's formula
replicate from the variant's own term or say that they did not run; and LOO prefers the variant on
data it fits better. A variant that changes nothing of the default's terms keeps them (and the
first model's integrated log-likelihood).
"""

import json
import math
import textwrap
import warnings

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import expit, logsumexp

from bayes_wsc import compare, inference
from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.models.wsc import WSC


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
STUDENT_HE = """
    import math

    import pymc as pm

    from bayes_wsc.models.wsc import (add_click_likelihood, add_emissions, add_estimands, check_settings,
                                      group_quality_prior, hierarchical_scale_fixed)

    LAPLACE_LOCAL = ("mu",)


    def build_model(data, *, wh=10.0, mu_prior="hierarchical", w_concentration=1.0, nu=2.0):
        check_settings(wh, mu_prior, w_concentration)
        with pm.Model(coords=data.coords) as model:
            he_data = pm.Data("he_data", data.he, dims="group")
            mu = group_quality_prior(mu_prior)
            he = pm.StudentT("he", nu=nu, mu=mu, sigma=1.0 / math.sqrt(wh), observed=he_data, dims="group")
            w = add_emissions(data, w_concentration=w_concentration)
            add_click_likelihood(data, mu, w, he_logp=pm.logp(he, he_data))
            add_estimands(data, mu, w)
        return model


    def initial_values(data, estimator):
        return estimator.initial_values(data)


    def map_fixed(data, estimator):
        return hierarchical_scale_fixed(data, estimator.wh, estimator.mu_prior)
"""
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
    path = write(tmp_path_factory, "student_he", STUDENT_HE)
    settings = dict(wh=WH, method="laplace", draws=400, seed=0, progressbar=False)
    return data, quietly(WSC(model_file=path, **settings), data), quietly(WSC(**settings), data)


def own_integral(data, draw, group, nu=2.0):
    """log integral N(m | mu_loc, mu_scale) prod_k mix_k(m)^n_ik t_nu(HE_i | m, sigma_H) dm, by SciPy."""
    n, he, sigma = data.counts[group], data.he[group], math.sqrt(1 / WH)
    w0, w1, loc, scale = (draw[k] for k in ("w0", "w1", "mu_loc", "mu_scale"))

    def log_integrand(m):
        m = np.asarray(m, dtype=float)
        clicks = np.sum(n * np.log(expit(-m)[..., None] * w0 + expit(m)[..., None] * w1), axis=-1)
        return stats.norm.logpdf(m, loc, scale) + clicks + stats.t.logpdf(he, nu, m, sigma)

    peak = float(np.max(log_integrand(np.linspace(-15, 15, 3001))))
    value, _ = integrate.quad(lambda m: math.exp(float(log_integrand(m)) - peak), -15, 15, points=[he, loc],
                             limit=200)
    return math.log(value) + peak


def test_student_t_variant_scores_its_own_term(wsc_fits):
    """The stored log-likelihood is the variant's own: each group's clicks and Student-t HE with mu_i
    integrated out over F0, as SciPy integrates it; not the default's Normal-HE formula."""
    data, variant, _ = wsc_fits
    stored = flat(variant, "groups", "log_likelihood")
    post = {k: flat(variant, k) for k in ("w0", "w1", "mu_loc", "mu_scale")}
    for s in (0, 137, 399):
        draw = {k: v[s] for k, v in post.items()}
        for i in (0, 5, int(np.argmax(np.abs(data.he - data.he.mean()))), 41):
            assert stored[s, i] == pytest.approx(own_integral(data, draw, i), abs=1e-3)
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
JUNK_PAIRS = """
    import numpy as np
    import pymc as pm
    import pytensor.tensor as pt

    from bayes_wsc import likelihoods
    from bayes_wsc.models.experts import add_cluster_weights, add_experts, add_memberships, model_coords


    def build_model(data, *, n_clusters=2, prior_sd=1.0, intercept_sd=2.0, accuracy_a=2.0, accuracy_b=2.0, junk=0.3):
        # a share `junk` of the pairs were answered at random by every expert who rated them
        with pm.Model(coords=model_coords(data, n_clusters)) as model:
            w_ref, b_ref = add_cluster_weights(data, n_clusters, prior_sd=prior_sd, intercept_sd=intercept_sd)
            alpha, beta = add_experts(accuracy_a=accuracy_a, accuracy_b=accuracy_b)
            log_same, log_different = likelihoods.pair_log_coclustering(*add_memberships(data, w_ref, b_ref))
            must, cannot = data.link_counts()
            rated = likelihoods.pair_ratings_logp(log_same, log_different, must, cannot, alpha, beta)
            coin = -np.log(2.0) * (must + cannot).sum(axis=1)
            per_pair = pt.logaddexp(np.log1p(-junk) + rated, np.log(junk) + coin)
            pm.Potential("constraints", likelihoods.record_pointwise("pairs", per_pair, dims="pair").sum())
        return model


    def initial_values(data, estimator):
        return estimator.initial_values(data)
"""
STUDENT_COMPONENTS = """
    import pymc as pm
    import pytensor.tensor as pt

    from bayes_wsc import likelihoods
    from bayes_wsc.models.pcmix import (add_component_means, add_component_sds, add_estimands, add_label_probabilities,
                                        add_mixture_weights, labeled_index, model_coords, priors_from)


    def build_model(data, *, components=2, lam=1.0, sd_floor=0.001, mean_prior_sd=3.0, sd_prior_rate=1.0,
                    concentration=1.01, nu=2.0):
        # Student-t components: the PC objective of add_pc_objective with log f(x | k) a product of t densities
        priors = priors_from(sd_floor, mean_prior_sd, sd_prior_rate, concentration)
        with pm.Model(coords=model_coords(data, components)) as model:
            pi, mean_z, sd_z = add_mixture_weights(priors), add_component_means(priors), add_component_sds(priors)
            log_rho = add_label_probabilities(data.n_classes, priors)
            x = pm.Data("x", data.x, dims=("item", "feature"))
            x_logp = pm.logp(pm.StudentT.dist(nu, mu=mean_z[None], sigma=sd_z[None]), x[:, None, :]).sum(axis=-1)
            log_weights = pt.log(pi)[None, :]
            log_px = likelihoods.mixture_logp(log_weights, x_logp)
            labeled = pm.Data("labeled_index", labeled_index(data))
            labels = pm.Data("labels", data.onehot[data.labeled])
            y_logp = pt.sum(labels[:, None, :] * log_rho[None, :, :], axis=-1)
            log_py = likelihoods.predictive_mixture_logp(log_weights, x_logp[labeled], y_logp)[1]
            likelihoods.record_pointwise("items", pt.inc_subtensor(log_px[labeled], log_py), dims="item")
            pm.Potential("pc_objective", pt.sum(log_px) + lam * pt.sum(log_py))
            add_estimands(data, mean_z, sd_z)
        return model


    def initial_values(data, estimator):
        return estimator.initial_values(data)
"""
STUDENT_EMISSION = """
    import pymc as pm

    from bayes_wsc.models.proportions import add_bag_likelihood, add_class_shares, model_coords, soft_label_start


    def build_model(data, *, emission="gaussian", bag_likelihood="independent", concentration=None, mean_prior_sd=3.0,
                    sd_prior_rate=1.0, nu=2.0, **unused_priors):
        # each class's features: independent Student-t, in place of the gaussian emission's Normals
        with pm.Model(coords=model_coords(data)) as model:
            log_shares = add_class_shares(data, concentration)
            mean_z = pm.Normal("mean_z", 0.0, mean_prior_sd, dims=("class", "feature"))
            sd_z = 1e-3 + pm.Gamma("sd_excess", alpha=2.0, beta=sd_prior_rate, dims=("class", "feature"))
            pm.Deterministic("mean", data.center + data.scale * mean_z, dims=("class", "feature"))
            pm.Deterministic("sd", data.scale * sd_z, dims=("class", "feature"))
            x = pm.Data("x", data.x)
            log_f = pm.logp(pm.StudentT.dist(nu, mu=mean_z[None], sigma=sd_z[None]), x[:, None, :]).sum(axis=-1)
            add_bag_likelihood(data, "gaussian", bag_likelihood, log_shares, log_f, concentration)
        return model


    def initial_values(data):
        return soft_label_start(data, "gaussian")
"""
MISLABELED_SEEDS = """
    import numpy as np
    import pymc as pm
    import pytensor.tensor as pt

    from bayes_wsc import likelihoods
    from bayes_wsc.models.perception import (add_embedding, add_estimands, add_perception, cluster_log_probabilities,
                                             model_coords, model_data)


    def build_model(data, *, weight_scale=3.0, intercept_sd=1.0, noise=0.25):
        # a share `noise` of the seeds were put in sets at random, whatever the item
        with pm.Model(coords=model_coords(data)) as model:
            W, b = add_embedding(data, weight_scale=weight_scale, intercept_sd=intercept_sd)
            perception = add_perception(data)
            values = model_data(data)
            x = pm.Data("seed_features", values["seed_features"], dims=("seed_item", "feature"))
            in_set = pm.Data("seed_sets", values["seed_sets"], dims=("seed_item", "cluster"))
            clean = likelihoods.seed_sets_logp(cluster_log_probabilities(x, W, b, perception), in_set)
            at_random = pt.log(in_set.sum(axis=1) / data.n_clusters)
            per_seed = pt.logaddexp(np.log1p(-noise) + clean, np.log(noise) + at_random)
            pm.Potential("seeds", likelihoods.record_pointwise("seed_items", per_seed, dims="seed_item").sum())
            add_estimands(data, W, b, perception)
        return model


    def initial_values(data, estimator):
        return estimator.initial_values(data)
"""


def log_softmax(a):
    return a - logsumexp(a, axis=-1, keepdims=True)


def experts_data(seed=1):
    """Two clusters, three experts rating the same 200 pairs; 30% of the pairs answered at random."""
    import pandas as pd

    from bayes_wsc.data.pairwise import PairwiseConstraints
    from bayes_wsc.simulate.experts import simulate_experts_model

    items, constraints, _ = simulate_experts_model(n_items=60, n_features=2, n_clusters=2, alpha=(0.95, 0.9, 0.85),
                                                   beta=(0.95, 0.9, 0.85), pairs_per_expert=200, common_pairs=True,
                                                   seed=seed)
    rng = np.random.default_rng(seed)
    pair = constraints["i"].astype(str) + "-" + constraints["j"].astype(str)
    junk = pd.Series(rng.random(pair.nunique()) < 0.3, index=pair.unique())
    random_links = rng.integers(0, 2, len(constraints))
    constraints = constraints.assign(link=np.where(junk[pair].to_numpy(), random_links, constraints["link"]))
    return PairwiseConstraints.from_frames(items, constraints)


def experts_density(data, post, junk=0.3):
    W, b, alpha, beta = post["W"], post["b"], post["alpha"], post["beta"]
    lp = log_softmax(np.einsum("nd,sdk->snk", data.features[data.linked_items], W) + b[:, None, :])
    ends = np.searchsorted(data.linked_items, data.pairs)
    gamma = np.sum(np.exp(lp[:, ends[:, 0]] + lp[:, ends[:, 1]]), axis=-1)
    must, cannot = data.link_counts()
    same = np.exp(must @ np.log(alpha).T + cannot @ np.log(1 - alpha).T).T
    different = np.exp(must @ np.log(1 - beta).T + cannot @ np.log(beta).T).T
    coin = 0.5 ** (must + cannot).sum(axis=1)
    return np.log((1 - junk) * (gamma * same + (1 - gamma) * different) + junk * coin)


def pcmix_data(seed=2, n=300):
    """Two clusters in two features with Student-t (2 d.f.) noise; a third of the items labeled."""
    from bayes_wsc.data.labeled import LabeledItems

    rng = np.random.default_rng(seed)
    z = rng.random(n) < 0.5
    x = np.where(z[:, None], 2.0, -2.0) + 0.7 * rng.standard_t(2.0, (n, 2))
    y = np.where(rng.random(n) < 0.33, np.where(rng.random(n) < 0.9, z, ~z).astype(int).astype(object), None)
    return LabeledItems.from_arrays(x, y)


def pcmix_density(data, post, nu=2.0):
    mean_z = (post["mean"] - data.center) / data.scale
    sd_z = post["sd"] / data.scale
    rho = np.stack([1 - post["rho"], post["rho"]], axis=-1)
    comp = stats.t.logpdf(data.x[None, :, None, :], nu, mean_z[:, None], sd_z[:, None]).sum(axis=-1)  # (S, n, K)
    joint = np.log(post["pi"])[:, None, :] + comp
    out = logsumexp(joint, axis=-1)
    for d in np.flatnonzero(data.labeled):
        out[:, d] = logsumexp(joint[:, d] + np.log(rho[:, :, data.y[d]]), axis=-1)
    return out


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


def proportions_density(data, post, nu=2.0):
    mean_z = (post["mean"] - data.center) / data.scale
    sd_z = post["sd"] / data.scale
    f = stats.t.logpdf(data.x[None, :, None, :], nu, mean_z[:, None], sd_z[:, None]).sum(axis=-1)  # (S, n, L)
    with np.errstate(divide="ignore"):
        per_item = logsumexp(np.log(data.proportions[data.item_group])[None] + f, axis=-1)
    return np.stack([np.bincount(data.item_group, weights=row, minlength=data.n_groups) for row in per_item])


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


def perception_density(data, post, noise=0.25):
    rows = data.seed_items
    offset = 0.5 * np.sum(data.perception**2, axis=1)
    embedded = np.einsum("md,sdq->smq", data.features[rows], post["W"]) + post["b"][:, None, :]
    lp = log_softmax(embedded @ data.perception.T - offset)
    in_set = data.seed_mask[rows]
    clean = np.log(np.sum(np.exp(lp) * in_set, axis=-1))
    return np.log((1 - noise) * np.exp(clean) + noise * in_set.sum(axis=1) / data.n_clusters)


def own_term_cases():
    from bayes_wsc.models.experts import NoisyExperts
    from bayes_wsc.models.pcmix import PCMixture
    from bayes_wsc.models.perception import PerceptionClustering
    from bayes_wsc.models.proportions import ProportionsClassifier

    return {
        "experts": (NoisyExperts, {"n_clusters": 2, "restarts": 3}, JUNK_PAIRS, experts_data, experts_density,
                    ("W", "b", "alpha", "beta"), "pairs"),
        "pcmix": (PCMixture, {"components": 2, "lam": 1.0, "restarts": 3}, STUDENT_COMPONENTS, pcmix_data,
                  pcmix_density, ("pi", "mean", "sd", "rho"), "items"),
        "proportions": (ProportionsClassifier, {"emission": "gaussian", "bag_likelihood": "independent"},
                        STUDENT_EMISSION, proportions_data, proportions_density, ("mean", "sd"), "groups"),
        "perception": (PerceptionClustering, {"restarts": 1}, MISLABELED_SEEDS, perception_data, perception_density,
                       ("W", "b"), "seed_items"),
    }


@pytest.fixture(scope="module", params=["experts", "pcmix", "proportions", "perception"])
def own_term_map(request, tmp_path_factory):
    """Each model's variant with a term of its own, and the model itself, fitted by MAP to data the
    variant describes."""
    cls, settings, source, make_data, density, names, unit = own_term_cases()[request.param]
    data = make_data()
    path = write(tmp_path_factory, f"{request.param}_own_term", source)
    variant = quietly(cls(model_file=path, **settings), data)
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
    cls, settings, source, make_data, _, _, _ = own_term_cases()[model]
    data = make_data()
    path = write(tmp_path_factory, f"{model}_own_term", source)
    laplace = dict(settings, method="laplace", draws=400, seed=0)
    variant, default = quietly(cls(model_file=path, **laplace), data), quietly(cls(**laplace), data)
    ranked = compare({"default": default, "own term": variant})
    assert ranked.index[0] == "own term"


@pytest.mark.slow
def test_student_t_variant_by_nuts_saved_and_summarized(wsc_fits, tmp_path, capsys):
    """The issue's case: the Student-t variant fitted by NUTS stores its own integral, and the saved fit
    says what LOO scores, in its attrs and in `bayes-wsc summary`."""
    from bayes_wsc.cli import main
    from bayes_wsc.estimator import load

    data, laplace, _ = wsc_fits
    nuts = quietly(WSC(model_file=laplace.model_file, wh=WH, method="nuts", draws=150, tune=150, chains=2, seed=1,
                       progressbar=False), data)
    stored = flat(nuts, "groups", "log_likelihood")
    post = {k: flat(nuts, k) for k in ("w0", "w1", "mu_loc", "mu_scale")}
    for s in (0, 299):
        for i in (0, int(np.argmax(np.abs(data.he - data.he.mean())))):
            assert stored[s, i] == pytest.approx(own_integral(data, {k: v[s] for k, v in post.items()}, i), abs=1e-3)
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
