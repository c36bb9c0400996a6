"""Baselines for clustering from several uncertain experts (seed 002, Sec. 2.5 and 3.1).

* `kmeans_labels`: KMeans on the features, ignoring the experts.
* `majority_vote`: one constraint per pair, must-link when more than half of the experts who rated
  it said must-link, cannot-link otherwise (the paper's rule, Sec. 3.1).
* `pck_means`: Pairwise Constrained KMeans (Basu, Banerjee & Mooney 2004), the soft-constraint
  k-means that majority-vote constraints are fed to (COP-KMeans needs consistent constraints, which
  noisy majority votes rarely are).
* `point_estimate`: the paper's own objective, eq. 8, minimized by alternating L-BFGS over W, b and
  (alpha, beta) as in Sec. 2.5, with 20 random restarts.

All work on the (standardized) features of a `PairwiseConstraints` container.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.optimize import minimize
from scipy.sparse.csgraph import connected_components
from scipy.special import softmax
from threadpoolctl import threadpool_limits

from bayes_wsc.data.pairwise import PairwiseConstraints
from bayes_wsc.errors import InputError

#: alpha, beta live in [0.5, 1 - ALPHA_EPS] in the point estimate (log(1 - alpha) must stay finite)
ALPHA_EPS = 1e-9


# ---------------------------------------------------------------------- KMeans
def kmeans_labels(features: np.ndarray, n_clusters: int, *, seed: int | None = 0, n_init: int = 10) -> np.ndarray:
    """KMeans (scikit-learn, k-means++ with `n_init` restarts) on the features."""
    from sklearn.cluster import KMeans

    return KMeans(n_clusters=n_clusters, n_init=n_init, random_state=seed).fit_predict(features)


# ---------------------------------------------------------------------- majority vote + PCKMeans
def majority_vote(data: PairwiseConstraints) -> tuple[np.ndarray, np.ndarray]:
    """(pairs (P, 2) item indices, link (P,)): must-link when more than half of the experts who
    rated the pair gave must-link, cannot-link otherwise (a tie is a cannot-link, as in the paper)."""
    votes = data.pair_votes()
    return data.pairs, (votes[:, 1] > votes.sum(axis=1) / 2).astype(np.int8)


@dataclass
class PCKMeansResult:
    labels: np.ndarray
    centers: np.ndarray
    objective: float
    violations: int
    iterations: int
    weight: float


def pck_means(
    features: np.ndarray,
    n_clusters: int,
    pairs: np.ndarray,
    link: np.ndarray,
    *,
    weight: float | None = None,
    seed: int | None = 0,
    n_init: int = 10,
    max_iter: int = 100,
) -> PCKMeansResult:
    """Pairwise Constrained KMeans (Basu, Banerjee & Mooney 2004).

    Minimizes sum_i 1/2 ||x_i - mu_{l_i}||^2 + w * (violated must-links + violated cannot-links)
    by iterated conditional modes: each item in turn (random order) takes the cluster that
    minimizes its distance plus the penalties given its partners' current clusters, then the
    centres are updated. The first start uses the paper's initialization (centres of the K
    largest must-link neighbourhoods, the connected components of the must-link graph, filled up
    by k-means++); the others are k-means++. The best objective of `n_init` starts is kept.

    weight : w, the cost of one violated constraint; default: the mean of 1/2 ||x - mu||^2 per
        item at the KMeans solution, so that breaking a constraint costs as much as a typical
        item's distortion.
    """
    features = np.asarray(features, dtype=float)
    n = features.shape[0]
    if n < n_clusters:
        raise InputError(f"there are {n} items but {n_clusters} clusters")
    rng = np.random.default_rng(seed)
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    link = np.asarray(link).astype(bool)
    if weight is None:
        from sklearn.cluster import KMeans

        km = KMeans(n_clusters=n_clusters, n_init=3, random_state=seed).fit(features)
        weight = float(km.inertia_ / (2 * n))
    ml = _adjacency(pairs[link], n)
    cl = _adjacency(pairs[~link], n)
    best = None
    for start in range(n_init):
        centers = (_neighbourhood_centres(features, n_clusters, ml, rng) if start == 0
                   else _kmeans_pp(features, n_clusters, rng))
        result = _pck_run(features, centers, ml, cl, weight, rng, max_iter)
        if best is None or result.objective < best.objective:
            best = result
    return best


def _adjacency(pairs: np.ndarray, n: int) -> sparse.csr_matrix:
    data = np.ones(2 * len(pairs))
    rows = np.concatenate([pairs[:, 0], pairs[:, 1]])
    cols = np.concatenate([pairs[:, 1], pairs[:, 0]])
    return sparse.csr_matrix((data, (rows, cols)), shape=(n, n))


def _kmeans_pp(features: np.ndarray, k: int, rng, first: np.ndarray | None = None) -> np.ndarray:
    """k-means++ seeding, continuing from the centres in `first` if given."""
    centers = [] if first is None else list(first)
    if not centers:
        centers.append(features[rng.integers(features.shape[0])])
    while len(centers) < k:
        d2 = np.min(((features[:, None, :] - np.asarray(centers)[None]) ** 2).sum(-1), axis=1)
        total = d2.sum()
        index = rng.choice(features.shape[0], p=d2 / total) if total > 0 else rng.integers(features.shape[0])
        centers.append(features[index])
    return np.asarray(centers)


def _neighbourhood_centres(features, k, ml, rng) -> np.ndarray:
    """Centres of the K largest neighbourhoods (must-link components with at least two items)."""
    _, component = connected_components(ml, directed=False)
    sizes = np.bincount(component)
    large = [c for c in np.argsort(-sizes, kind="stable") if sizes[c] >= 2][:k]
    first = [features[component == c].mean(axis=0) for c in large]
    return _kmeans_pp(features, k, rng, first=np.asarray(first) if first else None)


def _pck_run(features, centers, ml, cl, w, rng, max_iter) -> PCKMeansResult:
    n, k = features.shape[0], centers.shape[0]
    centers = centers.copy()
    labels = np.full(n, -1)
    ml_ptr, ml_idx, cl_ptr, cl_idx = ml.indptr, ml.indices, cl.indptr, cl.indices
    iterations = 0
    for iterations in range(1, max_iter + 1):
        distortion = 0.5 * ((features[:, None, :] - centers[None]) ** 2).sum(-1)  # (n, K)
        changed = 0
        for i in rng.permutation(n):
            cost = distortion[i].copy()
            partners = labels[ml_idx[ml_ptr[i]:ml_ptr[i + 1]]]
            partners = partners[partners >= 0]
            if partners.size:  # a must-link is violated by every cluster but the partner's
                cost += w * (partners.size - np.bincount(partners, minlength=k))
            partners = labels[cl_idx[cl_ptr[i]:cl_ptr[i + 1]]]
            partners = partners[partners >= 0]
            if partners.size:
                cost += w * np.bincount(partners, minlength=k)
            new = int(np.argmin(cost))
            changed += new != labels[i]
            labels[i] = new
        for c in range(k):
            members = labels == c
            if members.any():
                centers[c] = features[members].mean(axis=0)
        if changed == 0:
            break
    distortion = 0.5 * ((features - centers[labels]) ** 2).sum()
    violations = _violations(labels, ml, cl)
    return PCKMeansResult(labels, centers, float(distortion + w * violations), violations, iterations, w)


def _violations(labels, ml, cl) -> int:
    ml_rows, ml_cols = sparse.triu(ml, 1).nonzero()
    cl_rows, cl_cols = sparse.triu(cl, 1).nonzero()
    return int(np.sum(labels[ml_rows] != labels[ml_cols]) + np.sum(labels[cl_rows] == labels[cl_cols]))


def majority_vote_pckmeans(data: PairwiseConstraints, n_clusters: int, *, seed: int | None = 0,
                           weight: float | None = None) -> PCKMeansResult:
    """The semi-supervised baseline of Sec. 3.1: majority-vote constraints fed to PCKMeans."""
    pairs, link = majority_vote(data)
    return pck_means(data.features, n_clusters, pairs, link, weight=weight, seed=seed)


# ---------------------------------------------------------------------- the paper's point estimate (eq. 8)
@dataclass
class PointEstimate:
    """The minimizer of eq. 8 over the restarts: W (d, K), b (K,), alpha, beta (M,)."""

    W: np.ndarray
    b: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    objective: float
    outer_iterations: int
    converged: bool
    lam: float
    restart_objectives: list[float]

    @property
    def omega(self) -> np.ndarray:
        a, b = self.alpha, self.beta
        return np.log(a) + np.log(b) - np.log1p(-a) - np.log1p(-b)

    def memberships(self, features: np.ndarray) -> np.ndarray:
        return softmax(np.asarray(features) @ self.W + self.b, axis=1)

    def labels(self, features: np.ndarray) -> np.ndarray:
        return self.memberships(features).argmax(axis=1)

    def linked_memberships(self, data: PairwiseConstraints, sweeps: int = 0) -> np.ndarray:
        """(n, K) memberships of the items of `data` conditioned also on their own pairs' links (or, with
        `sweeps`, on the links propagated through the constraint graph), at this estimate: the rules of
        `NoisyExperts.memberships()`, for a like-for-like comparison."""
        from bayes_wsc.maths.experts import constraint_informed_memberships

        return constraint_informed_memberships(data.features, self.W[None], self.b[None], self.alpha[None],
                                               self.beta[None], data, np.arange(data.n_items), sweeps=sweeps)[0]


class _Eq8:
    """Eq. 8 and its gradients: -(1/N) sum_cells [gamma log p(S | same) + (1 - gamma) log p(S | diff)]
    + lam ||W||_F^2, on the items that appear in a constraint."""

    def __init__(self, data: PairwiseConstraints, lam: float):
        self.linked = data.linked_items
        self.x = data.features[self.linked]
        local = np.searchsorted(self.linked, data.pairs)
        self.first, self.second = local[:, 0], local[:, 1]
        self.cell_pair, self.cell_expert = data.cell_pair, data.cell_expert
        self.s = data.link.astype(bool)
        self.n_pairs, self.n_experts = data.n_pairs, data.n_experts
        self.n = data.n_constraints
        self.lam = lam

    def gamma(self, W, b):
        logits = self.x @ W + b
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        pi, pj = probs[self.first], probs[self.second]
        return pi, pj, (pi * pj).sum(axis=1)

    def log_terms(self, alpha, beta):
        """log p(S | same cluster) and log p(S | different clusters) of every constraint."""
        e, s = self.cell_expert, self.s
        same = np.where(s, np.log(alpha)[e], np.log1p(-alpha)[e])
        diff = np.where(s, np.log1p(-beta)[e], np.log(beta)[e])
        return same, diff

    def value(self, W, b, alpha, beta) -> float:
        gamma = self.gamma(W, b)[2][self.cell_pair]
        same, diff = self.log_terms(alpha, beta)
        return float(-(gamma * same + (1 - gamma) * diff).sum() / self.n + self.lam * np.sum(W**2))

    def logit_grad(self, W, b, alpha, beta):
        """(value without the penalty, d value / d logits of the linked items)."""
        pi, pj, gamma = self.gamma(W, b)
        same, diff = self.log_terms(alpha, beta)
        g = gamma[self.cell_pair]
        value = -(g * same + (1 - g) * diff).sum() / self.n
        d_gamma = -np.bincount(self.cell_pair, weights=same - diff, minlength=self.n_pairs) / self.n
        # d gamma / d logit_it = p_it (p_jt - gamma), and symmetrically for j
        grad_i = d_gamma[:, None] * pi * (pj - gamma[:, None])
        grad_j = d_gamma[:, None] * pj * (pi - gamma[:, None])
        n = self.x.shape[0]
        grad = np.column_stack([np.bincount(self.first, grad_i[:, k], n) + np.bincount(self.second, grad_j[:, k], n)
                                for k in range(W.shape[1])])
        return value, grad

    def w_step(self, W, b, alpha, beta):
        """L-BFGS over W with b, alpha, beta fixed (Sec. 2.5.1)."""
        shape = W.shape

        def f(w):
            w = w.reshape(shape)
            value, g = self.logit_grad(w, b, alpha, beta)
            return value + self.lam * np.sum(w**2), (self.x.T @ g + 2 * self.lam * w).ravel()

        return minimize(f, W.ravel(), jac=True, method="L-BFGS-B").x.reshape(shape)

    def b_step(self, W, b, alpha, beta):
        """L-BFGS over b with W, alpha, beta fixed (Sec. 2.5.2)."""
        def f(bb):
            value, g = self.logit_grad(W, bb, alpha, beta)
            return value, g.sum(axis=0)

        return minimize(f, b, jac=True, method="L-BFGS-B").x

    def accuracy_step(self, W, b):
        """The exact minimizer over alpha, beta with W, b fixed (Sec. 2.5.3).

        The block objective is concave in each alpha_m (beta_m) with stationary point the
        gamma-weighted share of must-links among the expert's constraints (the (1 - gamma)-weighted
        share of cannot-links), so the bounded optimum is that share clipped to [0.5, 1]. The paper
        reaches the same point with projected L-BFGS.
        """
        g = self.gamma(W, b)[2][self.cell_pair]
        e, m, s = self.cell_expert, self.n_experts, self.s
        alpha = np.bincount(e, g * s, m) / np.maximum(np.bincount(e, g, m), 1e-300)
        beta = np.bincount(e, (1 - g) * ~s, m) / np.maximum(np.bincount(e, 1 - g, m), 1e-300)
        return np.clip(alpha, 0.5, 1 - ALPHA_EPS), np.clip(beta, 0.5, 1 - ALPHA_EPS)


def point_estimate(
    data: PairwiseConstraints,
    n_clusters: int,
    *,
    lam: float | None = None,
    restarts: int = 20,
    seed: int | None = 0,
    max_outer: int = 200,
    tol: float = 1e-7,
) -> PointEstimate:
    """The paper's objective (eq. 8), minimized by alternating L-BFGS (Sec. 2.5) from `restarts`
    random starts (W, b ~ N(0, 1), alpha, beta ~ U(0.5, 1)); the lowest objective wins.

    eq. 8 is the expected complete-data log-likelihood under q(Z) = p(Z | X; W, b), i.e. the Jensen
    lower bound of the pairwise composite log-likelihood that the Bayesian model uses, divided by
    the number of constraints N, plus lam ||W||_F^2.

    lam : default 1 / (2 N), the penalty that matches the Bayesian model's default prior
        (sd 1 on W) once the likelihood is divided by N.
    """
    if n_clusters < 2:
        raise InputError(f"the number of clusters K must be >= 2, got {n_clusters!r}")
    lam = 1.0 / (2.0 * data.n_constraints) if lam is None else float(lam)
    # L-BFGS on small vectors: BLAS threads only contend (several times slower on 2 cores)
    with threadpool_limits(1, user_api="blas"):
        return _point_estimate(_Eq8(data, lam), data, n_clusters, lam, restarts, seed, max_outer, tol)


def _point_estimate(problem, data, n_clusters, lam, restarts, seed, max_outer, tol) -> PointEstimate:
    rng = np.random.default_rng(seed)
    best, objectives = None, []
    for _ in range(restarts):
        W = rng.standard_normal((data.n_features, n_clusters))
        b = rng.standard_normal(n_clusters)
        alpha = rng.uniform(0.5, 1 - ALPHA_EPS, data.n_experts)
        beta = rng.uniform(0.5, 1 - ALPHA_EPS, data.n_experts)
        previous = problem.value(W, b, alpha, beta)
        converged = False
        for outer in range(1, max_outer + 1):
            W = problem.w_step(W, b, alpha, beta)
            b = problem.b_step(W, b, alpha, beta)
            alpha, beta = problem.accuracy_step(W, b)
            current = problem.value(W, b, alpha, beta)
            if abs(previous - current) <= tol * max(1.0, abs(current)):
                converged = True
                break
            previous = current
        objectives.append(current)
        if best is None or current < best.objective:
            best = PointEstimate(W, b, alpha, beta, current, outer, converged, lam, [])
    best.restart_objectives = objectives
    return best
