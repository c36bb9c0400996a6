"""The noisy-experts model (seed 002): likelihood against enumeration, data validation, recovery,
the paper's UCI experiment, predictions, relabeling, bad input and the command line."""

import itertools
import warnings

import numpy as np
import pandas as pd
import pytensor.tensor as pt
import pytest
from scipy.special import softmax
from sklearn.metrics import normalized_mutual_info_score

from bayes_wsc import inference
from bayes_wsc.baselines.experts import (
    kmeans_labels,
    majority_vote,
    majority_vote_pckmeans,
    pck_means,
    point_estimate,
)
from bayes_wsc.cli import main
from bayes_wsc.data.pairwise import PairwiseConstraints
from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.fit import constrained_values, transformed_start
from bayes_wsc.likelihoods import (
    pair_log_coclustering,
    pair_ratings_logp,
)
from bayes_wsc.simulate.experts import CASE_1, load_uci, omega_of, simulate_experts_model, simulate_uci_experts


def nmi(a, b):
    return normalized_mutual_info_score(a, b, average_method="geometric")


def cli(argv):
    """Exit code of the command line run in-process (argparse errors raise SystemExit)."""
    try:
        return main(argv)
    except SystemExit as exit_:
        return exit_.code


# ---------------------------------------------------------------------- likelihood
def enumerated_pair_loglik(probs, pairs, cells):
    """sum over unique pairs of log sum_{z_i, z_j} p(z_i) p(z_j) prod_m p(S_m | z_i, z_j), by brute force:
    the pair's clusters are drawn once and every expert who rated the pair sees them.

    cells: (pair index, link, alpha, beta) per constraint.
    """
    total = 0.0
    k = probs.shape[1]
    for p in sorted({cell[0] for cell in cells}):
        i, j = pairs[p]
        prob = 0.0
        for zi, zj in itertools.product(range(k), repeat=2):
            term = probs[i, zi] * probs[j, zj]
            for _, link, alpha, beta in (cell for cell in cells if cell[0] == p):
                if zi == zj:
                    term *= alpha if link else 1 - alpha
                else:
                    term *= 1 - beta if link else beta
            prob += term
        total += np.log(prob)
    return total


def test_pairwise_marginal_equals_enumeration():
    """Pairs rated by one, two and three experts: the pair's (z_i, z_j) summed out once."""
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), size=5)
    pairs = np.array([[0, 1], [0, 4], [2, 3], [1, 4]])
    alpha, beta = rng.uniform(0.5, 1, 3), rng.uniform(0.5, 1, 3)
    cell_pair = np.array([0, 0, 1, 2, 3, 3, 3])
    cell_expert = np.array([0, 1, 2, 0, 0, 1, 2])
    link = np.array([1, 0, 1, 0, 0, 1, 1])
    cells = [(p, s, alpha[e], beta[e]) for p, s, e in zip(cell_pair, link, cell_expert)]
    expected = enumerated_pair_loglik(probs, pairs, cells)
    log_probs = np.log(probs)
    log_same, log_diff = pair_log_coclustering(pt.as_tensor(log_probs[pairs[:, 0]]),
                                               pt.as_tensor(log_probs[pairs[:, 1]]))
    gamma = (probs[pairs[:, 0]] * probs[pairs[:, 1]]).sum(axis=1)
    np.testing.assert_allclose(log_same.eval(), np.log(gamma), rtol=1e-12)
    np.testing.assert_allclose(log_diff.eval(), np.log1p(-gamma), rtol=1e-12)
    must, cannot = np.zeros((len(pairs), 3)), np.zeros((len(pairs), 3))
    np.add.at(must, (cell_pair, cell_expert), link)
    np.add.at(cannot, (cell_pair, cell_expert), 1 - link)
    got = pair_ratings_logp(log_same, log_diff, must, cannot, pt.as_tensor(alpha), pt.as_tensor(beta)).eval()
    np.testing.assert_allclose(got.sum(), expected, rtol=1e-12)
    # a pair rated by one expert: P(S = 1) = gamma alpha + (1 - gamma)(1 - beta)
    a, b = alpha[cell_expert[2]], beta[cell_expert[2]]  # pair 1 is rated by expert 2 only, with link 1
    np.testing.assert_allclose(got[1], np.log(gamma[1] * a + (1 - gamma[1]) * (1 - b)), rtol=1e-12)
    # summing per-constraint factors instead would redraw the pair's clusters for every expert
    a, b, g = alpha[cell_expert], beta[cell_expert], gamma[cell_pair]
    per_constraint = np.log(np.where(link == 1, g * a + (1 - g) * (1 - b), g * (1 - a) + (1 - g) * b)).sum()
    assert abs(per_constraint - expected) > 1e-3


def test_pair_likelihood_is_finite_with_gradients_for_confident_memberships():
    """Both items surely in the same cluster (1 - gamma underflows) or surely apart (gamma underflows)."""
    import pytensor

    logits = pt.dmatrix("logits")
    log_probs = logits - pt.logsumexp(logits, axis=1, keepdims=True)
    log_same, log_diff = pair_log_coclustering(log_probs[[0, 0]], log_probs[[1, 2]])
    logp = pair_ratings_logp(log_same, log_diff, np.array([[0.0], [1.0]]), np.array([[1.0], [0.0]]),
                             pt.as_tensor([0.9]), pt.as_tensor([0.8])).sum()
    f = pytensor.function([logits], [logp, pt.grad(logp, logits)])
    value, grad = f(np.array([[80.0, 0.0, -80.0], [79.0, 0.0, -81.0], [-80.0, 80.0, 0.0]]))
    assert np.isfinite(value) and np.all(np.isfinite(grad))


def test_model_likelihood_equals_enumeration():
    """The likelihood inside the PyMC model (softmax with a reference column) matches enumeration."""
    from bayes_wsc.models.experts import build_model, raw_coordinates

    rng = np.random.default_rng(1)
    items = pd.DataFrame({"id": list("abcdef"), "x1": rng.normal(size=6), "x2": rng.normal(size=6)})
    constraints = pd.DataFrame({"expert": ["e1", "e1", "e2", "e2", "e2", "e3"],
                                "i": ["a", "b", "a", "f", "c", "e"], "j": ["b", "c", "b", "d", "e", "f"],
                                "link": [1, 0, 0, 1, 1, 0]})
    data = PairwiseConstraints.from_frames(items, constraints)
    model = build_model(data, n_clusters=3)
    W, b = rng.normal(size=(2, 3)), rng.normal(size=3)
    alpha, beta = np.array([0.9, 0.7, 0.6]), np.array([0.8, 0.55, 0.95])
    start = raw_coordinates(W, b, data.features, 1.0, 2.0)
    start.update(alpha_raw=2 * alpha - 1, beta_raw=2 * beta - 1)
    point = transformed_start(model, start)
    got = model.compile_logp(vars=[model["constraints"]], jacobian=False)(point)
    probs = softmax(data.features @ W + b, axis=1)
    cells = [(p, s, alpha[e], beta[e]) for p, s, e in zip(data.cell_pair, data.link, data.cell_expert)]
    np.testing.assert_allclose(got, enumerated_pair_loglik(probs, data.pairs, cells), rtol=1e-10)
    values = constrained_values(model, [point])
    np.testing.assert_allclose(values["omega"][0], omega_of(alpha, beta), rtol=1e-12)
    np.testing.assert_allclose(values["W"][0], W - W.mean(axis=1, keepdims=True), atol=1e-12)


def _joint_by_enumeration(probs, data, alpha, beta, n_items):
    """p(z, links | x, theta) of the first `n_items` items' clusters (3 clusters), every z enumerated: each
    item's softmax membership times each rated pair's likelihood given whether its two items share a cluster."""
    cells = list(zip(data.cell_pair, data.link, data.cell_expert))
    joint = np.zeros((3,) * n_items)
    for z in itertools.product(range(3), repeat=n_items):
        term = np.prod([probs[i, z[i]] for i in range(n_items)])
        for p, link, e in cells:
            i, j = data.pairs[p]
            if z[i] == z[j]:
                term *= alpha[e] if link else 1 - alpha[e]
            else:
                term *= 1 - beta[e] if link else beta[e]
        joint[z] = term
    return joint


def test_constraint_informed_membership_equals_enumeration_on_a_star():
    """Item a is in pairs with b, c, d (rated by one to three experts), who are in no other pair: then
    P(z_a | x, theta, links) by brute force over (z_a, z_b, z_c, z_d) is what the estimator reports;
    e, in no pair, keeps its softmax membership."""
    from bayes_wsc.models.experts import constraint_informed_memberships

    rng = np.random.default_rng(3)
    items = pd.DataFrame({"id": list("abcde"), "x1": rng.normal(size=5), "x2": rng.normal(size=5)})
    constraints = pd.DataFrame({"expert": ["e1", "e2", "e1", "e3", "e2", "e3"],
                                "i": ["a", "a", "c", "a", "a", "d"], "j": ["b", "b", "a", "c", "d", "a"],
                                "link": [1, 1, 0, 1, 0, 0]})
    data = PairwiseConstraints.from_frames(items, constraints)
    W, b = rng.normal(size=(2, 3)), rng.normal(size=3)
    alpha, beta = np.array([0.9, 0.7, 0.6]), np.array([0.8, 0.55, 0.95])
    probs = softmax(data.features @ W + b, axis=1)
    joint = _joint_by_enumeration(probs, data, alpha, beta, 4)
    expected = joint.sum(axis=(1, 2, 3)) / joint.sum()
    got = constraint_informed_memberships(data.features, W[None], b[None], alpha[None], beta[None], data,
                                          np.array([0, 4]))
    np.testing.assert_allclose(got[0, 0], expected, rtol=1e-10)
    np.testing.assert_allclose(got[0, 1], probs[4], rtol=1e-12)


def test_propagated_memberships_equal_enumeration_on_a_tree():
    """A constraint graph without cycles (a path a-b-c-d and a leaf e on b, rated by one to three experts;
    f in no pair): belief propagation's sweeps give every item its exact marginal of
    p(z | x, theta, links) by brute force over all five linked items' clusters, which sweeps = 0 does
    not (a's links reach it through b's other pairs); f keeps its softmax membership."""
    from bayes_wsc.models.experts import constraint_informed_memberships

    rng = np.random.default_rng(5)
    items = pd.DataFrame({"id": list("abcdef"), "x1": rng.normal(size=6), "x2": rng.normal(size=6)})
    constraints = pd.DataFrame({"expert": ["e1", "e2", "e1", "e3", "e2", "e3", "e1"],
                                "i": ["a", "b", "c", "b", "c", "d", "e"], "j": ["b", "a", "b", "c", "d", "c", "b"],
                                "link": [1, 1, 0, 0, 1, 1, 1]})
    data = PairwiseConstraints.from_frames(items, constraints)
    W, b = 0.3 * rng.normal(size=(2, 3)), 0.3 * rng.normal(size=3)  # weak features: the links decide
    alpha, beta = np.array([0.9, 0.7, 0.6]), np.array([0.8, 0.55, 0.95])
    probs = softmax(data.features @ W + b, axis=1)
    joint = _joint_by_enumeration(probs, data, alpha, beta, 5)
    joint /= joint.sum()
    expected = np.stack([joint.sum(axis=tuple(a for a in range(5) if a != i)) for i in range(5)])
    rows = np.arange(6)
    args = (data.features, W[None], b[None], alpha[None], beta[None], data, rows)
    for damping in (0.0, 0.5):
        got = constraint_informed_memberships(*args, sweeps=60, damping=damping)[0]
        np.testing.assert_allclose(got[:5], expected, rtol=1e-8)
        np.testing.assert_allclose(got[5], probs[5], rtol=1e-12)
    own = constraint_informed_memberships(*args, sweeps=0)[0]
    assert np.abs(own[:5] - expected).max() > 0.05  # the propagation is what makes them exact


# ---------------------------------------------------------------------- data
@pytest.fixture
def tables():
    items = pd.DataFrame({"id": ["a", "b", "c", "d"], "x": [0.0, 1.0, 2.0, 3.0], "y": [1.0, 1.0, 0.0, 5.0]})
    constraints = pd.DataFrame({"expert": ["e1", "e1", "e2", "e2"], "i": ["a", "c", "b", "a"],
                                "j": ["b", "d", "a", "c"], "link": [1, 0, 1, 0]})
    return items, constraints


def test_container_pairs_counts_and_scaling(tables):
    items, constraints = tables
    data = PairwiseConstraints.from_frames(items, constraints)
    assert data.n_items == 4 and data.n_experts == 2 and data.n_constraints == 4
    assert data.n_pairs == 3  # (a, b) is rated by both experts, in either order: one unique pair
    np.testing.assert_array_equal(data.pairs, [[0, 1], [0, 2], [2, 3]])
    np.testing.assert_allclose(data.features.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(data.features.std(axis=0), 1)
    assert data.pair_votes().tolist() == [[0, 2], [1, 0], [1, 0]]
    assert data.expert_counts().loc["e2"].tolist() == [1, 1, 2]
    must, cannot = data.link_counts()
    assert must.tolist() == [[1, 1], [0, 0], [0, 0]] and cannot.tolist() == [[0, 0], [0, 1], [1, 0]]
    back = data.to_frame()
    assert sorted(map(tuple, back[["expert", "i", "j", "link"]].values.tolist())) == sorted(
        [("e1", "a", "b", 1), ("e1", "c", "d", 0), ("e2", "a", "b", 1), ("e2", "a", "c", 0)])
    new = data.scaling.transform(pd.DataFrame({"x": [1.5], "y": [1.75]}))
    np.testing.assert_allclose(new, [[0.0, 0.0]], atol=1e-12)
    raw = PairwiseConstraints.from_frames(items, constraints, standardize=False)
    np.testing.assert_array_equal(raw.features, items[["x", "y"]].to_numpy())


def test_expert_labels_become_pairwise_constraints(tables):
    items, _ = tables
    labels = pd.DataFrame({"expert": ["e1", "e1", "e1", "e2", "e2"], "id": ["a", "b", "c", "c", "d"],
                           "label": ["x", "x", "y", 3, 3]})
    data = PairwiseConstraints.from_frames(items, expert_labels=labels)
    got = sorted(map(tuple, data.to_frame().values.tolist()))
    assert got == [("e1", "a", "b", 1), ("e1", "a", "c", 0), ("e1", "b", "c", 0), ("e2", "c", "d", 1)]
    capped = PairwiseConstraints.from_frames(items, expert_labels=labels, max_pairs_per_expert=2, seed=3)
    assert capped.expert_counts()["pairs"].tolist() == [2, 1]


BAD_DATA = {
    "self-pair": (lambda i, c: (i, c.assign(j=["b", "c", "b", "a"])), {}, "pairs item 'c' with itself (i = j)"),
    "unknown id": (lambda i, c: (i, c.assign(i=["a", "zz", "b", "a"])), {}, "item id 'zz' (row 2), which is not in items"),
    "link not 0/1": (lambda i, c: (i, c.assign(link=[1, 2, 1, 0])), {}, "'link' has value 2 (row 2); it must be 1"),
    "text link": (lambda i, c: (i, c.assign(link=["1", "yes", "1", "0"])), {}, "non-numeric value 'yes' (row 2)"),
    "missing link": (lambda i, c: (i, c.assign(link=[1, None, 1, 0])), {}, "'link' has a missing value (row 2)"),
    "both links": (lambda i, c: (i, pd.concat([c, c.head(1).assign(i="b", j="a", link=0)], ignore_index=True)), {},
                   "expert 'e1' gives pair ('a', 'b') both must-link (row 1) and cannot-link (row 5)"),
    "duplicate constraint": (lambda i, c: (i, pd.concat([c, c.head(1)], ignore_index=True)), {},
                             "rates pair ('a', 'b') twice (rows 1 and 5)"),
    "non-numeric feature": (lambda i, c: (i.assign(x=["0", "1", "two", "3"]), c), {},
                            "items column 'x' has a non-numeric value 'two' (row 3)"),
    "NaN feature": (lambda i, c: (i.assign(y=[1.0, np.nan, 0.0, 5.0]), c), {}, "items column 'y' has a missing value (row 2)"),
    "infinite feature": (lambda i, c: (i.assign(y=[1.0, np.inf, 0.0, 5.0]), c), {}, "non-finite value inf (row 2)"),
    "duplicate item": (lambda i, c: (i.assign(id=["a", "b", "b", "d"]), c), {}, "duplicate id 'b' (row 3)"),
    "missing column": (lambda i, c: (i, c.drop(columns="link")), {}, "constraints has no column 'link'"),
    "missing feature": (lambda i, c: (i, c), {"features": ["x", "z"]}, "items has no column 'z'"),
    "no features": (lambda i, c: (i[["id"]], c), {}, "no feature columns besides the id column 'id'"),
}


@pytest.mark.parametrize("case", list(BAD_DATA))
def test_bad_data_is_one_line(case, tables):
    items, constraints = tables
    mutate, kwargs, expected = BAD_DATA[case]
    bad_items, bad_constraints = mutate(items.copy(), constraints.copy())
    with pytest.raises(InputError) as error:
        PairwiseConstraints.from_frames(bad_items, bad_constraints, **kwargs)
    assert expected in str(error.value) and "\n" not in str(error.value)


def test_bad_expert_labels(tables):
    items, _ = tables
    clash = pd.DataFrame({"expert": ["e1", "e1", "e1"], "id": ["a", "b", "a"], "label": ["x", "x", "y"]})
    with pytest.raises(InputError, match="gives item 'a' two labels, 'x' \\(row 1\\) and 'y' \\(row 3\\)"):
        PairwiseConstraints.from_frames(items, expert_labels=clash)
    lonely = pd.DataFrame({"expert": ["e1", "e1", "e2"], "id": ["a", "b", "a"], "label": ["x", "x", "y"]})
    with pytest.raises(InputError, match="expert 'e2' labels only one item"):
        PairwiseConstraints.from_frames(items, expert_labels=lonely)
    with pytest.raises(InputError, match="either constraints .* or expert labels"):
        PairwiseConstraints.from_frames(items)


# ---------------------------------------------------------------------- fits
def fit_quietly(est, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return est.fit(data)


@pytest.fixture(scope="module")
def wine_case1():
    """Wine, Case 1 (alpha = beta = 0.95 ... 0.55), 1000 constraints, MAP with the default 20 restarts."""
    from bayes_wsc.models.experts import NoisyExperts

    items, labels = load_uci("wine")
    constraints, truth = simulate_uci_experts(labels, 1000, CASE_1, item_ids=items["id"], seed=0)
    data = PairwiseConstraints.from_frames(items, constraints)
    return data, truth, fit_quietly(NoisyExperts(n_clusters=3, seed=0), data)


def check_uci_case1(data, truth, est):
    """NMI beats KMeans and is at least majority vote + PCKMeans'; omega ranks the experts truly."""
    k = est.n_clusters
    ours = nmi(truth.labels, est.memberships()["cluster"])
    kmeans = nmi(truth.labels, kmeans_labels(data.features, k, seed=0))
    voted = nmi(truth.labels, majority_vote_pckmeans(data, k, seed=0).labels)
    assert ours > kmeans + 0.05, (ours, kmeans)
    assert ours >= voted - 1e-9, (ours, voted)
    assert list(est.expert_order()) == [0, 1, 2, 3, 4]  # CASE_1 lists the experts from best to worst
    assert list(est.expert_table().index) == ["expert1", "expert2", "expert3", "expert4", "expert5"]
    return ours, kmeans, voted


def test_wine_case1_beats_baselines_and_ranks_experts(wine_case1):
    data, truth, est = wine_case1
    check_uci_case1(data, truth, est)
    info = __import__("bayes_wsc").inference.get_attrs(est.idata_)["fit_info"]["map"]
    assert info["restarts"] == 20 and info["log_density"] == pytest.approx(max(info["restart_log_densities"]))
    # 500 must-links and 500 cannot-links per expert: the standard error of alpha, beta is about 0.01-0.02
    np.testing.assert_allclose(est.idata_.posterior["alpha"].values[0, 0], truth.alpha, atol=0.04)
    np.testing.assert_allclose(est.idata_.posterior["beta"].values[0, 0], truth.beta, atol=0.04)


@pytest.mark.slow
def test_breast_cancer_case1_beats_baselines_and_ranks_experts():
    from bayes_wsc.models.experts import NoisyExperts

    items, labels = load_uci("breast_cancer")
    constraints, truth = simulate_uci_experts(labels, 1000, CASE_1, item_ids=items["id"], seed=0)
    data = PairwiseConstraints.from_frames(items, constraints)
    est = fit_quietly(NoisyExperts(n_clusters=2, seed=0), data)
    check_uci_case1(data, truth, est)
    paper = point_estimate(data, 2, seed=0)
    assert nmi(truth.labels, est.memberships()["cluster"]) >= nmi(truth.labels, paper.labels(data.features)) - 1e-9


def test_alpha_beta_recovered_from_the_model_itself():
    from bayes_wsc.models.experts import NoisyExperts

    items, constraints, truth = simulate_experts_model(n_items=300, n_features=4, n_clusters=3,
                                                       pairs_per_expert=1500, separation=3.0, seed=5)
    data = PairwiseConstraints.from_frames(items, constraints)
    est = fit_quietly(NoisyExperts(n_clusters=3, seed=1, restarts=10), data)
    post = est.idata_.posterior
    np.testing.assert_allclose(post["alpha"].values[0, 0], truth.realized_alpha, atol=0.05)
    np.testing.assert_allclose(post["beta"].values[0, 0], truth.realized_beta, atol=0.05)
    assert nmi(truth.labels, est.memberships()["cluster"]) > 0.75
    assert list(est.expert_order()) == [0, 1, 2, 3]


@pytest.mark.slow
def test_credible_intervals_cover_the_truth_from_the_model_itself():
    """NUTS on data from the model: 90% intervals of alpha and beta cover the realized values."""
    from bayes_wsc.models.experts import NoisyExperts

    covered = []
    for seed in range(3):
        items, constraints, truth = simulate_experts_model(n_items=300, n_features=4, n_clusters=3,
                                                           pairs_per_expert=800, separation=3.0, seed=100 + seed)
        data = PairwiseConstraints.from_frames(items, constraints)
        est = fit_quietly(NoisyExperts(n_clusters=3, seed=seed, method="nuts", draws=500, tune=500,
                                       progressbar=False), data)
        table = est.expert_table(ci=0.9).loc[[f"expert{m + 1}" for m in range(4)]]
        covered += list((table["alpha_low"] <= truth.realized_alpha) & (truth.realized_alpha <= table["alpha_high"]))
        covered += list((table["beta_low"] <= truth.realized_beta) & (truth.realized_beta <= table["beta_high"]))
        assert est.summary()["r_hat"].max() < 1.02
    assert np.mean(covered) >= 0.75, covered  # 24 intervals at 90%: 0.75 allows ~3 misses beyond chance


@pytest.mark.slow
def test_intervals_of_w_and_b_cover_the_simulated_truth_at_their_level():
    """Laplace fits of data drawn from the fit's prior and likelihood (W, b from the prior,
    `same_cluster="pair"`): after matching the clusters, the 90% intervals of the free entries of
    [b; W] cover the truth at a rate consistent with 0.9. Tolerance: the count of covered entries
    (12 data sets x 3 entries) lies in the central 99% of Binomial(36, 0.9), 27..36 (entries of one
    data set are dependent, which widens the spread a little). Measured: 33 of 36; with each item's
    cluster drawn once (`same_cluster="item"`, the default) the pairwise composite likelihood is
    overconfident and the same count falls outside (benchmarks/experts_coverage.py)."""
    from scipy.stats import binom

    from bayes_wsc.models.experts import NoisyExperts
    from bayes_wsc.simulate.experts import truth_covered

    covered = []
    for seed in range(12):
        items, constraints, truth = simulate_experts_model(n_items=150, n_features=2, n_clusters=2,
                                                           alpha=(0.9, 0.8, 0.7), beta=(0.9, 0.8, 0.7),
                                                           pairs_per_expert=300, same_cluster="pair", seed=seed)
        data = PairwiseConstraints.from_frames(items, constraints)
        est = fit_quietly(NoisyExperts(n_clusters=2, seed=seed, method="laplace", draws=1000), data)
        post = est.idata_.posterior
        covered += list(truth_covered(post["W"].values.reshape(-1, *truth.W.shape),
                                      post["b"].values.reshape(-1, truth.b.size), truth, ci=0.9))
    low, high = binom.ppf([0.005, 0.995], len(covered), 0.9)
    assert low <= sum(covered) <= high, (sum(covered), len(covered), low, high)


@pytest.fixture(scope="module")
def iris_split():
    """Iris: fit on 100 items, the other 50 are never seen (no constraints, not in the fit)."""
    from bayes_wsc.models.experts import NoisyExperts

    items, labels = load_uci("iris")
    rng = np.random.default_rng(3)
    order = rng.permutation(len(items))
    train, test = order[:100], order[100:]
    constraints, truth = simulate_uci_experts(labels[train], 400, (0.95, 0.85, 0.7), item_ids=items["id"].values[train],
                                              seed=2)
    data = PairwiseConstraints.from_frames(items.iloc[train], constraints)
    est = fit_quietly(NoisyExperts(n_clusters=3, seed=0, restarts=8), data)
    return est, items.iloc[test].reset_index(drop=True), labels[test], labels[train]


def test_predict_on_unseen_items(iris_split):
    est, new, labels, _ = iris_split
    new = new.assign(note="kept")
    pred = est.predict(new, ci=0.9)
    assert list(pred.columns) == list(new.columns) + ["cluster", "prob_0", "prob_1", "prob_2", "prob_low",
                                                      "prob_high"]
    probs = pred[["prob_0", "prob_1", "prob_2"]].to_numpy()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    assert np.array_equal(pred["cluster"].to_numpy(), probs.argmax(axis=1))
    # a MAP fit has no interval: NaN bounds (they used to equal the probability itself)
    assert pred["prob_low"].isna().all() and pred["prob_high"].isna().all()
    assert nmi(labels, pred["cluster"]) > 0.7
    # the unseen items go through the training scaling: predicting raw training rows reproduces their
    # features-only memberships
    train_ids = est.idata_.constant_data["item"].values[:5]
    items, _ = load_uci("iris")
    again = est.predict(items.set_index("id").loc[train_ids].reset_index())
    np.testing.assert_allclose(again[["prob_0", "prob_1", "prob_2"]].to_numpy(),
                               est.memberships(use_constraints=False).loc[train_ids, ["prob_0", "prob_1", "prob_2"]]
                               .to_numpy(), rtol=1e-10)
    with pytest.raises(InputError, match="items has no column 'petal_width_\\(cm\\)'"):
        est.predict(new.drop(columns="petal_width_(cm)"))
    with pytest.raises(InputError, match="already has a column 'cluster'"):
        est.predict(pred)


def test_memberships_in_blocks_equal_the_per_draw_average(wine_case1, monkeypatch):
    """Six jittered draws: the chunked summaries equal the plain average over draws of each rule (the
    default one, the links propagated through the graph, and the features alone)."""
    import copy

    import bayes_wsc.models.experts.model as experts_module
    import bayes_wsc.posterior as posterior_module
    from bayes_wsc.models.experts import constraint_informed_memberships, default_sweeps

    data, _, est = wine_case1
    rng = np.random.default_rng(0)
    fake = copy.copy(est)
    groups = inference.Groups(inference.groups_of(est.idata_))
    post = groups["posterior"].isel(draw=[0] * 6)
    post = post.assign_coords(draw=np.arange(6))
    post["W"] = post["W"] + 0.3 * rng.standard_normal(post["W"].shape)
    post["b"] = post["b"] + 0.3 * rng.standard_normal(post["b"].shape)
    groups["posterior"] = post
    fake.idata_ = groups
    W, b = post["W"].values[0], post["b"].values[0]
    alpha, beta = post["alpha"].values[0], post["beta"].values[0]
    sweeps = default_sweeps(data)
    assert sweeps > 0  # 500 pairs on wine's 178 items: many links per item
    linked = constraint_informed_memberships(data.features, W, b, alpha, beta, data, np.arange(data.n_items),
                                             sweeps=sweeps)
    plain = softmax(np.einsum("nd,sdk->snk", data.features, W) + b[:, None, :], axis=-1)
    whole = fake.memberships()
    for floats in (40, 2000):  # a few columns and a few draws at a time
        monkeypatch.setattr(experts_module, "CHUNK_FLOATS", floats)
        monkeypatch.setattr(posterior_module, "CHUNK_FLOATS", floats)
        for use, expected in ((True, linked), (False, plain)):
            got = fake.memberships(use_constraints=use)[["prob_0", "prob_1", "prob_2"]].to_numpy()
            np.testing.assert_allclose(got, expected.mean(axis=0), rtol=1e-10)
    np.testing.assert_allclose(whole[["prob_0", "prob_1", "prob_2"]].to_numpy(), linked.mean(axis=0), rtol=1e-10)
    assert not np.allclose(linked.mean(axis=0), plain.mean(axis=0))  # the links do move the memberships


def test_first_start_is_the_kmeans_clustering(wine_case1):
    """`kmeans_logits` clusters the items as k-means does; with `kmeans_start` (the default) it is the MAP's
    first start, and the other starts are the paper's random ones, the same draws as without it."""
    from sklearn.cluster import KMeans

    from bayes_wsc.maths.experts import kmeans_logits
    from bayes_wsc.models.experts import NoisyExperts, membership_probabilities, raw_coordinates

    data, _, _ = wine_case1
    W, b = kmeans_logits(data.features, 3, 4)
    kmeans = KMeans(n_clusters=3, n_init=3, random_state=4).fit_predict(data.features)
    assert nmi(kmeans, membership_probabilities(data.features, W, b).argmax(axis=1)) > 0.99
    with_kmeans = NoisyExperts(n_clusters=3, seed=4, restarts=3).initial_values(data)
    random_only = NoisyExperts(n_clusters=3, seed=4, restarts=3, kmeans_start=False).initial_values(data)
    for name, value in raw_coordinates(W, b, data.features, 1.0, 2.0).items():
        np.testing.assert_allclose(with_kmeans[0][name], value)
        assert not np.allclose(random_only[0][name], value)
    for ours, theirs in zip(with_kmeans[1:], random_only[1:]):
        for name in ours:
            np.testing.assert_array_equal(ours[name], theirs[name])
    with pytest.raises(InputError, match="kmeans_start must be True or False"):
        NoisyExperts(n_clusters=3, kmeans_start="yes").check_params()


def test_relabeling_keeps_rhat_low(wine_case1):
    """Chains started in four different labelings of the MAP: R-hat is huge before relabeling, ~1 after."""
    from bayes_wsc import inference
    from bayes_wsc.fit import Draws, fit_nuts
    from bayes_wsc.models.experts import NoisyExperts, raw_coordinates

    data, _, est = wine_case1
    model = est.model_
    post = est.idata_.posterior
    W, b = post["W"].values[0, 0], post["b"].values[0, 0]
    base = {rv.name: post[rv.name].values[0, 0] for rv in model.free_RVs}
    starts = []
    for perm in ([0, 1, 2], [1, 2, 0], [2, 0, 1], [1, 0, 2]):
        starts.append({**base, **raw_coordinates(W[:, perm], b[perm], data.features, est.prior_sd,
                                                 est.intercept_sd)})
    draws = fit_nuts(model, draws=100, tune=100, chains=4, seed=3, initvals=starts, progressbar=False)

    def worst_rhat(posterior):
        idata = inference.from_draws({k: posterior[k] for k in ("W", "b", "omega")},
                                     coords={"cluster": [0, 1, 2], "expert": list(data.expert_names),
                                             "feature": data.feature_names},
                                     dims={"W": ["feature", "cluster"], "b": ["cluster"], "omega": ["expert"]})
        conv = inference.convergence(idata, ["W", "b", "omega"])
        return max(c["rhat"] for c in conv.values())

    before = worst_rhat(draws.posterior)
    messages = NoisyExperts.align_draws(est, draws, Draws({"W": W[None, None], "b": b[None, None]}), data,
                                        free=["W_raw", "b_raw"], dims={})
    after = worst_rhat(draws.posterior)
    assert before > 1.5 and after < 1.05, (before, after)
    assert messages == [] and draws.info["relabelled_draws"] == 3 * 100
    # the free coordinates follow the relabelled W, b
    np.testing.assert_allclose(
        draws.posterior["W_raw"], raw_coordinates(draws.posterior["W"], draws.posterior["b"], data.features,
                                                  est.prior_sd, est.intercept_sd)["W_raw"], atol=1e-10)


def test_baselines_behave():
    """PCKMeans follows consistent constraints; the majority vote breaks ties toward cannot-link;
    eq. 8 recovers wine's classes with accurate experts."""
    items, labels = load_uci("wine")
    constraints, truth = simulate_uci_experts(labels, 400, (0.95, 0.95, 0.95), item_ids=items["id"], seed=4)
    data = PairwiseConstraints.from_frames(items, constraints)
    pairs, voted = majority_vote(data)
    truly_same = labels[pairs[:, 0]] == labels[pairs[:, 1]]
    assert np.mean(voted == truly_same) > 0.95
    tie = PairwiseConstraints.from_frames(items, pd.DataFrame({"expert": ["a", "b"], "i": ["wine0", "wine0"],
                                                               "j": ["wine1", "wine1"], "link": [1, 0]}))
    assert majority_vote(tie)[1].tolist() == [0]
    exact = pck_means(data.features, 3, pairs, truly_same.astype(int), seed=0)
    assert exact.violations == 0
    paper = point_estimate(data, 3, seed=0, restarts=3)
    assert nmi(labels, paper.labels(data.features)) > 0.9
    assert np.all((paper.alpha >= 0.5) & (paper.alpha <= 1) & (paper.beta >= 0.5) & (paper.beta <= 1))


# ---------------------------------------------------------------------- command line
@pytest.fixture(scope="module")
def cli_files(tmp_path_factory):
    path = tmp_path_factory.mktemp("experts_cli")
    items, labels = load_uci("iris")
    items = items.rename(columns={"id": "patient"})
    train = np.arange(0, 150, 3).tolist() + np.arange(1, 150, 3).tolist()
    new = np.arange(2, 150, 3)
    items.iloc[train].to_csv(path / "items.csv", index=False)
    items.iloc[new].drop(columns="patient").to_csv(path / "new.csv", index=False)
    constraints, _ = simulate_uci_experts(labels[train], 300, (0.95, 0.8, 0.6),
                                          item_ids=items["patient"].values[train], seed=1)
    constraints.to_csv(path / "constraints.csv", index=False)
    rng = np.random.default_rng(0)
    rows = []
    for expert, noise in (("clinician", 0.05), ("algorithm", 0.3)):
        for i in rng.choice(train, 40, replace=False):
            label = labels[i] if rng.random() > noise else rng.integers(3)
            rows.append((expert, items["patient"].iloc[i], f"type{label}"))
    pd.DataFrame(rows, columns=["expert", "id", "label"]).to_csv(path / "labels.csv", index=False)
    return path


def test_cli_fit_predict_summary_report(cli_files, capsys):
    path = cli_files
    code = cli(["fit", "experts", "--items", str(path / "items.csv"), "--constraints", str(path / "constraints.csv"),
                "--clusters", "3", "--id-col", "patient", "--restarts", "4", "--seed", "1", "--out",
                str(path / "fit.nc"), "--report", str(path / "report")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "100 items (" in out and "3 experts, 900 constraints on 300 pairs" in out
    assert out.index("omega[expert1]") < out.index("omega[expert3]") < out.index("alpha[expert1]")
    assert "Diagnostics" in out and (path / "report" / "report.html").exists()
    assert cli(["predict", str(path / "fit.nc"), "--items", str(path / "new.csv"), "--out",
                str(path / "pred.csv"), "--ci", "0.9"]) == 0
    pred = pd.read_csv(path / "pred.csv")
    assert len(pred) == 50 and list(pred.columns[-6:]) == ["cluster", "prob_0", "prob_1", "prob_2", "prob_low",
                                                           "prob_high"]
    assert cli(["summary", str(path / "fit.nc")]) == 0
    assert "model: experts" in capsys.readouterr().out
    assert cli(["report", str(path / "fit.nc"), "--out", str(path / "again")]) == 0
    html = (path / "again" / "report.html").read_text()
    assert "Experts, most reliable first" in html and "pairwise composite likelihood" in html

    from bayes_wsc.estimator import load

    est = load(path / "fit.nc")
    assert est.get_params()["restarts"] == 4 and est.n_clusters == 3
    data = est.data_from_fit()
    assert data.n_constraints == 900 and data.feature_names[0] == "sepal_length_(cm)"


def test_cli_expert_labels(cli_files, capsys):
    path = cli_files
    code = cli(["fit", "experts", "--items", str(path / "items.csv"), "--expert-labels", str(path / "labels.csv"),
                "--clusters", "3", "--id-col", "patient", "--restarts", "3", "--max-pairs-per-expert", "500",
                "--out", str(path / "labels_fit.nc")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "2 experts, 1000 constraints" in out
    assert out.index("omega[clinician]") < out.index("omega[algorithm]")


CLI_BAD = {
    "self-pair": (lambda c: c.assign(j=np.where(np.arange(len(c)) == 4, c["i"], c["j"])), [],
                  "constraints row 5 pairs item"),
    "unknown id": (lambda c: c.assign(i=np.where(np.arange(len(c)) == 2, "nobody", c["i"])), [],
                   "item id 'nobody' (row 3), which is not in items"),
    "link not 0/1": (lambda c: c.assign(link=np.where(np.arange(len(c)) == 1, 7, c["link"])), [],
                     "'link' has value 7 (row 2)"),
    "both links": (lambda c: pd.concat([c, c.head(1).assign(link=1 - c["link"].iloc[0])]), [], "both must-link"),
    "too few items for K": (lambda c: c, ["--clusters", "101"], "there are 100 items but 101 clusters"),
    "K below 2": (lambda c: c, ["--clusters", "1"], "K must be a whole number >= 2, got 1"),
    "unknown feature": (lambda c: c, ["--features", "petal_girth"], "items has no column 'petal_girth'"),
    "accuracy prior": (lambda c: c, ["--accuracy-prior", "2"], "expected two numbers A,B"),
}


@pytest.mark.parametrize("case", list(CLI_BAD))
def test_cli_bad_input(case, cli_files, tmp_path, capsys):
    mutate, extra, expected = CLI_BAD[case]
    constraints = mutate(pd.read_csv(cli_files / "constraints.csv"))
    constraints.to_csv(tmp_path / "c.csv", index=False)
    args = ["fit", "experts", "--items", str(cli_files / "items.csv"), "--constraints", str(tmp_path / "c.csv"),
            "--id-col", "patient", "--out", str(tmp_path / "fit.nc")]
    if "--clusters" not in extra:
        args += ["--clusters", "3"]
    assert cli(args + extra) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "fit.nc").exists()


@pytest.mark.parametrize("column, value, expected", [
    ("petal_length_(cm)", "long", "non-numeric value 'long' (row 2)"),
    ("petal_length_(cm)", np.nan, "'petal_length_(cm)' has a missing value (row 2)"),
])
def test_cli_bad_features(cli_files, tmp_path, capsys, column, value, expected):
    items = pd.read_csv(cli_files / "items.csv")
    items[column] = items[column].astype(object)
    items.loc[1, column] = value
    items.to_csv(tmp_path / "items.csv", index=False)
    code = cli(["fit", "experts", "--items", str(tmp_path / "items.csv"), "--constraints",
                str(cli_files / "constraints.csv"), "--id-col", "patient", "--clusters", "3", "--out",
                str(tmp_path / "fit.nc")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and expected in err and len(err.splitlines()) == 1, err


@pytest.mark.slow
def test_cli_nuts_end_to_end(cli_files, tmp_path, capsys):
    """--method nuts from the command line: 4 chains started at the MAP and relabelled, R-hat near 1 on the
    reported quantities, intervals in the summary and in the predictions."""
    path = cli_files
    code = cli(["fit", "experts", "--items", str(path / "items.csv"), "--constraints", str(path / "constraints.csv"),
                "--clusters", "3", "--id-col", "patient", "--restarts", "4", "--seed", "2", "--method", "nuts",
                "--draws", "300", "--tune", "300", "--chains", "4", "--out", str(tmp_path / "fit.nc")])
    out = capsys.readouterr().out
    assert code == 0, out
    from bayes_wsc.estimator import load

    est = load(tmp_path / "fit.nc")
    summary = est.summary(var_names=["omega", "alpha", "beta", "b", "W"])
    assert summary["r_hat"].max() < 1.05, summary["r_hat"].max()
    table = est.expert_table(ci=0.9)
    assert list(table.index) == ["expert1", "expert2", "expert3"]
    assert np.all(table["omega_low"] < table["omega"]) and np.all(table["omega"] < table["omega_high"])
    assert cli(["predict", str(tmp_path / "fit.nc"), "--items", str(path / "new.csv"), "--out",
                str(tmp_path / "pred.csv")]) == 0
    pred = pd.read_csv(tmp_path / "pred.csv")
    assert np.all(pred["prob_low"] <= pred["prob_high"]) and (pred["prob_high"] - pred["prob_low"]).max() > 0
