"""Label switching: align exchangeable clusters across chains and draws before any diagnostic.

Models with exchangeable clusters (noisy experts, mixtures) have K! equivalent
labelings. Chains started from one MAP usually keep its labels, but a chain or
a stretch of draws may swap them; averaging over swapped draws, or computing
R-hat on them, would be silently wrong. Each chain (or each draw) is mapped to
a reference labeling by the Hungarian method on the agreement between item
memberships (`scipy.optimize.linear_sum_assignment`). When no permutation
makes a chain agree with the reference, the chains found different partitions
(different modes), which relabeling cannot repair: `mode_messages` says so.

The reference itself is put in a canonical order first (`canonical_permutation`:
largest cluster first), so that two fits of the same data number their
clusters alike whichever restart won.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

#: below this share of items clustered alike, after the best permutation, a chain is in another mode
AGREEMENT_MIN = 0.9
#: clusters whose shares of the items differ by less than this are ordered by their first feature instead
SIZE_TIE = 0.02


def canonical_permutation(memberships: np.ndarray, first_feature: np.ndarray, tie: float = SIZE_TIE) -> np.ndarray:
    """`perm` such that cluster `perm[k]` becomes cluster k in the canonical order: the largest
    cluster first (share of the items by membership probability), and clusters whose shares
    differ by less than `tie` (a run of them) by the mean of the first feature, lowest first.

    Shares and means are averages of membership probabilities, so a small change of the fit
    moves them a little and the order only where two clusters are nearly level on both.
    """
    memberships = np.asarray(memberships, dtype=float)
    weight = memberships.sum(axis=0)
    shares = weight / max(weight.sum(), np.finfo(float).tiny)
    means = (memberships * np.asarray(first_feature, dtype=float)[:, None]).sum(axis=0) \
        / np.maximum(weight, np.finfo(float).tiny)
    by_size = np.argsort(-shares, kind="stable")
    runs = np.split(by_size, np.flatnonzero(-np.diff(shares[by_size]) >= tie) + 1)
    return np.concatenate([run[np.argsort(means[run], kind="stable")] for run in runs])


def cluster_axes(dims: Mapping[str, list[str]], cluster_dim: str) -> dict[str, int]:
    """name -> axis of `cluster_dim` (counted after chain, draw) for every variable that has it."""
    return {name: list(d).index(cluster_dim) for name, d in dims.items() if cluster_dim in d}


def permute_clusters(posterior: dict[str, np.ndarray], axes: Mapping[str, int], perm: np.ndarray) -> None:
    """Apply one permutation (cluster `perm[k]` becomes k) to every (chain, draw, ...) variable in
    `axes`, in place."""
    for name, axis in axes.items():
        if name in posterior:
            posterior[name] = np.take(posterior[name], perm, axis=axis + 2)


def best_permutation(reference: np.ndarray, candidate: np.ndarray) -> np.ndarray:
    """`perm` maximizing the agreement of `candidate[:, perm]` with `reference`.

    Both are (n_items, K) membership probabilities (or one-hot labels);
    cluster `perm[k]` of the candidate becomes cluster k.
    """
    from scipy.optimize import linear_sum_assignment  # here: importing scipy.optimize costs a read-only command 0.3 s

    agreement = reference.T @ candidate  # (K, K): items that reference k and candidate j share
    rows, cols = linear_sum_assignment(-agreement)
    perm = np.empty(reference.shape[1], dtype=np.int64)
    perm[rows] = cols
    return perm


def hard_agreement(reference: np.ndarray, candidate: np.ndarray) -> float:
    """Share of items whose most probable cluster is the same in both (labels already aligned)."""
    return float(np.mean(reference.argmax(axis=1) == candidate.argmax(axis=1)))


def relabel_draws(
    posterior: Mapping[str, np.ndarray],
    cluster_axes: Mapping[str, int],
    memberships: Callable[[dict[str, np.ndarray]], np.ndarray],
    reference: np.ndarray,
    *,
    per_draw: bool = True,
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Permute every cluster-indexed variable so that each draw matches `reference`.

    posterior : name -> (chain, draw, ...) arrays.
    cluster_axes : name -> axis of the cluster dimension, counted after (chain, draw)
        (so 0 is the first axis of one draw). Variables not listed are left alone.
    memberships : maps one draw ({name: array without chain, draw}) to (n_items, K)
        membership probabilities.
    reference : (n_items, K) memberships to align to (for example the MAP's).
    per_draw : align every draw (robust to switches within a chain) or only each chain's
        mean memberships (cheaper, enough when chains start in one mode).

    Returns the relabelled posterior, the permutations (chain, draw, K), and
    the agreement of each chain's mean memberships with the reference (chain,).
    """
    n_chains, n_draws = next(iter(posterior.values())).shape[:2]
    n_clusters = reference.shape[1]
    perms = np.empty((n_chains, n_draws, n_clusters), dtype=np.int64)
    agreement = np.empty(n_chains)
    for c in range(n_chains):
        chain_memberships = []
        for d in range(n_draws):
            draw = {name: values[c, d] for name, values in posterior.items()}
            chain_memberships.append(memberships(draw))
        if per_draw:
            perms[c] = [best_permutation(reference, m) for m in chain_memberships]
        else:
            perms[c] = best_permutation(reference, np.mean(chain_memberships, axis=0))
        aligned_mean = np.mean([m[:, p] for m, p in zip(chain_memberships, perms[c])], axis=0)
        agreement[c] = hard_agreement(reference, aligned_mean)
    out = {}
    for name, values in posterior.items():
        if name not in cluster_axes:
            out[name] = values
            continue
        axis = cluster_axes[name] + 2
        index = perms.reshape(n_chains, n_draws, *([1] * (axis - 2)), n_clusters,
                              *([1] * (values.ndim - axis - 1)))
        out[name] = np.take_along_axis(values, np.broadcast_to(index, values.shape), axis=axis)
    return out, perms, agreement


def mode_messages(agreement: np.ndarray, threshold: float = AGREEMENT_MIN) -> list[str]:
    """A warning per chain that no relabeling reconciles with the reference partition."""
    return [
        f"chain {c} clusters only {a:.0%} of items like the reference even after relabeling: it sits in a "
        "different mode (a different partition, not a permutation). Its draws should not be averaged with "
        "the others; rerun with more restarts or report the modes separately."
        for c, a in enumerate(agreement) if a < threshold
    ]
