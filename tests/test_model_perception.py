"""Feature-level supervision (issue 15): the seed-set container, LPE/NPE, the perception model, its CLI.

Default tier: the likelihood against enumeration (overlapping seeds included), monotone LPE and NPE
objectives, every bad input, a MAP end to end with save -> load -> predict, the CLI, a small NUTS
recovery, and the simulated study against k-means on X. Full-size recovery is in the slow tier.
"""

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import logsumexp

from bayes_wsc.baselines import perception as bp
from bayes_wsc.cli import main
from bayes_wsc.data.seeded import SeedSets
from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.models.perception import PerceptionClustering, build_model, membership_log_probabilities
from bayes_wsc.simulate.perception import digits_example, simulate_model, simulate_study
from bayes_wsc.testing import assert_lossless_round_trip


def cli(argv):
    try:
        return main([str(a) for a in argv])
    except SystemExit as exit_:
        return exit_.code


def tiny_tables(seed=0, n=8, d=3):
    """8 items, 3 clusters over 2 perception features; item1 is a seed of two sets (overlap)."""
    rng = np.random.default_rng(seed)
    items = pd.DataFrame(rng.normal(size=(n, d)), columns=[f"x{j}" for j in range(d)])
    items.insert(0, "id", [f"i{j}" for j in range(n)])
    seeds = pd.DataFrame({"cluster": ["A", "A", "B", "B", "C", "C"], "id": ["i0", "i1", "i1", "i2", "i3", "i4"]})
    perception = pd.DataFrame({"cluster": ["A", "B", "C"], "loop": [1.0, 1.0, 0.0], "line": [0.0, 1.0, 1.0]})
    return items, seeds, perception


@pytest.fixture(scope="module")
def small_study():
    return simulate_study(n_items=300, seed=6)


@pytest.fixture(scope="module")
def small_fit(small_study):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return PerceptionClustering().fit(small_study.data())


# ---------------------------------------------------------------------- the likelihood
def test_logp_equals_enumeration_with_overlapping_seeds():
    """The model's log density equals the prior plus the log of the sum over every joint assignment
    z of the seeded items (K^m terms) of prod_i P(z_i | x_i) 1[z_i in S_i]."""
    data = SeedSets.from_frames(*tiny_tables())
    assert data.n_overlapping_seeds == 1
    model = build_model(data)
    logp = model.compile_logp(mode="FAST_COMPILE")
    prior_logp = model.compile_fn(model.varlogp, point_fn=False, inputs=model.value_vars, mode="FAST_COMPILE")
    rng = np.random.default_rng(1)
    for _ in range(3):
        W = rng.normal(0, 1, (data.n_features, data.n_perception))
        b = rng.normal(0, 1, data.n_perception)
        seeded = data.seed_items
        log_probs = membership_log_probabilities(data.features[seeded], W, b, data.perception)
        allowed = data.seed_mask[seeded]
        total = -np.inf
        for z in itertools.product(range(data.n_clusters), repeat=seeded.size):
            if all(allowed[i, k] for i, k in enumerate(z)):
                total = np.logaddexp(total, sum(log_probs[i, k] for i, k in enumerate(z)))
        prior = prior_logp(W, b)
        assert logp({"W": W, "b": b}) == pytest.approx(float(prior) + total, rel=1e-10)


def test_seed_sets_logp_is_the_mixture_over_the_sets():
    from bayes_wsc.likelihoods import seed_sets_logp

    log_probs = np.log(np.array([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]))
    in_set = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    got = seed_sets_logp(log_probs, in_set).eval()
    np.testing.assert_allclose(got, [np.log(0.5), np.log(0.1)])


# ---------------------------------------------------------------------- LPE and NPE
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lpe_and_npe_never_increase_their_objective(seed):
    rng = np.random.default_rng(seed)
    items, seeds, perception = tiny_tables(seed, n=30, d=4)
    items.iloc[:, 1:] = rng.normal(size=(30, 4)) * rng.uniform(0.5, 3, 4)  # features of either sign
    data = SeedSets.from_frames(items, seeds, perception, standardize=False)
    X = bp.unit_range(data.features)[0] - 0.3  # LPE's updates hold for features of either sign
    n, d, q = data.n_items, data.n_features, data.n_perception
    _, _, _, history, _ = bp.lpe_run(data, rng.uniform(size=(n, q)), rng.uniform(size=(d, q)), rng.uniform(size=q),
                                     beta=5.0, gamma=0.5, tol=0.0, max_iter=300, X=X)
    assert np.all(np.diff(history) <= 1e-9 * history[:-1])
    assert history[-1] < 0.9 * history[0]
    K = bp.self_tuning_kernel(data.features)
    _, _, history, _ = bp.npe_run(data, K, rng.uniform(size=(n, q)), rng.uniform(size=(n, q)), beta=5.0,
                                  gamma=0.5, tol=0.0, max_iter=300)
    assert np.all(np.diff(history) <= 1e-9 * history[:-1])
    assert history[-1] < 0.9 * history[0]


def test_lpe_w_update_is_the_papers_without_alpha_on_non_negative_data():
    """With X >= 0 the derived W update reads W o sqrt(X^T F / (X^T X W + X^T 1 b^T + gamma W))."""
    rng = np.random.default_rng(3)
    data = SeedSets.from_frames(*tiny_tables(3, n=12, d=3), standardize=False)
    X = np.abs(rng.normal(size=(12, 3)))
    F, W, b = rng.uniform(size=(12, 2)), rng.uniform(size=(3, 2)), rng.uniform(size=2)
    _, W_new, b_new, _, _ = bp.lpe_run(data, F, W, b, beta=2.0, gamma=0.7, tol=0.0, max_iter=1, X=X)
    F1 = bp._update_f(F, X @ W + b, *bp.seed_targets(data), 2.0)
    b1 = b * np.sqrt(F1.sum(0) / (W.T @ X.sum(0) + 12 * b))
    W1 = W * np.sqrt(X.T @ F1 / (X.T @ X @ W + np.outer(X.sum(0), b1) + 0.7 * W))
    np.testing.assert_allclose(b_new, b1)
    np.testing.assert_allclose(W_new, W1)


def test_update_terms_are_the_split_gradient_of_npes_objective():
    """2 (denominator - numerator) of the F and C updates is the gradient of npe_objective (central
    differences), so the multiplicative updates stop where the objective is stationary."""
    rng = np.random.default_rng(4)
    data = SeedSets.from_frames(*tiny_tables(4, n=10, d=3))
    K = bp.self_tuning_kernel(data.features)
    F, C = rng.uniform(size=(10, 2)), rng.uniform(size=(10, 2))
    beta, gamma, h = 3.0, 0.7, 1e-6
    num, den = bp.c_update_terms(K, F, K @ C, gamma)
    f_num, f_den = bp.f_update_terms(F, K @ C, *bp.seed_targets(data), beta)
    for point, analytic in ((C, 2 * (den - num)), (F, 2 * (f_den - f_num))):
        numeric = np.zeros_like(point)
        for index in np.ndindex(point.shape):
            step = np.zeros_like(point)
            step[index] = h
            up, down = ((F, C + step), (F, C - step)) if point is C else ((F + step, C), (F - step, C))
            numeric[index] = (bp.npe_objective(K, *up, data, beta, gamma)
                              - bp.npe_objective(K, *down, data, beta, gamma)) / (2 * h)
        np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-6)


def test_npe_baseline_finds_the_users_clusters(small_study):
    """NPE's F_i = (K C)_i shrinks with an item's distance from the seeds: k-means on the directions of F
    finds the user's clusters where k-means on raw F (the old rule, 0.30 here) split by that length."""
    data = small_study.data()
    result = bp.npe(data, restarts=1)
    rows = data.unseeded_items
    scores = bp.f_scores(bp.one_hot(bp.embedding_kmeans(result, data), data.n_clusters), small_study.membership,
                         rows)
    kmeans = bp.f_scores(bp.one_hot(bp.kmeans_clusters(data.features, data), 4), small_study.membership, rows)
    assert scores.mean() > kmeans.mean() + 0.2, (scores, kmeans)


def test_lpe_baseline_finds_the_users_clusters():
    study = simulate_study(seed=1)
    data = study.data()
    result = bp.lpe(data, restarts=1)
    assert result.objective == min(result.objectives) and result.converged
    rows = data.unseeded_items
    scores = bp.f_scores(bp.one_hot(bp.embedding_kmeans(result, data), data.n_clusters), study.membership, rows)
    kmeans = bp.f_scores(bp.one_hot(bp.kmeans_clusters(data.features, data), 4), study.membership, rows)
    assert scores.mean() > kmeans.mean() + 0.2, (scores, kmeans)
    np.testing.assert_allclose(result.transform(data.features[rows]), result.F[rows], atol=1e-3)


def test_scores():
    truth = np.array([[1, 0], [1, 1], [0, 1], [0, 1]], dtype=bool)
    assigned = np.array([[1, 0], [1, 0], [1, 0], [0, 1]], dtype=bool)
    f = bp.f_scores(assigned, truth)
    np.testing.assert_allclose(f, [2 * (2 / 3) * 1 / (2 / 3 + 1), 2 * 1 * (1 / 3) / (1 + 1 / 3)])
    assert bp.brier_score(assigned, truth) == pytest.approx(3 / 8)
    table = bp.reliability_table(np.array([[0.05, 0.95], [0.5, 0.5]]), np.array([[0, 1], [1, 0]]), bins=2)
    assert table["cells"].sum() == 4
    np.testing.assert_array_equal(bp.threshold_clusters(np.array([[0.6, 0.35, 0.05]]), 0.3), [[True, True, False]])


def test_seeded_mixture_keeps_its_seeds_and_survives_a_constant_feature():
    """A seed's responsibilities stay in its sets; a constant feature (the digits' blank pixels) has the
    floor as its sd instead of turning every membership into NaN."""
    items, seeds, perception = tiny_tables(n=30)
    items["blank"] = 0.0
    data = SeedSets.from_frames(items, seeds, perception)
    gmm = bp.seeded_gmm(data)
    assert np.isfinite(gmm.memberships).all() and np.isfinite(gmm.log_likelihood)
    np.testing.assert_allclose(gmm.memberships.sum(axis=1), 1.0)
    assert gmm.sds.min() >= 1e-3


# ---------------------------------------------------------------------- the model end to end
def test_fit_memberships_predict_and_round_trip(small_study, small_fit, tmp_path):
    est, data = small_fit, small_study.data()
    assert est.diagnostics_ == []
    members = est.memberships()
    probs = members[[f"prob_{c}" for c in data.clusters]].to_numpy()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    single = np.flatnonzero(data.seed_mask.sum(axis=1) == 1)
    np.testing.assert_allclose(probs[single][data.seed_mask[single]], 1.0)  # a seed of one set is in it
    both = np.flatnonzero(data.seed_mask.sum(axis=1) == 2)
    assert both.size and np.all(probs[both][~data.seed_mask[both]] == 0)
    assert members["prob_low"].isna().all()  # a MAP has no interval
    pred = est.predict(small_study.items)
    assert list(pred.columns[: small_study.items.shape[1]]) == list(small_study.items.columns)
    assert {"cluster", "prob_low", "prob_high", "clusters"} <= set(pred.columns)
    top = pred[[f"prob_{c}" for c in data.clusters]].to_numpy()
    for row, names in zip(top, pred["clusters"]):
        expected = {data.clusters[row.argmax()], *data.clusters[row >= 0.3]}
        assert set(names.split(";")) == expected and names.split(";")[0] == data.clusters[row.argmax()]
    assert (pred["clusters"].str.contains(";")).any()
    loose = est.predict(small_study.items, overlap_threshold=0.05)["clusters"].str.count(";").sum()
    assert loose > pred["clusters"].str.count(";").sum()
    with pytest.raises(InputError, match="overlap_threshold"):
        est.predict(small_study.items, overlap_threshold=1.5)
    with pytest.raises(InputError, match="would overwrite"):
        est.predict(pred)
    back = assert_lossless_round_trip(est, small_study.items, tmp_path / "fit.nc")
    pd.testing.assert_frame_equal(back.memberships(), members)
    assert (tmp_path / "report" / "report.html") == est.report(tmp_path / "report", truth=small_study,
                                                             baselines=False)


def test_beats_kmeans_on_the_simulated_study():
    study = simulate_study(seed=0)
    data = study.data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        est = PerceptionClustering().fit(data)
    probs = est.memberships(use_seeds=False)[[f"prob_{c}" for c in data.clusters]].to_numpy()
    rows = data.unseeded_items
    ours = bp.f_scores(bp.threshold_clusters(probs, 0.3), study.membership, rows).mean()
    kmeans = bp.f_scores(bp.one_hot(bp.kmeans_clusters(data.features, data), 4), study.membership, rows).mean()
    assert ours > kmeans + 0.2, (ours, kmeans)
    assert bp.brier_score(probs, study.membership, rows) < 0.12


@pytest.fixture(scope="module")
def model_fits():
    """Data from the model (1,500 items, 3 features, 80 seeds per cluster, a tenth in two sets), its truth,
    and MAP and NUTS fits of it."""
    study, truth = simulate_model(n_items=1500, n_features=3, seeds_per_cluster=80, seed=5)
    data = study.data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return study, truth, {"map": PerceptionClustering().fit(data),
                              "nuts": PerceptionClustering(method="nuts", draws=400, tune=400, chains=2,
                                                           progressbar=False).fit(data)}


def test_recovery_map_nuts_and_laplace(model_fits):
    """Data from the model: the identified part of W and b comes back by MAP and lies inside NUTS's
    posterior, whose spread the Laplace approximation matches. Softmax logits are only identified up to a shift common to all clusters, so the
    identified quantities are the contrasts W (p_k - p_0) and b . (p_k - p_0), k = 1..K-1."""
    study, truth, fits = model_fits
    data = study.data()
    contrast = (data.perception[1:] - data.perception[0]).T  # (q, K - 1)
    W, b = truth.standardized(data)
    true = np.concatenate([W @ contrast, (b @ contrast)[None]])
    map_fit, nuts = fits["map"], fits["nuts"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        laplace = PerceptionClustering(method="laplace", draws=800).fit(data)

    def contrasts(est):
        Wd = est.idata_.posterior["W"].values.reshape(-1, *W.shape)
        bd = est.idata_.posterior["b"].values.reshape(-1, *b.shape)
        return np.concatenate([Wd @ contrast, (bd @ contrast)[:, None]], axis=1)

    draws = contrasts(nuts)
    mean, sd = draws.mean(axis=0), draws.std(axis=0)
    assert np.all(np.abs(mean - true) < 3.5 * sd), (mean, true, sd)
    assert np.all(np.abs(contrasts(map_fit)[0] - true) < 3.5 * sd)
    assert sd.max() < 0.5 * np.abs(true).max()  # the data, not the prior, decide
    approx = contrasts(laplace)
    np.testing.assert_allclose(approx.std(axis=0), sd, rtol=0.35)
    np.testing.assert_allclose(approx.mean(axis=0), mean, atol=0.5 * sd.max())
    assert laplace.predict(study.items.head(3))["prob_low"].notna().all()


def test_checks_say_when_clusters_are_not_anchored():
    items, seeds, perception = tiny_tables()
    perception.loc[2, ["loop", "line"]] = [1.0, 1.0]  # C now has B's perception vector
    seeds = pd.concat([seeds, pd.DataFrame({"cluster": ["B"], "id": ["i0"]})], ignore_index=True)  # A's seeds in B
    with pytest.warns(FitWarning) as caught:
        PerceptionClustering(restarts=1).fit(SeedSets.from_frames(items, seeds, perception))
    text = " ".join(str(w.message) for w in caught)
    assert "'B' and 'C' have the same perception vector" in text
    assert "every seed of cluster 'A' is also a seed of 'B'" in text


def test_digits_example():
    study = digits_example()
    data = study.data()
    assert data.n_items == 1797 and data.n_clusters == 3 and data.seeds_per_cluster.tolist() == [5, 5, 5]
    assert study.membership.sum(axis=1).min() == 1


# ---------------------------------------------------------------------- model criticism
def test_pointwise_log_likelihood_is_the_seed_likelihood():
    """One term per seeded item, log sum_{k in S_i} P(z_i = k | x_i) (an overlapping seed's sets
    enumerated), summing to the model's seed likelihood to 1e-8."""
    import pytensor

    from bayes_wsc.inference import LOG_LIKELIHOOD_PREFIX

    data = SeedSets.from_frames(*tiny_tables())
    model = build_model(data)
    outputs = model.replace_rvs_by_values([model[LOG_LIKELIHOOD_PREFIX + "seed_items"], model["seeds"]])
    evaluate = pytensor.function(model.value_vars, outputs, mode="FAST_COMPILE")
    rng = np.random.default_rng(4)
    seeded = data.seed_items
    for _ in range(3):
        W, b = rng.normal(0, 1, (data.n_features, data.n_perception)), rng.normal(0, 1, data.n_perception)
        pointwise, potential = evaluate(W, b)
        assert pointwise.shape == (seeded.size,)
        np.testing.assert_allclose(pointwise.sum(), potential, rtol=0, atol=1e-8)
        log_probs = membership_log_probabilities(data.features[seeded], W, b, data.perception)
        by_hand = [logsumexp([log_probs[i, k] for k in np.flatnonzero(data.seed_mask[seeded[i]])])
                   for i in range(seeded.size)]
        np.testing.assert_allclose(pointwise, by_hand, rtol=0, atol=1e-10)


def test_seed_items_are_scored_and_seed_counts_replicated(model_fits):
    from bayes_wsc import criticism as checks

    study, _, fits = model_fits
    data = study.data()
    nuts = fits["nuts"]
    for est in fits.values():
        group = est.idata_.log_likelihood
        assert list(group.data_vars) == ["seed_items"] and group["seed_items"].dims == ("chain", "draw", "seed_item")
        assert group.sizes["seed_item"] == data.seed_items.size
        table = est.checks_  # run at fit time; data from the model: nothing flagged
        assert list(table["check"]) == (["seed_neighbours", "held_out_seeds", "held_out_reference", "held_out_lpe"]
                                        + (["loo_pareto_k"] if est is nuts else []))
        assert not table[table["check"] != "loo_pareto_k"]["flagged"].any(), table.to_string()
        ppc = est.posterior_predictive(draws=40, seed=1)
        replicated, observed = ppc.posterior_predictive["seed_count"], ppc.observed_data["seed_count"]
        assert replicated.dims[2:] == observed.dims == ("cluster",) and replicated.shape[2:] == (data.n_clusters,)
        assert replicated.values.std(axis=(0, 1)).min() > 0  # drawn anew, even from a MAP's one point
        np.testing.assert_allclose(replicated.sum("cluster"), data.seed_items.size)
    assert checks.MODULES["perception"] == "bayes_wsc.models.perception.checks"


def test_seed_neighbours_flags_a_cluster_no_linear_rule_separates():
    """Cluster A's seeds lie on both sides of B's: a linear rule cannot tell them apart, the fitted
    probabilities stay uncertain where the seeds are certain, and the targeted check says so."""
    rng = np.random.default_rng(0)
    centres = {"A": [(-3.0, 0.0), (3.0, 0.0)], "B": [(0.0, 0.0)], "C": [(0.0, 3.0)]}
    x = np.vstack([np.array(c[j % len(c)]) + 0.5 * rng.standard_normal(2) for c in centres.values() for j in range(20)]
                  + [rng.normal(0, 2, (100, 2))])
    items = pd.DataFrame(x, columns=["x1", "x2"])
    items.insert(0, "id", [f"i{j}" for j in range(len(x))])
    seeds = pd.DataFrame({"cluster": np.repeat(list(centres), 20), "id": [f"i{j}" for j in range(60)]})
    perception = pd.DataFrame({"cluster": list(centres), "p1": [1.0, 0, 0], "p2": [0, 1.0, 0], "p3": [0, 0, 1.0]})
    with pytest.warns(FitWarning, match="check seed_neighbours flagged: The share of each seed's 5 nearest seeds"):
        est = PerceptionClustering(restarts=1).fit(SeedSets.from_frames(items, seeds, perception))
    row = est.checks_.set_index("check").loc["seed_neighbours"]
    assert row["flagged"] and row["statistic"] > row["reference"] + 0.3


def test_seed_neighbours_are_scikit_learns_nearest_neighbours():
    """`checks.neighbours` (NumPy, so that `check` need not import scikit-learn) finds what
    `NearestNeighbors` finds: the same rows in the same order on data without ties, the same distances where
    rows tie, never the row itself, and fewer neighbours than there are other rows never."""
    from sklearn.neighbors import NearestNeighbors

    from bayes_wsc.models.perception import checks

    rng = np.random.default_rng(3)
    for m, d in ((2, 3), (6, 2), (40, 64), (300, 5)):
        x = rng.normal(size=(m, d))
        k = min(checks.NEIGHBOURS, m - 1)
        expected = NearestNeighbors(n_neighbors=k + 1).fit(x).kneighbors(x, return_distance=False)[:, 1:]
        np.testing.assert_array_equal(checks.neighbours(x), expected)
    grid = rng.integers(0, 3, size=(50, 2)).astype(float)  # many equal distances and repeated rows
    near = checks.neighbours(grid)
    distances = np.sort(np.linalg.norm(grid[near] - grid[:, None], axis=-1), axis=1)
    with_self = NearestNeighbors(n_neighbors=6).fit(grid).kneighbors(grid)[0]
    np.testing.assert_allclose(distances, np.sort(with_self, axis=1)[:, 1:])
    assert (near != np.arange(50)[:, None]).all()
    with pytest.MonkeyPatch.context() as patch:  # the chunks join up (x: the 300 rows above)
        patch.setattr(checks, "NEIGHBOUR_CHUNK", 7)
        np.testing.assert_array_equal(checks.neighbours(x), expected)


# ---------------------------------------------------------------------- command line and bad input
@pytest.fixture(scope="module")
def files(tmp_path_factory, small_study):
    path = tmp_path_factory.mktemp("perception")
    small_study.items.to_csv(path / "items.csv", index=False)
    small_study.seeds.to_csv(path / "seeds.csv", index=False)
    small_study.perception.to_csv(path / "perc.csv", index=False)
    return path


def test_cli_end_to_end(files, capsys):
    p = files
    args = ["--items", p / "items.csv", "--seeds", p / "seeds.csv", "--perception", p / "perc.csv"]
    assert cli(["fit", "perception", *args, "--out", p / "fit.nc", "--no-progress", "--overlap-threshold", "0.4"]) == 0
    assert cli(["predict", p / "fit.nc", "--items", p / "items.csv", "--out", p / "pred.csv"]) == 0
    pred = pd.read_csv(p / "pred.csv")
    assert {"cluster", "prob_c0", "prob_low", "prob_high", "clusters"} <= set(pred.columns)
    assert cli(["predict", p / "fit.nc", "--items", p / "items.csv", "--out", p / "pred2.csv",
                "--overlap-threshold", "0.05"]) == 0
    assert pd.read_csv(p / "pred2.csv")["clusters"].str.count(";").sum() > pred["clusters"].str.count(";").sum()
    for kernel in ("linear", "rbf"):
        assert cli(["baseline", "lpe", *args, "--out", p / f"lpe_{kernel}.csv", "--kernel", kernel,
                    "--restarts", "1"]) == 0
        out = pd.read_csv(p / f"lpe_{kernel}.csv")
        assert {"cluster", "membership_c0", "clusters", "embedding_a1"} <= set(out.columns) and len(out) == 300
    assert cli(["summary", p / "fit.nc"]) == 0
    capsys.readouterr()


def _write(path, frame):
    frame.to_csv(path, index=False)
    return path


BAD_INPUTS = {
    "seed id not in the items": (lambda i, s, p: (i, pd.concat([s, pd.DataFrame({"cluster": ["A"], "id": ["zz"]})]), p),
                                 "item id 'zz' (row 7), which is not in items"),
    "negative perception": (lambda i, s, p: (i, s, p.assign(loop=[1.0, -1.0, 0.0])), "has value -1.0 (row 2)"),
    "NaN perception": (lambda i, s, p: (i, s, p.assign(line=[0.0, np.nan, 1.0])), "column 'line' has a missing value"),
    "infinite perception": (lambda i, s, p: (i, s, p.assign(line=[0.0, np.inf, 1.0])), "non-finite value inf"),
    "seeds without a perception vector": (lambda i, s, p: (i, s, p.iloc[:2]),
                                          "cluster 'C' (row 5), which has no perception vector"),
    "perception without seeds": (lambda i, s, p: (i, s[s["cluster"] != "C"], p),
                                 "vector for cluster 'C', which has no seeds"),
    "fewer than 2 clusters": (lambda i, s, p: (i, s[s["cluster"] == "A"], p.iloc[:1]), "at least 2"),
    "NaN feature": (lambda i, s, p: (i.assign(x1=[np.nan, *i["x1"].iloc[1:]]), s, p),
                    "column 'x1' has a missing value (row 1)"),
    "duplicate item id": (lambda i, s, p: (i.assign(id=["i0", "i0", *i["id"].iloc[2:]]), s, p),
                          "duplicate id 'i0' (row 2)"),
    "repeated seed": (lambda i, s, p: (i, pd.concat([s, s.iloc[:1]]), p), "repeats item 'i0' in cluster 'A'"),
    "repeated perception row": (lambda i, s, p: (i, s, pd.concat([p, p.iloc[:1]])), "second vector for cluster 'A'"),
    "text perception": (lambda i, s, p: (i, s, p.assign(loop=["x", "1", "0"])), "non-numeric value 'x'"),
}


@pytest.mark.parametrize("case", BAD_INPUTS, ids=lambda c: c.replace(" ", "-"))
def test_bad_input_is_one_line(case, tmp_path, capsys):
    change, expected = BAD_INPUTS[case]
    items, seeds, perception = change(*tiny_tables())
    with pytest.raises(InputError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        SeedSets.from_frames(items, seeds, perception)
    paths = [_write(tmp_path / f"{n}.csv", f) for n, f in zip(("items", "seeds", "perc"), (items, seeds, perception))]
    args = ["--items", paths[0], "--seeds", paths[1], "--perception", paths[2]]
    for command in (["fit", "perception"], ["baseline", "lpe"]):
        out = tmp_path / "out.nc"
        assert cli([*command, *args, "--out", out]) == 2
        err = capsys.readouterr().err.strip()
        assert expected in err and len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert not out.exists()


def test_bad_settings_and_files(files, tmp_path, capsys):
    p = files
    args = ["--items", p / "items.csv", "--seeds", p / "seeds.csv", "--perception", p / "perc.csv"]
    for argv, expected in (
        (["fit", "perception", *args, "--out", p / "perc.csv"], "is the perception file"),
        (["fit", "perception", "--items", tmp_path / "none.csv", "--seeds", p / "seeds.csv", "--perception",
          p / "perc.csv", "--out", tmp_path / "f.nc"], "does not exist"),
        (["fit", "perception", *args, "--out", tmp_path / "f.nc", "--overlap-threshold", "2"], "(0, 1]"),
        (["fit", "perception", *args, "--out", tmp_path / "f.nc", "--features", "nope"], "no column 'nope'"),
        (["baseline", "lpe", *args, "--out", tmp_path / "l.csv", "--beta", "-1"], "--beta"),
    ):
        assert cli(argv) == 2
        err = capsys.readouterr().err.strip()
        assert expected in err and len(err.splitlines()) == 1, err
    with pytest.raises(InputError, match="overlap_threshold"):
        PerceptionClustering(overlap_threshold=0).fit(SeedSets.from_frames(*tiny_tables()))
    with pytest.raises(InputError, match="SeedSets"):
        PerceptionClustering().fit(pd.DataFrame())


# ---------------------------------------------------------------------- slow tier
@pytest.mark.slow
def test_full_size_recovery_map_and_nuts():
    """Data from the model at the paper's scale of one user: 5,000 items, 10 features, 4 clusters over 5
    perception features, 60 seeds per cluster, a tenth in two sets. Of the 33 identified contrasts about
    2 fall outside NUTS's 94% intervals when they are calibrated; 6 or more would happen with
    probability 0.015. The MAP is within 3.5 posterior sd of each."""
    perception = np.array([[1, 1, 0, 0, 0], [0, 1, 1, 0, 0], [0, 0, 1, 1, 0], [1, 0, 0, 0, 1]], dtype=float)
    study, truth = simulate_model(n_items=5000, n_features=10, perception=perception, seeds_per_cluster=60,
                                  coarsen=0.1, seed=11)
    data = study.data()
    contrast = (perception[1:] - perception[0]).T
    W, b = truth.standardized(data)
    true = np.concatenate([W @ contrast, (b @ contrast)[None]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        map_fit = PerceptionClustering().fit(data)
        nuts = PerceptionClustering(method="nuts", progressbar=False).fit(data)
    assert nuts.diagnostics_ == []

    def contrasts(est):
        Wd = est.idata_.posterior["W"].values.reshape(-1, *W.shape)
        bd = est.idata_.posterior["b"].values.reshape(-1, *b.shape)
        return np.concatenate([Wd @ contrast, (bd @ contrast)[:, None]], axis=1)

    draws = contrasts(nuts)
    low, high = np.quantile(draws, [0.03, 0.97], axis=0)
    assert ((true < low) | (true > high)).sum() <= 5
    assert np.all(np.abs(contrasts(map_fit)[0] - true) < 3.5 * draws.std(axis=0))
    probs = map_fit.memberships(use_seeds=False)[[f"prob_{c}" for c in data.clusters]].to_numpy()
    assert np.mean(probs.argmax(axis=1) == truth.z) > 0.7


def test_membership_logits_of_draws_are_the_expression_they_replaced():
    """`membership_logits` of a stack of draws (W P' folded first, one matrix product laid out (K, m, S)) gives
    the values of the expression before it (written out here), to float rounding, and so do the softmax and the
    log-softmax of it; one draw is unchanged."""
    from bayes_wsc.models.perception.model import (membership_log_probabilities, membership_logits,
                                                   membership_probabilities)

    rng = np.random.default_rng(3)
    features, W, b, perception = (rng.normal(size=(17, 6)), rng.normal(size=(40, 6, 4)), rng.normal(size=(40, 4)),
                                  rng.normal(size=(3, 4)))
    offset = 0.5 * np.sum(perception**2, axis=1)
    before = (np.einsum("md,sdq->smq", features, W, optimize=True) + b[:, None, :]) @ perception.T - offset
    got = membership_logits(features, W, b, perception)
    assert got.shape == before.shape
    np.testing.assert_allclose(got, before, rtol=1e-12, atol=1e-12)
    probabilities = np.exp(before - before.max(axis=-1, keepdims=True))
    probabilities /= probabilities.sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(membership_probabilities(features, W, b, perception), probabilities, rtol=1e-12)
    np.testing.assert_allclose(membership_log_probabilities(features, W, b, perception), np.log(probabilities),
                               rtol=1e-12, atol=1e-12)
    one = (features @ W[0] + b[0]) @ perception.T - offset
    assert np.array_equal(membership_logits(features, W[0], b[0], perception), one)
