"""The seeded mixture of X for feature-level supervision (issue 29, `PerceptionMixture` in `models/perception.py`).

Default tier: the marginalized likelihood against brute-force enumeration of every item's (cluster,
group) on tiny data, with and without the PC weight; the NumPy memberships against the model's graph;
parameter recovery by MAP, Laplace and NUTS on data from the model; memberships, predict, checks and
a save -> load round trip; bad settings.
"""

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from bayes_wsc.data.seeded import SeedSets
from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.models.perception import PerceptionMixture
from bayes_wsc.models.perception import build_mixture_model as build_model
from bayes_wsc.models.perception import mixture_log_probabilities as membership_log_probabilities
from bayes_wsc.simulate.perception import simulate_distractor_study, simulate_mixture_model


def tiny_data():
    """5 items, 3 clusters over 2 perception features; i1 is a seed of two sets (overlap), i4 of none."""
    rng = np.random.default_rng(3)
    items = pd.DataFrame(rng.normal(size=(5, 2)), columns=["x0", "x1"])
    items.insert(0, "id", [f"i{j}" for j in range(5)])
    seeds = pd.DataFrame({"cluster": ["A", "A", "B", "C"], "id": ["i0", "i1", "i1", "i2"]})
    perception = pd.DataFrame({"cluster": ["A", "B", "C"], "loop": [1.0, 1.0, 0.0], "line": [0.0, 1.0, 1.0]})
    return SeedSets.from_frames(items, seeds, perception)


def point(model, values: dict) -> dict:
    """Constrained values -> the model's value variables (transformed where the model transforms)."""
    out = {}
    for rv in model.free_RVs:
        value = np.asarray(values[rv.name], dtype=float)
        transform = model.rvs_to_transforms.get(rv)
        if transform is not None:
            value = transform.forward(value, *rv.owner.inputs).eval()
        out[model.rvs_to_values[rv].name] = value
    return out


@pytest.mark.parametrize("seed_weight", [1.0, 3.0])
def test_likelihood_equals_enumeration(seed_weight):
    """The model's likelihood term equals the log of the sum over every joint assignment (z, g) of all
    items ((K G)^n terms) of prod_i pi_z pi_group_g N(x_i | A p_z + B_g, sd^2), with a seed's z confined
    to its sets; under the PC weight lam it is L_all + lam (L_seeded - L_all), L_all the same sum with no
    seed confined."""
    data = tiny_data()
    assert data.n_overlapping_seeds == 1
    groups = 2
    model = build_model(data, groups=groups, seed_weight=seed_weight)
    potential = model.compile_fn(model.replace_rvs_by_values([model.potentials[0]])[0], inputs=model.value_vars,
                                 point_fn=False, on_unused_input="ignore")
    rng = np.random.default_rng(0)
    X, P, mask, seeded = data.features, data.perception, data.seed_mask, data.seeded
    K = data.n_clusters
    for _ in range(2):
        A = rng.normal(0, 1, (data.n_features, data.n_perception))
        B = rng.normal(0, 1, (groups, data.n_features))
        sd = rng.uniform(0.5, 1.5, data.n_features)
        pi, pi_group = rng.dirichlet(np.ones(K)), rng.dirichlet(np.ones(groups))
        log_all, log_seeded = -np.inf, -np.inf
        for assignment in itertools.product(range(K * groups), repeat=data.n_items):
            term = 0.0
            allowed = True
            for i, cell in enumerate(assignment):
                z, g = divmod(cell, groups)
                term += np.log(pi[z]) + np.log(pi_group[g]) + norm.logpdf(X[i], P[z] @ A.T + B[g], sd).sum()
                allowed &= (not seeded[i]) or bool(mask[i, z])
            log_all = np.logaddexp(log_all, term)
            if allowed:
                log_seeded = np.logaddexp(log_seeded, term)
        expected = log_all + seed_weight * (log_seeded - log_all)
        values = point(model, {"A": A, "B": B, "sd_excess": sd - 0.01, "pi": pi, "pi_group": pi_group})
        assert float(potential(**values)) == pytest.approx(expected, rel=1e-9)


def test_numpy_memberships_match_the_model():
    data = tiny_data()
    model = build_model(data, groups=2)
    rng = np.random.default_rng(1)
    A, B = rng.normal(size=(2, 2)), rng.normal(size=(2, 2))
    sd, pi, pi_group = np.array([0.7, 1.2]), np.array([0.2, 0.3, 0.5]), np.array([0.6, 0.4])
    from bayes_wsc.inference import LOG_LIKELIHOOD_PREFIX

    recorded = model.compile_fn(model.replace_rvs_by_values([model[LOG_LIKELIHOOD_PREFIX + "items"]])[0],
                                inputs=model.value_vars, point_fn=False, on_unused_input="ignore")
    per_item = recorded(**point(model, {"A": A, "B": B, "sd_excess": sd - 0.01, "pi": pi, "pi_group": pi_group}))
    log_probs = membership_log_probabilities(data.features, A, B, sd, pi, pi_group, data.perception)
    assert np.allclose(np.exp(log_probs).sum(axis=1), 1.0)
    from bayes_wsc.checks.perception import default_log_likelihood

    est = PerceptionMixture(groups=2)
    computed = default_log_likelihood(est, data, {"A": A[None], "B": B[None], "sd": sd[None], "pi": pi[None],
                                                  "pi_group": pi_group[None]})[0]
    np.testing.assert_allclose(computed, per_item, rtol=1e-10)


@pytest.fixture(scope="module")
def model_study():
    return simulate_mixture_model(n_items=500, n_features=4, groups=2, seeds_per_cluster=10, seed=4)


@pytest.fixture(scope="module")
def map_fit(model_study):
    study, _ = model_study
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return PerceptionMixture(groups=2).fit(study.data())


def _shifts(est, truth, contrast):
    """The clusters' mean differences A (p_k - p_0) of every draw: the identified shifts."""
    A = est.idata_.posterior["A"].values.reshape(-1, *truth.A.shape)
    return A @ contrast


def _true_shifts(study, truth):
    data = study.data()
    contrast = (data.perception[1:] - data.perception[0]).T  # (q, K - 1)
    return (truth.A / data.scaling.scale[:, None]) @ contrast, contrast  # on the standardized features


def test_recovery_map(model_study, map_fit):
    """Data from the model, MAP (the default tier's part; the slow tier holds it to NUTS's posterior and the
    Laplace approximation to NUTS): the shifts come back, the memberships find z."""
    study, truth = model_study
    data = study.data()
    true, contrast = _true_shifts(study, truth)
    np.testing.assert_allclose(_shifts(map_fit, truth, contrast)[0], true, atol=0.35)
    probs = map_fit.memberships(use_seeds=False)[[f"prob_{c}" for c in data.clusters]].to_numpy()
    assert (probs.argmax(axis=1) == truth.z).mean() > 0.85


@pytest.mark.slow
def test_recovery_map_laplace_and_nuts(model_study, map_fit):
    """Data from the model: the clusters' mean differences A (p_k - p_0) come back on the standardized
    scale, inside NUTS's posterior, which the Laplace approximation matches."""
    study, truth = model_study
    data = study.data()
    true, contrast = _true_shifts(study, truth)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        laplace = PerceptionMixture(groups=2, method="laplace", draws=800).fit(data)
        nuts = PerceptionMixture(groups=2, method="nuts", draws=300, tune=300, chains=2,
                                 progressbar=False).fit(data)
    draws = _shifts(nuts, truth, contrast)
    mean, sd = draws.mean(axis=0), draws.std(axis=0)
    assert np.all(np.abs(mean - true) < 4 * sd + 0.05), (mean, true, sd)
    assert np.all(np.abs(_shifts(map_fit, truth, contrast)[0] - true) < 4 * sd + 0.05)
    np.testing.assert_allclose(_shifts(laplace, truth, contrast).std(axis=0), sd, rtol=0.5)
    assert nuts.summary(["A", "pi", "sd"])["r_hat"].max() < 1.05


def test_memberships_predict_checks_and_round_trip(model_study, map_fit, tmp_path):
    study, _ = model_study
    est = map_fit
    data = study.data()
    members = est.memberships()
    seeds = data.seeded
    # a seed is conditioned on its set
    assert (members.loc[data.item_ids[seeds], "cluster"].to_numpy()
            == data.clusters[data.seed_mask[seeds].argmax(axis=1)]).all()
    out = est.predict(study.items.head(5))
    assert {"cluster", "clusters", "prob_c0"} <= set(out.columns)
    assert not est.checks_.empty and "seed_neighbours" in set(est.checks_["check"])
    assert "items" in est.idata_.log_likelihood
    path = est.save(tmp_path / "fit.nc")
    with warnings.catch_warnings():
        warnings.simplefilter("error", FitWarning)  # every setting is known to the loader
        again = PerceptionMixture.load(path)
    assert again.get_params() == est.get_params()
    from bayes_wsc import load

    assert isinstance(load(path), PerceptionMixture)  # a formulation of "perception": the settings say which
    pd.testing.assert_frame_equal(again.predict(study.items.head(5)), out)


def test_learns_from_every_item_on_the_distractor_study():
    """The issue's situation (a strong structure the user does not care about, 5 seeds per cluster):
    the mixture, which uses every item, is ahead of the conditional model, which uses the 15 seeds."""
    from bayes_wsc.baselines import perception as bp
    from bayes_wsc.models.perception import PerceptionClustering

    study = simulate_distractor_study(seed=2)
    data = study.data()
    rows = data.unseeded_items
    scores = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        for name, est in (("mixture", PerceptionMixture(groups=5)), ("conditional", PerceptionClustering())):
            probs = est.fit(data).memberships(use_seeds=False)[[f"prob_{c}" for c in data.clusters]].to_numpy()
            scores[name] = bp.f_scores(bp.threshold_clusters(probs, 0.3), study.membership, rows).mean()
    assert scores["mixture"] > 0.8
    assert scores["mixture"] > scores["conditional"] + 0.05, scores


@pytest.mark.parametrize("settings, words", [({"groups": 0}, "groups"), ({"seed_weight": 0.5}, "seed_weight"),
                                             ({"groups": 2.5}, "groups"), ({"overlap_threshold": 2}, "overlap")])
def test_bad_settings_are_one_line(settings, words):
    with pytest.raises(InputError, match=words):
        PerceptionMixture(**settings).fit(tiny_data())


def test_more_groups_than_items_is_one_line_before_the_fit():
    """--groups 200 on 60 items ended in a k-means traceback."""
    data = tiny_data()
    with pytest.raises(InputError, match=rf"groups={data.n_items + 1} \(--groups\) is more than the {data.n_items} items"):
        PerceptionMixture(groups=data.n_items + 1).fit(data)


def test_a_perception_value_beyond_the_arithmetic_is_refused_when_read():
    """A perception value of 1e200 failed after the fit ("non-finite values"); it is refused when the data
    are built, naming the cluster and the column."""
    rng = np.random.default_rng(3)
    items = pd.DataFrame(rng.normal(size=(5, 2)), columns=["x0", "x1"])
    items.insert(0, "id", [f"i{j}" for j in range(5)])
    seeds = pd.DataFrame({"cluster": ["A", "B", "C"], "id": ["i0", "i1", "i2"]})
    perception = pd.DataFrame({"cluster": ["A", "B", "C"], "loop": [1.0, 1e200, 0.0], "line": [0.0, 1.0, 1.0]})
    with pytest.raises(InputError, match=r"perception of cluster 'B', column 'loop', is 1e\+200, beyond"):
        SeedSets.from_frames(items, seeds, perception)


def test_distractor_study_shapes():
    study = simulate_distractor_study(n_items=120, seed=1)
    data = study.data()
    assert data.n_clusters == 3 and data.n_features == 8 + 10 + 30
    assert (data.seeds_per_cluster == 5).all()
    assert study.membership[:, :2].all(axis=1).any()  # c0 and c1 overlap
    assert not study.membership[:, 2][study.membership[:, :2].any(axis=1)].any()
    with pytest.raises(InputError, match="n_dominant"):
        simulate_distractor_study(n_distractor_features=2, n_dominant=4)


def test_cli_fits_the_mixture_and_writes_its_report(tmp_path, capsys):
    from bayes_wsc.cli import main

    study, _ = simulate_mixture_model(n_items=120, n_features=3, groups=2, seeds_per_cluster=5, seed=1)
    paths = {}
    for name in ("items", "seeds", "perception"):
        paths[name] = tmp_path / f"{name}.csv"
        getattr(study, name).to_csv(paths[name], index=False)

    def run(*extra):
        try:
            return main([str(a) for a in ("fit", "perception", "--items", paths["items"], "--seeds", paths["seeds"],
                                          "--perception", paths["perception"], *extra)])
        except SystemExit as exit_:
            return exit_.code

    assert run("--out", tmp_path / "fit.nc", "--formulation", "mixture", "--groups", 2) in (0, None)
    fit = PerceptionMixture.load(tmp_path / "fit.nc")
    assert fit.groups == 2 and fit.seed_weight == 1.0
    fit.write_report(tmp_path / "report")
    assert "seeded mixture" in (tmp_path / "report" / "report.html").read_text()
    capsys.readouterr()
    # a mixture setting with the conditional model alone
    assert run("--out", tmp_path / "other.nc", "--formulation", "conditional", "--groups", 2) == 2
    assert "--formulation mixture" in capsys.readouterr().err


def test_joint_log_density_of_draws_is_the_expression_it_replaced():
    """`joint_log_density_np` builds the (S, K, G, m) terms in one matrix product (the square expanded, the
    constants folded in); the same numbers to float rounding as the expression it replaced (written out
    here), for a stack of draws, and one draw bit for bit as that draw of a stack."""
    from bayes_wsc import maths
    from bayes_wsc.models.perception.model import LOG_2PI, joint_log_density_np

    rng = np.random.default_rng(5)
    S, m, K, G, d, q = 7, 11, 3, 4, 5, 2
    features, perception = rng.normal(size=(m, d)), rng.normal(size=(K, q))
    A, B, sd = rng.normal(size=(S, d, q)), rng.normal(size=(S, G, d)), rng.uniform(0.3, 2.0, size=(S, d))
    pi, pi_group = rng.dirichlet(np.ones(K), S), rng.dirichlet(np.ones(G), S)
    means = np.einsum("kq,sdq->skd", perception, A, optimize=True)[:, :, None, :] + B[:, None, :, :]
    precision = 1.0 / sd**2
    quad = (np.einsum("md,sd->sm", features**2, precision, optimize=True)[:, :, None, None]
            - 2.0 * np.einsum("md,skgd->smkg", features, means * precision[:, None, None, :], optimize=True)
            + np.einsum("skgd,sd->skg", means**2, precision, optimize=True)[:, None])
    comp = -0.5 * (quad + np.sum(2.0 * np.log(sd) + LOG_2PI, axis=1)[:, None, None, None])
    before = np.log(pi)[:, None, :] + maths.logsumexp(np.log(pi_group)[:, None, None, :] + comp, axis=-1)
    np.testing.assert_allclose(joint_log_density_np(features, A, B, sd, pi, pi_group, perception), before,
                               rtol=1e-13, atol=1e-13)
    assert np.array_equal(joint_log_density_np(features, A[2], B[2], sd[2], pi[2], pi_group[2], perception),
                          joint_log_density_np(features, A[2:3], B[2:3], sd[2:3], pi[2:3], pi_group[2:3],
                                               perception)[0])


def test_mixture_probabilities_are_the_exponential_of_the_log_probabilities():
    """`mixture_probabilities` (what `predict` and the memberships use: one shift and one exponential per term,
    normalized over clusters and groups at once) against the exponential of `mixture_log_probabilities` (two
    log-sum-exps): the same probabilities to 1e-12, summing to one, with the components' weights given or not,
    and for an item far from every component (terms near -1e5) as for the others."""
    from bayes_wsc.models.perception.model import component_weights, mixture_probabilities

    rng = np.random.default_rng(7)
    S, m, K, G, d, q = 6, 9, 4, 3, 5, 2
    features, perception = rng.normal(size=(m, d)), rng.normal(size=(K, q))
    features[-1] = 300.0
    A, B, sd = rng.normal(size=(S, d, q)), rng.normal(size=(S, G, d)), rng.uniform(0.3, 2.0, size=(S, d))
    pi, pi_group = rng.dirichlet(np.ones(K), S), rng.dirichlet(np.ones(G), S)
    expected = np.exp(membership_log_probabilities(features, A, B, sd, pi, pi_group, perception))
    got = mixture_probabilities(features, A, B, sd, pi, pi_group, perception)
    assert got.shape == (S, m, K)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got.sum(axis=-1), 1.0, rtol=1e-14)
    weights = component_weights(A, B, sd, pi_group, perception)
    assert np.array_equal(mixture_probabilities(features, A, B, sd, pi, pi_group, perception, weights), got)


def test_nuts_is_told_of_small_groups_before_it_runs_and_takes_a_full_mass_matrix():
    """The MAP's small groups (under a quarter of an even share) are named with the --groups that leaves them
    out, before NUTS runs (`nuts_warnings`: they make its trees long); none for even shares or one group. NUTS
    adapts a full mass matrix (A is seen only through A P')."""
    est = PerceptionMixture(groups=5)
    start = {"A": np.zeros((2, 2)), "pi_group": np.array([0.343, 0.013, 0.019, 0.303, 0.322])}
    [said] = est.nuts_warnings(start)
    assert "2 of the 5 groups" in said and "g1 1.3%, g2 1.9%" in said and "under 5.0%" in said
    assert "--groups 3 (groups=3)" in said
    assert est.nuts_warnings([start, dict(start, pi_group=np.full(5, 0.2))]) == [said]  # the first chain's: the MAP
    assert est.nuts_warnings({"pi_group": np.full(5, 0.2)}) == []
    assert est.nuts_warnings({"A": np.zeros((2, 2))}) == []  # one group: no pi_group
    assert est.nuts_options() == {"dense_mass": True}
