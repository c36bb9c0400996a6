"""Marginalized-mixture log-likelihood blocks, written once for every model.

Each model has a discrete latent class per item. Summing it out gives

    log p(x) = logsumexp_c [ log P(z = c) + log p(x | z = c) ],

computed here in log space so that tiny class weights or emission
probabilities never underflow. The functions take PyTensor (or NumPy) tensors
and return tensors; they add nothing to a model by themselves, except
`record_pointwise`, which keeps a likelihood's per-unit terms for LOO.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.math import logsumexp

from bayes_wsc.defaults import LOG_ZERO  # log of "impossible", finite: no inf - inf in gradients
from bayes_wsc.inference import LOG_LIKELIHOOD_PREFIX
from bayes_wsc.transforms import StickBreaking


def logistic_class_model(x, *, prior_sd: float = 1.0, intercept_sd: float = 2.0, dim: str = "feature"):
    """log p(z = c | x) = log softmax(x W + b), (n, C), on standardized features `x`: free `W_raw[feature,
    class]` ~ Normal(0, prior_sd) and `b_raw[class]` ~ Normal(0, intercept_sd). Adding a vector to every
    class leaves the softmax unchanged, so the reported `W[class, feature]` and `b[class]` are the zero-sum
    representative. The class model of label proportions' logistic emission and of the combined model.
    `dim`: the name of x's columns (label proportions' random Fourier features are a `basis`)."""
    w_raw = pm.Normal("W_raw", 0.0, prior_sd, dims=(dim, "class"))
    b_raw = pm.Normal("b_raw", 0.0, intercept_sd, dims="class")
    pm.Deterministic("W", (w_raw - w_raw.mean(axis=1, keepdims=True)).T, dims=("class", dim))
    pm.Deterministic("b", b_raw - b_raw.mean(), dims="class")
    logits = pt.dot(x, w_raw) + b_raw
    return logits - logsumexp(logits, axis=1, keepdims=True)


def dawid_skene_evidence(vote_item, vote_source, vote_value, n_items: int, prior):
    """Dawid and Skene's vote term: `confusion[source, class, vote]` ~ Dirichlet(`prior`) row by row
    (`maths.dawid_skene.confusion_prior`), `accuracy[source]` the mean of its diagonal, and every item's
    vote evidence sum_s log confusion[s, c, v_js] (n, K) from the cast votes (item, source, vote per
    vote; abstentions left out). `maths.dawid_skene.vote_evidence` is the same in NumPy. The vote term of
    the crowd model and of the combined model."""
    confusion = pm.Dirichlet("confusion", a=prior, dims=("source", "class", "vote"),
                             default_transform=StickBreaking())
    pm.Deterministic("accuracy", pt.diagonal(confusion, axis1=1, axis2=2).mean(axis=1), dims="source")
    per_vote = pt.log(confusion)[vote_source, :, vote_value]  # (V, K)
    return segment_sum(per_vote, vote_item, n_items)


def record_pointwise(name: str, terms, dims):
    """Keep the per-unit log-likelihood `terms` of the current model and return them unchanged.

    The terms become a Deterministic named `LOG_LIKELIHOOD_PREFIX + name`, which
    `inference.from_draws` moves into the fit's `log_likelihood` group as `name`, so the MAP's
    reported values and every NUTS draw carry them and `az.loo` finds them. A model's Potential
    sums the same tensor, so the stored values are the likelihood the model was fitted with. A
    unit is what a user would leave out (a group, a pair, an item); the Deterministic is not part
    of the log density, so NUTS pays nothing for it per step.
    """
    pm.Deterministic(LOG_LIKELIHOOD_PREFIX + name, terms, dims=dims)
    return terms


def mixture_logp(log_weights, component_logp, axis: int = -1):
    """log sum_c exp(log_weights[..., c] + component_logp[..., c]) along `axis`.

    The two arguments broadcast against each other; the class axis is dropped.
    """
    return logsumexp(log_weights + component_logp, axis=axis, keepdims=False)


def component_log_posterior(log_weights, component_logp, axis: int = -1):
    """log P(z = c | x): the class responsibilities, normalized along `axis`."""
    joint = log_weights + component_logp
    return joint - logsumexp(joint, axis=axis, keepdims=True)


def binary_log_weights(logit_p):
    """[log(1 - p), log p] stacked on a new last axis, from the logit of p, stably."""
    return pt.stack([-pt.softplus(logit_p), -pt.softplus(-logit_p)], axis=-1)


def binary_counts_mixture_logp(counts, logit_p, w0, w1):
    """Two-class special case of `counts_mixture_logp`, in closed form.

    counts : (I, K); logit_p : (I,) logit P(z = 1) per group; w0, w1 : (K,) emission probabilities.

    Returns the (I, K) tensor n_ik * log((1 - p_i) w0_k + p_i w1_k), with
    p_i = sigmoid(logit_p_i) and 1 - p_i = sigmoid(-logit_p_i) each computed
    directly. The mixture inside the log is a convex combination of two
    positive numbers, so it loses no precision (relative error below two
    ulps) and needs a single log per cell, against three exponentials and a
    log1p for a log-sum-exp. That cell is the hot loop of NUTS for this model.
    It cannot underflow unless an emission probability is below 1e-308.
    """
    p1 = pt.sigmoid(logit_p)[:, None]
    p0 = pt.sigmoid(-logit_p)[:, None]
    return counts * pt.log(p0 * w0 + p1 * w1)


def counts_mixture_logp(counts, log_class_weights, log_emissions):
    """Weighted-count likelihood of a mixture of categoricals, per group and bin.

    counts : (I, K) weighted number of items of group i in bin k (sufficient statistics).
    log_class_weights : (I, C) log P(z = c) in group i.
    log_emissions : (C, K) log P(x = k | z = c).

    Returns the (I, K) tensor n_ik * log sum_c P(z = c | i) P(x = k | z = c);
    its sum is the marginal log-likelihood of all items, at cost O(I K C)
    instead of O(items).
    """
    per_cell = mixture_logp(log_class_weights[:, None, :], log_emissions.T[None, :, :])
    return counts * per_cell


#: log(2 pi), for Gaussian densities
LOG_2PI = 1.8378770664093453


def diag_normal_logp(x, mean, sd):
    """log N(x_d | mean_k, diag(sd_k^2)) for every item d and component k.

    x : (n, D); mean, sd : (K, D). Returns (n, K): the component log-densities
    f(x_d | k) that `mixture_logp` sums over (seed 003, eq. 20).

    The square is expanded, sum_j (x_j^2 p_kj - 2 x_j m_kj p_kj + m_kj^2 p_kj)
    with p = 1 / sd^2, so that the work over items is one (n, 2D) x (2D, K)
    matrix product (and its transpose in the gradient) instead of (n, K, D)
    elementwise arrays: about twice as fast for the MAP at n = 5000, D = 5. The
    expansion loses no useful precision on standardized features. It is written
    as one plain product, not a*dot + b*c, so that PyTensor keeps it a Dot22 and
    does not build a C BLAS (Gemm) node.
    """
    precision = 1.0 / sd**2
    weights = pt.concatenate([precision, -2.0 * mean * precision], axis=1)  # (K, 2D)
    quad = pt.dot(pt.concatenate([x**2, x], axis=1), weights.T)  # (n, K)
    const = pt.sum(mean**2 * precision + 2.0 * pt.log(sd) + LOG_2PI, axis=1)  # (K,)
    return -0.5 * (quad + const[None, :])


def predictive_mixture_logp(log_weights, x_logp, y_logp, axis: int = -1):
    """(log p(x_d), log p(y_d | x_d)) of a mixture whose class emits x and y independently.

    log p(x) = logsumexp_k(log w_k + log f(x | k)) and
    log p(y | x) = logsumexp_k(log w_k + log f(x | k) + log g(y | k)) - log p(x)
    (seed 003, eq. 22-23): the class is summed out given x alone, as at
    prediction time. An item whose `y_logp` row is all zero (no label) gets
    log p(y | x) = 0 exactly, so masking by zero rows needs no branch.
    """
    log_px = mixture_logp(log_weights, x_logp, axis=axis)
    return log_px, mixture_logp(log_weights + y_logp, x_logp, axis=axis) - log_px


# ---------------------------------------------------------------------- pairwise constraints (seed 002)
def pair_log_coclustering(log_probs_first, log_probs_second):
    """(log gamma, log(1 - gamma)) of every pair from the log memberships of its two items.

    log_probs_first, log_probs_second : (P, K) log P(z = k | x) (log-softmax) of the two items.
    log gamma = logsumexp_k (lp_ik + lp_jk) and log(1 - gamma) = logsumexp_{k != l} (lp_ik + lp_jl),
    both without cancellation (1 - gamma is below 1e-16 when both items are confidently in the
    same cluster, where log1p(-gamma) would be -inf with a NaN gradient).
    """
    k = log_probs_first.shape[-1]
    both = log_probs_first[:, :, None] + log_probs_second[:, None, :]  # (P, K, K)
    off_diagonal = pt.switch(pt.eq(pt.arange(k)[:, None], pt.arange(k)[None, :]), -1e30, 0.0)
    log_same = logsumexp(pt.diagonal(both, axis1=1, axis2=2), axis=-1, keepdims=False)
    log_different = logsumexp((both + off_diagonal).reshape((both.shape[0], -1)), axis=-1, keepdims=False)
    return log_same, log_different


def pair_ratings_logp(log_same, log_different, must, cannot, alpha, beta):
    """log P(every expert's link on the pair) with (z_i, z_j) summed out once per pair (seed 002, eq. 2-3).

    log_same, log_different : (P,) log gamma and log(1 - gamma) of each unique pair
    (`pair_log_coclustering`). must, cannot : (P, M) how many must-links and cannot-links
    expert m gave pair p (0 and 0 where m did not rate it). alpha, beta : (M,) the experts'
    sensitivity and specificity. Returns (P,):

        log [ gamma prod_m P(S_m | same) + (1 - gamma) prod_m P(S_m | different) ]

    the product running over the experts who rated the pair; given (z_i, z_j) the experts are
    independent (eq. 2-3), and the pair's clusters are shared by all of them. The products are
    two (P, M) x (M,) matrix products: half the cost of a gradient at 2000 pairs x 5 experts
    against summing per-constraint terms into their pairs by index.

    Summed over pairs this is a **pairwise composite likelihood**: each factor marginalizes the
    clusters of its own two items only, and the product treats the pairs as independent although
    pairs that share an item share its cluster. The exact joint marginal over all z,
    sum_Z p(S, Z | X), does not factor over pairs and costs K^n terms: it is intractable. The
    paper's EM (seed 002, eq. 7-9) optimizes the Jensen lower bound of this same pairwise
    quantity, gamma log prod P(S | same) + (1 - gamma) log prod P(S | different), which is tight
    only when gamma is 0 or 1. Because shared items make pairs dependent, a posterior built on
    the composite likelihood can be more confident than the data warrant.
    """
    given_same = pt.dot(must, pt.log(alpha)) + pt.dot(cannot, pt.log1p(-alpha))
    given_different = pt.dot(must, pt.log1p(-beta)) + pt.dot(cannot, pt.log(beta))
    return pt.logaddexp(log_same + given_same, log_different + given_different)


# ---------------------------------------------------------------------- label proportions (seed 001)


def segment_sum(values, segments, n_segments: int):
    """Sum the rows of `values` (n, ...) into `n_segments` rows by their segment index (n,)."""
    return pt.zeros((n_segments, *[values.shape[i] for i in range(1, values.ndim)]))[segments].inc(values)


def independent_bag_logp(log_shares, log_emission, item_group, n_groups: int):
    """log p(X_i | theta_i) = sum_j log sum_l theta_il f_l(x_ij) per group: the items' classes drawn
    independently from their group's shares (seed 001 with the group proportions as class priors).

    log_shares : (I, L) log theta (LOG_ZERO where a share is 0). log_emission : (n, L) log f_l(x_j).
    item_group : (n,) group of each item. Returns (I,).
    """
    per_item = mixture_logp(log_shares[item_group], log_emission)
    return segment_sum(per_item, item_group, n_groups)


def multinomial_logp(counts, log_p):
    """log Multinomial(counts; n = sum counts, p) per row, for counts (I, L) that need not be whole."""
    n = pt.sum(counts, axis=-1)
    return pt.gammaln(n + 1) - pt.sum(pt.gammaln(counts + 1), axis=-1) + pt.sum(counts * log_p, axis=-1)


def dirichlet_multinomial_logp(counts, alpha):
    """log DirichletMultinomial(counts; n = sum counts, alpha) per row: counts ~ Multinomial(n, theta)
    with theta ~ Dirichlet(alpha) summed out; counts need not be whole (the gamma functions extend)."""
    n = pt.sum(counts, axis=-1)
    a0 = pt.sum(alpha, axis=-1)
    return (pt.gammaln(n + 1) - pt.sum(pt.gammaln(counts + 1), axis=-1) + pt.gammaln(a0) - pt.gammaln(n + a0)
            + pt.sum(pt.gammaln(counts + alpha) - pt.gammaln(alpha), axis=-1))


def poisson_multinomial_logp(log_q, plan, inputs=None):
    """log P(group i's class counts = m_i) when each item j draws its class independently with its
    own probabilities q_j (the Poisson-binomial for two classes, the Poisson-multinomial for more).

    log_q : (n, L) log class probabilities of every item. plan : `data.proportions.CountPlan`, the
    layout of the groups and their counts; `inputs` replaces its arrays by tensors of the same name
    (`plan.inputs()`, as `pm.Data`). Returns (I,).

    Exact groups run the recursion over their items: a state P(counts of the tracked classes so far)
    over every class other than the group's most frequent one (extents bounded by the group's size,
    so that the layout does not depend on the counts; see `count_plan`), updated item by item,
    state_j(k) = state_{j-1}(k) q_j,untracked + sum_l state_{j-1}(k - e_l) q_jl, in log space. That is
    about n_i^2 / 2 cells for two classes, O(n_i^2), and n_i prod_t (n_i / (t + 1) + 1) for L classes. Every
    group's state is a run of cells of one vector (`data.proportions.CountBlock`), and one `scan` updates all
    the groups of a block together, whatever their sizes: the shifts k - e_l are gathers by index, data of
    the plan, so the compiled loop is the same for every layout of group sizes.

    Groups too large for it (see `count_plan`) use the normal approximation of the counts of the
    tracked classes, mean sum_j q_j and covariance sum_j (diag q_j - q_j q_j^T) + I/12 (the variance of
    rounding, which keeps it positive definite), its density taken at m: accurate when the group is
    large, which is when it is used.
    """
    import pytensor

    arrays = plan.inputs()
    if inputs is not None:  # data inputs have no static shape; the plan's are the shapes, fixed by the key
        arrays.update({k: pt.specify_shape(v, np.shape(arrays[k])) for k, v in inputs.items() if k in arrays})
    n_classes = plan.n_classes
    out = pt.zeros(plan.n_groups)
    lq_ext = pt.concatenate([log_q, pt.zeros((1, n_classes))], axis=0)  # row n: padding, masked below
    pad_row = np.full(n_classes, LOG_ZERO)
    pad_row[0] = 0.0  # a padded step takes the untracked class with probability 1: the state is unchanged
    for b, block in enumerate(plan.blocks):
        items, order = arrays[f"cp{b}_items"], arrays[f"cp{b}_order"]
        cell_row, shift = arrays[f"cp{b}_cell_row"], arrays[f"cp{b}_shift"]
        lq = lq_ext[items[:, :, None], order[:, None, :]]  # (G, steps, L), most frequent class first
        real = pt.lt(items, plan.n_items)[:, :, None]
        # static shapes (the key's), so that the loop's types survive PyMC's swapping data for constants
        lq = pt.specify_shape(pt.switch(real, lq, pad_row).dimshuffle(1, 0, 2),
                              (block.steps, block.groups.size, n_classes))  # (steps, G, L)
        log_zero = pt.as_tensor(np.array([LOG_ZERO]))

        def step(lq_j, state, cell_row, *shifts):  # state: every group's cells; lq_j: each group's item now
            per_cell = lq_j[cell_row]  # (C, L)
            new = state + per_cell[:, 0]
            extended = pt.concatenate([state, log_zero])  # cell C: log 0, for the cells at no count of a class
            for t, to in enumerate(shifts):
                new = pt.logaddexp(new, extended[to] + per_cell[:, t + 1])
            return new

        # the index vectors go in as non-sequences of their own (C >= 2 cells: no static 1 in their shapes)
        final = pytensor.scan(step, sequences=[lq], outputs_info=[arrays[f"cp{b}_init"]],
                              non_sequences=[cell_row, *[shift[t] for t in range(n_classes - 1)]],
                              n_steps=block.steps, return_updates=False)[-1]
        out = pt.set_subtensor(out[arrays[f"cp{b}_groups"]], final[arrays[f"cp{b}_target"]])
    if plan.approx_groups.size:
        out = pt.set_subtensor(out[arrays["cpa_groups"]], _normal_count_logp(log_q, plan, arrays, n_classes))
    return out


def _normal_count_logp(log_q, plan, arrays, n_classes: int):
    """The normal approximation of `poisson_multinomial_logp` for the groups in `plan.approx_groups`."""
    items, item_group = arrays["cpa_items"], arrays["cpa_item_group"]
    order = arrays["cpa_order"][item_group]  # (n_a, L): each item's classes in its group's order
    q = pt.exp(log_q)[items[:, None], order][:, 1:]  # (n_a, L - 1) the tracked classes
    n_rows, dims = plan.approx_groups.size, n_classes - 1
    mean = segment_sum(q, item_group, n_rows)
    outer = segment_sum(q[:, :, None] * q[:, None, :], item_group, n_rows)
    cov = pt.eye(dims)[None] * (mean[:, :, None] + 1.0 / 12.0) - outer
    diff = arrays["cpa_counts"] - mean
    if dims == 1:
        var = cov[:, 0, 0]
        return -0.5 * (diff[:, 0] ** 2 / var + pt.log(2 * np.pi * var))
    chol = pt.linalg.cholesky(cov)
    solved = pt.linalg.solve_triangular(chol, diff[:, :, None], lower=True)[:, :, 0]
    log_det = 2 * pt.sum(pt.log(pt.diagonal(chol, axis1=1, axis2=2)), axis=1)
    return -0.5 * (pt.sum(solved**2, axis=1) + log_det + dims * LOG_2PI)


# ---------------------------------------------------------------------- seed sets (seed 004)
def seed_sets_logp(log_memberships, in_set):
    """log P(z_i in S_i) of every seeded item: its cluster summed out over the sets it is a seed of.

    log_memberships : (m, K) log P(z_i = k | x_i) of the m seeded items. in_set : (m, K) boolean (or
    0/1) mask of the seed sets S_i each item is in; every row has at least one. Returns (m,):

        log sum_{k in S_i} P(z_i = k | x_i)

    An item in one set contributes log P(z_i = k | x_i); an item the user put in two sets (her
    clusters overlap) is known to be in one of them, a coarsened label whose likelihood is the
    mixture over its sets. Entries outside S_i are dropped before the log-sum-exp (not added as
    tiny weights), so no gradient reaches them.
    """
    masked = pt.switch(pt.gt(in_set, 0), log_memberships, -np.inf)
    return logsumexp(masked, axis=-1, keepdims=False)
