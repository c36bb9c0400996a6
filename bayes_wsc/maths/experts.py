"""The noisy-experts model's maths that its estimator and the paper's baselines share (seed 002), in NumPy.

`constraint_informed_memberships`, a training item's cluster given its features and the links on
its own pairs (and, with `sweeps`, on the links of the whole constraint graph), serves the
estimator's memberships (`models/experts/model.py`) and the paper's point estimate
(`models/experts/baselines.py`) alike; `kmeans_logits` is the k-means start of the estimator's MAP.
"""

from __future__ import annotations

import numpy as np

from bayes_wsc.data.pairwise import PairwiseConstraints
from bayes_wsc.maths import logsumexp, max_last, sum_last


def pair_log_likelihoods(alpha: np.ndarray, beta: np.ndarray, data: PairwiseConstraints, pairs=slice(None)):
    """log P(the pair's links | same cluster) and log P(... | different clusters) per pair, for a stack
    of draws (alpha, beta: (S, M) -> two (S, P)): every expert who rated the pair, eq. 2-3."""
    must, cannot = (counts[pairs].T for counts in data.link_counts())  # (M, P)
    same = np.log(alpha) @ must + np.log1p(-alpha) @ cannot
    different = np.log1p(-beta) @ must + np.log(beta) @ cannot
    return same, different


def constraint_informed_memberships(features: np.ndarray, W: np.ndarray, b: np.ndarray, alpha: np.ndarray,
                                    beta: np.ndarray, data: PairwiseConstraints, rows: np.ndarray,
                                    sweeps: int = 0, damping: float = 0.5) -> np.ndarray:
    """P(z_i = k | x, theta, links) of training items `rows`, per draw: (S, len(rows), K).

    sweeps = 0 (the item's own links): the item's softmax membership times, for each pair it is
    in, that pair's likelihood with the partner's cluster summed out under the partner's own
    P(z_j | x_j):

        P(z_i = k | ...) prop. to p_ik prod_{pairs (i, j)} [p_jk L_same + (1 - p_jk) L_different]

    It is the conditional of z_i in the same one-pair-at-a-time (composite) factorization as
    the likelihood: the partners' other links are not used.

    sweeps > 0 (the whole constraint graph): loopy belief propagation on the pairwise Markov
    random field p(z | x, theta) prop. to prod_i p(z_i | x_i) prod_pairs P(the pair's links | z_i, z_j):
    the partner's P(z_j | x_j) above becomes its belief given its features and its own other
    links (the message from i left out), `sweeps` rounds of parallel updates damped by `damping`
    (the share of the old message kept). Sweep 0 is the rule above; on a constraint graph without
    cycles enough sweeps give the exact marginals of that field, with cycles an approximation
    (links then reach an item through chains of pairs: transitivity). Items in no pair get their
    softmax membership either way.
    """
    step = max(1, CACHE_FLOATS // (W.shape[-1] * max(1, len(data.pairs))))
    return np.concatenate([_memberships_block(features, W[s:s + step], b[s:s + step], alpha[s:s + step],
                                              beta[s:s + step], data, rows, sweeps, damping)
                           for s in range(0, max(1, W.shape[0]), step)])


#: Draws are taken in blocks whose (pairs, draws, clusters) arrays hold about this many numbers (1 MB), so
#: that the few such arrays of a sweep stay in a core's cache (4 MB of L2 here): on 3,891 pairs and 3 clusters
#: (11 draws a block) 1.2-1.6 times as fast as blocks of 80 draws, measured on a loaded machine.
CACHE_FLOATS = 2**17


def _memberships_block(features, W, b, alpha, beta, data, rows, sweeps, damping):
    """`constraint_informed_memberships` of one block of draws."""
    logits = np.einsum("nd,sdk->nsk", features, W, optimize=True) + b  # (n, S, K): items first, so that a
    log_p = logits - logsumexp(logits, axis=-1, keepdims=True)  # pair's items are whole rows to gather
    same, different = pair_log_likelihoods(alpha, beta, data)  # (S, P)
    top = np.maximum(same, different)  # each pair's two likelihoods relative to the larger: one of them is 1
    same, different = np.exp(same - top).T[..., None], np.exp(different - top).T[..., None]  # (P, S, 1)
    first, second = data.pairs[:, 0], data.pairs[:, 1]

    def message(log_cavity):  # sum_l q(l) P(links | k, l), normalized over k, q the softmax of the cavity
        shifted = log_cavity - max_last(log_cavity)[..., None]
        q = np.exp(shifted)
        total = sum_last(q)[..., None]
        q /= total
        shifted -= np.log(total)  # log q, whose expm1 is -(1 - q) without cancelling
        found = q * same
        found -= np.expm1(shifted, out=shifted) * different  # q_k L_same + (1 - q_k) L_different
        np.maximum(found, _TINY, out=found)  # never log(0): the caller subtracts messages' logs
        found /= sum_last(found)[..., None]
        return found

    m_first, m_second = message(log_p[second]), message(log_p[first])  # sweep 0: cavities p(z | x)
    to_first, to_second = np.log(m_first), np.log(m_second)
    into_first, into_second = _incidence(first, len(log_p)), _incidence(second, len(log_p))

    def beliefs():  # log p(z_i | x_i) plus every message into item i
        return log_p + (into_first @ to_first.reshape(len(first), -1)
                        + into_second @ to_second.reshape(len(second), -1)).reshape(log_p.shape)

    def damped(new, old):  # the share `damping` of the old message kept (a mixture of the two distributions)
        if damping:
            new *= 1.0 - damping
            new += damping * old
        return new

    for _ in range(sweeps):
        belief = beliefs()
        new_first = message(belief[second] - to_second)  # the partner's belief without this pair's message
        new_second = message(belief[first] - to_first)
        m_first, m_second = damped(new_first, m_first), damped(new_second, m_second)
        to_first, to_second = np.log(m_first), np.log(m_second)
    belief = beliefs()[rows]
    return np.exp(belief - logsumexp(belief, axis=-1, keepdims=True)).transpose(1, 0, 2)


_TINY = np.finfo(float).tiny


def _incidence(ends: np.ndarray, n: int):
    """The (n, P) 0/1 matrix that sums per item the messages of the pairs whose end is that item."""
    from scipy import sparse

    return sparse.csr_array((np.ones(len(ends)), (ends, np.arange(len(ends)))), shape=(n, len(ends)))


def kmeans_logits(features: np.ndarray, n_clusters: int, seed: int | None) -> tuple[np.ndarray, np.ndarray]:
    """W (d, K), b (K,) whose softmax reproduces k-means' clustering of the features (scikit-learn, k-means++,
    3 inits): the posterior memberships of a mixture of K spherical Gaussians of a common variance s^2 at
    the k-means centres mu_k, with weights pi_k from the cluster sizes (+1 smoothing),

        logit_k(x) = x . mu_k / s^2 - ||mu_k||^2 / (2 s^2) + log pi_k,   s^2 = inertia / (n d).

    A start of the MAP that sees how the features group, where random starts see only the pairs.
    """
    from sklearn.cluster import KMeans

    n, d = features.shape
    km = KMeans(n_clusters=n_clusters, n_init=3, random_state=seed).fit(features)
    counts = np.bincount(km.labels_, minlength=n_clusters).astype(float)
    variance = max(float(km.inertia_) / (n * d), 1e-6)
    centres = km.cluster_centers_
    W = centres.T / variance
    b = -0.5 * (centres**2).sum(axis=1) / variance + np.log((counts + 1.0) / (n + n_clusters))
    return W - W.mean(axis=1, keepdims=True), b - b.mean()
