"""Simulated experts for seed 002: the paper's UCI protocol (Sec. 3.2) and data from the model itself.

UCI protocol: draw q must-link pairs and q cannot-link pairs from the true
classes (2q constraints in all); every expert rates this common set, and
expert m flips floor(q (1 - alpha_m)) of the must-links to cannot-links and
floor(q (1 - beta_m)) of the cannot-links to must-links, chosen at random.
The data sets are the ones that ship with scikit-learn (no download).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import softmax

from bayes_wsc.data.tables import FeatureScaling
from bayes_wsc.datasets.uci import load_uci, uci_class_names  # noqa: F401  (the Sec. 3.2 data sets)
from bayes_wsc.errors import InputError

#: Sec. 3.2, Case 1: experts of unequal accuracy (alpha = beta)
CASE_1 = (0.95, 0.85, 0.75, 0.65, 0.55)
#: Sec. 3.2, Case 2: five good experts of equal accuracy
CASE_2 = (0.9, 0.9, 0.9, 0.9, 0.9)
UCI_DATASETS = ("breast_cancer", "wine", "iris")


@dataclass
class ExpertsTruth:
    """What generated simulated constraints.

    labels : (n,) true cluster of every item.
    alpha, beta : (M,) the experts' nominal sensitivity and specificity.
    realized_alpha, realized_beta : (M,) the share of true must-links (cannot-links) each expert
        kept, as the data actually hold them.
    W, b : the clustering parameters (zero-sum over clusters) when simulated from the model, else None;
        on the standardized features (the fit's `W`, `b`) unless `weight_scale` is "separation".
    weight_scale : how W, b were drawn: "prior" (the fit's prior, `prior_sd` and `intercept_sd`),
        "separation" (sd `separation` on the raw features, b = 0), or None (not simulated from the model).
    """

    labels: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    realized_alpha: np.ndarray
    realized_beta: np.ndarray
    W: np.ndarray | None = None
    b: np.ndarray | None = None
    weight_scale: str | None = None

    @property
    def omega(self) -> np.ndarray:
        """The experts' weights log(alpha beta / ((1 - alpha)(1 - beta))) (Sec. 2.4)."""
        return omega_of(self.alpha, self.beta)


def omega_of(alpha, beta) -> np.ndarray:
    alpha, beta = np.asarray(alpha, dtype=float), np.asarray(beta, dtype=float)
    return np.log(alpha * beta / ((1 - alpha) * (1 - beta)))


def expert_names(n: int) -> list[str]:
    return [f"expert{m + 1}" for m in range(n)]


def sample_pairs(labels: np.ndarray, q: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """q distinct pairs (i < j) from the same class and q from different classes, uniformly at random."""
    labels = np.asarray(labels)
    n = labels.size
    counts = np.bincount(pd.factorize(labels)[0])
    available_same = int(np.sum(counts * (counts - 1) // 2))
    available_diff = n * (n - 1) // 2 - available_same
    if q > available_same or q > available_diff:
        raise InputError(f"{q} must-link and {q} cannot-link pairs were asked for, but the classes give only "
                         f"{available_same} and {available_diff}")
    found = {True: {}, False: {}}  # insertion-ordered sets of pair keys
    while len(found[True]) < q or len(found[False]) < q:
        i = rng.integers(0, n, 4 * q + 64)
        j = rng.integers(0, n, 4 * q + 64)
        keep = i != j
        lo, hi = np.minimum(i, j)[keep], np.maximum(i, j)[keep]
        for a, b in zip(lo.tolist(), hi.tolist()):
            bucket = found[bool(labels[a] == labels[b])]
            if len(bucket) < q:
                bucket[(a, b)] = None
    must = np.array(list(found[True]), dtype=np.int64).reshape(-1, 2)
    cannot = np.array(list(found[False]), dtype=np.int64).reshape(-1, 2)
    return must, cannot


def simulate_uci_experts(
    labels: np.ndarray,
    n_constraints: int,
    alpha=CASE_1,
    beta=None,
    *,
    item_ids=None,
    seed: int | None = 0,
) -> tuple[pd.DataFrame, ExpertsTruth]:
    """The paper's protocol (Sec. 3.2): rows expert, i, j, link for 2q = `n_constraints` common pairs.

    alpha, beta : the experts' sensitivities and specificities (beta defaults to alpha, as in the
    paper's Case 1 and Case 2). Expert m turns floor(q (1 - alpha_m)) of the q must-links into
    cannot-links and floor(q (1 - beta_m)) of the q cannot-links into must-links.
    """
    labels = np.asarray(labels)
    alpha = np.asarray(alpha, dtype=float)
    beta = alpha.copy() if beta is None else np.asarray(beta, dtype=float)
    if alpha.shape != beta.shape or alpha.ndim != 1 or alpha.size == 0:
        raise InputError("alpha and beta must be equally long lists, one value per expert")
    if ((alpha < 0) | (alpha > 1) | (beta < 0) | (beta > 1)).any():
        raise InputError("alpha and beta must be probabilities")
    if n_constraints < 2 or n_constraints % 2:
        raise InputError(f"n_constraints must be an even number >= 2 (q must-links and q cannot-links), "
                         f"got {n_constraints!r}")
    q = n_constraints // 2
    rng = np.random.default_rng(seed)
    must, cannot = sample_pairs(labels, q, rng)
    ids = np.asarray(item_ids if item_ids is not None else np.arange(labels.size)).astype(str)
    names = expert_names(alpha.size)
    frames = []
    realized_alpha, realized_beta = np.empty(alpha.size), np.empty(alpha.size)
    for m, name in enumerate(names):
        n_flip_must = int(np.floor(q * (1 - alpha[m]) + 1e-9))
        n_flip_cannot = int(np.floor(q * (1 - beta[m]) + 1e-9))
        must_link = np.ones(q, dtype=np.int64)
        must_link[rng.choice(q, n_flip_must, replace=False)] = 0
        cannot_link = np.zeros(q, dtype=np.int64)
        cannot_link[rng.choice(q, n_flip_cannot, replace=False)] = 1
        pairs = np.concatenate([must, cannot])
        frames.append(pd.DataFrame({"expert": name, "i": ids[pairs[:, 0]], "j": ids[pairs[:, 1]],
                                    "link": np.concatenate([must_link, cannot_link])}))
        realized_alpha[m] = 1 - n_flip_must / q
        realized_beta[m] = 1 - n_flip_cannot / q
    truth = ExpertsTruth(labels=labels, alpha=alpha, beta=beta, realized_alpha=realized_alpha,
                         realized_beta=realized_beta)
    return pd.concat(frames, ignore_index=True), truth


def simulate_experts_model(
    n_items: int = 300,
    n_features: int = 4,
    n_clusters: int = 3,
    alpha=(0.95, 0.85, 0.75, 0.65),
    beta=(0.9, 0.8, 0.7, 0.6),
    pairs_per_expert: int = 1000,
    *,
    prior_sd: float = 1.0,
    intercept_sd: float = 2.0,
    separation: float | None = None,
    same_cluster: str = "item",
    common_pairs: bool = False,
    seed: int | None = 0,
) -> tuple[pd.DataFrame, pd.DataFrame, ExpertsTruth]:
    """Data drawn from the model itself: x ~ N(0, I), z ~ softmax(x W + b), and each expert's
    link on random pairs ~ Bernoulli(alpha if z_i = z_j else 1 - beta).

    W and b are drawn from the fit's prior (`NoisyExperts`' defaults prior_sd = 1, intercept_sd = 2):
    every entry of a full W ~ N(0, prior_sd^2) and b ~ N(0, intercept_sd^2), then centred over the
    clusters (the zero-sum W, b the fit reports; the softmax is unchanged), acting on the features
    standardized as the fit standardizes them, so that the truth's W and b are the fit's `W` and `b`.
    With `separation`, W is instead drawn at sd `separation` on the raw features and b = 0: clear
    clusters, not a draw from the fit's prior (the scale the package's checks and benchmarks were
    measured at; a fit's intervals are not expected to cover that W at their nominal rate).
    alpha and beta are the values given, not draws from their prior.
    `same_cluster`: "item" (the paper's model) draws each item's cluster once, so pairs that share an
    item are dependent, which the fit's pairwise composite likelihood ignores (its intervals are then
    narrower than the truth warrants: benchmarks/RESULTS.md); "pair" draws each rated pair's "same
    cluster" once from sum_k p_ik p_jk, shared by the experts who rate it, the data for which the
    fit's likelihood is exact (`labels` are then one draw of z that the links do not use).
    Each expert rates `pairs_per_expert` distinct random pairs, its own (or, with `common_pairs`,
    the same set for all). Returns (items table, constraints table, truth).
    """
    rng = np.random.default_rng(seed)
    alpha, beta = np.asarray(alpha, dtype=float), np.asarray(beta, dtype=float)
    if alpha.shape != beta.shape or alpha.ndim != 1:
        raise InputError("alpha and beta must be equally long lists, one value per expert")
    if same_cluster not in ("item", "pair"):
        raise InputError(f"same_cluster must be 'item' or 'pair', got {same_cluster!r}")
    if n_items > 3000:
        raise InputError("simulate_experts_model enumerates all pairs; it supports up to 3000 items")
    max_pairs = n_items * (n_items - 1) // 2
    if pairs_per_expert > max_pairs:
        raise InputError(f"{pairs_per_expert} pairs per expert asked for, but {n_items} items have {max_pairs}")
    X = rng.standard_normal((n_items, n_features))
    if separation is None:
        _, features = FeatureScaling.fit(X, [f"x{d + 1}" for d in range(n_features)], "simulated items")
        W = prior_sd * rng.standard_normal((n_features, n_clusters))
        b = intercept_sd * rng.standard_normal(n_clusters)
        b -= b.mean()
    else:
        features = X
        W = separation * rng.standard_normal((n_features, n_clusters))
        b = np.zeros(n_clusters)
    W -= W.mean(axis=1, keepdims=True)
    probs = softmax(features @ W + b, axis=1)
    z = np.array([rng.choice(n_clusters, p=p) for p in probs])
    ids = np.array([f"item{i}" for i in range(n_items)])
    items = pd.DataFrame(X, columns=[f"x{d + 1}" for d in range(n_features)])
    items.insert(0, "id", ids)

    all_i, all_j = np.triu_indices(n_items, 1)

    def random_pairs():
        chosen = rng.choice(max_pairs, pairs_per_expert, replace=False)
        return all_i[chosen], all_j[chosen]

    shared = random_pairs() if common_pairs else None
    names = expert_names(alpha.size)
    if same_cluster == "item":  # each item's cluster z drawn once: pairs and links expert by expert
        rated = []
        for m in range(alpha.size):
            i, j = shared if common_pairs else random_pairs()
            rated.append((i, j, z[i] == z[j], rng.random(i.size), rng.random(i.size)))
    else:  # "pair": each rated pair's "same cluster" drawn once from sum_k p_ik p_jk, shared by its experts
        pairs = [shared if common_pairs else random_pairs() for _ in range(alpha.size)]
        keys = np.concatenate([i * n_items + j for i, j in pairs])
        unique, where = np.unique(keys, return_inverse=True)
        gamma = (probs[unique // n_items] * probs[unique % n_items]).sum(axis=1)
        same_pair = (rng.random(unique.size) < gamma)[where]
        bounds = np.cumsum([0] + [i.size for i, _ in pairs])
        rated = [(i, j, same_pair[bounds[m]:bounds[m + 1]], rng.random(i.size), rng.random(i.size))
                 for m, (i, j) in enumerate(pairs)]
    frames = []
    realized_alpha, realized_beta = np.empty(alpha.size), np.empty(alpha.size)
    for m, (name, (i, j, same, u_must, u_cannot)) in enumerate(zip(names, rated)):
        link = np.where(same, u_must < alpha[m], u_cannot >= beta[m]).astype(np.int64)
        frames.append(pd.DataFrame({"expert": name, "i": ids[i], "j": ids[j], "link": link}))
        realized_alpha[m] = link[same].mean() if same.any() else np.nan
        realized_beta[m] = 1 - link[~same].mean() if (~same).any() else np.nan
    truth = ExpertsTruth(labels=z, alpha=alpha, beta=beta, realized_alpha=realized_alpha,
                         realized_beta=realized_beta, W=W, b=b,
                         weight_scale="prior" if separation is None else "separation")
    return items, pd.concat(frames, ignore_index=True), truth


def truth_covered(W_draws: np.ndarray, b_draws: np.ndarray, truth: ExpertsTruth, ci: float = 0.9) -> np.ndarray:
    """Which free entries of the true [b; W] the equal-tailed `ci` intervals of a fit's draws cover.

    W_draws (draw, feature, cluster) and b_draws (draw, cluster) are the fit's zero-sum W and b; the
    fit's clusters are first matched to the truth's (Hungarian, on the squared distance between the
    posterior means of the columns of [b; W] and the true ones), since clusters are exchangeable.
    The last K - 1 clusters' entries are returned, (d + 1) (K - 1) booleans: the first cluster's
    follow from them (zero sum).
    """
    from scipy.optimize import linear_sum_assignment

    draws = np.concatenate([b_draws[:, None, :], W_draws], axis=1)  # (draw, 1 + d, K)
    true = np.vstack([truth.b[None, :], truth.W])
    cost = ((draws.mean(axis=0)[:, :, None] - true[:, None, :]) ** 2).sum(axis=0)  # fit cluster x true cluster
    fit_cluster, true_cluster = linear_sum_assignment(cost)
    matched = draws[:, :, fit_cluster[np.argsort(true_cluster)]]
    low, high = np.quantile(matched, [(1 - ci) / 2, (1 + ci) / 2], axis=0)
    return ((low <= true) & (true <= high))[:, 1:].ravel()


def example(seed: int | None = 0):
    """Small data of the model: 40 items with 2 features in 2 clusters (W at `separation` 3: clear
    clusters), three experts (alpha = beta = 0.9, 0.8, 0.7) rating 80 pairs each. The registry's
    example of the model (`registry.ModelSpec.example`), for tests and trials."""
    from bayes_wsc.data.pairwise import PairwiseConstraints

    accuracy = (0.9, 0.8, 0.7)
    items, constraints, _ = simulate_experts_model(40, 2, 2, accuracy, accuracy, 80, separation=3.0, seed=seed)
    return PairwiseConstraints.from_frames(items, constraints)


def sbc_case(
    n_items: int = 30,
    n_features: int = 2,
    n_clusters: int = 2,
    n_experts: int = 3,
    pairs_per_expert: int = 60,
    *,
    prior_sd: float = 1.0,
    intercept_sd: float = 2.0,
    accuracy_a: float = 2.0,
    accuracy_b: float = 2.0,
    restarts: int = 4,
    draws: int = 500,
    tune: int = 500,
    chains: int = 2,
    target_accept: float = 0.8,
    n_pairs_ranked: int = 3,
    seed: int = 0,
):
    """Simulation-based calibration of `NoisyExperts` (see `bayes_wsc.sbc`).

    Fixed across simulations: the items' features (x ~ N(0, I), standardized) and which expert
    rates which pairs (`pairs_per_expert` distinct random pairs each). Drawn per simulation, from
    the prior as the model states it rather than from its sampling coordinates: the K columns of a
    full W ~ N(0, prior_sd^2) and of b ~ N(0, intercept_sd^2) independently (the paper's penalty)
    and alpha, beta = 0.5 + 0.5 Beta(a, b); the free W_raw, b_raw are their image under the
    model's reference coding, rotation and Cholesky factors (`raw_coordinates`). So the check
    covers that the non-centred, reference-coded prior of the model is the exchangeable one it
    claims to be. Every unique pair then draws "same cluster" once, ~ Bernoulli(gamma) with
    gamma = sum_k p_ik p_jk from softmax(x W + b) in NumPy, and each expert who rated it links it
    with probability alpha_m if same, 1 - beta_m if not: the model's likelihood is a pairwise
    composite likelihood (the pair's clusters summed out once for all its experts), exact for
    data generated this way (drawing one z per item instead would test the composite
    approximation, not the implementation).

    Ranked, all invariant to relabeling the clusters (the estimator relabels draws against its
    MAP; the truth has its own labels, so relabelled W or b would not be comparable): every
    expert's alpha, beta and omega; the co-clustering probability `coclustering[p]` of
    `n_pairs_ranked` fixed item pairs; and `W_norm`, the Frobenius norm of the zero-sum [b; W].
    """
    from scipy.special import softmax as _softmax

    from bayes_wsc.data.pairwise import PairwiseConstraints
    from bayes_wsc.models.experts.model import NoisyExperts, raw_coordinates
    from bayes_wsc.sbc import SBCCase

    rng = np.random.default_rng([seed, 2017])
    x = rng.standard_normal((n_items, n_features))
    ids = np.array([f"item{i}" for i in range(n_items)])
    items = pd.DataFrame(x, columns=[f"x{d + 1}" for d in range(n_features)])
    items.insert(0, "id", ids)
    all_i, all_j = np.triu_indices(n_items, 1)
    if pairs_per_expert > all_i.size:
        raise InputError(f"{pairs_per_expert} pairs per expert asked for, but {n_items} items have {all_i.size}")
    frames = []
    for name in expert_names(n_experts):
        chosen = rng.choice(all_i.size, pairs_per_expert, replace=False)
        frames.append(pd.DataFrame({"expert": name, "i": ids[all_i[chosen]], "j": ids[all_j[chosen]],
                                    "link": rng.integers(0, 2, pairs_per_expert)}))
    template = PairwiseConstraints.from_frames(items, pd.concat(frames, ignore_index=True))
    ranked_pairs = np.array([[0, 1], [2, 3], [4, 5]][:n_pairs_ranked], dtype=np.int64)

    def draw_prior(draw_rng):
        W = prior_sd * draw_rng.standard_normal((n_features, n_clusters))
        b = intercept_sd * draw_rng.standard_normal(n_clusters)
        draw = raw_coordinates(W, b, template.features, prior_sd, intercept_sd)
        draw["alpha_raw"] = draw_rng.beta(accuracy_a, accuracy_b, n_experts)
        draw["beta_raw"] = draw_rng.beta(accuracy_a, accuracy_b, n_experts)
        draw["full_W"], draw["full_b"] = W, b
        return draw

    def simulate(draw, sim_rng):
        probs = _softmax(template.features @ draw["full_W"] + draw["full_b"], axis=1)
        gamma = (probs[template.pairs[:, 0]] * probs[template.pairs[:, 1]]).sum(axis=1)
        same = (sim_rng.random(gamma.size) < gamma)[template.cell_pair]  # once per pair, shared by its experts
        alpha = 0.5 + 0.5 * draw["alpha_raw"][template.cell_expert]
        beta = 0.5 + 0.5 * draw["beta_raw"][template.cell_expert]
        p_link = np.where(same, alpha, 1 - beta)
        link = (sim_rng.random(p_link.size) < p_link).astype(np.int8)
        return PairwiseConstraints(template.item_ids, template.features, template.scaling, template.expert_names,
                                   template.pairs, template.cell_pair, template.cell_expert, link,
                                   dict(template.settings))

    class SBCNoisyExperts(NoisyExperts):
        """NoisyExperts with label-invariant Deterministics to rank (the model itself unchanged)."""

        def build_model(self, data):
            import pymc as pm
            import pytensor.tensor as pt

            model = super().build_model(data)
            with model:
                W, b = model["W"], model["b"]
                logits = pt.dot(data.features[ranked_pairs.ravel()], W) + b
                probs = pt.special.softmax(logits, axis=-1).reshape((len(ranked_pairs), 2, n_clusters))
                pm.Deterministic("coclustering", (probs[:, 0] * probs[:, 1]).sum(axis=-1))
                pm.Deterministic("W_norm", pt.sqrt(pt.sum(W**2) + pt.sum(b**2)))
            return model

    def estimator(est_seed):
        return SBCNoisyExperts(n_clusters=n_clusters, prior_sd=prior_sd, intercept_sd=intercept_sd,
                               accuracy_a=accuracy_a, accuracy_b=accuracy_b, restarts=restarts, method="nuts",
                               draws=draws, tune=tune, chains=chains, seed=est_seed, target_accept=target_accept,
                               progressbar=False)

    quantities = [f"{name}[{m}]" for name in ("alpha", "beta", "omega") for m in range(n_experts)]
    quantities += [f"coclustering[{p}]" for p in range(len(ranked_pairs))] + ["W_norm"]
    description = (f"noisy experts, n = {n_items} items, d = {n_features} features, K = {n_clusters}, "
                   f"M = {n_experts} experts x {pairs_per_expert} pairs, constraints drawn from the pairwise "
                   f"likelihood; prior sd {prior_sd} (W), {intercept_sd} (b), alpha, beta = 0.5 + 0.5 "
                   f"Beta({accuracy_a}, {accuracy_b}); MAP {restarts} restarts, NUTS {chains} chains x "
                   f"({tune} tune + {draws} draws). Ranked (label-invariant): alpha, beta, omega of every "
                   f"expert, co-clustering probability of {len(ranked_pairs)} fixed pairs, |[b; W]|")
    return SBCCase("experts", template, simulate, estimator, quantities, draw_prior=draw_prior,
                   description=description)
