"""Checks of the noisy-experts model: each expert's link rate, and how well its links agree with the clustering.

Every replicate draws each linked item's cluster z_i ~ softmax(x_i W + b), once per item and shared by all
its pairs (the model's generative story, of which the likelihood is a pairwise composite), and then every
expert's link on every pair it rated ~ Bernoulli(alpha_m) if z_i = z_j, else Bernoulli(1 - beta_m).

* `link_rate[expert]` (posterior predictive check): the share of must-links among the pairs each expert
  rated.
* The targeted check, `expert_agreement`: the known failure of this model is an expert whose errors one
  sensitivity and one specificity in [0.5, 1] cannot describe: an expert who links against the clustering
  (worse than chance, which the prior's range maps to alpha = beta = 0.5, a coin), or whose errors depend
  on the pair. Its statistic is a realized discrepancy (it depends on the draw's parameters too): the mean
  probability that each of the expert's links agrees with the co-clustering, sum over links of
  gamma_ij if must-link and 1 - gamma_ij if cannot-link, with gamma_ij = sum_k p_ik p_jk from the draw's
  W, b. It is computed for the observed links and for the replicated ones under the same draw; an expert
  whose observed agreement is out of line with its replicates is flagged (Bonferroni over experts).
"""

from __future__ import annotations

import numpy as np

from bayes_wsc._lazy import LazyModule
from bayes_wsc.criticism import Check, Replicates, p_value_two_sided, worst_element
from bayes_wsc.posterior import CHUNK_FLOATS

special = LazyModule("scipy.special")

#: `expert_agreement` flags an expert whose share of links agreeing with the clustering is further than this
#: from its replicates' (an expert who links against the clusters is 0.17 off in tests/test_checks.py)
AGREEMENT_TOLERANCE = 0.1


def variates(data) -> int:
    """Random numbers one replicate needs (a cluster per linked item, a link per constraint)."""
    return int(data.linked_items.size + data.link.size)


def parameters(posterior) -> list[str]:
    return ["W", "b", "alpha", "beta"]


def default_log_likelihood(est, data, params: dict) -> np.ndarray:
    """The default model's per-pair log-likelihood at draws of W, b, alpha, beta (S, P): all the experts'
    links on a pair with its two clusters summed out (`likelihoods.pair_ratings_logp`), in NumPy, the
    model these checks replicate from (`model_terms`)."""
    from bayes_wsc.models.experts.model import pair_ends

    W, b = np.asarray(params["W"], dtype=float), np.asarray(params["b"], dtype=float)
    alpha, beta = np.asarray(params["alpha"], dtype=float), np.asarray(params["beta"], dtype=float)
    logits = np.einsum("nd,sdk->snk", data.features[data.linked_items], W, optimize=True) + b[:, None, :]
    log_probs = special.log_softmax(logits, axis=-1)
    ends = pair_ends(data)
    first, second = log_probs[:, ends[:, 0]], log_probs[:, ends[:, 1]]  # (S, P, K)
    log_same = special.logsumexp(first + second, axis=-1)
    with np.errstate(divide="ignore"):
        log_different = special.logsumexp(first + np.log(-np.expm1(second)), axis=-1)
    must, cannot = data.link_counts()
    given_same = must @ np.log(alpha).T + cannot @ np.log1p(-alpha).T  # (P, S)
    given_different = must @ np.log1p(-beta).T + cannot @ np.log(beta).T
    return np.logaddexp(log_same + given_same.T, log_different + given_different.T)


def replicate(est, data, params: dict, rng: np.random.Generator) -> Replicates:
    W, b = np.asarray(params["W"], dtype=float), np.asarray(params["b"], dtype=float)
    alpha, beta = np.asarray(params["alpha"], dtype=float), np.asarray(params["beta"], dtype=float)
    n_rep, n_clusters = b.shape
    linked = data.linked_items
    local = np.searchsorted(linked, data.pairs)  # pair ends as rows of the linked items
    first, second = local[data.cell_pair, 0], local[data.cell_pair, 1]
    expert = data.cell_expert
    n_experts = len(data.expert_names)
    rated = np.bincount(expert, minlength=n_experts).astype(float)
    link = np.asarray(data.link, dtype=float)
    link_rate = np.empty((n_rep, n_experts))
    agreement_observed = np.empty((n_rep, n_experts))
    agreement_replicated = np.empty((n_rep, n_experts))
    step = max(1, CHUNK_FLOATS // (max(linked.size, expert.size) * n_clusters))
    features = data.features[linked]
    for start in range(0, n_rep, step):
        rows = slice(start, min(start + step, n_rep))
        probs = special.softmax(np.einsum("nd,sdk->snk", features, W[rows], optimize=True) + b[rows, None, :], axis=-1)  # (s, n, K)
        # the clusters, drawn: the first k whose cumulative probability passes a uniform
        z = (rng.random(probs.shape[:2])[..., None] > np.cumsum(probs, axis=-1)).sum(axis=-1)
        z = np.minimum(z, n_clusters - 1)
        same = z[:, first] == z[:, second]  # (s, N)
        p_link = np.where(same, alpha[rows][:, expert], 1 - beta[rows][:, expert])
        replicated = (rng.random(p_link.shape) < p_link).astype(float)
        gamma = np.sum(probs[:, first] * probs[:, second], axis=-1)  # (s, N)
        for out, links in ((agreement_observed, link[None, :]), (agreement_replicated, replicated)):
            agree = links * gamma + (1 - links) * (1 - gamma)
            out[rows] = _per_expert(agree, expert, n_experts) / rated
        link_rate[rows] = _per_expert(replicated, expert, n_experts) / rated
    coords = {"expert": list(data.expert_names)}
    return Replicates({"link_rate": link_rate}, {"link_rate": np.bincount(expert, weights=link, minlength=n_experts)
                                                  / rated},
                      dims={"link_rate": ["expert"]}, coords=coords,
                      realized={"agreement": (agreement_observed, agreement_replicated)})


def _per_expert(values: np.ndarray, expert: np.ndarray, n_experts: int) -> np.ndarray:
    """Sum of (s, N) values over each expert's constraints: (s, M)."""
    onehot = np.zeros((expert.size, n_experts))
    onehot[np.arange(expert.size), expert] = 1.0
    return values @ onehot


def rows(est, data, replicates: Replicates) -> list[Check]:
    names = list(data.expert_names)
    # no row for `link_rate`: each expert's own sensitivity and specificity reproduce its share of
    # must-links on every fit (p near 1); it stays a replicated statistic for `ppc` plots
    agree_obs, agree_rep = replicates.realized["agreement"]
    agreement = worst_element(
        "expert_agreement", p_value_two_sided(agree_obs, agree_rep), agree_obs.mean(axis=0), agree_rep.mean(axis=0),
        names, "expert", "How often the links agree with the fitted clustering",
        "This expert's links agree with the clustering out of line with any sensitivity and specificity in "
        "[0.5, 1]: it may link against the clusters (worse than chance), or err only on some clusters. Look "
        "at its links, or fit without it and compare.", tolerance=AGREEMENT_TOLERANCE)
    return [agreement]


def unit_label(idata, label) -> str:
    """A pair of the log-likelihood (its `pair` coordinate) as the user's ids of its two items: "(a17, b3)"."""
    pairs = [str(p) for p in np.asarray(idata["log_likelihood"]["pair"].values)]
    if str(label) not in pairs:
        return str(label)
    const = idata["constant_data"]
    at = pairs.index(str(label))
    items = np.asarray(const["item"].values)
    return f"({items[int(const['pair_first'].values[at])]}, {items[int(const['pair_second'].values[at])]})"


def targeted() -> list:
    """The targeted check (`expert_agreement`) needs the replicates, so `rows` makes it; nothing more runs."""
    return []
