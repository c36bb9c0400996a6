"""Clustering from multiple uncertain experts (seed 002, Chang et al. 2017), declared in PyMC.

    p(z_i = k | x_i) = softmax_k(x_i^T W + b)                  discriminative clustering (eq. 1)
    P(S_ij^(m) = 1 | z_i = z_j)  = alpha_m                    expert m's sensitivity (eq. 2)
    P(S_ij^(m) = 0 | z_i != z_j) = beta_m                     expert m's specificity (eq. 3)
    alpha_m, beta_m ~ 0.5 + 0.5 Beta(a, b)                    on [0.5, 1]: no expert worse than chance
    W, b: Gaussian priors, the paper's penalty lambda ||W||^2 with sd = 1 / sqrt(2 lambda)
    omega_m = log(alpha_m beta_m / ((1 - alpha_m)(1 - beta_m)))  the expert's weight (Sec. 2.4)

The clusters of the two items of a pair are summed out in closed form, once
per pair for all the experts who rated it: with gamma_ij = sum_k p_ik p_jk,

    P(S_ij^(1..M)) = gamma prod_m P(S^(m) | same) + (1 - gamma) prod_m P(S^(m) | different)

(`likelihoods.pair_log_coclustering`, `likelihoods.pair_ratings_logp`); for a
pair rated by one expert this is P(S = 1) = gamma alpha + (1 - gamma)(1 - beta).
The experts of a pair share its (z_i, z_j): summing one such factor per
constraint instead would redraw the pair's clusters for every expert, which
inflates the weak experts' alpha and beta and lets the clustering follow
the experts' agreement less (on breast_cancer with 100 constraints it cost
0.05-0.1 NMI against the paper's eq. 8). Multiplying the pair factors gives a
**pairwise composite likelihood**, not the joint marginal over all z
(intractable: pairs sharing an item are dependent); the paper's EM optimizes
a Jensen bound of the same pairwise quantity. gamma is computed once per
unique pair.

Identifiability. The softmax is invariant to adding a vector to every column
of W, so cluster 0 is the reference: the logits of clusters 1..K-1 relative
to cluster 0 are W_ref[feature, cluster_ref] and b_ref[cluster_ref], with
the prior induced by independent N(0, sd^2) columns of a full W on these
differences, MvNormal(0, sd^2 (I + 1 1^T)) per row. That is exactly the
paper's penalty lambda ||W||_F^2 evaluated at the minimum-norm (zero-sum)
representative and, unlike independent priors on the K - 1 free columns, it
is unchanged when clusters are relabelled. The sampler's coordinates are
non-centred, W_ref = V W_raw L^T, b_ref = L_b b_raw with W_raw, b_raw ~ N(0, 1)
(L, L_b the Cholesky factors of the prior covariances, V the principal axes
of the features): the same model, but collinear features no longer make a
thin ridge that NUTS with a diagonal mass matrix crawls along. The reported
W[feature, cluster] and b[cluster] are the zero-sum representative.

Label switching: the clusters are exchangeable. The MAP takes the best of
many random restarts (20 by default, as in the paper); NUTS chains start at
that MAP and every draw is then relabelled against the MAP's memberships by
the Hungarian method (`relabel.py`), which permutes the full logits [b; W]
(W_ref with its zero reference column) and re-references W_raw, b_raw,
before any diagnostic.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayes_wsc import inference, maths, relabel
from bayes_wsc._lazy import LazyModule
from bayes_wsc.data.pairwise import PairwiseConstraints
from bayes_wsc.data.tables import FeatureScaling
from bayes_wsc.defaults import DEFAULT_CI
from bayes_wsc.errors import InputError
from bayes_wsc.estimator import Estimator, check_whole
from bayes_wsc.models.experts.settings import ExpertsSettings
from bayes_wsc.settings import checked
from bayes_wsc.graph_inputs import declare
from bayes_wsc.maths.experts import constraint_informed_memberships, kmeans_logits
from bayes_wsc.posterior import CHUNK_FLOATS, append_predictions, stacked, summarize_memberships

# PyMC and PyTensor load when a model is built, not when the estimator is: a MAP whose compiled
# program is cached (bayes_wsc.map_program) runs without them
pm = LazyModule("pymc")
pt = LazyModule("pytensor.tensor")
likelihoods = LazyModule("bayes_wsc.likelihoods")
special = LazyModule("scipy.special")

#: relabeling compares memberships on at most this many training items (a seeded random subset beyond)
RELABEL_MAX_ITEMS = 5000
#: MAP restarts whose log density is within this of the best count as having reached it
SAME_OPTIMUM = 1e-3
#: sweeps of belief propagation of `memberships()` where the links are many (`default_sweeps`)
PROPAGATION_SWEEPS = 10
#: pairs per linked item from which `memberships()` propagates the links through the graph by default
PROPAGATE_FROM = 2.0
#: a cluster holding less than this share of the items (hard assignment) is reported as nearly empty
EMPTY_CLUSTER_SHARE = 0.01


def check_settings(n_clusters, prior_sd, intercept_sd, accuracy_a, accuracy_b) -> None:
    """Fail early, naming the setting, before any model is built (as declared, `ExpertsSettings`)."""
    checked(ExpertsSettings, {"n_clusters": n_clusters, "prior_sd": prior_sd, "intercept_sd": intercept_sd,
                              "accuracy_a": accuracy_a, "accuracy_b": accuracy_b})


def reference_covariance(n_clusters: int, sd: float) -> np.ndarray:
    """Covariance of (w_k - w_0), k = 1..K-1, when the K columns w_k are independent N(0, sd^2)."""
    return sd**2 * (np.eye(n_clusters - 1) + np.ones((n_clusters - 1, n_clusters - 1)))


# ---------------------------------------------------------------------- blocks
def feature_rotation(features: np.ndarray) -> np.ndarray:
    """The principal axes of the training features: an orthogonal (d, d) matrix V.

    The rows of W have i.i.d. priors, so W = V W_pc with the same prior on W_pc is the same model;
    in the rotated basis the features are uncorrelated and the posterior much less so than on
    collinear raw features, which give long, thin ridges to NUTS with a diagonal mass matrix (on
    breast_cancer, 30 features: tree depth 6.6 -> 5.3, sampling time more than halved). With more
    features than items the identity is used.
    """
    n, d = features.shape
    if d > n:
        return np.eye(d)
    _, _, vt = np.linalg.svd(features - features.mean(axis=0), full_matrices=True)
    return vt.T


def add_cluster_weights(data: PairwiseConstraints, n_clusters: int, *, prior_sd: float = 1.0,
                        intercept_sd: float = 2.0):
    """The clustering parameters; returns the reference-coded (W_ref[feature, cluster_ref], b_ref).

    W_ref and b_ref are the logits of clusters 1..K-1 relative to cluster 0, with the exchangeable
    prior MvNormal(0, sd^2 (I + 1 1^T)) on every row. They are written non-centred,
    W_ref = V W_raw L^T and b_ref = L_b b_raw with W_raw, b_raw ~ N(0, 1), where L, L_b are the
    Cholesky factors of the prior covariances and V the principal axes of the features
    (`feature_rotation`): the same model, in coordinates that NUTS with a diagonal mass matrix
    explores easily. The zero-sum W[feature, cluster] and b[cluster] are kept as Deterministics.
    """
    rotation = declare(weight_inputs(data), DATA_DIMS)["feature_rotation"]
    chol_w = np.linalg.cholesky(reference_covariance(n_clusters, prior_sd))
    chol_b = np.linalg.cholesky(reference_covariance(n_clusters, intercept_sd))
    w_raw = pm.Normal("W_raw", 0.0, 1.0, dims=("component", "cluster_ref"))
    b_raw = pm.Normal("b_raw", 0.0, 1.0, dims="cluster_ref")
    w_ref = pt.dot(pt.dot(rotation, w_raw), chol_w.T)
    b_ref = pt.dot(b_raw, chol_b.T)
    w_full = pt.concatenate([pt.zeros((w_ref.shape[0], 1)), w_ref], axis=1)
    b_full = pt.concatenate([pt.zeros(1), b_ref])
    pm.Deterministic("W", w_full - w_full.mean(axis=1, keepdims=True), dims=("feature", "cluster"))
    pm.Deterministic("b", b_full - b_full.mean(), dims="cluster")
    return w_ref, b_ref


def raw_coordinates(W: np.ndarray, b: np.ndarray, features: np.ndarray, prior_sd: float,
                    intercept_sd: float) -> dict[str, np.ndarray]:
    """W_raw, b_raw of full logit weights W (..., d, K) and b (..., K): the inverse of
    `add_cluster_weights`, used to start the optimizer and to re-reference relabelled draws."""
    n_clusters = W.shape[-1]
    w_ref, b_ref = reference_coded(W, b)
    chol_w = np.linalg.cholesky(reference_covariance(n_clusters, prior_sd))
    chol_b = np.linalg.cholesky(reference_covariance(n_clusters, intercept_sd))
    rotated = np.einsum("fc,...fk->...ck", feature_rotation(features), w_ref)
    w_raw = np.swapaxes(np.linalg.solve(chol_w, np.swapaxes(rotated, -1, -2)), -1, -2)  # rotated L^-T
    b_raw = np.linalg.solve(chol_b, b_ref[..., None])[..., 0]
    return {"W_raw": w_raw, "b_raw": b_raw}


def add_memberships(data: PairwiseConstraints, w_ref, b_ref):
    """log P(z = k | x) of the two items of every unique pair: (first, second), each (pair, K).

    Memberships are computed once for the items that appear in a constraint (the only ones
    the likelihood sees), as a log-softmax, and gathered at the pair ends.
    """
    features, ends = declare(membership_inputs(data), DATA_DIMS).values()  # ends: pair items as rows of `log_probs`
    logits = pt.dot(features, w_ref) + b_ref
    log_probs = pt.special.log_softmax(pt.concatenate([pt.zeros((logits.shape[0], 1)), logits], axis=1), axis=-1)
    return log_probs[ends[:, 0]], log_probs[ends[:, 1]]


def pair_ends(data: PairwiseConstraints) -> np.ndarray:
    """The two items of every unique pair as rows of the linked items (`add_memberships`): (P, 2) int."""
    return np.searchsorted(data.linked_items, data.pairs).astype(np.int64)


def add_experts(*, accuracy_a: float = 2.0, accuracy_b: float = 2.0):
    """alpha[expert], beta[expert] = 0.5 + 0.5 Beta(a, b) (free: alpha_raw = 2 alpha - 1, beta_raw),
    and the expert weight omega[expert]."""
    alpha_raw = pm.Beta("alpha_raw", accuracy_a, accuracy_b, dims="expert")
    beta_raw = pm.Beta("beta_raw", accuracy_a, accuracy_b, dims="expert")
    return add_expert_weights(alpha_raw, beta_raw)


def add_expert_weights(alpha_raw, beta_raw):
    """alpha = 0.5 + 0.5 alpha_raw, beta = 0.5 + 0.5 beta_raw and the weight omega, each [expert], as
    Deterministics from accuracies rescaled to [0, 1]; a variant may tie or share them. Returns (alpha, beta)."""
    alpha = pm.Deterministic("alpha", 0.5 + 0.5 * alpha_raw, dims="expert")
    beta = pm.Deterministic("beta", 0.5 + 0.5 * beta_raw, dims="expert")
    # 1 - alpha = (1 - alpha_raw) / 2, computed without cancellation
    pm.Deterministic("omega", pt.log(alpha) + pt.log(beta) - pt.log1p(-alpha_raw) - pt.log1p(-beta_raw)
                     + 2 * np.log(2.0), dims="expert")
    return alpha, beta


def add_constraint_likelihood(data: PairwiseConstraints, ends, alpha, beta):
    """The pairwise composite likelihood: one factor per unique pair, the pair's clusters summed
    out once for all the experts who rated it. Returns log gamma per pair."""
    log_same, log_different = likelihoods.pair_log_coclustering(*ends)
    must, cannot = declare(constraint_inputs(data), DATA_DIMS).values()
    per_pair = likelihoods.pair_ratings_logp(log_same, log_different, must, cannot, alpha, beta)
    # kept per unique pair (`log_likelihood` group, variable `pairs`): LOO leaves out a pair with all its links
    pm.Potential("constraints", likelihoods.record_pointwise("pairs", per_pair, dims="pair").sum())
    return log_same


def build_model(
    data: PairwiseConstraints,
    *,
    n_clusters: int = 2,
    prior_sd: float = 1.0,
    intercept_sd: float = 2.0,
    accuracy_a: float = 2.0,
    accuracy_b: float = 2.0,
) -> pm.Model:
    """The noisy-experts model as a `pm.Model` with dims feature, cluster, cluster_ref, expert.

    prior_sd : sd of the Gaussian prior on each column of W (the paper's lambda = 1 / (2 sd^2)
        on the unnormalized log-likelihood; the paper divides it by the number of constraints N,
        so its lambda corresponds to sd = 1 / sqrt(2 N lambda)).

    intercept_sd : sd of the Gaussian prior on each entry of b.

    accuracy_a, accuracy_b : alpha, beta ~ 0.5 + 0.5 Beta(a, b); (1, 1) is uniform on [0.5, 1]
        (the paper's unpenalized constraint), the default (2, 2) keeps the mode inside the interval.
    """
    check_settings(n_clusters, prior_sd, intercept_sd, accuracy_a, accuracy_b)
    with pm.Model(coords=model_coords(data, n_clusters)) as model:
        w_ref, b_ref = add_cluster_weights(data, n_clusters, prior_sd=prior_sd, intercept_sd=intercept_sd)
        ends = add_memberships(data, w_ref, b_ref)
        alpha, beta = add_experts(accuracy_a=accuracy_a, accuracy_b=accuracy_b)
        add_constraint_likelihood(data, ends, alpha, beta)
    return model


def model_coords(data: PairwiseConstraints, n_clusters: int) -> dict[str, list]:
    """The model's coords: the data's (item, feature, expert) and cluster, cluster_ref, component, end,
    linked_item, constraint, pair; K may not exceed the number of items."""
    if data.n_items < n_clusters:
        raise InputError(f"there are {data.n_items} items but {n_clusters} clusters: "
                         "the number of clusters must not exceed the number of items")
    return {**data.coords, "cluster": list(range(n_clusters)), "cluster_ref": list(range(1, n_clusters)),
            "component": list(range(data.n_features)), "end": [0, 1],
            "linked_item": list(data.item_ids[data.linked_items]), "constraint": list(range(data.n_constraints)),
            "pair": list(range(data.n_pairs))}


#: the dims of every `pm.Data` the blocks declare (`graph_inputs.declare`)
DATA_DIMS = {"feature_rotation": ("feature", "component"), "linked_features": ("linked_item", "feature"),
             "pair_ends": ("pair", "end"), "pair_must_links": ("pair", "expert"),
             "pair_cannot_links": ("pair", "expert")}


def weight_inputs(data: PairwiseConstraints) -> dict[str, np.ndarray]:
    """The values `add_cluster_weights` declares as `pm.Data`: the features' principal axes."""
    return {"feature_rotation": feature_rotation(data.features)}


def membership_inputs(data: PairwiseConstraints) -> dict[str, np.ndarray]:
    """The values `add_memberships` declares as `pm.Data`: the linked items' features and the pairs' ends."""
    return {"linked_features": data.features[data.linked_items], "pair_ends": pair_ends(data)}


def constraint_inputs(data: PairwiseConstraints) -> dict[str, np.ndarray]:
    """The values `add_constraint_likelihood` declares as `pm.Data`: each pair's must- and cannot-links
    per expert."""
    must, cannot = data.link_counts()
    return {"pair_must_links": must, "pair_cannot_links": cannot}


def model_data(data: PairwiseConstraints) -> dict[str, np.ndarray]:
    """Every data-derived value that `build_model`'s blocks declare as `pm.Data`, by name, in NumPy.

    A cached MAP program (`map_program`) takes them as runtime inputs, so one program serves every
    data set of the same shapes; building a program checks that this list and the model agree.
    """
    return {**weight_inputs(data), **membership_inputs(data), **constraint_inputs(data)}


def default_sweeps(data: PairwiseConstraints) -> int:
    """Sweeps of belief propagation that `memberships()` uses by default: `PROPAGATION_SWEEPS` when the
    pairs are many (at least `PROPAGATE_FROM` per item in a pair, so that the constraint graph has
    cycles through which links corroborate each other), else 0 (each item's own links)."""
    linked = max(1, data.linked_items.size)
    return PROPAGATION_SWEEPS if data.n_pairs / linked >= PROPAGATE_FROM else 0


# ---------------------------------------------------------------------- estimator
def membership_probabilities(features: np.ndarray, W: np.ndarray, b: np.ndarray) -> np.ndarray:
    """softmax(x W + b) for one parameter draw (W: (d, K), b: (K,)) or a stack of draws
    (W: (S, d, K), b: (S, K) -> (S, n, K))."""
    if W.ndim == 2:
        return special.softmax(features @ W + b, axis=-1)
    return maths.softmax(np.einsum("nd,sdk->snk", features, W, optimize=True) + b[:, None, :], axis=-1)


def reference_coded(W: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """W_ref, b_ref from full (any representative) W, b: logits of clusters 1..K-1 minus cluster 0's."""
    return W[..., 1:] - W[..., :1], b[..., 1:] - b[..., :1]


class NoisyExperts(Estimator):
    """Bayesian clustering from the pairwise constraints of several uncertain experts (seed 002).

    Parameters
    ----------
    n_clusters : K, the number of clusters (>= 2).
    prior_sd : sd of the Gaussian prior on W (the paper's lambda ||W||^2: sd = 1 / sqrt(2 lambda)).
    intercept_sd : sd of the Gaussian prior on b.
    accuracy_a, accuracy_b : alpha, beta ~ 0.5 + 0.5 Beta(a, b) on [0.5, 1].
    restarts : starts of the MAP (the best is kept and starts NUTS); 20 as in the paper.
    kmeans_start : True (default): the first start is k-means' clustering of the features
        (`maths.experts.kmeans_logits`), the others random as in the paper; False: all random.
    method : "map" (posterior mode) or "nuts" (full posterior, chains started at the MAP).
    draws, tune, chains, seed, backend, target_accept, precision : NUTS settings (precision float64
        by default here: float32 measured no faster); seed also seeds the restarts.
    model_file, model_settings : a variant file (see `models/`) whose `build_model(data, **settings)`
        replaces the default, and its own settings.

    After `fit(data)`: `idata_` (InferenceData with alpha[expert], beta[expert], omega[expert],
    W[feature, cluster], b[cluster], and the free W_raw, b_raw, alpha_raw, beta_raw) and `model_`. Item memberships are computed on
    demand (`memberships`, `predict`), never stored per draw.
    """

    model_name = "experts"
    data_class = PairwiseConstraints
    required_groups = ("posterior", "observed_data", "constant_data")
    bounds = {"alpha": (0.0, 1.0), "beta": (0.0, 1.0), "alpha_raw": (0.0, 1.0), "beta_raw": (0.0, 1.0)}
    estimands = ["alpha", "beta", "omega", "b", "W"]
    internal_variables = ("W_raw", "b_raw", "alpha_raw", "beta_raw")
    unit_dims = ("item", "linked_item", "pair", "constraint")
    Settings = ExpertsSettings

    def data_messages(self, data: PairwiseConstraints) -> list[str]:
        """Constant features (their cluster weights learn nothing) and links of one kind, must-links only
        (one cluster holding every item fits them all), before the fit."""
        from bayes_wsc.diagnostics import constant_features_message, one_class_message

        found = [constant_features_message(data.features, data.scaling.names, "their weights in the clusters' "
                                           "softmax")]
        if np.all(data.link == 1):
            found.append(one_class_message(data.link, ["cannot-link", "must-link"], "constraint",
                                           "nothing says which items belong apart, so one cluster holding every "
                                           "item fits them all and the clusters and the experts' specificities "
                                           "are not identified. Give cannot-links (or labels of several "
                                           "classes) too."))
        return [m for m in found if m]

    def build_model(self, data: PairwiseConstraints) -> pm.Model:
        return build_model(data, **self.build_settings())

    def model_inputs(self, data: PairwiseConstraints):
        return model_coords(data, self.n_clusters), model_data(data)

    def initial_values(self, data: PairwiseConstraints) -> list[dict]:
        """The paper's random restarts (Sec. 2.5): W, b ~ N(0, 1) entries, alpha, beta ~ U(0.5, 1);
        with `kmeans_start` the first start's W, b are k-means' clustering of the features instead
        (`kmeans_logits`): with few pairs on many clusters the random starts see only the pairs.

        The sensitivities and specificities are drawn inside (0.51, 0.99) so that every start
        has a finite log density.
        """
        rng = np.random.default_rng(self.seed)
        k = self.n_clusters
        starts = []
        for r in range(self.restarts):
            W = rng.standard_normal((data.n_features, k))
            b = rng.standard_normal(k)
            if r == 0 and self.kmeans_start and data.n_items >= k:  # fewer items than K: model_coords says so
                W, b = kmeans_logits(data.features, k, self.seed)
            start = raw_coordinates(W, b, data.features, self.prior_sd, self.intercept_sd)
            start["alpha_raw"] = 2 * rng.uniform(0.51, 0.99, data.n_experts) - 1
            start["beta_raw"] = 2 * rng.uniform(0.51, 0.99, data.n_experts) - 1
            starts.append(start)
        return starts

    def data_groups(self, data: PairwiseConstraints) -> dict:
        return {
            "observed_data": {"link": data.link.astype(np.int64)},
            "constant_data": {
                "features": data.features,
                "feature_mean": data.scaling.mean,
                "feature_scale": data.scaling.scale,
                "pair_first": data.pairs[:, 0],
                "pair_second": data.pairs[:, 1],
                "constraint_pair": data.cell_pair,
                "constraint_expert": data.cell_expert,
            },
            "dims": {"link": ["constraint"], "features": ["item", "feature"], "feature_mean": ["feature"],
                     "feature_scale": ["feature"], "pair_first": ["pair"], "pair_second": ["pair"],
                     "constraint_pair": ["constraint"], "constraint_expert": ["constraint"]},
            "attrs": {"data_settings": data.settings},
        }

    # ------------------------------------------------------------------ label switching
    def order_clusters(self, draws, dims: dict, data: PairwiseConstraints) -> None:
        """The MAP's clusters in the canonical order (largest first by the items' memberships from
        their features; near-equal sizes by the first feature's mean), then re-referenced."""
        post = draws.posterior
        if not {"W", "b"} <= set(post):
            return
        probs = membership_probabilities(data.features, post["W"][0, 0], post["b"][0, 0])
        perm = relabel.canonical_permutation(probs, data.features[:, 0])
        relabel.permute_clusters(post, relabel.cluster_axes(dims, "cluster"), perm)
        self._re_reference(post, data)

    def _re_reference(self, post: dict, data: PairwiseConstraints) -> None:
        """W_raw, b_raw of relabelled W, b (cluster 0 is the reference of the sampler's coordinates)."""
        raw = raw_coordinates(post["W"], post["b"], data.features, self.prior_sd, self.intercept_sd)
        for name, values in raw.items():
            if name in post:
                post[name] = values

    def align_draws(self, draws, map_draws, data: PairwiseConstraints, *, free: list[str], dims: dict) -> list[str]:
        """Relabel every draw against the MAP's memberships (Hungarian), then re-reference."""
        post = draws.posterior
        rng = np.random.default_rng(0)
        rows = np.arange(data.n_items)
        if rows.size > RELABEL_MAX_ITEMS:
            rows = np.sort(rng.choice(rows, RELABEL_MAX_ITEMS, replace=False))
        features = data.features[rows]
        if map_draws is not None:
            reference = membership_probabilities(features, map_draws.posterior["W"][0, 0],
                                                 map_draws.posterior["b"][0, 0])
        else:  # no MAP (a variant that starts elsewhere): the first chain's mean memberships
            reference = membership_probabilities(features, post["W"][0], post["b"][0]).mean(axis=0)
        relabelled, perms, agreement = relabel.relabel_draws(
            {"W": post["W"], "b": post["b"]}, {"W": 1, "b": 0},
            lambda draw: membership_probabilities(features, draw["W"], draw["b"]), reference,
        )
        post["W"], post["b"] = relabelled["W"], relabelled["b"]
        self._re_reference(post, data)
        identity = np.arange(self.n_clusters)
        draws.info["relabelled_draws"] = int((perms != identity).any(axis=-1).sum())
        draws.info["chain_agreement"] = [float(a) for a in agreement]
        return relabel.mode_messages(agreement)

    def model_checks(self, idata) -> list[str]:
        messages = []
        fit_info = inference.get_attrs(idata).get("fit_info", {})
        restart_lps = fit_info.get("map", {}).get("restart_log_densities")
        if restart_lps and len(restart_lps) >= 5:
            lps = np.asarray(restart_lps, dtype=float)
            best = np.nanmax(lps)
            reached = int(np.sum(best - lps <= SAME_OPTIMUM * max(1.0, abs(best) * 1e-6)))
            if reached == 1:
                messages.append(
                    f"only 1 of {lps.size} random restarts reached the best posterior mode; the others stopped "
                    "in worse local optima, so a better clustering may exist. Rerun with more restarts."
                )
        shares = self._cluster_shares(idata) if {"W", "b"} <= set(idata.posterior) else []
        for k, share in enumerate(shares):
            if share < EMPTY_CLUSTER_SHARE:
                messages.append(
                    f"cluster {k} holds {share:.1%} of the items: the constraints and features support fewer "
                    f"than {self.n_clusters} clusters. Try a smaller K."
                )
        return messages

    @staticmethod
    def _cluster_shares(idata) -> np.ndarray:
        features = idata.constant_data["features"].values
        W = idata.posterior["W"].mean(("chain", "draw")).values
        b = idata.posterior["b"].mean(("chain", "draw")).values
        hard = membership_probabilities(features, W, b).argmax(axis=1)
        return np.bincount(hard, minlength=W.shape[1]) / features.shape[0]

    # ------------------------------------------------------------------ data back from a fit
    @property
    def scaling_(self) -> FeatureScaling:
        self._check_fitted()
        return FeatureScaling.saved(self._fitted().constant_data)

    def data_from_fit(self) -> PairwiseConstraints:
        """The items and constraints the fit saw, rebuilt from the saved fit (for baselines and reports)."""
        self._check_fitted()
        const = self._fitted().constant_data
        pairs = np.stack([const["pair_first"].values, const["pair_second"].values], axis=1)
        return PairwiseConstraints(
            const["item"].values, const["features"].values, self.scaling_, self._fitted().posterior["expert"].values, pairs,
            const["constraint_pair"].values, const["constraint_expert"].values,
            self._fitted().observed_data["link"].values, dict(inference.get_attrs(self._fitted()).get("data_settings", {})),
        )

    # ------------------------------------------------------------------ summaries
    def expert_order(self) -> np.ndarray:
        """Expert positions sorted by posterior mean omega, most reliable first."""
        self._check_fitted()
        omega = self._fitted().posterior["omega"].mean(("chain", "draw")).values
        return np.argsort(-omega, kind="stable")

    def summary(self, var_names: list[str] | None = None, hdi_prob: float = DEFAULT_CI) -> pd.DataFrame:
        """`az.summary` of the estimands, the expert rows (omega, alpha, beta) sorted by omega."""
        table = super().summary(var_names, hdi_prob)
        if "omega" not in self._fitted().posterior:  # a variant without expert weights: ArviZ's order
            return table
        experts = self._fitted().posterior["expert"].values[self.expert_order()]
        order = [f"{name}[{e}]" for name in ("omega", "alpha", "beta") for e in experts
                 if f"{name}[{e}]" in table.index]
        return table.loc[order + [r for r in table.index if r not in set(order)]]

    def expert_table(self, ci: float = DEFAULT_CI) -> pd.DataFrame:
        """One row per expert, most reliable first: alpha, beta, omega (posterior mean, or the MAP)
        with the bounds of their `ci` HDI, and the expert's numbers of must- and cannot-links."""
        self._check_fitted()
        post = self._fitted().posterior
        table = pd.DataFrame(index=pd.Index(post["expert"].values.astype(str), name="expert"))
        for name in ("alpha", "beta", "omega"):
            draws = stacked(self._fitted(), name)
            bounds = inference.hdi(draws, ci)
            table[name] = draws.mean(axis=0)
            table[f"{name}_low"], table[f"{name}_high"] = bounds[:, 0], bounds[:, 1]
        link = self._fitted().observed_data["link"].values
        expert = self._fitted().constant_data["constraint_expert"].values
        must = np.bincount(expert, weights=link, minlength=len(table)).astype(np.int64)
        table["must_link"] = must
        table["cannot_link"] = np.bincount(expert, minlength=len(table)) - must
        return table.iloc[self.expert_order()]

    # ------------------------------------------------------------------ memberships and predictions
    def _membership_summary(self, features: np.ndarray, ci: float, constraints: PairwiseConstraints | None = None,
                            sweeps: int = 0):
        """Posterior mean of P(z = k | x) for every row and cluster, the most probable cluster and the
        HDI of its probability; computed in chunks, never stored per draw. With `constraints` (the
        training data) the rows are its items and each is also conditioned on the links
        (`constraint_informed_memberships`, its own pairs' or, with `sweeps`, the whole graph's)."""
        W, b = stacked(self._fitted(), "W"), stacked(self._fitted(), "b")
        if constraints is not None:
            alpha, beta = stacked(self._fitted(), "alpha"), stacked(self._fitted(), "beta")
        k = W.shape[-1]

        def probabilities_of(uniq):
            if constraints is None:
                return membership_probabilities(features[uniq], W, b)  # (S, len(uniq), K)
            # every item's and every pair's (draws, ., K) arrays are held: bound them by blocks of draws
            step = max(1, CHUNK_FLOATS // (4 * k * (constraints.n_items + 2 * constraints.n_pairs)))
            return np.concatenate([
                constraint_informed_memberships(features, W[s:s + step], b[s:s + step], alpha[s:s + step],
                                                beta[s:s + step], constraints, uniq, sweeps=sweeps)
                for s in range(0, W.shape[0], step)])

        return summarize_memberships(features.shape[0], k, probabilities_of, W.shape[0], ci)

    def _membership_frame(self, features: np.ndarray, ci: float, index=None, constraints=None,
                          sweeps: int = 0) -> pd.DataFrame:
        mean, cluster, low, high = self._membership_summary(features, ci, constraints, sweeps)
        out = pd.DataFrame({"cluster": cluster}, index=index)
        for k in range(mean.shape[1]):
            out[f"prob_{k}"] = mean[:, k]
        out["prob_low"], out["prob_high"] = low, high
        return out

    def memberships(self, ci: float = DEFAULT_CI, *, use_constraints: bool = True,
                    sweeps: int | None = None) -> pd.DataFrame:
        """Training items: `cluster` (most probable), `prob_<k>` (posterior mean probability of cluster
        k) and `prob_low`, `prob_high` (HDI of the chosen cluster's probability), indexed by item id.

        use_constraints : True (default) conditions each item on the experts' links as well as on
            its features (`constraint_informed_memberships`); False gives the features-only rule
            P(z_i = k | x_i) that `predict` applies to new items (the paper's clustering).
        sweeps : with `use_constraints`, 0 conditions each item on its own pairs' links only,
            P(z_i = k | x, links on i); n > 0 propagates the links through the constraint graph
            by n sweeps of belief propagation (the partners' beliefs given their own other links).
            Default (None): `PROPAGATION_SWEEPS` where the links are many
            (at least `PROPAGATE_FROM` pairs per item in a pair), else 0.
        """
        self._check_fitted()
        index = pd.Index(self._fitted().constant_data["item"].values.astype(str), name="item")
        constraints = self.data_from_fit() if use_constraints else None
        if sweeps is None:
            sweeps = default_sweeps(constraints) if use_constraints else 0
        else:
            check_whole("sweeps", sweeps, lowest=0)
        return self._membership_frame(self._fitted().constant_data["features"].values, ci, index, constraints,
                                      sweeps)

    def predict(self, items: pd.DataFrame, *, ci: float = DEFAULT_CI) -> pd.DataFrame:
        """Every input column plus `cluster`, `prob_<k>` for each cluster k (posterior mean) and
        `prob_low`, `prob_high` (HDI of the chosen cluster's probability). New items need the
        feature columns of the fit; they are scaled as the training items were."""
        self._check_fitted()
        features = self.scaling_.transform(items, "items")
        return append_predictions(items, self._membership_frame(features, ci, index=items.index))

    # ------------------------------------------------------------------ report
    def write_report(self, out_dir, **kwargs):
        """Write `out_dir/report.html`: the expert table and forest plot, the clustering, diagnostics."""
        from bayes_wsc.models.experts.report import write_report

        return write_report(self, out_dir, **kwargs)

    def plot_experts(self, **kwargs):
        """Forest plot of omega, alpha and beta per expert, sorted by omega (a matplotlib Figure)."""
        from bayes_wsc.models.experts.report import plot_experts

        return plot_experts(self, **kwargs)


