"""Perception-guided clustering from seed sets (seed 004, Cheng et al. 2016), declared in PyMC.

    e_i = x_i W + b                                    the item's place in perception space (LPE's embedding)
    P(z_i = k | x_i) = softmax_k(-||e_i - p_k||^2 / 2)  the nearest perception vector, softly
    W[feature, perception_feature] ~ Normal(0, (s / sqrt(d))^2),  b ~ Normal(0, 1)
    a seed of the sets S_i:  P(z_i in S_i | x_i) = sum_{k in S_i} P(z_i = k | x_i)

x_i are the standardized features (d of them), p_k the user's perception vector of cluster k and
z_i the item's cluster. The seeds are coarsened labels: an item she put in one set is known to be
in it, one she put in two sets (her clusters overlap) in one of them, and its likelihood is the
mixture over those sets (`likelihoods.seed_sets_logp`). Items that are no seed do not enter the
likelihood: the model is a conditional model of the seed sets given the features, and its
posterior an ordinary, proper one. The other formulation, `PerceptionMixture` at the end of this module (`fit
perception --formulation mixture`), learns from every item; benchmarks/RESULTS.md ("Learning from
every item") measures when each is the better one.

Since ||e_i||^2 is the same for every k, the logits are e_i . p_k - ||p_k||^2 / 2: a multinomial
logistic regression whose cluster weights W p_k have prior covariance (s^2 / d) p_k . p_l, so
clusters that share perception features share directions in feature space, and a cluster's weights
are learned from the seeds of every cluster that shares a feature with it. With s = 3 (the
default) an embedding coordinate has prior sd about 3 on uncorrelated standardized features, on
the scale of the 0/1 perception attributes.

Why this formulation (measured in benchmarks/perception_formulations.py, benchmarks/RESULTS.md):
the prototype model in the embedding (the issue's candidate (a): e_i | z_i = k ~ Normal(p_k,
sigma^2) for every item, seeded or not) is a density on e, not on X, and it collapses: shrinking W
puts every unseeded item at one perception vector, and sigma -> 0 then pays more than the seeds lose
(sigma = 0.08, one cluster taking all items, mean F-score 0.12 on the simulated study). The
perception-constrained Gaussian mixture on X (candidate (b), a proper density of X) follows the
features' dominant clusters, which are not the user's (0.48, about k-means on X). The conditional
model here cannot be pulled by either (0.84 there, and 0.74-0.75 on the digits against 0.57 for
LPE + k-means).

The clusters are anchored by their perception vectors and seeds, so there is no label switching.
They are not anchored when two clusters have the same perception vector (no item can tell them
apart) or when every seed of one cluster is also a seed of another (only the perception vectors
separate them): `model_checks` says so.

Membership of item i in cluster k is P(z_i = k | x_i) for a new item; a training seed is also
conditioned on its own sets. Overlapping clusters come from thresholding: an item is assigned to
every cluster whose posterior mean probability reaches `overlap_threshold` (0.3 by default,
measured on the simulated study) and always to its most probable one.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from bayes_wsc import inference, maths
from bayes_wsc._lazy import LazyModule
from bayes_wsc.models.perception.data import SeedSets
from bayes_wsc.data.tables import FeatureScaling
from bayes_wsc.defaults import DEFAULT_CI
from bayes_wsc.errors import InputError
from bayes_wsc.estimator import Estimator
from bayes_wsc.models.perception.settings import (DEFAULT_GROUPS, OVERLAP_THRESHOLD, RESTART_RULES,  # noqa: F401
                                                  MixtureSettings, PerceptionSettings)
from bayes_wsc.settings import checked
from bayes_wsc.graph_inputs import declare
from bayes_wsc.maths.perception import threshold_clusters
from bayes_wsc.posterior import CACHE_CHUNK_FLOATS, stacked, summarize_memberships

# PyMC and PyTensor load when a model is built, not when the estimator is: a MAP whose compiled
# program is cached (bayes_wsc.map_program) runs without them
pm = LazyModule("pymc")
pt = LazyModule("pytensor.tensor")
likelihoods = LazyModule("bayes_wsc.likelihoods")
special = LazyModule("scipy.special")

#: MAP restarts whose log density is within this of the best count as having reached it
SAME_OPTIMUM = 1e-3
#: separator of the `clusters` column of predictions
CLUSTER_SEPARATOR = ";"
#: a fit says it is unsure about most items when more than UNSURE_SHARE of the items that are no seed have no
#: cluster with probability UNSURE_LEVEL or more (measured on data sets of the distractor family,
#: benchmarks/RESULTS.md, issue 39)
UNSURE_LEVEL, UNSURE_SHARE = 0.6, 0.5


def check_settings(weight_scale, intercept_sd) -> None:
    """The conditional model's settings, as declared (`PerceptionSettings`): one line naming a wrong one."""
    checked(PerceptionSettings, {"weight_scale": weight_scale, "intercept_sd": intercept_sd})


def check_data(data) -> SeedSets:
    if not isinstance(data, SeedSets):
        raise InputError(f"the perception model fits SeedSets (bayes_wsc.models.perception.data), got {type(data).__name__}")
    return data


def check_threshold(threshold) -> float:
    """The overlap rule's threshold, as declared (`PerceptionSettings`), as a float."""
    return float(checked(PerceptionSettings, {"overlap_threshold": threshold})["overlap_threshold"])


# ---------------------------------------------------------------------- blocks
def model_coords(data: SeedSets) -> dict:
    """The data's coords (item, feature, cluster, perception_feature) and seed_item, the seeded items."""
    check_data(data)
    return {**data.coords, "seed_item": list(data.item_ids[data.seed_items])}


def add_embedding(data: SeedSets, *, weight_scale: float = 3.0, intercept_sd: float = 1.0):
    """W[feature, perception_feature] ~ Normal(0, (weight_scale / sqrt(d))^2) and
    b[perception_feature] ~ Normal(0, intercept_sd^2); returns (W, b)."""
    W = pm.Normal("W", 0.0, weight_scale / np.sqrt(data.n_features), dims=("feature", "perception_feature"))
    b = pm.Normal("b", 0.0, intercept_sd, dims="perception_feature")
    return W, b


def cluster_log_probabilities(features, W, b, perception):
    """log P(z = k | x) = log_softmax_k(e . p_k - ||p_k||^2 / 2) with e = x W + b, for PyTensor tensors:
    features (m, d), W (d, q), b (q,), perception (K, q) -> (m, K)."""
    logits = pt.dot(pt.dot(features, W) + b, perception.T) - 0.5 * pt.sum(perception**2, axis=1)
    return pt.special.log_softmax(logits, axis=-1)


#: the dims of every `pm.Data` the blocks declare (`graph_inputs.declare`)
DATA_DIMS = {"perception": ("cluster", "perception_feature"), "seed_features": ("seed_item", "feature"),
             "seed_sets": ("seed_item", "cluster"), "features": ("item", "feature")}


def model_data(data: SeedSets) -> dict[str, np.ndarray]:
    """Every data-derived value that `build_model`'s blocks declare as `pm.Data`, by name, in NumPy.

    A cached MAP program (`map_program`) takes them as runtime inputs, so one program serves every
    data set of the same shapes; building a program checks that this list and the model agree.
    """
    rows = data.seed_items
    return {"perception": data.perception, "seed_features": data.features[rows],
            "seed_sets": data.seed_mask[rows].astype(float), "features": data.features}


def add_perception(data: SeedSets):
    """The perception vectors P[cluster, perception_feature], a `pm.Data` input."""
    return declare(model_data(data), DATA_DIMS, only=["perception"])["perception"]


def add_seed_likelihood(data: SeedSets, W, b, perception):
    """The seeds' likelihood, sum_i log P(z_i in S_i | x_i), as one Potential; returns the seeded items'
    log memberships (seed_item, cluster). Every data-derived array is a `pm.Data` input.

    Its terms are kept per seeded item (`likelihoods.record_pointwise`, the fit's `log_likelihood`
    group `seed_items[seed_item]`): the unit LOO leaves out is one seeded item with all its sets, the
    model's only data (items that are no seed do not enter the likelihood)."""
    x, in_set = declare(model_data(data), DATA_DIMS, only=["seed_features", "seed_sets"]).values()
    log_probs = cluster_log_probabilities(x, W, b, perception)
    per_seed = likelihoods.seed_sets_logp(log_probs, in_set)
    pm.Potential("seeds", likelihoods.record_pointwise("seed_items", per_seed, dims="seed_item").sum())
    return log_probs


def add_estimands(data: SeedSets, W, b, perception):
    """pi[cluster]: the share of all items (seeded or not) that the model puts in each cluster, the
    mean of P(z_i = k | x_i) over the items."""
    x = declare(model_data(data), DATA_DIMS, only=["features"])["features"]
    probs = pt.exp(cluster_log_probabilities(x, W, b, perception))
    return pm.Deterministic("pi", probs.mean(axis=0), dims="cluster")


def build_model(data: SeedSets, *, weight_scale: float = 3.0, intercept_sd: float = 1.0) -> pm.Model:
    """The perception model as a `pm.Model` with dims feature, perception_feature, cluster, item, seed_item."""
    check_settings(weight_scale, intercept_sd)
    with pm.Model(coords=model_coords(data)) as model:
        W, b = add_embedding(data, weight_scale=weight_scale, intercept_sd=intercept_sd)
        perception = add_perception(data)
        add_seed_likelihood(data, W, b, perception)
        add_estimands(data, W, b, perception)
    return model


# ---------------------------------------------------------------------- numbers from draws
def membership_logits(features: np.ndarray, W: np.ndarray, b: np.ndarray, perception: np.ndarray) -> np.ndarray:
    """The logits of P(z = k | x) for one draw (W (d, q), b (q,) -> (m, K)) or a stack (W (S, d, q),
    b (S, q) -> (S, m, K)), in NumPy. For a stack, the perception vectors are folded into W and b first
    (W P' is (S, d, K)), and the logits made by one matrix product laid out (K, m, S) and returned as an
    (S, m, K) view of it: the softmax over K is then elementwise across contiguous blocks (a third of its
    time at the digits' size), the same values to float rounding."""
    offset = 0.5 * np.sum(perception**2, axis=1)
    if W.ndim == 2:
        return (features @ W + b) @ perception.T - offset
    n_draws, n_features, n_clusters = W.shape[0], W.shape[1], perception.shape[0]
    folded = (W @ perception.T).transpose(1, 2, 0).reshape(n_features, n_clusters * n_draws)  # (d, K * S)
    logits = (features @ folded).reshape(features.shape[0], n_clusters, n_draws)
    logits += (b @ perception.T - offset).T[None]
    return logits.transpose(2, 0, 1)


def membership_log_probabilities(features: np.ndarray, W: np.ndarray, b: np.ndarray,
                                 perception: np.ndarray) -> np.ndarray:
    """log P(z = k | x), shaped as `membership_logits`."""
    return special.log_softmax(membership_logits(features, W, b, perception), axis=-1)


def membership_probabilities(features: np.ndarray, W: np.ndarray, b: np.ndarray, perception: np.ndarray) -> np.ndarray:
    """P(z = k | x), shaped as `membership_logits`: a softmax in place (a fifth of log_softmax then exp
    at the digits' 1797 items x 4000 draws, where predict spends its time)."""
    probs = membership_logits(features, W, b, perception)
    probs -= probs.max(axis=-1, keepdims=True)
    np.exp(probs, out=probs)
    probs /= probs.sum(axis=-1, keepdims=True)
    return probs


def condition_on_seeds(log_probs: np.ndarray, in_set: np.ndarray) -> np.ndarray:
    """Probabilities of items known to be in the sets `in_set` (m, K; a row of all True for an item in
    no set): P(z = k | x, z in S) = P(z = k | x) / sum_{S} P, zero outside S. log_probs: (..., m, K)."""
    masked = np.where(in_set, log_probs, -np.inf)
    return np.exp(masked - np.logaddexp.reduce(masked, axis=-1, keepdims=True))


def overlap_clusters(probabilities: np.ndarray, names, threshold: float) -> list[str]:
    """The overlap rule (`maths.perception.threshold_clusters`: every cluster whose probability
    reaches `threshold`, and always the most probable) as names joined by ';', most probable first."""
    names = np.asarray(names).astype(str)
    probabilities = np.asarray(probabilities, dtype=float)
    assigned = threshold_clusters(probabilities, threshold)
    out = []
    for row, top in zip(assigned, probabilities.argmax(axis=1)):
        out.append(CLUSTER_SEPARATOR.join(names[[top, *(k for k in np.flatnonzero(row) if k != top)]]))
    return out


def unsure_message(probabilities: np.ndarray) -> str | None:
    """One sentence when the fit is unsure about most items, from the (m, K) membership probabilities of
    the items that are no seed; None otherwise. The held-out-seed check cannot see a fit starved of seeds
    (uncertain where it is wrong, right about as often as it expects), so such a fit says so here."""
    probabilities = np.asarray(probabilities, dtype=float)
    if probabilities.size == 0:
        return None
    share = float((probabilities.max(axis=1) < UNSURE_LEVEL).mean())
    if share <= UNSURE_SHARE:
        return None
    return (f"The fit is unsure about most items: {share:.0%} of the items that are no seed have no cluster with "
            f"probability {UNSURE_LEVEL:g} or more, so their memberships are little better than guesses. A fit "
            "with too few seeds looks like this, and its held-out seeds cannot show whether another would do "
            "better: add seeds, or compare the other formulation (fit perception --formulation conditional or "
            "mixture).")


# ---------------------------------------------------------------------- held-out seeds
#: folds of the held-out-seed check: every seed is left out of one refit (fewer when no cluster has this many seeds)
HELD_OUT_FOLDS = 5


def seed_folds(data: SeedSets, folds: int = HELD_OUT_FOLDS, seed: int | None = 0) -> list[np.ndarray]:
    """Item indices of each fold: a cluster's seeds dealt over the folds in a random order (an item in
    several sets counts for its first), then any seed whose fold would leave one of its clusters without
    seeds is kept in every refit instead (a cluster with one seed is never held out)."""
    mask = data.seed_mask
    first = np.where(data.seeded, mask.argmax(axis=1), -1)
    counts = np.bincount(first[first >= 0], minlength=data.n_clusters)
    n_folds = int(min(folds, counts.max())) if counts.size else 0
    fold_of = np.full(data.n_items, -1)
    rng = np.random.default_rng(seed)
    for k in range(data.n_clusters):
        members = rng.permutation(np.flatnonzero(first == k))
        fold_of[members] = (int(rng.integers(max(n_folds, 1))) + np.arange(members.size)) % max(n_folds, 1)
    for f in range(n_folds):
        for k in range(data.n_clusters):
            held = mask[:, k] & (fold_of == f)
            if held.any() and not (mask[:, k] & (fold_of != f)).any():
                fold_of[np.flatnonzero(held)[0]] = -1  # the cluster keeps this seed in every refit
    return [np.flatnonzero(fold_of == f) for f in range(n_folds) if (fold_of == f).any()]


def poisson_binomial_cdf(hits: int, probabilities: np.ndarray) -> float:
    """P(H <= hits) for H a sum of independent Bernoulli(probabilities), exactly (a convolution)."""
    dist = np.ones(1)
    for p in np.asarray(probabilities, dtype=float):
        dist = np.append(dist * (1 - p), 0.0) + np.insert(dist * p, 0, 0.0)
    return float(min(1.0, dist[: int(hits) + 1].sum()))


#: `held_out_scores`' guarded log score mixes the refits' probabilities with a uniform guess this often
GUESS_SHARE = 0.1


def held_out_scores(data: SeedSets, log_probs: np.ndarray, names, folds: int) -> dict:
    """What the refits say of the seeds they did not see: `log_probs` (n, K) holds log P(z = k | x) of
    each held-out seed under the refit without its fold (NaN rows: not held out). Per cluster, over its
    held-out seeds: `accuracy` (the most probable cluster is one of the seed's sets), `expected` (the
    refits' own probability of their most probable cluster: the accuracy they expect), `log_score`
    (mean log P(z in S | x)) and `p_value` = P(accuracy this low) if each seed's cluster were drawn from
    its refit's probabilities (exact). Overall: the mean log score and accuracy per held-out seed, and
    `guarded_log_score`, the mean log of (1 - GUESS_SHARE) P(z in S | x) + GUESS_SHARE ``|S|`` / K: the log
    score of the refits mixed with a uniform guess, so that one confident miss costs at most log(K /
    (GUESS_SHARE ``|S|``)) and an over-confident fit is not judged by its few worst seeds."""
    held = np.flatnonzero(np.isfinite(log_probs).all(axis=1) & data.seeded)
    L, S = log_probs[held], data.seed_mask[held]
    score = special.logsumexp(np.where(S, L, -np.inf), axis=1)
    guarded = np.log((1 - GUESS_SHARE) * np.exp(score) + GUESS_SHARE * S.sum(axis=1) / max(S.shape[1], 1))
    hit = S[np.arange(held.size), L.argmax(axis=1)] if held.size else np.zeros(0, bool)
    confidence = np.exp(L.max(axis=1)) if held.size else np.zeros(0)
    out = {"folds": int(folds), "seeds": int(held.size), "clusters": [str(n) for n in names],
           "log_score": float(score.mean()) if held.size else float("nan"),
           "guarded_log_score": float(guarded.mean()) if held.size else float("nan"),
           "accuracy": float(hit.mean()) if held.size else float("nan"),
           # per held-out seed (item index, guarded log score): what a paired comparison on the same folds needs
           "seed_items": [int(i) for i in held], "seed_guarded_log_scores": [float(v) for v in guarded],
           "cluster_seeds": [], "cluster_accuracy": [], "cluster_expected": [], "cluster_log_score": [],
           "cluster_p_value": []}
    for k in range(len(out["clusters"])):
        rows = S[:, k]
        n = int(rows.sum())
        out["cluster_seeds"].append(n)
        out["cluster_accuracy"].append(float(hit[rows].mean()) if n else float("nan"))
        out["cluster_expected"].append(float(confidence[rows].mean()) if n else float("nan"))
        out["cluster_log_score"].append(float(score[rows].mean()) if n else float("nan"))
        out["cluster_p_value"].append(poisson_binomial_cdf(int(hit[rows].sum()), confidence[rows]) if n
                                      else float("nan"))
    return out


#: `score_ceiling` must lie this far below the rival's score for the held-out refits to stop (rounding of the means)
CEILING_MARGIN = 1e-9


def score_ceiling(data: SeedSets, log_probs: np.ndarray, remaining: np.ndarray) -> float:
    """The highest guarded log score (`held_out_scores`) the held-out seeds can reach whatever the refits of the
    seeds `remaining` (item indices, not yet held out; the rows of `log_probs` scored so far are kept): each
    remaining seed at its largest guarded score, log((1 - GUESS_SHARE) + GUESS_SHARE ``|S|`` / K) (its sets
    certain), and every subset of them counted (a refit whose rows come out non-finite leaves its seeds out of
    the mean), so the score lies at or below this whatever those refits find."""
    scored = held_out_scores(data, log_probs, list(range(data.n_clusters)), 1)
    remaining = np.asarray(remaining, dtype=int)
    if not remaining.size:
        return scored["guarded_log_score"]
    best = float(np.max(np.log((1 - GUESS_SHARE) + GUESS_SHARE * data.seed_mask[remaining].sum(axis=1)
                               / data.n_clusters)))
    n, total = scored["seeds"], float(np.sum(scored["seed_guarded_log_scores"]))
    # the mean over the scored seeds and any r of the remaining is largest at r = 0 or at r = all of them
    all_in = (total + remaining.size * best) / (n + remaining.size)
    return max(all_in, total / n) if n else all_in


# ---------------------------------------------------------------------- estimator
class PerceptionClustering(Estimator):
    """The user's clusters from her seed sets and their perception vectors (seed 004).

    Parameters
    ----------
    weight_scale : the prior sd of W's entries is weight_scale / sqrt(d) (d features).
    intercept_sd : the prior sd of b's entries.
    overlap_threshold : the overlap rule of `predict` and `memberships`: an item is in every cluster
        whose posterior mean probability reaches it (and in its most probable one).
    restarts : MAP starts (W = b = 0, then random draws from the prior); the best log density wins.
    method, draws, tune, chains, seed, backend, target_accept, precision : as every estimator.
    model_file, model_settings : a variant file (see `models/`) and its own settings.

    After `fit(data)`: `idata_` with W[feature, perception_feature], b[perception_feature] and
    pi[cluster] (the share of the items in each cluster), `memberships()` for the training items
    and `predict(items)` for new ones.
    """

    model_name = "perception"
    data_class = SeedSets
    required_groups = ("posterior", "observed_data", "constant_data")
    bounds = {"pi": (0.0, 1.0)}
    estimands = ["pi", "W", "b"]
    unit_dims = ("item", "seed_item")
    predict_options = ("overlap_threshold",)
    Settings = PerceptionSettings

    # ------------------------------------------------------------------ hooks
    def data_messages(self, data: SeedSets) -> list[str]:
        """Constant features, whose rows of W learn nothing, before the fit (a cluster without seeds is
        refused by `SeedSets`)."""
        from bayes_wsc.diagnostics import constant_features_message

        found = constant_features_message(data.features, data.scaling.names, "their rows of the embedding W")
        return [found] if found else []

    def build_model(self, data: SeedSets) -> pm.Model:
        return build_model(data, **self.build_settings())

    def model_inputs(self, data: SeedSets):
        return model_coords(data), model_data(data)

    def initial_values(self, data: SeedSets) -> list[dict]:
        """W = b = 0 (every cluster equally likely for every item), then `restarts - 1` draws from the prior."""
        d, q = data.n_features, data.n_perception
        starts = [{"W": np.zeros((d, q)), "b": np.zeros(q)}]
        rng = np.random.default_rng(self.seed)
        for _ in range(int(self.restarts) - 1):
            starts.append({"W": rng.normal(0.0, float(self.weight_scale) / np.sqrt(d), (d, q)),
                           "b": rng.normal(0.0, float(self.intercept_sd), q)})
        return starts

    def data_groups(self, data: SeedSets) -> dict:
        return {
            "observed_data": {"seed_cluster": data.seed_cluster, "seed_item_index": data.seed_item},
            "constant_data": {
                "features": data.features,
                "feature_mean": data.scaling.mean,
                "feature_scale": data.scaling.scale,
                "perception": data.perception,
            },
            "dims": {"seed_cluster": ["seed"], "seed_item_index": ["seed"], "features": ["item", "feature"],
                     "feature_mean": ["feature"], "feature_scale": ["feature"],
                     "perception": ["cluster", "perception_feature"]},
            "attrs": {"data_settings": data.settings},
        }

    #: warn when MAP starts stop at different optima (the mixture's starts do on 19-20 of 20 fits of every
    #: study, good fits or bad, benchmarks/RESULTS.md: there it tells nothing and is not given)
    warn_on_restart_optima = True

    def model_checks(self, idata) -> list[str]:
        """Clusters the data cannot anchor, MAP restarts that stopped at different optima, and a fit
        unsure about most items (`unsure_message`)."""
        messages = []
        const = idata.constant_data
        names = [str(c) for c in idata.posterior["cluster"].values]
        perception = const["perception"].values
        for k in range(len(names)):
            for j in range(k + 1, len(names)):
                if np.array_equal(perception[k], perception[j]):
                    messages.append(
                        f"clusters {names[k]!r} and {names[j]!r} have the same perception vector: the model gives "
                        "them the same probability for every item, whatever their seeds. Describe them differently "
                        "or merge them.")
        seed_cluster = idata.observed_data["seed_cluster"].values
        seed_item = idata.observed_data["seed_item_index"].values
        sets = [set(seed_item[seed_cluster == k]) for k in range(len(names))]
        for k, members in enumerate(sets):
            covering = [names[j] for j, other in enumerate(sets) if j != k and members <= other]
            if covering:
                messages.append(
                    f"every seed of cluster {names[k]!r} is also a seed of {covering[0]!r}: the seeds do not say "
                    f"where {names[k]!r} ends and {covering[0]!r} begins, only their perception vectors do. "
                    f"Give {names[k]!r} a seed that is not in {covering[0]!r}.")
        restart_lps = inference.get_attrs(idata).get("fit_info", {}).get("map", {}).get("restart_log_densities")
        if self.warn_on_restart_optima and restart_lps and len(restart_lps) >= 2:
            lps = np.asarray(restart_lps, dtype=float)
            best = np.nanmax(lps)
            behind = lps < best - SAME_OPTIMUM * max(1.0, abs(best) * 1e-6)
            if behind.any():
                messages.append(
                    f"{int(behind.sum())} of {lps.size} MAP starts stopped at a lower log density than the best "
                    f"({best:.2f}): the posterior has more than one mode (overlapping seed sets can cause this). "
                    "The best is reported; NUTS shows how far the others matter.")
        data = self.data_from_fit()
        unsure = unsure_message(self._membership_summary(data.features[data.unseeded_items], DEFAULT_CI)[0])
        return messages + ([unsure] if unsure else [])

    @classmethod
    def from_idata(cls, idata, source: str = "this fit"):
        """A saved fit of either formulation: one fitted with the seeded mixture's settings (`groups`)
        comes back as a `PerceptionMixture`."""
        settings = inference.get_attrs(idata).get("settings", {}) if hasattr(idata, "groups") else {}
        if cls is PerceptionClustering and isinstance(settings, dict) and "groups" in settings:
            return PerceptionMixture.from_idata(idata, source)
        return super().from_idata(idata, source)

    # ------------------------------------------------------------------ held-out seeds
    def start_names(self) -> tuple[str, ...]:
        """The free variables `initial_values` gives (what keys the MAP's cached program)."""
        return ("W", "b")

    def leave_out(self, inputs: dict, data: SeedSets, fold: np.ndarray) -> dict:
        """The MAP program's inputs with the seeds `fold` (item indices) left out: their sets become
        every cluster, so that log P(z_i in S_i | x_i) = 0 and they carry no information."""
        if "seed_sets" not in inputs:
            raise InputError("the fitted model has no `seed_sets` input, so its seeds cannot be held out")
        values = dict(inputs)
        sets = np.array(inputs["seed_sets"], copy=True)
        sets[np.searchsorted(data.seed_items, fold)] = 1.0
        values["seed_sets"] = sets
        return values

    def refit_items(self, data: SeedSets) -> tuple[SeedSets, np.ndarray | None]:
        """The items the held-out refits see, and their rows in `data` (None: every item; the conditional
        model's likelihood holds the seeds alone, so it refits on all of them)."""
        return data, None

    def _refit_start(self, names) -> dict:
        """The fit's mode (or its posterior mean, for a loaded fit with draws), by free variable."""
        point = self.map_point_
        if point is None:
            post = self._fitted().posterior
            point = {n: post[n].values.reshape(-1, *post[n].shape[2:]).mean(axis=0) for n in names if n in post}
        return {n: np.asarray(point[n], dtype=float) for n in names if n in point}

    def held_out_seeds(self, data: SeedSets | None = None, *, folds: int = HELD_OUT_FOLDS) -> dict:
        """Each fold of the seeds (`seed_folds`) left out and the MAP refitted from this fit's mode (the
        same compiled program, with those seeds' sets opened up), then the left-out seeds scored by
        `held_out_scores`. Kept in the fit's attrs (`held_out_seeds`), so that a fit scores once."""
        self._check_fitted()
        stored = inference.get_attrs(self._fitted()).get("held_out_seeds")
        if isinstance(stored, dict) and stored.get("folds_asked") == folds:
            return stored
        data = self.data_from_fit() if data is None else data
        result = self._held_out_refits(data, folds, self._refit_start(self.start_names()))
        inference.set_attrs(self._fitted(), {"held_out_seeds": result})
        return result

    def _held_out_refits(self, data: SeedSets, folds: int, start: dict, rival: float | None = None) -> dict:
        """`held_out_seeds`' refits from `start` (free variables) and their scores; needs no fit of its own, only
        the estimator's settings (the mixture scores its subsample's optimum with it before its final fit).
        `rival`: another fit's guarded log score (`choice_score`); the refits stop once this one's can no longer
        exceed it (`score_ceiling`), and the result then says so (`stopped`) and holds the folds refitted."""
        import time

        from bayes_wsc.map_program import run_map

        started = time.perf_counter()
        recipe = self._recipe()
        refit_data, kept = self.refit_items(data)
        saved = (getattr(self, "_model", None), getattr(self, "_model_recipe", None))
        if kept is not None or saved[1] is None:  # the model of the items refitted, built if its program is not cached
            self._model, self._model_recipe = None, (recipe.build, refit_data)
        try:
            program, fixed, inputs, _ = self._map_program(refit_data, [start], recipe.map_fixed(refit_data))
        finally:
            if kept is not None:
                self._model, self._model_recipe = saved
        start = {n: v for n, v in start.items() if n in program.free}
        log_probs = np.full((data.n_items, data.n_clusters), np.nan)
        fold_list = seed_folds(refit_data, folds, self.seed)
        index = np.arange(data.n_items) if kept is None else kept  # refit_data's rows in `data`
        stopped = None
        for done, fold in enumerate(fold_list, start=1):
            draws, _ = run_map(program, [start], self.leave_out(inputs, refit_data, fold), fixed=fixed)
            params = {n: np.asarray(v)[0] for n, v in draws.posterior.items()}
            log_probs[index[fold]] = self.draw_log_probabilities(refit_data.features[fold], params,
                                                                 refit_data.perception)[0]
            if rival is not None and done < len(fold_list) and math.isfinite(rival):
                ceiling = score_ceiling(data, log_probs, index[np.concatenate(fold_list[done:])])
                if ceiling <= rival - CEILING_MARGIN:
                    stopped = {"after_folds": done, "of_folds": len(fold_list), "ceiling": ceiling, "rival": rival}
                    fold_list = fold_list[:done]
                    break
        self.held_out_log_probs_ = log_probs  # (n, K), NaN rows: not held out (kept for studies of the rule)
        return {**held_out_scores(data, log_probs, [str(c) for c in data.clusters], len(fold_list)),
                "folds_asked": int(folds), "fold_items": [[int(i) for i in index[fold]] for fold in fold_list],
                "refit_items": int(refit_data.n_items), "seconds": time.perf_counter() - started,
                **({"stopped": stopped} if stopped else {})}

    def summary_notes(self) -> list[str]:
        """The estimator's notes, and how the formulation was chosen when `PerceptionAuto` chose it."""
        notes = super().summary_notes()
        choice = inference.get_attrs(self._fitted()).get("formulation")
        if isinstance(choice, dict) and choice.get("words"):
            notes.append(str(choice["words"]))
        return notes

    # ------------------------------------------------------------------ data back from a fit
    @property
    def scaling_(self) -> FeatureScaling:
        self._check_fitted()
        return FeatureScaling.saved(self._fitted().constant_data)

    @property
    def clusters_(self) -> list[str]:
        self._check_fitted()
        return [str(c) for c in self._fitted().posterior["cluster"].values]

    def data_from_fit(self) -> SeedSets:
        """The items, seeds and perception vectors the fit saw, rebuilt from the saved fit."""
        self._check_fitted()
        const, obs = self._fitted().constant_data, self._fitted().observed_data
        return SeedSets(const["item"].values, const["features"].values, self.scaling_,
                        np.asarray(self.clusters_), const["perception"].values,
                        const["perception_feature"].values, obs["seed_item_index"].values,
                        obs["seed_cluster"].values, dict(inference.get_attrs(self._fitted()).get("data_settings", {})))

    # ------------------------------------------------------------------ memberships and predictions
    def _parameter_draws(self) -> dict:
        """The posterior draws memberships are computed from, each with a leading draw axis."""
        return {"W": stacked(self._fitted(), "W"), "b": stacked(self._fitted(), "b")}

    def _perception(self, perception=None) -> np.ndarray:
        return self._fitted().constant_data["perception"].values if perception is None else perception

    def draw_log_probabilities(self, features: np.ndarray, params: dict, perception=None) -> np.ndarray:
        """log P(z = k | x) for the draws in `params` (`_parameter_draws`, or a subset) -> (S, m, K);
        `perception` defaults to the fit's."""
        perception = self._perception(perception)
        return membership_log_probabilities(features, params["W"], params["b"], perception)

    def draw_probabilities(self, features: np.ndarray, params: dict, perception=None) -> np.ndarray:
        """P(z = k | x), as `draw_log_probabilities` (a softmax in place for the conditional model)."""
        if type(self).draw_log_probabilities is not PerceptionClustering.draw_log_probabilities:
            return np.exp(self.draw_log_probabilities(features, params, perception))
        perception = self._perception(perception)
        return membership_probabilities(features, params["W"], params["b"], perception)

    def _membership_summary(self, features: np.ndarray, ci: float, in_set: np.ndarray | None = None):
        """Posterior mean of every row's cluster probabilities (m, K), the most probable cluster and the
        HDI of its probability; in chunks, never stored per draw. `in_set` (m, K) conditions each row on
        the sets it is known to be in (all True for none)."""
        params = self._parameter_draws()
        n_draws = next(iter(params.values())).shape[0]

        def probabilities_of(unique):
            if in_set is None:
                return self.draw_probabilities(features[unique], params)
            return condition_on_seeds(self.draw_log_probabilities(features[unique], params), in_set[unique])

        return summarize_memberships(features.shape[0], len(self.clusters_), probabilities_of, n_draws, ci,
                                     CACHE_CHUNK_FLOATS)

    def _membership_frame(self, features, ci, index, threshold, in_set=None) -> pd.DataFrame:
        mean, chosen, low, high = self._membership_summary(features, ci, in_set)
        names = np.asarray(self.clusters_)
        out = pd.DataFrame({"cluster": names[chosen]}, index=index)
        for k, name in enumerate(names):
            out[f"prob_{name}"] = mean[:, k]
        out["prob_low"], out["prob_high"] = low, high
        out["clusters"] = overlap_clusters(mean, names, threshold)
        return out

    def memberships(self, ci: float = DEFAULT_CI, *, overlap_threshold: float | None = None,
                    use_seeds: bool = True) -> pd.DataFrame:
        """Training items, indexed by id: `cluster` (most probable), `prob_<cluster>` (posterior mean
        probability), `prob_low`, `prob_high` (HDI of the chosen cluster's probability; empty after a
        MAP) and `clusters` (the overlap rule), plus `seed_of` (the sets the item is a seed of).

        use_seeds : True (default) conditions a seed on its own sets, P(z_i = k | x_i, z_i in S_i);
            False gives every item the features-only rule of `predict`.
        """
        self._check_fitted()
        threshold = check_threshold(self.overlap_threshold if overlap_threshold is None else overlap_threshold)
        data = self.data_from_fit()
        in_set = None
        if use_seeds:
            in_set = np.where(data.seeded[:, None], data.seed_mask, True)
        index = pd.Index(data.item_ids, name="item")
        out = self._membership_frame(data.features, ci, index, threshold, in_set)
        mask = data.seed_mask
        out["seed_of"] = [CLUSTER_SEPARATOR.join(data.clusters[row]) for row in mask]
        return out

    def predict(self, items: pd.DataFrame, *, ci: float = DEFAULT_CI,
                overlap_threshold: float | None = None) -> pd.DataFrame:
        """Every input column plus `cluster` (most probable), `prob_<cluster>` for each cluster (posterior
        mean of P(z = k | x)), `prob_low`, `prob_high` (HDI of the chosen cluster's probability; empty
        after a MAP) and `clusters`: every cluster the item is assigned to under the overlap rule,
        separated by ';'. New items need the fit's feature columns; they are scaled as in training."""
        self._check_fitted()
        threshold = check_threshold(self.overlap_threshold if overlap_threshold is None else overlap_threshold)
        features = self.scaling_.transform(items, "items")
        added = self._membership_frame(features, ci, items.index, threshold)
        clash = [c for c in added.columns if c in items.columns]
        if clash:
            raise InputError(f"items already has a column {clash[0]!r}, which predict would overwrite; rename it")
        return pd.concat([items, added], axis=1)

    # ------------------------------------------------------------------ report
    def write_report(self, out_dir, **kwargs):
        """Write `out_dir/report.html`: the clusters, memberships, W, diagnostics (and scores given a truth)."""
        from bayes_wsc.models.perception.report import write_report

        return write_report(self, out_dir, **kwargs)


# ============================================================ the seeded mixture
#: lower bound of every component sd (standardized units): a constant feature (a blank pixel) stays finite
SD_FLOOR = 0.01
#: prior sd of the perception shifts A and the group centres B (standardized units)
SHIFT_SD = 2.0
#: Dirichlet concentration of pi and pi_group (seed 003's 1.01: a mode inside the simplex)
CONCENTRATION = 1.01
#: a group whose MAP share is under this fraction of an even share (1 / groups) is small: NUTS is then slow
SMALL_GROUP_FRACTION = 0.25
LOG_2PI = maths.LOG_2PI


def check_mixture_settings(groups, seed_weight) -> None:
    """The mixture's settings, as declared (`MixtureSettings`): one line naming a wrong one."""
    checked(MixtureSettings, {"groups": groups, "seed_weight": seed_weight})


def mixture_coords(data: SeedSets, groups: int) -> dict:
    check_data(data)
    return {**data.coords, "group": [f"g{h}" for h in range(int(groups))]}


def mixture_data(data: SeedSets) -> dict[str, np.ndarray]:
    """Every data-derived value the model declares as `pm.Data`, by name, in NumPy."""
    return {"perception": data.perception, "features": data.features,
            "seed_sets": np.where(data.seeded[:, None], data.seed_mask, True).astype(float),
            "seeded": data.seeded.astype(float)}


def build_mixture_model(data: SeedSets, *, groups: int = DEFAULT_GROUPS, seed_weight: float = 1.0) -> pm.Model:
    """The seeded mixture as a `pm.Model` (dims item, feature, cluster, perception_feature, group)."""
    check_mixture_settings(groups, seed_weight)
    groups = int(groups)
    values = mixture_data(data)
    with pm.Model(coords=mixture_coords(data, groups)) as model:
        perception = pm.Data("perception", values["perception"], dims=("cluster", "perception_feature"))
        x = pm.Data("features", values["features"], dims=("item", "feature"))
        in_set = pm.Data("seed_sets", values["seed_sets"], dims=("item", "cluster"))
        seeded = pm.Data("seeded", values["seeded"], dims="item")
        A = pm.Normal("A", 0.0, SHIFT_SD, dims=("feature", "perception_feature"))
        B = pm.Normal("B", 0.0, SHIFT_SD, dims=("group", "feature"))
        sd = pm.Deterministic("sd", SD_FLOOR + pm.Gamma("sd_excess", 2.0, 2.0, dims="feature"), dims="feature")
        pi = pm.Dirichlet("pi", np.full(data.n_clusters, CONCENTRATION), dims="cluster")
        if groups > 1:
            log_group = pt.log(pm.Dirichlet("pi_group", np.full(groups, CONCENTRATION), dims="group"))
        else:
            log_group = pt.zeros(1)
        log_joint = joint_log_density(x, A, B, sd, pt.log(pi), log_group, perception, data.n_clusters, groups,
                                      data.n_features)
        log_x = likelihoods.mixture_logp(0.0, log_joint)  # log p(x_i)
        log_x_seeds = likelihoods.seed_sets_logp(log_joint, in_set)  # log p(x_i, z_i in S_i); = log p(x_i) if no seed
        per_item = log_x + seed_weight * (log_x_seeds - log_x) * seeded
        pm.Potential("items", likelihoods.record_pointwise("items", per_item, dims="item").sum())
    return model


def joint_log_density(x, A, B, sd, log_pi, log_group, perception, n_clusters: int, n_groups: int, n_features: int):
    """log pi_k + log sum_h pi_group_h N(x_i | A p_k + B_h, diag(sd^2)), (n, K), for PyTensor tensors
    (the sizes as Python numbers: JAX compiles static shapes)."""
    shifts = pt.dot(perception, A.T)  # (K, d)
    means = (shifts[:, None, :] + B[None, :, :]).reshape((n_clusters * n_groups, n_features))
    sds = pt.zeros((n_clusters * n_groups, n_features)) + sd[None, :]
    comp = likelihoods.diag_normal_logp(x, means, sds).reshape((-1, n_clusters, n_groups))
    return log_pi[None, :] + likelihoods.mixture_logp(log_group[None, None, :], comp)


# ---------------------------------------------------------------------- numbers from draws
def component_weights(A, B, sd, pi_group, perception) -> np.ndarray:
    """(S, K, G, 2d + 1) for a stack of S draws: `maths.diag_normal_weights` of every cluster k and group h (mean
    A p_k + B_h, sd, log pi_group_h added), so that log pi_group_h N(x | mean_kh, sd^2) is this row times
    `maths.quadratic_features(x)` (`joint_log_density_np`). It depends on the draws alone: a caller scoring
    items in chunks makes it once (`PerceptionMixture._parameter_draws`)."""
    means = np.einsum("kq,sdq->skd", perception, A, optimize=True)[:, :, None, :] + B[:, None, :, :]  # (S, K, G, d)
    return maths.diag_normal_weights(means, sd[:, None, None, :], np.log(pi_group)[:, None, :])


def joint_log_density_np(features, A, B, sd, pi, pi_group, perception, weights=None) -> np.ndarray:
    """`joint_log_density` in NumPy for one draw (A (d, q), B (G, d), sd (d,), pi (K,), pi_group (G,))
    -> (m, K), or a stack of S draws (each with a leading S axis) -> (S, m, K); `weights`: their
    `component_weights`, when the caller has them."""
    if np.ndim(A) == 2:
        return joint_log_density_np(features, A[None], B[None], sd[None], pi[None], pi_group[None], perception)[0]
    comp = _component_terms(features, A, B, sd, pi_group, perception, weights)
    joint = np.log(pi)[:, :, None] + maths.logsumexp(comp, axis=2, overwrite_a=True)  # (S, K, m)
    return joint.transpose(0, 2, 1)  # (S, m, K), a view


def _component_terms(features, A, B, sd, pi_group, perception, weights=None) -> np.ndarray:
    """log pi_group_h N(x_i | mean_kh, sd^2) of every draw, cluster, group and item, (S, K, G, m), in one matrix
    product, items last (each (cluster, group) block of a draw contiguous: the sums over groups and clusters run
    across blocks)."""
    if weights is None:
        weights = component_weights(A, B, sd, pi_group, perception)
    S, K, G, width = weights.shape
    return np.matmul(weights.reshape(S * K * G, width), maths.quadratic_features(features).T).reshape(S, K, G, -1)


def mixture_log_probabilities(features, A, B, sd, pi, pi_group, perception, weights=None) -> np.ndarray:
    """log P(z = k | x), shaped as `joint_log_density_np`."""
    joint = joint_log_density_np(features, A, B, sd, pi, pi_group, perception, weights)
    return joint - maths.logsumexp(joint, axis=-1, keepdims=True)


def mixture_probabilities(features, A, B, sd, pi, pi_group, perception, weights=None) -> np.ndarray:
    """P(z = k | x) of a stack of S draws, (S, m, K): exp of `mixture_log_probabilities` to float rounding, with one
    shift per draw and item (the largest of its K x G terms pi_k pi_group_h N(x | mean_kh, sd^2)) and one
    exponential per term, normalized over both axes at once instead of a log-sum-exp over the groups, another over
    the clusters and an exponential of the result (half the passes over the largest arrays of `predict`)."""
    comp = _component_terms(features, A, B, sd, pi_group, perception, weights)  # (S, K, G, m)
    comp += np.log(pi)[:, :, None, None]
    S, K, G, m = comp.shape
    terms = comp.reshape(S, K * G, m)  # short axes, slice by slice (`maths.max_last`, `maths.sum_last`)
    terms -= maths.max_last(np.moveaxis(terms, 1, -1))[:, None, :]
    np.exp(terms, out=terms)
    clusters = maths.sum_last(np.moveaxis(comp, 2, -1))  # (S, K, m): each cluster's sum over its groups
    total = maths.sum_last(np.moveaxis(clusters, 1, -1))
    clusters *= np.reciprocal(total, out=total)[:, None, :]
    return clusters.transpose(0, 2, 1)  # (S, m, K), a view


def restart_seed_scores(data: SeedSets, optima: list[dict]) -> np.ndarray:
    """Per MAP optimum (free variables A, B, sd_excess, pi, pi_group): the seeds' log score under its
    memberships, sum over seeded items of log P(z_i in S_i | x_i) with the sets not conditioned on."""
    rows = data.seed_items
    scores = []
    for point in optima:
        A = np.asarray(point["A"], dtype=float)
        pi_group = np.asarray(point["pi_group"], dtype=float) if "pi_group" in point else np.ones(1)
        log_probs = mixture_log_probabilities(data.features[rows], A, np.asarray(point["B"], dtype=float),
                                              SD_FLOOR + np.asarray(point["sd_excess"], dtype=float),
                                              np.asarray(point["pi"], dtype=float), pi_group, data.perception)
        scores.append(float(special.logsumexp(np.where(data.seed_mask[rows], log_probs, -np.inf), axis=1).sum()))
    return np.asarray(scores)


#: the mixture's MAP restarts stop at this tolerance (nats of log density gained by an iteration, per free variable;
#: every MAP's is 1e-8, `map_program.run_map`): they only rank the optima, and the chosen one is then fitted
#: again to every MAP's tolerance (at 10,000 items the restarts took 444 evaluations instead of 895, the same
#: restart chosen; benchmarks/RESULTS.md, issue 39)
RESTART_TOL = 1e-5
#: the mixture's MAP restarts and held-out refits see every seed and at most this many other items (a random
#: subsample); its final fit sees every item (benchmarks/RESULTS.md, issue 39: the cost of auto at 10,000 items)
RESTART_ITEMS = 2000


def subsample_items(data: SeedSets, limit: int = RESTART_ITEMS,
                    seed: int | None = 0) -> tuple[SeedSets, np.ndarray | None]:
    """(every seed and `limit` of the other items drawn at random, their rows in `data` in order), or
    (data, None) when there are no more than `limit` other items. The seeds keep their order, so
    `seed_folds` deals them into the same folds as on `data`."""
    others = data.unseeded_items
    if others.size <= int(limit):
        return data, None
    drawn = np.random.default_rng(seed).choice(others, int(limit), replace=False)
    kept = np.sort(np.concatenate([data.seed_items, drawn]))
    position = np.full(data.n_items, -1)
    position[kept] = np.arange(kept.size)
    part = SeedSets(data.item_ids[kept], data.features[kept], data.scaling, data.clusters, data.perception,
                    data.perception_names, position[data.seed_item], data.seed_cluster, dict(data.settings))
    return part, kept


# ---------------------------------------------------------------------- estimator
class PerceptionMixture(PerceptionClustering):
    """The user's clusters from her seed sets and perception vectors, learned from every item.

    Parameters
    ----------
    groups : G, the groups of the features' own structure that the user does not care about.
    seed_weight : the PC weight lam on the seeds' likelihood (1: the joint model, a proper posterior).
    overlap_threshold, restarts, method, draws, ... : as `PerceptionClustering`.

    After `fit(data)`: `idata_` with A[feature, perception_feature], B[group, feature], sd[feature],
    pi[cluster] and pi_group[group]; `memberships()` and `predict(items)` as `PerceptionClustering`.

    Perception-guided clustering that learns from every item: a seeded mixture of X (seed 004).

        z_i ~ Categorical(pi)                  the user's cluster          pi ~ Dirichlet(1.01)
        g_i ~ Categorical(pi_group)            a group she does not care about (G of them)
        x_i | z_i = k, g_i = h ~ Normal(A p_k + B_h, diag(sd^2))
        A[feature, perception_feature] ~ Normal(0, 2^2),  B[group, feature] ~ Normal(0, 2^2),
        sd[feature] = 0.01 + Gamma(2, 2)
        a seed of the sets S_i: z_i in S_i

    x_i are the standardized features of *every* item, p_k the user's perception vector of cluster k. Both
    z_i and g_i are summed out (`likelihoods.mixture_logp`): an item that is no seed contributes
    log p(x_i) = log sum_k pi_k sum_h pi_group_h N(x_i | A p_k + B_h, sd^2), a seed log p(x_i, z_i in S_i),
    the same sum over its sets only. So the model is a proper joint density of the features and the seed
    sets, and its posterior an ordinary one.

    Why this form (benchmarks/perception.py, benchmarks/RESULTS.md, "Learning from every item"):

    * The user's clusters shift the features along A p_k: clusters that share a perception feature share a
      direction, so a cluster's shift is learned from every cluster with the same attribute, from every
      item. P(z = k | x) is then a softmax whose weights are diag(1/sd^2) A p_k within a group: the
      conditional model's form (`models/perception.py`), with its weights estimated from all the items.
    * The groups g absorb a structure of the features that the user does not care about (the dominant
      clusters of the studies, which k-means on X finds): without them (G = 1) the K components follow
      that structure wherever it is stronger than hers (the formulation (b) of
      benchmarks/perception_formulations.py, 0.48 on the simulated study).
    * PC weight `seed_weight` (lam, Hughes et al., seed 003): the seeds' log P(z_i in S_i | x_i) counted
      lam times. lam = 1 (the default) is the joint model above; lam > 1 asks the clusters to predict the
      seeds at some cost in how well they describe X, and the posterior is then a generalized one (the
      seeds' information counted lam times; `models/pcmix.py` explains what NUTS draws mean then).

    When it fails (measured): the user's cluster is not one shifted copy of the rest of the data (the
    digits' "closed loop" is 0, 6, 8 and 9, four shapes with nothing additive in common): the components
    then follow the features' own groups (0.51 against the conditional model's 0.73 on the digits), and
    the conditional model, `models/perception.py`, the package's default, is the better one. With fewer
    groups G than the features' own structure has, the components take that structure instead of the
    user's clusters on some data sets. Items in two of her clusters get one of them (over-confident).

    Membership of item i in cluster k is P(z_i = k | x_i) = pi_k p(x_i | k) / p(x_i) (a seed is also
    conditioned on its sets). The groups are exchangeable: their labels switch between NUTS chains (B and
    pi_group then have a large R-hat) while every membership, A, sd and pi do not depend on the labels.
    """

    model_name = "perception"  # a formulation of the perception model: its fits load, check and report as one
    bounds = {"pi": (0.0, 1.0), "pi_group": (0.0, 1.0), "sd": (SD_FLOOR, math.inf)}
    estimands = ["pi", "A", "sd"]
    unit_dims = ("item",)

    warn_on_restart_optima = False
    Settings = MixtureSettings  # its own, not the conditional model's (weight_scale, intercept_sd)

    def check_data(self, data: SeedSets) -> None:
        """No more groups than items: k-means places each group's centre at an item."""
        if int(self.groups) > data.n_items:
            raise InputError(f"groups={int(self.groups)} (--groups) is more than the {data.n_items} items: each group "
                             "of the mixture needs items to place it; give at most as many groups as items")

    def data_messages(self, data: SeedSets) -> list[str]:
        """Constant features before the fit: the mixture's Gaussian sd on them shrinks to its floor."""
        from bayes_wsc.diagnostics import GAUSSIAN_ON_CONSTANT, constant_features_message

        found = constant_features_message(data.features, data.scaling.names, "", GAUSSIAN_ON_CONSTANT)
        return [found] if found else []

    def build_model(self, data: SeedSets):
        return build_mixture_model(data, **self.build_settings())

    def model_inputs(self, data: SeedSets):
        return mixture_coords(data, self.groups), mixture_data(data)

    def kmeans_starts(self, data: SeedSets) -> list[dict]:
        """A from the seed sets' means (least squares on the perception vectors, centred), B from k-means
        on the features (G centres), sd 0.5; each restart with another k-means seed."""
        from sklearn.cluster import KMeans
        from threadpoolctl import threadpool_limits

        X, G, K = data.features, int(self.groups), data.n_clusters
        mask = data.seed_mask.astype(float)
        means = (mask.T @ X) / mask.sum(axis=0)[:, None]  # (K, d)
        means -= means.mean(axis=0)
        A, *_ = np.linalg.lstsq(data.perception - data.perception.mean(axis=0), means, rcond=None)
        starts = []
        rng = np.random.default_rng(self.seed)
        for r in range(int(self.restarts)):
            with threadpool_limits(1, user_api="openmp"):
                centres = KMeans(G, n_init=1, random_state=int(rng.integers(2**31))).fit(X).cluster_centers_
            shift = (data.perception @ A).mean(axis=0)
            start = {"A": A.T, "B": centres - shift, "sd_excess": np.full(data.n_features, 0.5),
                     "pi": np.full(K, 1.0 / K)}
            if G > 1:
                start["pi_group"] = np.full(G, 1.0 / G)
            starts.append(start)
        return starts

    def start_names(self) -> tuple[str, ...]:
        return ("A", "B", "sd_excess", "pi") + (("pi_group",) if int(self.groups) > 1 else ())

    def nuts_options(self) -> dict:
        """A full mass matrix: the likelihood sees A only through A P' (its part along P's null space is held by
        the prior alone, sd 2, beside data-held directions of sd near 0.01), which a diagonal one cannot scale.
        On `simulate`'s data with --groups 3 (2 chains x (300 + 100)): 649 leapfrog steps per draw at step size
        0.01 with a diagonal mass matrix, 198 at 0.3 with a full one (benchmarks/RESULTS.md)."""
        return {"dense_mass": True}

    def nuts_warnings(self, start) -> list[str]:
        """Groups the MAP leaves small (a share under `SMALL_GROUP_FRACTION` of an even one), said before NUTS
        runs: such a group's centre B is held by little but its prior, and its share sits near 0, a shape NUTS
        crosses in long trees (measured: 970 leapfrog steps per draw, 90% at the maximum depth, on data of 3 groups
        fitted with 5, two of them at 1.3% and 1.9% in the MAP; 198 with --groups 3)."""
        point = start[0] if isinstance(start, list) else start
        if "pi_group" not in point:
            return []
        share = np.asarray(point["pi_group"], dtype=float)
        small = np.flatnonzero(share < SMALL_GROUP_FRACTION / share.size)
        if not small.size:
            return []
        keep = share.size - small.size
        shares = ", ".join(f"g{h} {100 * share[h]:.1f}%" for h in small)
        return [f"the MAP gives {small.size} of the {share.size} groups a small share of the items ({shares}; under "
                f"{100 * SMALL_GROUP_FRACTION / share.size:.1f}%): NUTS moves slowly where a group is this small (on "
                f"`simulate`'s data, with 5 groups where it has 3, 970 leapfrog steps per draw against 198 with "
                f"--groups 3). If the features have fewer groups, fit with --groups {keep} (groups={keep}); or "
                "fit by MAP or Laplace."]

    def leave_out(self, inputs: dict, data: SeedSets, fold: np.ndarray) -> dict:
        """The inputs with the seeds `fold` left out: they become items that are no seed (their features
        still count, their sets do not)."""
        if "seed_sets" not in inputs or "seeded" not in inputs:
            raise InputError("the fitted model has no `seed_sets` and `seeded` inputs, so its seeds cannot be held out")
        values = dict(inputs)
        sets, seeded = np.array(inputs["seed_sets"], copy=True), np.array(inputs["seeded"], copy=True)
        sets[fold], seeded[fold] = 1.0, 0.0
        values.update(seed_sets=sets, seeded=seeded)
        return values

    def initial_values(self, data: SeedSets) -> list[dict]:
        chosen = getattr(self, "_chosen_start", None)
        return [chosen] if chosen is not None else self.kmeans_starts(data)

    def refit_items(self, data: SeedSets) -> tuple[SeedSets, np.ndarray | None]:
        """Every seed and at most `RESTART_ITEMS` other items (`subsample_items`): a refit's cost grows with
        the items (the mixture's refits over all 10,000 items were most of auto's cost, benchmarks/RESULTS.md)."""
        return subsample_items(data, RESTART_ITEMS, self.seed)

    def _refit_start(self, names) -> dict:
        """When the restarts saw a subsample (`refit_items`, the same items the held-out refits see), the chosen
        restart's optimum there: the refits' own posterior with every seed, so each refit only moves as far as
        its fold asks (from the final fit's mode over every item, each took about 100 iterations at 10,000 items,
        benchmarks/RESULTS.md, issue 39). Otherwise, and for a fit loaded from disk, the fit's mode."""
        subsample = getattr(self, "_subsample_optimum", None)
        if subsample is None:
            return super()._refit_start(names)
        return {n: np.asarray(subsample[n], dtype=float) for n in names if n in subsample}

    def _map_on(self, part: SeedSets, starts: list[dict], tol: float | None = None):
        """The MAP on the items `part` from each of `starts`, on the compiled program directly (no fit of its own,
        no checks), to `tol` (None: every MAP's): its `Draws`, whose `optima` hold every start's optimum when there
        are several."""
        from bayes_wsc.map_program import run_map

        recipe = self._recipe()
        self._model, self._model_recipe = None, (recipe.build, part)  # built only if its program is not cached
        with self.variant_errors("the MAP"):
            program, fixed, inputs, _ = self._map_program(part, starts, recipe.map_fixed(part))
            starts = [{n: v for n, v in start.items() if n in program.free} for start in starts]
            return run_map(program, starts, inputs, fixed=fixed, **({} if tol is None else {"tol": tol}))[0]

    def fit(self, data):
        """The MAP's restarts, then (`restart_rule="seeds"`, more than one restart) the optimum whose
        memberships give the seeds the highest log score (`restart_seed_scores`) kept: the fit is made
        again from it alone (Laplace, if asked, then runs at it), with the checks. The restarts stop at
        `RESTART_TOL` (they only rank the optima; the final fit takes the chosen one to every MAP's tolerance)
        and see every seed and at most `RESTART_ITEMS` other items (`refit_items`; all of them in smaller data
        sets); the final fit sees every item. When the restarts saw a subsample, the chosen optimum is first
        taken to the full tolerance there, where the held-out refits then start (`_refit_start`). Every restart's
        log density and seed score are kept in the fit's attrs (`restarts`). NUTS starts its chains as every
        model's do (`chain_starts`)."""
        self.fit_restarts(data)
        return self.fit_final(data)

    def fit_restarts(self, data) -> bool:
        """`fit`'s first stage: the restarts on the subsample (`refit_items`), the chosen optimum kept as the final
        fit's start (and, when subsampled, polished there: `_subsample_optimum`). False when the fit has none
        (another `restart_rule`, one restart, NUTS): `fit_final` is then the whole fit."""
        import time
        import warnings

        from bayes_wsc.errors import FitWarning

        self._subsample_optimum = self._restart_record = self._chosen_start = self._early_held_out = None
        if self.restart_rule != "seeds" or int(self.restarts) < 2 or self.method == "nuts":
            return False
        started = time.perf_counter()
        self.check_data_type(data)
        self.check_params()
        self.check_data(data)
        part, kept = self.refit_items(data)
        with self.variant_errors("initial_values"):
            starts = list(self._recipe().initial_values(part))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            restarts = self._map_on(part, starts, RESTART_TOL)  # they only rank the optima: a looser tolerance
        optima, info = restarts.optima, restarts.info
        densities = list(info.get("restart_log_densities", []))
        scores = restart_seed_scores(part, optima)
        chosen, densest = int(np.nanargmax(scores)), int(info.get("best_restart", 0))
        self._chosen_start = {n: np.asarray(v) for n, v in optima[chosen].items() if n in self.start_names()}
        if kept is not None:
            # the chosen optimum to the full tolerance on the subsample, where the held-out refits start
            # (`_refit_start`; they see the same items) and the final fit over every item
            polished = self._map_on(part, [self._chosen_start]).posterior
            self._chosen_start = self._subsample_optimum = {n: np.asarray(polished[n][0, 0], dtype=float)
                                                            for n in self._chosen_start}
        self._restart_record = {
            "rule": "seeds", "seed_log_scores": [float(v) for v in scores], "log_densities": densities,
            "chosen": chosen, "densest": densest, "items": int(part.n_items), "tolerance": RESTART_TOL,
            "seconds": time.perf_counter() - started}  # the restarts' wall time (the final fit's is in fit_info)
        return True

    def held_out_before_fit(self, data, folds: int = HELD_OUT_FOLDS, rival: float | None = None) -> dict | None:
        """After `fit_restarts` on a subsample: the held-out seeds' scores (`held_out_seeds`), which need no fit over
        every item (the refits see the subsample and start from its optimum), so that `PerceptionAuto` can
        choose before that fit. The final fit's check then reuses them. None when the restarts saw every item
        (the refits then start from the final fit's mode). `rival` (the other formulation's guarded log score):
        the refits stop once this score cannot exceed it (`_held_out_refits`; the result has `stopped`, and the
        final fit's check, if it runs, refits every fold)."""
        if getattr(self, "_subsample_optimum", None) is None:
            return None
        self._early_held_out = self._held_out_refits(data, folds, dict(self._subsample_optimum), rival)
        return self._early_held_out

    def held_out_seeds(self, data: SeedSets | None = None, *, folds: int = HELD_OUT_FOLDS) -> dict:
        """As `PerceptionClustering.held_out_seeds`; the scores `held_out_before_fit` computed before this fit (the
        same refits from the same start) are kept rather than computed again."""
        early = getattr(self, "_early_held_out", None)
        self._check_fitted()
        if isinstance(early, dict) and early.get("folds_asked") == folds and "stopped" not in early and (
                "held_out_seeds" not in inference.get_attrs(self._fitted())):
            inference.set_attrs(self._fitted(), {"held_out_seeds": early})
        return super().held_out_seeds(data, folds=folds)

    def fit_final(self, data):
        """`fit`'s second stage: the MAP over every item from the chosen restart (the whole fit when `fit_restarts`
        found none to run), with the checks."""
        record = getattr(self, "_restart_record", None)
        if record is None:
            self._early_held_out = None
            return super().fit(data)
        try:
            super().fit(data)
        finally:
            self._chosen_start = self._early_held_out = None
        inference.set_attrs(self._fitted(), {"restarts": record})
        return self

    def _parameter_draws(self) -> dict:
        from bayes_wsc.posterior import stacked

        fitted = self._fitted()
        out = {name: stacked(fitted, name) for name in ("A", "B", "sd", "pi")}
        S = out["A"].shape[0]
        out["pi_group"] = stacked(fitted, "pi_group") if "pi_group" in fitted.posterior else np.ones((S, 1))
        # made once, not per chunk of items (every array here is per draw: a subset of draws slices it too)
        out["weights"] = component_weights(out["A"], out["B"], out["sd"], out["pi_group"], self._perception(None))
        return out

    def draw_log_probabilities(self, features: np.ndarray, params: dict, perception=None) -> np.ndarray:
        """log P(z = k | x) for the draws in `params` (leading axis S) -> (S, m, K); their `weights` are used
        when the fit's own perception vectors score the items (`perception` None)."""
        return mixture_log_probabilities(features, *self._mixture_arguments(params, perception))

    def draw_probabilities(self, features: np.ndarray, params: dict, perception=None) -> np.ndarray:
        """P(z = k | x), as `draw_log_probabilities` (`mixture_probabilities`: no logarithm taken)."""
        return mixture_probabilities(features, *self._mixture_arguments(params, perception))

    def _mixture_arguments(self, params: dict, perception=None) -> tuple:
        """A, B, sd, pi, pi_group, the perception vectors and the components' weights (None unless the fit's
        own perception vectors score the items) of the draws in `params`."""
        weights = params.get("weights") if perception is None else None
        A = params["A"]
        pi_group = params["pi_group"] if "pi_group" in params else np.ones((*A.shape[:-2], 1))
        return A, params["B"], params["sd"], params["pi"], pi_group, self._perception(perception), weights


# ============================================================ choosing the formulation
#: `fit perception --formulation`: auto (the default) fits both and keeps the one whose held-out seeds score better
FORMULATIONS = ("auto", "conditional", "mixture")


class PerceptionAuto:
    """Both formulations fitted to the same data, and the one whose seeds, held out, score better kept.

    The user's own supervision tells a fit that found her clusters from one that did not: refitted
    without some of her seeds, it predicts them (`PerceptionClustering.held_out_seeds`). `fit(data)`
    fits `conditional` (a `PerceptionClustering`) and `mixture` (a `PerceptionMixture`), scores each by
    its held-out seeds' guarded log score (`choice_score`) and returns the better fit (the conditional
    model on a tie or when no seed can be held out), with the choice and both scores in its attrs
    (`formulation`), which `summary`, the report and the status line's notes show. `fits_` holds both, except
    when the mixture subsampled its restarts (`RESTART_ITEMS`) and lost on its held-out seeds there: its scores
    need no fit over every item (`PerceptionMixture.held_out_before_fit`), so that fit and its checks are skipped
    (at 10,000 items most of auto's cost, benchmarks/RESULTS.md, issue 39) and `fits_` holds the conditional fit.
    Those refits stop once the mixture's score can no longer beat the conditional model's (`score_ceiling`: the
    same choice, and the sentence says so). When the mixture is fitted, its reference checks reuse the conditional
    fit's references, refitted on the same data and folds (`checks.reference_scores`).
    With Laplace or NUTS, both are fitted by MAP to choose, and the chosen one again by that method (`fit`).

    Parameters
    ----------
    conditional, mixture : the two estimators (default: each with its defaults and `common`).
    common : settings given to both defaults (seed, method, restarts, overlap_threshold, checks, ...).
    """

    def __init__(self, conditional: PerceptionClustering | None = None, mixture: PerceptionMixture | None = None,
                 **common):
        self.conditional = PerceptionClustering(**common) if conditional is None else conditional
        self.mixture = PerceptionMixture(**common) if mixture is None else mixture
        if not isinstance(self.conditional, PerceptionClustering) or isinstance(self.conditional, PerceptionMixture):
            raise InputError(f"conditional must be a PerceptionClustering, got {type(self.conditional).__name__}")
        if not isinstance(self.mixture, PerceptionMixture):
            raise InputError(f"mixture must be a PerceptionMixture, got {type(self.mixture).__name__}")

    def fit(self, data: SeedSets) -> PerceptionClustering:
        """Fit both by MAP (the conditional model first), score their held-out seeds, and return the better
        one; for Laplace or NUTS, that method then runs on the chosen formulation only. The held-out seeds
        are scored by MAP refits whatever the method, so the choice is the one a MAP fit makes, and the
        formulation not chosen costs its MAP alone (a NUTS run of the mixture over every item is the
        costliest part of a fit)."""
        import time

        check_data(data)
        self.fits_, self.seconds_ = {}, {}  # seconds_: each formulation's whole fit, its checks among them
        conditional, mixture = by_map(self.conditional), by_map(self.mixture)
        started = time.perf_counter()
        self.fits_["conditional"] = conditional.fit(data)
        self.seconds_["conditional"] = time.perf_counter() - started
        started = time.perf_counter()
        scores = {"conditional": self.fits_["conditional"].held_out_seeds(data)}
        # the mixture's refits on its subsample stop once it cannot beat the conditional model's score
        early = (mixture.held_out_before_fit(data, rival=choice_score(scores["conditional"]))
                 if mixture.fit_restarts(data) else None)
        fitted_mixture = early is None or choose_formulation({**scores, "mixture": early})[0] == "mixture"
        if fitted_mixture:  # else the mixture loses on its subsample: no fit over every item, no checks of its own
            # the reference checks' refits depend on the data and the folds alone: the conditional fit's (in its attrs,
            # by check) are reused when the folds are the same (`checks.reference_scores`), for these data only
            mixture._shared_references = dict(inference.get_attrs(self.fits_["conditional"]._fitted()))
            try:
                self.fits_["mixture"] = mixture.fit_final(data)
            finally:
                mixture._shared_references = None
            scores["mixture"] = self.fits_["mixture"].held_out_seeds(data)
        else:
            scores["mixture"] = early
        self.seconds_["mixture"] = time.perf_counter() - started
        self.scores_ = scores
        chosen, why = choose_formulation(scores)
        if not fitted_mixture:
            skipped = (f"the seeded mixture was scored on the {early['refit_items']} items its restarts saw and, "
                       "having lost there, was not fitted to every item")
            stop = early.get("stopped")
            if stop:
                skipped += (f"; its held-out refits stopped after {stop['after_folds']} of {stop['of_folds']} folds, "
                            f"when its score could reach at most {stop['ceiling']:.3g} per seed (every seed not yet "
                            "held out predicted with certainty), so its figures here are of those folds")
            why = f"{why}; {skipped}" if why else skipped
        words = formulation_words(chosen, scores, why)
        record = {"chosen": chosen, "rule": "held-out seeds' guarded mean log score", "words": words,
                  "mixture_fitted": bool(fitted_mixture),
                  "held_out_log_score": {n: s["log_score"] for n, s in scores.items()},
                  "held_out_guarded_log_score": {n: choice_score(s) for n, s in scores.items()},
                  "held_out_accuracy": {n: s["accuracy"] for n, s in scores.items()}}
        self.chosen_ = chosen
        est = getattr(self, chosen)
        if est.method != "map":
            started = time.perf_counter()
            self.fits_[chosen] = est.fit(data)
            self.seconds_[chosen] += time.perf_counter() - started
        est = self.fits_[chosen]
        inference.set_attrs(est._fitted(), {"formulation": record})
        return est


def by_map(est: PerceptionClustering) -> PerceptionClustering:
    """`est` when it fits by MAP, else a copy of it that does: auto chooses as a MAP fit would, whatever the
    method (the held-out seeds are MAP refits), and runs Laplace or NUTS on the chosen formulation only."""
    return est if est.method == "map" else type(est)(**{**est.get_params(), "method": "map"})


def choice_score(scores: dict) -> float:
    """What `auto` compares: the held-out seeds' guarded log score (`held_out_scores`; the plain mean log
    score for scores saved before it existed)."""
    return float(scores.get("guarded_log_score", scores["log_score"]))


def choose_formulation(scores: dict) -> tuple[str, str]:
    """("conditional" or "mixture", why): the better held-out guarded log score (`choice_score`; chosen over
    the plain mean log score, which let a few confident misses of the over-confident mixture decide,
    benchmarks/RESULTS.md, issue 39); the conditional model when the mixture's is not better or either is
    missing (no seed could be held out)."""
    a, b = choice_score(scores["conditional"]), choice_score(scores["mixture"])
    if not (math.isfinite(a) and math.isfinite(b)):
        return "conditional", "no seed could be held out (a cluster needs two seeds), so the conditional model is kept"
    return ("mixture", "") if b > a else ("conditional", "")


def formulation_words(chosen: str, scores: dict, why: str = "") -> str:
    """One sentence: which formulation `auto` chose, and both held-out scores."""
    label = {"conditional": "the conditional model", "mixture": "the seeded mixture"}
    other = "mixture" if chosen == "conditional" else "conditional"
    own, theirs = scores[chosen], scores[other]
    guarded = (f", mixed with a uniform guess one time in {round(1 / GUESS_SHARE)}" if "guarded_log_score" in own
               else "")
    text = (f"Formulation: auto chose {label[chosen]}: its seeds, held out ({own['folds']} folds, {own['seeds']} "
            f"seeds), scored {choice_score(own):.3g} per seed (mean log probability of their own set{guarded}; "
            f"accuracy {own['accuracy']:.2f}) against "
            f"{choice_score(theirs):.3g} (accuracy {theirs['accuracy']:.2f}) for {label[other]}.")
    return f"{text} {why[0].upper()}{why[1:]}." if why else text
