"""Baselines for feature-level supervision (seed 004, Cheng et al. 2016, supplement eq. 1-6, Alg. 1-2).

* `lpe`: linear perception embedding. Minimizes ::

      L(F, W, b) = ||X W + 1 b^T - F||^2 + beta sum_(k, i in S_k) ||F_i - p_k||^2 + gamma ||W||^2

  over F, W, b >= 0 (supplement eq. 1 with the W penalty of the main text's eq. 3; F is not
  regularized, as the supplement argues). The seed term is the paper's beta ||S (F - P)||^2 with one
  row of S per (set, seed item) pair, so that an item in two sets is pulled towards both of their
  perception vectors; with disjoint sets it is the paper's diagonal seed selector.
  Multiplicative updates (Long et al. 2012, the rule the supplement follows), one block at a time::

      F <- F o sqrt((E+ + beta S^T P) / (F + beta c o F + E-))          E = X W + 1 b^T, c_i = sets of item i
      b <- b o sqrt((F^T 1 + [W^T X^T 1]-) / (n b + [W^T X^T 1]+))
      W <- W o sqrt((B1 + [X^T X]- W) / (B2 + [X^T X]+ W + gamma W))
           B1 = [X^T F]+ + [X^T 1 b^T]-,  B2 = [X^T F]- + [X^T 1 b^T]+

  where [A]+ and [A]- are the elementwise positive and negative parts (A = [A]+ - [A]-). **The W
  update is derived here from the objective above, not copied**: the supplement's eq. 4 has
  gamma W in the numerator and alpha W + gamma W W^T W in the denominator, terms that belong to no
  objective it states. For L restricted to W, a quadratic tr(W^T A W) - 2 tr(W^T B) + gamma ||W||^2
  with A = X^T X and B = X^T (F - 1 b^T), the auxiliary function of Ding, Li & Jordan (2010, semi-NMF)
  bounds the positive quadratic terms by sum_ik (A+ W')_ik W_ik^2 / W'_ik and gamma W_ik^2, the
  positive linear part by (W_ik^2 + W'_ik^2) / (2 W'_ik), and the negative terms from below with
  z >= 1 + log z; its minimizer is the update above, so L never increases. With non-negative X (the
  paper's data) the negative parts vanish and the update reads W o sqrt(X^T F / (X^T X W + X^T 1 b^T
  + gamma W)), the supplement's eq. 4 without its alpha and W W^T W terms. The F and b updates are
  eq. 2-3 with the same split, which keeps them valid for features of either sign.
  Stops when an iteration lowers L by less than `tol` times L (Alg. 1's epsilon, relative); best of
  10 random starts by L (supplement Sec. 4.1).
* `npe`: the kernel version (eq. 5-6, Alg. 2): ||K C - F||^2 + beta ||S (F - P)||^2 + gamma tr(C^T K C)
  over F, C >= 0, with the RBF kernel exp(-||x_i - x_j||^2 / (s_i s_j)) whose local widths s_i are
  the distance to the 7th nearest neighbour (self-tuning, Zelnik-Manor & Perona 2004, the rule the
  supplement cites). Its cost is O(n^2) memory and O(n^2 q) per iteration.
* Final clusters from an embedding F: `embedding_kmeans` (k-means on the directions of the rows of F,
  its clusters matched to the seed sets by the Hungarian method on seed counts) for hard clusters,
  `perception_memberships` (the non-negative weights of the perception vectors that best rebuild F_i)
  and `threshold_clusters` (the overlap rule the model uses too, `maths/perception.py`) for overlapping ones.
* Plain baselines: `kmeans_clusters` (k-means on X, matched to the seed sets likewise) and
  `seeded_gmm` (a diagonal Gaussian mixture on X fitted by EM with the seeds as labelled items: a seed's
  responsibilities are confined to its sets; no perception).
* The paper's metric, `f_scores` (F-score per user cluster), and the calibration of membership
  probabilities, `brier_score` and `reliability_table`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment, nnls
from scipy.special import logsumexp
from threadpoolctl import threadpool_limits

from bayes_wsc.models.perception.data import SeedSets
from bayes_wsc.errors import InputError
from bayes_wsc.maths.perception import threshold_clusters  # noqa: F401  (the overlap rule, beside LPE and NPE)

#: floor of every denominator of a multiplicative update
EPS = 1e-12
#: NPE builds the n x n kernel; beyond this many items it would need more than a few GB
NPE_MAX_ITEMS = 12_000
#: the self-tuning kernel's local width: distance to this nearest neighbour (Zelnik-Manor & Perona)
SELF_TUNING_NEIGHBOUR = 7


# ---------------------------------------------------------------------- shared pieces
def seed_targets(data: SeedSets) -> tuple[np.ndarray, np.ndarray]:
    """(c, S^T P): how many sets each item is a seed of (n,), and the sum of their perception vectors (n, q)."""
    counts = np.bincount(data.seed_item, minlength=data.n_items).astype(float)
    targets = np.zeros((data.n_items, data.n_perception))
    np.add.at(targets, data.seed_item, data.perception[data.seed_cluster])
    return counts, targets


def _parts(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Elementwise positive and negative parts, a = pos - neg, both >= 0."""
    return np.maximum(a, 0.0), np.maximum(-a, 0.0)


def _seed_loss(F: np.ndarray, data: SeedSets) -> float:
    return float(np.sum((F[data.seed_item] - data.perception[data.seed_cluster]) ** 2))


def f_update_terms(F, E, counts, targets, beta):
    """(numerator, denominator) of the F update, E = X W + 1 b^T (LPE) or K C (NPE): the negative and
    positive parts of half the objective's gradient in F, (F - E) + beta (c o F - S^T P)."""
    e_pos, e_neg = _parts(E)
    return e_pos + beta * targets, F + beta * counts[:, None] * F + e_neg


def _update_f(F, E, counts, targets, beta):
    numerator, denominator = f_update_terms(F, E, counts, targets, beta)
    return F * np.sqrt(numerator / np.maximum(denominator, EPS))


def _check_weights(beta, gamma, tol, max_iter, restarts):
    for name, value in (("beta", beta), ("gamma", gamma), ("tol", tol)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0:
            raise InputError(f"{name} must be a number >= 0, got {value!r}")
    for name, value in (("max_iter", max_iter), ("restarts", restarts)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InputError(f"{name} must be a whole number >= 1, got {value!r}")


@dataclass
class EmbeddingResult:
    """An embedding found by LPE or NPE: the best restart's F (n, q) and its parameters.

    objective : L at the end of the best restart; objectives : every restart's final L.
    history : L after every iteration of the best restart (never increasing).
    W, b : LPE's map (d, q) and offset (q,); C : NPE's coefficients (n, q); None for the other.
    """

    F: np.ndarray
    objective: float
    objectives: list[float]
    history: np.ndarray
    iterations: int
    converged: bool
    W: np.ndarray | None = None
    b: np.ndarray | None = None
    C: np.ndarray | None = None

    low: np.ndarray | None = None
    span: np.ndarray | None = None

    def transform(self, features: np.ndarray) -> np.ndarray:
        """LPE's embedding of new items (standardized features, as in `SeedSets`), max(x W + b, 0) on
        the training items' [0, 1] scaling: their F with no seed term."""
        if self.W is None:
            raise InputError("only LPE maps new items (NPE's embedding lives on the training items' kernel)")
        return np.maximum(((features - self.low) / self.span) @ self.W + self.b, 0.0)


# ---------------------------------------------------------------------- LPE
def lpe_objective(XW, F, W, b, data: SeedSets, beta: float, gamma: float) -> float:
    """L(F, W, b) of the module docstring, given the product X W."""
    return float(np.sum((XW + b - F) ** 2) + beta * _seed_loss(F, data) + gamma * np.sum(W**2))


def unit_range(features: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X scaled to [0, 1] per column, low, span): LPE's non-negative input. A constant column gets span 1."""
    low = features.min(axis=0)
    span = features.max(axis=0) - low
    span = np.where(span > 0, span, 1.0)
    return (features - low) / span, low, span


def lpe_run(data: SeedSets, F, W, b, *, beta: float, gamma: float, tol: float, max_iter: int, X=None,
            threads: int | None = 1):
    """One run of Alg. 1 from (F, W, b) > 0 on features X (default: `unit_range` of the data's);
    returns (F, W, b, history, converged). `threads` BLAS threads (None: the library's default; one is
    faster for these thin products on a busy 2-core machine, see benchmarks/RESULTS.md)."""
    X = unit_range(data.features)[0] if X is None else X
    counts, targets = seed_targets(data)
    gram_pos, gram_neg = _parts(X.T @ X)
    col_sums = X.sum(axis=0)  # X^T 1
    n = X.shape[0]
    XW = X @ W
    history = [lpe_objective(XW, F, W, b, data, beta, gamma)]
    converged = False
    with threadpool_limits(threads, user_api="blas"):
        for _ in range(max_iter):
            F = _update_f(F, XW + b, counts, targets, beta)
            s_pos, s_neg = _parts(W.T @ col_sums)
            b = b * np.sqrt((F.sum(axis=0) + s_neg) / np.maximum(n * b + s_pos, EPS))
            xf_pos, xf_neg = _parts(X.T @ F)
            xb_pos, xb_neg = _parts(np.outer(col_sums, b))
            W = W * np.sqrt((xf_pos + xb_neg + gram_neg @ W)
                            / np.maximum(xf_neg + xb_pos + gram_pos @ W + gamma * W, EPS))
            XW = X @ W
            history.append(lpe_objective(XW, F, W, b, data, beta, gamma))
            if history[-2] - history[-1] < tol * history[-2]:
                converged = True
                break
    return F, W, b, np.asarray(history), converged


def lpe(data: SeedSets, *, beta: float = 10.0, gamma: float = 1.0, restarts: int = 10, tol: float = 1e-6,
        max_iter: int = 5000, seed: int | None = 0, threads: int | None = 1) -> EmbeddingResult:
    """LPE (Alg. 1), best of `restarts` random starts by objective (supplement Sec. 4.1).

    The features are scaled to [0, 1] per column first (`unit_range`): LPE embeds non-negative data
    (the paper's image, audio and text features) with W, b >= 0; on centred features X W + b is
    negative for half the items whatever W, and the fit shrinks W to keep F >= 0 near them.
    Starts: F, b ~ U(0, 1) entries, W ~ U(0, 1) / d (so that X W starts on the scale of P).
    """
    _check_weights(beta, gamma, tol, max_iter, restarts)
    X, low, span = unit_range(data.features)
    rng = np.random.default_rng(seed)
    n, d, q = data.n_items, data.n_features, data.n_perception
    best, objectives = None, []
    for _ in range(restarts):
        F0, W0, b0 = rng.uniform(size=(n, q)), rng.uniform(size=(d, q)) / d, rng.uniform(size=q)
        F, W, b, history, converged = lpe_run(data, F0, W0, b0, beta=beta, gamma=gamma, tol=tol, max_iter=max_iter,
                                              X=X, threads=threads)
        objectives.append(float(history[-1]))
        if best is None or history[-1] < best.objective:
            best = EmbeddingResult(F, float(history[-1]), [], history, len(history) - 1, converged, W=W, b=b,
                                   low=low, span=span)
    best.objectives = objectives
    return best


def lpe_nnls(data: SeedSets, *, beta: float = 10.0, gamma: float = 1.0) -> EmbeddingResult:
    """LPE's objective (module docstring) minimized exactly, in milliseconds, not by Alg. 1's updates.

    Over F the objective separates by item. An item that is no seed takes F_i = X_i W + b, at no cost
    (X >= 0 after `unit_range`, W, b >= 0, so F_i >= 0); a seed in c sets takes F_i = (E_i + beta sum_k
    p_k) / (1 + beta c), E_i = X_i W + b, which leaves beta c / (1 + beta c) ||E_i - mean_k p_k||^2 plus a
    constant. So L is a non-negative ridge regression of each seed's mean perception vector on its
    features, one non-negative least-squares problem per perception column (`scipy.optimize.nnls`).
    Alg. 1 approaches the same optimum and stops at `max_iter`; k-means on either embedding scored
    within 0.01 in mean F on 69 of 84 data sets of issue 39's runs, not always (-0.25 to +0.36;
    benchmarks/RESULTS.md). The check `held_out_lpe` refits it once per fold (`held_out_lpe`)."""
    _check_weights(beta, gamma, 0.0, 1, 1)
    X, low, span = unit_range(data.features)
    counts, targets = seed_targets(data)
    seeds = np.flatnonzero(counts > 0)
    c = counts[seeds]
    weight = np.sqrt(beta * c / (1.0 + beta * c))
    d = X.shape[1]
    design = np.vstack([weight[:, None] * np.hstack([X[seeds], np.ones((seeds.size, 1))]),
                        np.hstack([np.sqrt(gamma) * np.eye(d), np.zeros((d, 1))])])
    goal = np.vstack([weight[:, None] * targets[seeds] / c[:, None], np.zeros((d, data.n_perception))])
    solved = np.column_stack([nnls(design, goal[:, j], maxiter=50 * design.shape[1])[0]
                              for j in range(data.n_perception)])
    W, b = solved[:-1], solved[-1]
    E = X @ W + b
    F = E.copy()
    F[seeds] = (E[seeds] + beta * targets[seeds]) / (1.0 + beta * c[:, None])
    objective = lpe_objective(E, F, W, b, data, beta, gamma)
    return EmbeddingResult(F, objective, [objective], np.array([objective]), 0, True, W=W, b=b, low=low, span=span)


# ---------------------------------------------------------------------- NPE
def self_tuning_kernel(X: np.ndarray, neighbour: int = SELF_TUNING_NEIGHBOUR) -> np.ndarray:
    """exp(-||x_i - x_j||^2 / (s_i s_j)), s_i the distance from x_i to its `neighbour`-th nearest
    neighbour (Zelnik-Manor & Perona 2004); a zero width (repeated points) takes the smallest positive one."""
    sq = np.sum(X**2, axis=1)
    dist2 = np.maximum(sq[:, None] + sq[None, :] - 2 * X @ X.T, 0.0)
    np.fill_diagonal(dist2, 0.0)
    k = min(neighbour, X.shape[0] - 1)
    scale = np.sqrt(np.partition(dist2, k, axis=1)[:, k])
    positive = scale[scale > 0]
    scale = np.where(scale > 0, scale, positive.min() if positive.size else 1.0)
    return np.exp(-dist2 / np.outer(scale, scale))


def npe_objective(K, F, C, data: SeedSets, beta: float, gamma: float, KC: np.ndarray | None = None) -> float:
    KC = K @ C if KC is None else KC
    return float(np.sum((KC - F) ** 2) + beta * _seed_loss(F, data) + gamma * np.sum(C * KC))


def c_update_terms(K, F, KC, gamma):
    """(numerator, denominator) of the C update (eq. 6), K F and K K C + gamma K C: with K, F, C >= 0 the
    negative and positive parts of half the objective's gradient in C, K (K C - F) + gamma K C."""
    q = F.shape[1]
    products = K @ np.hstack([F, KC])  # one pass over K for K F and K K C (the pass over K bounds the time)
    return products[:, :q], products[:, q:] + gamma * KC


def npe_run(data: SeedSets, K, F, C, *, beta: float, gamma: float, tol: float, max_iter: int,
            threads: int | None = 1):
    """One run of Alg. 2 from (F, C) > 0 with kernel K (non-negative); returns (F, C, history, converged).
    K K C is computed as K (K C), two passes over K per iteration, never the n^3 K K."""
    counts, targets = seed_targets(data)
    KC = K @ C
    history = [npe_objective(K, F, C, data, beta, gamma, KC)]
    converged = False
    with threadpool_limits(threads, user_api="blas"):
        for _ in range(max_iter):
            F = _update_f(F, KC, counts, targets, beta)  # K C >= 0: its negative part is zero
            numerator, denominator = c_update_terms(K, F, KC, gamma)
            C = C * np.sqrt(numerator / np.maximum(denominator, EPS))
            KC = K @ C
            history.append(npe_objective(K, F, C, data, beta, gamma, KC))
            if history[-2] - history[-1] < tol * history[-2]:
                converged = True
                break
    return F, C, np.asarray(history), converged


def npe(data: SeedSets, *, beta: float = 10.0, gamma: float = 1.0, restarts: int = 10, tol: float = 1e-6,
        max_iter: int = 5000, seed: int | None = 0, kernel: np.ndarray | None = None,
        threads: int | None = 1) -> EmbeddingResult:
    """NPE (Alg. 2) with the self-tuning RBF kernel (or `kernel`), best of `restarts` starts by objective."""
    _check_weights(beta, gamma, tol, max_iter, restarts)
    n, q = data.n_items, data.n_perception
    if kernel is None and n > NPE_MAX_ITEMS:
        raise InputError(f"NPE builds an items x items kernel: {n} items would need "
                         f"{8 * n * n / 1e9:.1f} GB per copy; use LPE (--kernel linear) beyond {NPE_MAX_ITEMS} items")
    K = self_tuning_kernel(data.features) if kernel is None else np.asarray(kernel, dtype=float)
    rng = np.random.default_rng(seed)
    row_mass = K.sum(axis=1).mean()
    best, objectives = None, []
    for _ in range(restarts):
        F0, C0 = rng.uniform(size=(n, q)), rng.uniform(size=(n, q)) / row_mass
        F, C, history, converged = npe_run(data, K, F0, C0, beta=beta, gamma=gamma, tol=tol, max_iter=max_iter,
                                           threads=threads)
        objectives.append(float(history[-1]))
        if best is None or history[-1] < best.objective:
            best = EmbeddingResult(F, float(history[-1]), [], history, len(history) - 1, converged, C=C)
    best.objectives = objectives
    return best


# ---------------------------------------------------------------------- final clusters
def match_to_seed_sets(labels: np.ndarray, data: SeedSets, n_found: int | None = None) -> np.ndarray:
    """Hard labels of found clusters renamed to the user's clusters: found cluster j becomes the seed
    set whose seeds it holds most of (Hungarian method on the found x set seed counts)."""
    k = data.n_clusters
    n_found = max(int(labels.max()) + 1, k) if n_found is None else n_found
    counts = np.zeros((n_found, k))
    np.add.at(counts, (labels[data.seed_item], data.seed_cluster), 1.0)
    rows, cols = linear_sum_assignment(-counts)
    mapping = np.full(n_found, -1)
    mapping[rows] = cols
    return mapping[labels]


def kmeans_clusters(points: np.ndarray, data: SeedSets, *, seed: int | None = 0, n_init: int = 10,
                    threads: int | None = 1) -> np.ndarray:
    """k-means (scikit-learn, k-means++, `n_init` starts) into K clusters, matched to the seed sets.
    `threads` OpenMP threads (None: the library's default; one is fastest on a shared machine, where
    scikit-learn's threads measured 20 times slower on the digits)."""
    from sklearn.cluster import KMeans

    with threadpool_limits(threads, user_api="openmp"):
        labels = KMeans(n_clusters=data.n_clusters, n_init=n_init, random_state=seed).fit_predict(points)
    return match_to_seed_sets(labels, data, data.n_clusters)


def unit_rows(F: np.ndarray) -> np.ndarray:
    """The rows of F scaled to length 1 (a zero row stays zero): the direction of each item's embedding."""
    F = np.asarray(F, dtype=float)
    return F / np.maximum(np.linalg.norm(F, axis=1, keepdims=True), EPS)


def embedding_kmeans(result: EmbeddingResult, data: SeedSets, *, seed: int | None = 0) -> np.ndarray:
    """LPE + k-means / NPE + k-means: hard clusters of the embedding F, k-means on its rows scaled to
    length 1. Which perception an item carries is the direction of F_i; its length is how far the seeds'
    pull reaches it: NPE's F_i = (K C)_i shrinks towards 0 with the item's distance from the seeds, and
    k-means on raw F split the digits by that length, not by direction (benchmarks/npe_diagnosis.py)."""
    return kmeans_clusters(unit_rows(result.F), data, seed=seed)


def perception_memberships(F: np.ndarray, perception: np.ndarray) -> np.ndarray:
    """(n, K) memberships in [0, 1]: the non-negative weights a_i with F_i ~ a_i P (NNLS), clipped at 1.

    An item embedded at a set's perception vector has weight 1 for that set; one between two sets'
    vectors (an item of both) has about half of each.
    """
    basis = np.asarray(perception, dtype=float).T  # (q, K)
    return np.clip(np.array([nnls(basis, row)[0] for row in np.asarray(F, dtype=float)]), 0.0, 1.0)


def one_hot(labels: np.ndarray, n_clusters: int) -> np.ndarray:
    out = np.zeros((labels.size, n_clusters), dtype=bool)
    out[np.arange(labels.size), labels] = True
    return out


# ---------------------------------------------------------------------- seeded mixture on X
@dataclass
class SeededMixture:
    """A diagonal Gaussian mixture fitted with the seeds as labelled items."""

    weights: np.ndarray
    means: np.ndarray
    sds: np.ndarray
    memberships: np.ndarray
    log_likelihood: float
    iterations: int

    def log_memberships(self, features: np.ndarray) -> np.ndarray:
        """log P(z = k | x) of rows of `features` (m, d) under the fitted mixture, no seed sets -> (m, K)."""
        joint = np.log(self.weights)[None] + diagonal_log_densities(features, self.means, self.sds)
        return joint - logsumexp(joint, axis=1, keepdims=True)


def diagonal_log_densities(X: np.ndarray, means: np.ndarray, sds: np.ndarray) -> np.ndarray:
    """log N(x_i | means_k, diag(sds_k^2)) for (n, d) rows and (K, d) components -> (n, K), by three
    matrix products (the expanded square), not an (n, K, d) array."""
    precision = 1.0 / sds**2
    quad = X**2 @ precision.T - 2.0 * X @ (means * precision).T + np.sum(means**2 * precision, axis=1)[None]
    return -0.5 * (quad + np.sum(2.0 * np.log(sds) + np.log(2 * np.pi), axis=1)[None])


def seeded_gmm(data: SeedSets, *, max_iter: int = 500, tol: float = 1e-8, sd_floor: float = 1e-3,
               seed_mask: np.ndarray | None = None) -> SeededMixture:
    """EM for K diagonal Gaussians on X, one per seed set, started at the sets' means. A seed's
    responsibilities are confined to the sets it is in (renormalized), every other item's are free.
    `seed_mask` (n, K) replaces the data's seed sets (the held-out refits of `held_out_gmm`)."""
    X = data.features
    mask = data.seed_mask if seed_mask is None else np.asarray(seed_mask, dtype=bool)
    seeded = mask.any(axis=1)
    allowed = np.where(seeded[:, None], np.where(mask, 0.0, -np.inf), 0.0)
    resp = np.where(mask, 1.0, 0.0) / np.maximum(mask.sum(axis=1, keepdims=True), 1)
    means = (resp.T @ X) / resp.sum(axis=0)[:, None]
    sds = np.tile(np.maximum(X.std(axis=0), sd_floor), (data.n_clusters, 1))  # a constant feature (a blank pixel)
    weights = np.full(data.n_clusters, 1.0 / data.n_clusters)
    previous = -np.inf
    with threadpool_limits(1, user_api="blas"):  # (n, d) x (d, K) products: threads only wait on a busy machine
        for iteration in range(1, max_iter + 1):
            joint = np.log(weights)[None] + diagonal_log_densities(X, means, sds) + allowed
            norm = logsumexp(joint, axis=1, keepdims=True)
            resp = np.exp(joint - norm)
            loglik = float(norm.sum())
            mass = resp.sum(axis=0) + 1e-12
            weights = mass / mass.sum()
            means = (resp.T @ X) / mass[:, None]
            sds = np.sqrt(np.maximum((resp.T @ X**2) / mass[:, None] - means**2, sd_floor**2))
            if loglik - previous < tol * abs(loglik):
                break
            previous = loglik
    fitted = SeededMixture(weights, means, sds, np.empty((0, data.n_clusters)), loglik, iteration)
    fitted.memberships = np.exp(fitted.log_memberships(X))
    return fitted


def held_out_gmm(data: SeedSets, folds: list[np.ndarray]) -> np.ndarray:
    """The seeded GMM's own held-out seeds: for each fold (item indices), `seeded_gmm` refitted with those
    items' seed sets removed (they become items that are no seed) and log P(z = k | x) of the fold's items
    under it -> (n, K), NaN rows for items in no fold. The reference of the check `held_out_reference`."""
    out = np.full((data.n_items, data.n_clusters), np.nan)
    for fold in folds:
        fold = np.asarray(fold, dtype=int)
        mask = data.seed_mask.copy()
        mask[fold] = False
        out[fold] = seeded_gmm(data, seed_mask=mask).log_memberships(data.features[fold])
    return out


def without_seeds(data: SeedSets, items: np.ndarray) -> SeedSets:
    """The data with every (set, seed item) pair of `items` removed: they become items that are no seed."""
    from dataclasses import replace

    keep = ~np.isin(data.seed_item, np.asarray(items, dtype=int))
    return replace(data, seed_item=data.seed_item[keep], seed_cluster=data.seed_cluster[keep])


#: the log probability `held_out_lpe` gives the clusters k-means did not pick: log of the smallest positive float,
#: a hard assignment that stays finite (the held-out scores read non-finite rows as "not held out")
HARD_LOG_FLOOR = float(np.log(np.finfo(float).tiny))


def held_out_lpe(data: SeedSets, folds: list[np.ndarray], *, seed: int | None = 0) -> np.ndarray:
    """LPE + k-means's own held-out seeds: for each fold (item indices), LPE (`lpe_nnls`) refitted without
    those items' seeds and k-means on its directions (`embedding_kmeans`, matched to the seeds it kept);
    the fold's items' clusters as log probabilities, 0 for the cluster k-means put them in and
    `HARD_LOG_FLOOR` for the others -> (n, K), NaN rows for items in no fold. The reference of the
    check `held_out_lpe`."""
    out = np.full((data.n_items, data.n_clusters), np.nan)
    for fold in folds:
        fold = np.asarray(fold, dtype=int)
        part = without_seeds(data, fold)
        labels = embedding_kmeans(lpe_nnls(part), part, seed=seed)[fold]
        out[fold] = np.where(one_hot(labels, data.n_clusters), 0.0, HARD_LOG_FLOOR)
    return out


# ---------------------------------------------------------------------- scores
def f_scores(assigned: np.ndarray, truth: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """F-score of every user cluster (the paper's metric): 2 P R / (P + R) with precision P and recall R
    of the items assigned to the cluster against its true members, over `rows` (default: all items).
    A cluster with no assigned item, or no member, scores 0."""
    assigned, truth = np.asarray(assigned, dtype=bool), np.asarray(truth, dtype=bool)
    if rows is not None:
        assigned, truth = assigned[rows], truth[rows]
    hits = (assigned & truth).sum(axis=0).astype(float)
    found, members = assigned.sum(axis=0), truth.sum(axis=0)
    precision = np.divide(hits, found, out=np.zeros_like(hits), where=found > 0)
    recall = np.divide(hits, members, out=np.zeros_like(hits), where=members > 0)
    total = precision + recall
    return np.divide(2 * precision * recall, total, out=np.zeros_like(hits), where=total > 0)


def brier_score(probabilities: np.ndarray, truth: np.ndarray, rows: np.ndarray | None = None) -> float:
    """Mean over items and clusters of (P(item in cluster) - 1[item in cluster])^2 (0/1 assignments
    count as probabilities 0 and 1)."""
    p, y = np.asarray(probabilities, dtype=float), np.asarray(truth, dtype=float)
    if rows is not None:
        p, y = p[rows], y[rows]
    return float(np.mean((p - y) ** 2))


def reliability_table(probabilities: np.ndarray, truth: np.ndarray, rows: np.ndarray | None = None,
                      bins: int = 10):
    """One row per probability bin of the (item, cluster) cells: mean predicted probability, observed
    share of members, and the cell count (empty bins left out): the data of a reliability plot."""
    import pandas as pd

    p, y = np.asarray(probabilities, dtype=float), np.asarray(truth, dtype=float)
    if rows is not None:
        p, y = p[rows], y[rows]
    p, y = p.ravel(), y.ravel()
    which = np.clip((p * bins).astype(int), 0, bins - 1)
    rows_out = [{"bin_low": b / bins, "bin_high": (b + 1) / bins, "predicted": float(p[which == b].mean()),
                 "observed": float(y[which == b].mean()), "cells": int((which == b).sum())}
                for b in range(bins) if (which == b).any()]
    return pd.DataFrame(rows_out)
