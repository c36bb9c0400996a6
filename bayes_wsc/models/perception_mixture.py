"""Perception-guided clustering that learns from every item: a seeded mixture of X (seed 004, issue 29).

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

from __future__ import annotations

import inspect
import math
import numbers

import numpy as np
from scipy.special import logsumexp

from bayes_wsc._lazy import LazyModule
from bayes_wsc.data.seeded import SeedSets
from bayes_wsc.errors import InputError
from bayes_wsc.estimator import Estimator
from bayes_wsc.models.perception import OVERLAP_THRESHOLD, PerceptionClustering, check_data

pm = LazyModule("pymc")
pt = LazyModule("pytensor.tensor")
likelihoods = LazyModule("bayes_wsc.likelihoods")

#: groups of the features' own structure, by default (benchmarks/RESULTS.md: 3 lost a data set in each
#: simulated study to the dominant structure, 5 none)
DEFAULT_GROUPS = 5
#: lower bound of every component sd (standardized units): a constant feature (a blank pixel) stays finite
SD_FLOOR = 0.01
#: prior sd of the perception shifts A and the group centres B (standardized units)
SHIFT_SD = 2.0
#: Dirichlet concentration of pi and pi_group (seed 003's 1.01: a mode inside the simplex)
CONCENTRATION = 1.01
LOG_2PI = 1.8378770664093453


def check_settings(groups, seed_weight) -> None:
    if isinstance(groups, bool) or not isinstance(groups, numbers.Integral) or groups < 1:
        raise InputError(f"groups must be a whole number >= 1, got {groups!r}")
    if isinstance(seed_weight, bool) or not isinstance(seed_weight, numbers.Real) or not math.isfinite(seed_weight) \
            or seed_weight < 1:
        raise InputError(f"seed_weight must be a number >= 1, got {seed_weight!r}")


def model_coords(data: SeedSets, groups: int) -> dict:
    check_data(data)
    return {**data.coords, "group": [f"g{h}" for h in range(int(groups))]}


def model_data(data: SeedSets) -> dict[str, np.ndarray]:
    """Every data-derived value the model declares as `pm.Data`, by name, in NumPy."""
    return {"perception": data.perception, "features": data.features,
            "seed_sets": np.where(data.seeded[:, None], data.seed_mask, True).astype(float),
            "seeded": data.seeded.astype(float)}


def build_model(data: SeedSets, *, groups: int = DEFAULT_GROUPS, seed_weight: float = 1.0) -> pm.Model:
    """The seeded mixture as a `pm.Model` (dims item, feature, cluster, perception_feature, group)."""
    check_settings(groups, seed_weight)
    groups = int(groups)
    values = model_data(data)
    with pm.Model(coords=model_coords(data, groups)) as model:
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
def joint_log_density_np(features, A, B, sd, pi, pi_group, perception) -> np.ndarray:
    """`joint_log_density` in NumPy for one draw (A (d, q), B (G, d), sd (d,), pi (K,), pi_group (G,))
    -> (m, K), or a stack of S draws (each with a leading S axis) -> (S, m, K)."""
    if np.ndim(A) == 2:
        return joint_log_density_np(features, A[None], B[None], sd[None], pi[None], pi_group[None], perception)[0]
    means = np.einsum("kq,sdq->skd", perception, A)[:, :, None, :] + B[:, None, :, :]  # (S, K, G, d)
    precision = 1.0 / sd**2  # (S, d)
    quad = (np.einsum("md,sd->sm", features**2, precision)[:, :, None, None]
            - 2.0 * np.einsum("md,skgd->smkg", features, means * precision[:, None, None, :])
            + np.einsum("skgd,sd->skg", means**2, precision)[:, None])
    comp = -0.5 * (quad + np.sum(2.0 * np.log(sd) + LOG_2PI, axis=1)[:, None, None, None])
    return np.log(pi)[:, None, :] + logsumexp(np.log(pi_group)[:, None, None, :] + comp, axis=-1)


def membership_log_probabilities(features, A, B, sd, pi, pi_group, perception) -> np.ndarray:
    """log P(z = k | x), shaped as `joint_log_density_np`."""
    joint = joint_log_density_np(features, A, B, sd, pi, pi_group, perception)
    return joint - logsumexp(joint, axis=-1, keepdims=True)


# ---------------------------------------------------------------------- estimator
class PerceptionMixture(PerceptionClustering):
    """The user's clusters from her seed sets and perception vectors, learned from every item (issue 29).

    Parameters
    ----------
    groups : G, the groups of the features' own structure that the user does not care about.
    seed_weight : the PC weight lam on the seeds' likelihood (1: the joint model, a proper posterior).
    overlap_threshold, restarts, method, draws, ... : as `PerceptionClustering`.

    After `fit(data)`: `idata_` with A[feature, perception_feature], B[group, feature], sd[feature],
    pi[cluster] and pi_group[group]; `memberships()` and `predict(items)` as `PerceptionClustering`.
    """

    model_name = "perception"  # a formulation of the perception model: its fits load, check and report as one
    bounds = {"pi": (0.0, 1.0), "pi_group": (0.0, 1.0), "sd": (SD_FLOOR, math.inf)}
    estimands = ["pi", "A", "sd"]
    unit_dims = ("item",)

    def __init__(self, *, groups=DEFAULT_GROUPS, seed_weight=1.0, overlap_threshold=OVERLAP_THRESHOLD, restarts=3,
                 **kwargs):
        Estimator.__init__(self, **kwargs)  # not the conditional model's settings (weight_scale, intercept_sd)
        self.groups = groups
        self.seed_weight = seed_weight
        self.overlap_threshold = overlap_threshold
        self.restarts = restarts

    def get_params(self) -> dict:
        """This model's constructor arguments and every estimator's (none of the conditional model's)."""
        names = [p.name for cls in (PerceptionMixture, Estimator)
                 for p in inspect.signature(cls.__init__).parameters.values() if p.kind is p.KEYWORD_ONLY]
        return {n: getattr(self, n) for n in dict.fromkeys(names)}

    def build_settings(self) -> dict:
        return {"groups": self.groups, "seed_weight": self.seed_weight}

    def check_params(self) -> None:
        super(PerceptionClustering, self).check_params()
        check_settings(**self.build_settings())
        from bayes_wsc.models.perception import check_threshold

        check_threshold(self.overlap_threshold)
        if isinstance(self.restarts, bool) or not isinstance(self.restarts, numbers.Integral) or self.restarts < 1:
            raise InputError(f"restarts must be a whole number >= 1, got {self.restarts!r}")

    def data_messages(self, data: SeedSets) -> list[str]:
        return []

    def build_model(self, data: SeedSets):
        return build_model(data, **self.build_settings())

    def model_inputs(self, data: SeedSets):
        return model_coords(data, self.groups), model_data(data)

    def initial_values(self, data: SeedSets) -> list[dict]:
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

    def _parameter_draws(self) -> dict:
        from bayes_wsc.posterior import stacked

        fitted = self._fitted()
        out = {name: stacked(fitted, name) for name in ("A", "B", "sd", "pi")}
        S = out["A"].shape[0]
        out["pi_group"] = stacked(fitted, "pi_group") if "pi_group" in fitted.posterior else np.ones((S, 1))
        return out

    def draw_log_probabilities(self, features: np.ndarray, params: dict, perception=None) -> np.ndarray:
        """log P(z = k | x) for the draws in `params` (leading axis S) -> (S, m, K)."""
        perception = self._perception(perception)
        A = params["A"]
        pi_group = params["pi_group"] if "pi_group" in params else np.ones((*A.shape[:-2], 1))
        return membership_log_probabilities(features, A, params["B"], params["sd"], params["pi"], pi_group,
                                            perception)
