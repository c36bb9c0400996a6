"""Learning from label proportions over L classes (seed 001, Stolpe & Morik), Bayesian, in PyMC.

Groups i = 1..I of n_i items; for each group the share Pi_il (or count m_il) of each class l.

    Z_ij ~ Categorical(theta_i)      theta_i = Pi_i (known, the default), or
                                     theta_i ~ Dirichlet(c Pi_i + 1) (noisy; mode Pi_i, concentration c)
    X_ij | Z_ij = l ~ f_l            the emission:
        gaussian      Normal(mean_l, diag sd_l^2) on standardized numeric features
        categorical   Categorical(w_l) over the bins crossing categorical features (seed 000 with L classes)
        logistic      discriminative: p(z = l | x) = softmax(x W + b)_l, the items' features taken as given

Z is summed out per group, by one of two bag likelihoods:

* `independent`: every item's class drawn independently from theta_i,
  log p(X_i | theta_i) = sum_j log sum_l theta_il f_l(x_ij), O(n L) (for categorical
  features on the group x bin count table, O(I K L)). This is seed 000 with WH = inf.
  It forgets that the group holds exactly m_il items of class l: a group of two with
  one positive could, to it, have two or none. For `logistic` it is the bag-mean
  likelihood m_i ~ Multinomial(n_i, mean_j p(z | x_ij)) (Dirichlet-multinomial with
  concentration c when the proportions are noisy): the usual proportion loss of LLP.
* `exact-counts`: the counts are known exactly, so the likelihood is P(X_i | m_i), the sum
  over the assignments of classes to items that have those counts, each equally likely a priori::

      log P(X_i | m_i) = sum_j log p_eta(x_ij) + log PM(m_i; q_i) - log Multinomial(m_i; n_i, eta)

  with p_eta(x) = sum_l eta_l f_l(x), q_ijl = eta_l f_l(x_ij) / p_eta(x_ij), eta the overall
  class shares (eq. 2) and PM the Poisson-multinomial probability of the counts when item j
  is of class l with probability q_jl (`likelihoods.poisson_multinomial_logp`: exact by a
  recursion over items, O(n_i^2) for two classes, O(n_i^L) for L; the normal
  approximation for groups too large for it). For `logistic` it is P(m_i | X_i) = PM(m_i; softmax).

Prediction for a new item: P(z = l | x) proportional to eta_l f_l(x) (eq. 2 and 9 of seed 001),
the softmax for `logistic`. Classes carry their names through the proportions, so there is
no label switching as long as the proportions vary across groups (Pi of rank L); when they do
not, the classes are not identified (the worst case of seed 001, Sec. 2.3) and the fit says so.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayes_wsc import inference, maths
from bayes_wsc._lazy import LazyModule
from bayes_wsc.data.proportions import LabelProportions, count_plan
from bayes_wsc.defaults import DEFAULT_CI
from bayes_wsc.errors import InputError
from bayes_wsc.estimator import Estimator, is_labels
from bayes_wsc.models.proportions.settings import (BAG_LIKELIHOODS, DEFAULT_BAG_LIKELIHOOD, DEFAULT_EMISSION,  # noqa: F401
                                                   EMISSIONS, FEATURE_MAPS, ProportionsSettings)
from bayes_wsc.settings import checked
from bayes_wsc.graph_inputs import declare
from bayes_wsc.posterior import stacked, summarize_columns

# PyMC and PyTensor load when a model is built, not when the estimator is: a MAP whose compiled
# program is cached (bayes_wsc.map_program) runs without them
pm = LazyModule("pymc")
pt = LazyModule("pytensor.tensor")
likelihoods = LazyModule("bayes_wsc.likelihoods")
transforms = LazyModule("bayes_wsc.transforms")
special = LazyModule("scipy.special")

#: MAP starts by default per emission (`ProportionsClassifier(restarts=None)`): with four groups of breast_cancer,
#: one start left the logistic fit in a poor mode in 4 of 20 splits (one with held-out accuracy 0.25), two or more
#: in none below the majority share (benchmarks/proportions_restarts.py); the other emissions start once from the
#: soft-label estimate (random starts of a Gaussian mixture can reach a degenerate mode of higher density)
DEFAULT_RESTARTS = {"logistic": 4, "gaussian": 1, "categorical": 1}
#: NUTS chains start with every simplex share at least this (`nuts_start`)
SIMPLEX_FLOOR = 1e-4
#: Pi's smallest singular value relative to its largest below this: the classes are not identified
RANK_TOLERANCE = 1e-8
#: the random Fourier basis (`fourier_basis`) is drawn from this seed: a function of the data and n_basis alone
BASIS_SEED = 20260001
#: training items whose median squared distance sets the basis's frequencies
BASIS_SAMPLE = 500
#: the basis arrays a fit with feature_map="rff" declares and keeps (constant_data), with their dims
BASIS_DIMS = {"basis_weights": ["feature", "basis"], "basis_phase": ["basis"], "basis_center": ["basis"],
              "basis_scale": ["basis"]}


# ---------------------------------------------------------------------- settings
def check_settings(emission: str, bag_likelihood: str, concentration, **priors) -> None:
    """Fail early, naming the setting, before any model is built: each as declared (`ProportionsSettings`), then
    the rules between the bag likelihood and the proportions' noise, and between the features and the emission."""
    checked(ProportionsSettings, {"emission": emission, "bag_likelihood": bag_likelihood,
                                  "concentration": concentration, **priors})
    check_noisy_counts(bag_likelihood, concentration)
    check_feature_map(emission, priors.get("feature_map", "linear"))


def check_feature_map(emission: str, feature_map: str) -> None:
    """Random Fourier features are a basis for the logistic emission's softmax; the generative emissions model
    the features themselves."""
    if feature_map != "linear" and emission != "logistic":
        raise InputError(f"feature_map={feature_map!r} expands the inputs of the logistic emission's softmax; the "
                         f"{emission} emission models the features themselves: use emission='logistic' or "
                         "feature_map='linear'")


def check_noisy_counts(bag_likelihood: str, concentration) -> None:
    """Noisy proportions (a concentration) are not exact counts."""
    if concentration is not None and bag_likelihood == "exact-counts":
        raise InputError("the exact-counts likelihood takes the counts as known exactly; noisy proportions "
                         "(concentration) need bag_likelihood='independent'")


def resolve_bag_likelihood(bag_likelihood: str, concentration, data: LabelProportions) -> str:
    """The bag likelihood a fit uses: "auto" is exact-counts when the proportions are known exactly (no
    concentration) and are whole counts (given, or proportions times group sizes that are whole numbers),
    and independent otherwise (vote shares, noisy proportions); any other value as given."""
    if bag_likelihood != "auto":
        return bag_likelihood
    return "exact-counts" if concentration is None and data.counts is not None else "independent"


def check_data(data, emission: str) -> LabelProportions:
    """Label-proportion data whose features suit the emission (numbers, or categories for `categorical`)."""
    if not isinstance(data, LabelProportions):
        raise InputError(f"the proportions model fits LabelProportions (bayes_wsc.data.proportions), "
                         f"got {type(data).__name__}")
    wanted = "categorical" if emission == "categorical" else "numeric"
    if data.kind != wanted:
        how = ("read the features with categorical=True (--emission categorical does this)"
               if wanted == "categorical" else "read the features as numbers (categorical=False)")
        raise InputError(f"the {emission} emission needs {wanted} features, but these data have {data.kind} "
                         f"ones: {how}")
    return data


# ---------------------------------------------------------------------- the data the graph reads
def share_inputs(data: LabelProportions, concentration: float | None) -> dict[str, np.ndarray]:
    """The values `add_class_shares` declares as `pm.Data`, in NumPy."""
    values = {"group_sizes": data.group_sizes.astype(float)}
    if concentration is None:
        values["proportions"] = data.proportions
    else:
        values["theta_prior"] = float(concentration) * data.proportions + 1.0
    return values


def emission_inputs(data: LabelProportions, emission: str, bag_likelihood: str, feature_map: str = "linear",
                    n_basis: int = 256) -> dict[str, np.ndarray]:
    """The values the emission blocks (and `item_emission`) declare as `pm.Data` (with feature_map="rff", the
    logistic emission's basis, `fourier_basis`)."""
    if emission == "categorical":
        return {"bin_counts": data.bin_counts} if bag_likelihood == "independent" else {"item_bin": data.item_bin}
    values = {"x": data.x}
    if emission == "gaussian":
        values.update(center=data.center, scale=data.scale)
    if emission == "logistic" and feature_map == "rff":
        values.update(fourier_basis(data.x, n_basis))
    return values


def fourier_basis(x: np.ndarray, n_basis: int) -> dict[str, np.ndarray]:
    """A fixed random Fourier basis of the standardized features (Rahimi & Recht 2007): phi_k(x) = (cos(x
    omega_k + beta_k) - center_k) / scale_k, omega_k ~ Normal(0, 2 gamma I) and beta_k ~ Uniform(0, 2 pi), so
    that sum_k of the raw cosines approximates the Gaussian kernel ``exp(-gamma |x - x'|^2)``; gamma = 1 / the median
    squared distance between (at most `BASIS_SAMPLE`) training items, a choice that reads no labels. Each basis
    function is standardized over the training items, so the logistic prior Normal(0, prior_sd) weighs it as it
    weighs a standardized feature. Drawn from `BASIS_SEED`: the same data and size give the same basis."""
    from scipy.spatial.distance import pdist

    x = np.asarray(x, dtype=float)
    rng = np.random.default_rng(BASIS_SEED)
    sample = x[rng.choice(len(x), min(BASIS_SAMPLE, len(x)), replace=False)]
    distances = pdist(sample, "sqeuclidean") if len(sample) > 1 else np.zeros(0)
    median = float(np.median(distances)) if distances.size and np.median(distances) > 0 else 1.0
    weights = rng.normal(0.0, np.sqrt(2.0 / median), (x.shape[1], int(n_basis)))
    phase = rng.uniform(0.0, 2.0 * np.pi, int(n_basis))
    raw = np.cos(x @ weights + phase)
    center, scale = raw.mean(axis=0), raw.std(axis=0)
    return {"basis_weights": weights, "basis_phase": phase, "basis_center": center,
            "basis_scale": np.where(scale > 1e-8, scale, 1.0)}


def basis_features(x: np.ndarray, basis: dict[str, np.ndarray]) -> np.ndarray:
    """The standardized features x (m, D) on a `fourier_basis` (m, K), in NumPy (`add_logistic_emission` in the
    graph)."""
    return (np.cos(np.asarray(x, dtype=float) @ basis["basis_weights"] + basis["basis_phase"])
            - basis["basis_center"]) / basis["basis_scale"]


def bag_inputs(data: LabelProportions, emission: str, bag_likelihood: str) -> dict[str, np.ndarray]:
    """The values `add_bag_likelihood` declares as `pm.Data`: the items' groups, and for exact counts the
    recursion's layout (`count_plan`) with eta and the counts' prior log-probability under it."""
    values = {}
    if not (emission == "categorical" and bag_likelihood == "independent"):
        values["item_group"] = data.item_group
    if emission == "logistic" and bag_likelihood == "independent":
        values["expected_counts"] = data.expected_counts
    if bag_likelihood == "exact-counts":
        counts = data.whole_counts_or_fail()
        values.update(count_plan(data.item_group, counts).inputs())
        if emission != "logistic":
            log_eta = np.log(data.eta)
            values.update(log_eta=log_eta, counts_prior_logp=_multinomial_logp(counts, log_eta))
    return values


def model_data(data: LabelProportions, emission: str = DEFAULT_EMISSION, bag_likelihood: str = DEFAULT_BAG_LIKELIHOOD,
               concentration: float | None = None, feature_map: str = "linear",
               n_basis: int = 256) -> dict[str, np.ndarray]:
    """Every value that `build_model`'s blocks declare as `pm.Data`, by name, in NumPy. A cached MAP
    program takes them as runtime inputs, so one program serves every data set of the same structure
    (`Estimator.model_inputs`); building a program checks that this list and the model agree."""
    bag_likelihood = resolve_bag_likelihood(bag_likelihood, concentration, data)
    return {**share_inputs(data, None if emission == "logistic" else concentration),
            **emission_inputs(data, emission, bag_likelihood, feature_map, n_basis),
            **bag_inputs(data, emission, bag_likelihood)}


# ---------------------------------------------------------------------- blocks
def model_coords(data: LabelProportions, feature_map: str = "linear", n_basis: int = 256) -> dict:
    """group, class, and feature (numeric features) or bin (categorical); basis with feature_map="rff"."""
    if feature_map != "rff":
        return data.coords
    return {**data.coords, "basis": [f"rff{k}" for k in range(int(n_basis))]}


def add_class_shares(data: LabelProportions, concentration: float | None = None):
    """log theta[group, class]: the known proportions (log 0 kept finite), or, with a concentration c,
    theta_i ~ Dirichlet(c Pi_i + 1) on stick-breaking coordinates (mode at Pi_i). Also eta[class],
    the overall class shares sum_i n_i theta_i / n (eq. 2)."""
    inputs = declare(share_inputs(data, concentration))
    sizes = inputs["group_sizes"]
    if concentration is None:
        proportions = inputs["proportions"]
        log_shares = pt.switch(proportions > 0, pt.log(pt.maximum(proportions, 1e-300)), likelihoods.LOG_ZERO)
        theta = proportions
    else:
        # a static shape: JAX needs the simplex's size when it transforms the start
        prior = pt.specify_shape(inputs["theta_prior"], data.proportions.shape)
        theta = pm.Dirichlet("theta", a=prior, dims=("group", "class"), default_transform=transforms.StickBreaking())
        log_shares = pt.log(theta)
    pm.Deterministic("eta", pt.dot(sizes, theta) / pt.sum(sizes), dims="class")
    return log_shares


def add_gaussian_emission(data: LabelProportions, *, mean_prior_sd: float = 3.0, sd_prior_rate: float = 1.0,
                          sd_floor: float = 1e-3):
    """mean_z[class, feature] ~ Normal(0, 3) and sd_z = floor + Gamma(2, 1) on standardized features;
    `mean` and `sd` in the data's units. Returns log f_l(x_j) for every item, (n, L)."""
    inputs = declare(emission_inputs(data, "gaussian", "independent"))
    mean_z = pm.Normal("mean_z", 0.0, mean_prior_sd, dims=("class", "feature"))
    sd_z = sd_floor + pm.Gamma("sd_excess", alpha=2.0, beta=sd_prior_rate, dims=("class", "feature"))
    pm.Deterministic("mean", inputs["center"] + inputs["scale"] * mean_z, dims=("class", "feature"))
    pm.Deterministic("sd", inputs["scale"] * sd_z, dims=("class", "feature"))
    return likelihoods.diag_normal_logp(inputs["x"], mean_z, sd_z)


def add_categorical_emission(data: LabelProportions, *, w_concentration: float = 1.0):
    """w[class, bin] ~ Dirichlet(c) on stick-breaking coordinates; returns log w, (L, K)."""
    if data.n_bins == 1:
        w = pm.Deterministic("w", pt.ones((data.n_classes, 1)), dims=("class", "bin"))
    else:
        w = pm.Dirichlet("w", a=np.full((data.n_classes, data.n_bins), float(w_concentration)), dims=("class", "bin"),
                         default_transform=transforms.StickBreaking())
    return pt.log(w)


def add_logistic_emission(data: LabelProportions, *, prior_sd: float = 1.0, intercept_sd: float = 2.0,
                          feature_map: str = "linear", n_basis: int = 256):
    """p(z = l | x) = softmax(x W + b): W_raw[feature, class] ~ Normal(0, prior_sd) and b_raw ~ Normal(0,
    intercept_sd) on standardized features. Adding a vector to every class leaves the softmax unchanged,
    so the reported W[class, feature] and b[class] are the zero-sum representative. Returns log p(z | x), (n, L).
    With feature_map="rff" the softmax reads the `fourier_basis` of x instead (W[class, basis]): a logistic
    regression on a fixed random expansion, whose class boundary in x is non-linear."""
    inputs = declare(emission_inputs(data, "logistic", "independent", feature_map, n_basis))
    x = inputs["x"]
    if feature_map != "rff":
        return likelihoods.logistic_class_model(x, prior_sd=prior_sd, intercept_sd=intercept_sd)
    phi = (pt.cos(pt.dot(x, inputs["basis_weights"]) + inputs["basis_phase"]) - inputs["basis_center"]) / inputs[
        "basis_scale"]
    return likelihoods.logistic_class_model(phi, prior_sd=prior_sd, intercept_sd=intercept_sd, dim="basis")


def add_bag_likelihood(data: LabelProportions, emission: str, bag_likelihood: str, log_shares, log_emission,
                       concentration: float | None = None):
    """Each group's log-likelihood with its items' classes summed out (I,), added as one Potential.

    The terms are also kept per group (`likelihoods.record_pointwise`, variable `groups` of the
    `log_likelihood` group): the unit LOO leaves out is a group with all its items and its proportions
    (log p(X_i | Pi_i) for gaussian and categorical, log P(X_i | m_i) for exact counts, the bag-mean or
    exact log P(m_i | X_i) for logistic). Noisy proportions' theta_i stays a parameter of the group.

    log_emission : log f_l per item (n, L) for gaussian, log w (L, K) for categorical, log p(z | x) (n, L)
    for logistic. See the module docstring for the two bag likelihoods.
    """
    n_groups = data.n_groups
    model = pm.modelcontext(None)
    inputs = declare(bag_inputs(data, emission, bag_likelihood))
    item_group = inputs.get("item_group")
    if emission == "logistic":
        if bag_likelihood == "exact-counts":
            terms = _exact_counts(data, log_emission, inputs)
        else:
            mean_q = likelihoods.segment_sum(pt.exp(log_emission), item_group, n_groups) / model["group_sizes"][:, None]
            if concentration is None:
                terms = likelihoods.multinomial_logp(inputs["expected_counts"], pt.log(mean_q))
            else:
                terms = likelihoods.dirichlet_multinomial_logp(inputs["expected_counts"], float(concentration) * mean_q)
    elif bag_likelihood == "independent":
        if emission == "categorical":
            counts = declare(emission_inputs(data, emission, bag_likelihood))["bin_counts"]
            terms = pt.sum(likelihoods.counts_mixture_logp(counts, log_shares, log_emission), axis=1)
        else:
            terms = likelihoods.independent_bag_logp(log_shares, log_emission, item_group, n_groups)
    else:
        if emission == "categorical":
            item_bin = declare(emission_inputs(data, emission, bag_likelihood))["item_bin"]
            per_item = log_emission.T[item_bin]
        else:
            per_item = log_emission
        log_eta = inputs["log_eta"]
        log_px = likelihoods.mixture_logp(log_eta, per_item)  # log p_eta(x_j)
        log_q = log_eta + per_item - log_px[:, None]
        terms = (likelihoods.segment_sum(log_px, item_group, n_groups) + _exact_counts(data, log_q, inputs)
                 - inputs["counts_prior_logp"])
    pm.Potential("bags", pt.sum(likelihoods.record_pointwise("groups", terms, dims="group")))
    return terms


def _exact_counts(data: LabelProportions, log_q, inputs: dict):
    return likelihoods.poisson_multinomial_logp(log_q, count_plan(data.item_group, data.whole_counts_or_fail()),
                                                inputs)


def _multinomial_logp(counts: np.ndarray, log_p: np.ndarray) -> np.ndarray:
    counts = np.asarray(counts, dtype=float)
    log_coefficient = special.gammaln(counts.sum(axis=1) + 1) - special.gammaln(counts + 1).sum(axis=1)
    return log_coefficient + (counts * log_p).sum(axis=1)


def add_estimands(data: LabelProportions, emission: str, log_emission):
    """For the categorical emission, rho[bin, class] = P(z = l | bin) = eta_l w_lk / sum_l eta_l w_lk,
    the L-class form of seed 000's estimand (the other emissions' estimands are added with them)."""
    if emission != "categorical":
        return
    model = pm.modelcontext(None)
    joint = pt.log(model["eta"])[:, None] + log_emission  # (L, K)
    pm.Deterministic("rho", pt.exp(joint - likelihoods.logsumexp(joint, axis=0, keepdims=True)).T,
                     dims=("bin", "class"))


def build_model(data: LabelProportions, *, emission: str = DEFAULT_EMISSION,
                bag_likelihood: str = DEFAULT_BAG_LIKELIHOOD, concentration: float | None = None,
                mean_prior_sd: float = 3.0, sd_prior_rate: float = 1.0, w_concentration: float = 1.0,
                prior_sd: float = 1.0, intercept_sd: float = 2.0, feature_map: str = "linear",
                n_basis: int = 256) -> pm.Model:
    """The label-proportions model as a `pm.Model` with dims group, class and feature (or bin; and basis with
    feature_map="rff")."""
    check_settings(emission, bag_likelihood, concentration, mean_prior_sd=mean_prior_sd, sd_prior_rate=sd_prior_rate,
                   w_concentration=w_concentration, prior_sd=prior_sd, intercept_sd=intercept_sd,
                   feature_map=feature_map, n_basis=n_basis)
    check_data(data, emission)
    bag_likelihood = resolve_bag_likelihood(bag_likelihood, concentration, data)
    with pm.Model(coords=model_coords(data, feature_map, n_basis)) as model:
        log_shares = add_class_shares(data, None if emission == "logistic" else concentration)
        if emission == "gaussian":
            log_emission = add_gaussian_emission(data, mean_prior_sd=mean_prior_sd, sd_prior_rate=sd_prior_rate)
        elif emission == "categorical":
            declare(emission_inputs(data, "categorical", bag_likelihood))
            log_emission = add_categorical_emission(data, w_concentration=w_concentration)
        else:
            log_emission = add_logistic_emission(data, prior_sd=prior_sd, intercept_sd=intercept_sd,
                                                 feature_map=feature_map, n_basis=n_basis)
        add_bag_likelihood(data, emission, bag_likelihood, log_shares, log_emission, concentration)
        add_estimands(data, emission, log_emission)
    return model


# ---------------------------------------------------------------------- numbers from draws
def soft_label_start(data: LabelProportions, emission: str, sd_floor: float = 1e-3,
                     n_inputs: int | None = None) -> dict:
    """Where the MAP starts: the direct estimate that gives every item its group's proportions as
    soft labels (seed 000, Sec. 3.1), which also orients the classes as the proportions do. `n_inputs`: the
    logistic softmax's inputs when they are not the features (a basis)."""
    weights = data.proportions[data.item_group]  # (n, L)
    if emission == "gaussian":
        total = weights.sum(axis=0)[:, None]
        mean = weights.T @ data.x / total
        var = weights.T @ data.x**2 / total - mean**2
        return {"mean_z": mean, "sd_excess": np.maximum(np.sqrt(np.maximum(var, 0)) - sd_floor, 1e-3)}
    if emission == "categorical":
        counts = 1.0 + weights.T @ np.eye(data.n_bins)[data.item_bin] if data.n_bins > 1 else None
        return {} if counts is None else {"w": counts / counts.sum(axis=1, keepdims=True)}
    return {"W_raw": np.zeros((n_inputs or data.n_features, data.n_classes)), "b_raw": np.zeros(data.n_classes)}


def random_starts(data: LabelProportions, emission: str, count: int, rng: np.random.Generator, *,
                  prior_sd: float = 1.0, intercept_sd: float = 2.0, n_inputs: int | None = None) -> list[dict]:
    """`count` random MAP starts: the logistic weights and intercepts drawn from their priors; for the
    gaussian emission each class's means at a random item's features (sds at the soft-label start's); for
    the categorical emission each class's bin shares from Dirichlet(1)."""
    starts = []
    for _ in range(count):
        if emission == "logistic":
            starts.append({"W_raw": rng.normal(0.0, prior_sd, (n_inputs or data.n_features, data.n_classes)),
                           "b_raw": rng.normal(0.0, intercept_sd, data.n_classes)})
        elif emission == "gaussian":
            start = soft_label_start(data, emission)
            start["mean_z"] = data.x[rng.choice(data.n_items, data.n_classes, replace=data.n_items < data.n_classes)]
            starts.append(start)
        elif data.n_bins > 1:
            starts.append({"w": rng.dirichlet(np.ones(data.n_bins), data.n_classes)})
        else:
            starts.append({})
    return starts


def gaussian_logp_draws(x: np.ndarray, mean_z: np.ndarray, sd_z: np.ndarray) -> np.ndarray:
    """log N(x | mean_l, sd_l) for many draws: x (m, D), mean_z and sd_z (S, L, D) -> (S, m, L)."""
    from bayes_wsc.maths.pcmix import component_logp_draws

    return component_logp_draws(x, mean_z, sd_z)


def identifiability_message(data: LabelProportions) -> str | None:
    """Plain words when Pi (groups x classes) has rank below L: the classes cannot all be told apart."""
    singular = np.linalg.svd(data.proportions, compute_uv=False)
    if singular.size >= data.n_classes and singular[data.n_classes - 1] > RANK_TOLERANCE * singular[0]:
        return None
    if np.ptp(data.proportions, axis=0).max() <= RANK_TOLERANCE:
        return ("every group has the same class proportions, so nothing tells the classes apart: the fit cannot "
                "learn which items are of which class (the worst case of Stolpe & Morik, Sec. 2.3). Group the "
                "items so that the proportions differ between groups.")
    return (f"the proportions of the {data.n_groups} groups vary along fewer than {data.n_classes} directions "
            "(the groups x classes matrix has rank below the number of classes), so some classes are mixed up "
            "in every group alike and cannot be told apart. More groups, with proportions that differ, fix this.")


def between_group_chi_square(data: LabelProportions) -> float:
    """Pearson's chi-square of the groups x classes counts against the overall shares, sum over groups and
    classes of (n_i Pi_il - n_i eta_l)^2 / (n_i eta_l): how far the groups' proportions are apart, in units
    of the scatter that putting the items into groups at random gives ((I - 1)(L - 1) on average)."""
    expected = data.group_sizes[:, None] * data.eta[None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = np.where(expected > 0, (data.expected_counts - expected) ** 2 / expected, 0.0)
    return float(terms.sum())


def mask_groups(inputs: dict, data: LabelProportions, groups: np.ndarray, bag_likelihood: str) -> dict:
    """The logistic emission's MAP inputs with the `groups` (indices) masked: their terms become 0, with every
    shape kept, so that the compiled program refits without them. Exact counts: their items become the
    recursion's padding (a step that leaves the state as it is) and their target the cell of no counts, so
    log P = log 1; the bag mean: their counts become 0 (a multinomial of no trials). Groups on the normal
    approximation cannot be masked (`InputError`)."""
    values = dict(inputs)
    groups = np.asarray(groups, dtype=np.int64)
    if bag_likelihood != "exact-counts":
        counts = np.array(inputs["expected_counts"], dtype=float, copy=True)
        counts[groups] = 0.0
        values["expected_counts"] = counts
        return values
    counts = np.array(data.whole_counts_or_fail(), dtype=np.int64, copy=True)
    counts[groups] = 0
    counts[groups, 0] = data.group_sizes[groups]
    plan = count_plan(data.item_group, counts)
    if np.isin(groups, plan.approx_groups).any():
        raise InputError("a group on the normal approximation of its counts cannot be held out")
    values.update({k: v for k, v in plan.inputs().items() if k in inputs})
    for b, block in enumerate(plan.blocks):
        items = np.array(values[f"cp{b}_items"], copy=True)
        items[np.isin(block.groups, groups)] = data.n_items
        values[f"cp{b}_items"] = items
    return values


def count_conditional(log_q: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """P(z_j = l | the group's class counts are `counts`) for the items of one group, when item j is of
    class l with probability q_jl independently a priori: log_q (S, n, L) for S draws -> (S, n, L).

    Forward-backward over the items: the forward state P(counts of the first j items) and the
    backward state P(the other items make up the rest) meet at item j, with the classes other than
    the most frequent one tracked as in `likelihoods.poisson_multinomial_logp`.
    """
    counts = np.asarray(counts, dtype=np.int64)
    n_draws, n, _ = log_q.shape
    order = np.argsort(-counts, kind="stable")
    lq = log_q[:, :, order]  # most frequent class first: untracked
    shape = tuple(int(c) + 1 for c in counts[order[1:]])
    tracked = len(shape)

    def shift(state, axis, forward):  # state(k - e) when forward, state(k + e) otherwise
        pad = np.full((*state.shape[:axis], 1, *state.shape[axis + 1:]), -np.inf)
        body = np.take(state, range(state.shape[axis] - 1) if forward else range(1, state.shape[axis]), axis=axis)
        return np.concatenate([pad, body] if forward else [body, pad], axis=axis)

    def step(state, lq_j, forward):
        tail = (slice(None),) + (None,) * tracked
        new = state + lq_j[tail[0], 0][tail]
        for t in range(tracked):
            new = np.logaddexp(new, shift(state, t + 1, forward) + lq_j[:, t + 1][tail])
        return new

    forward = np.full((n + 1, n_draws, *shape), -np.inf)
    forward[(0, slice(None), *([0] * tracked))] = 0.0
    with np.errstate(invalid="ignore"):
        for j in range(n):
            forward[j + 1] = step(forward[j], lq[:, j], True)
        backward = np.full((n_draws, *shape), -np.inf)
        backward[(slice(None), *(np.asarray(shape) - 1))] = 0.0  # after the last item: exactly the counts
        out = np.empty((n_draws, n, counts.size))
        for j in range(n - 1, -1, -1):
            joint = [forward[j] + backward + lq[:, j, 0][(slice(None),) + (None,) * tracked]]
            joint += [forward[j] + shift(backward, t + 1, False) + lq[:, j, t + 1][(slice(None),) + (None,) * tracked]
                      for t in range(tracked)]
            log_joint = np.stack([special.logsumexp(a.reshape(n_draws, -1), axis=1) for a in joint], axis=1)
            out[:, j, order] = np.exp(log_joint - special.logsumexp(log_joint, axis=1, keepdims=True))
            backward = step(backward, lq[:, j], False)
    return out


# ---------------------------------------------------------------------- estimator
class ProportionsClassifier(Estimator):
    """Bayesian learning from label proportions over L classes (seed 001).

    Parameters
    ----------
    emission : "logistic" (discriminative softmax; the default), "gaussian" (numeric features) or "categorical"
        (crossed categorical features).
    bag_likelihood : "independent" (fast; classes drawn independently from the group's shares),
        "exact-counts" (the group's class counts known exactly) or "auto" (the default: exact-counts when the
        data hold whole counts and no concentration is given, independent otherwise; `bag_likelihood_`
        says which a fit used).
    concentration : None (the proportions are known exactly) or c > 0: theta_i ~ Dirichlet(c Pi_i + 1),
        noisy proportions (independent bag likelihood only).
    mean_prior_sd, sd_prior_rate : priors of the gaussian emission on standardized features.
    w_concentration : Dirichlet concentration of the categorical emission.
    prior_sd, intercept_sd : Normal prior sds of the logistic emission's weights and intercepts.
    restarts : MAP starts: the soft-label start, then random ones (`random_starts`); the highest log
        density wins and starts NUTS. With few groups the landscape has several modes
        (benchmarks/proportions_restarts.py); None (the default) takes the emission's `DEFAULT_RESTARTS`.
    method, draws, tune, chains, seed, backend, target_accept, precision : fitting (MAP or NUTS).
    model_file, model_settings : a variant file (see `models/`) and its own settings.

    After `fit(data)`: `idata_` with eta[class] and the emission's parameters (mean and sd[class, feature]
    in the data's units; w[class, bin] and rho[bin, class]; W[class, feature] and b[class] on standardized
    features), theta[group, class] when the proportions are noisy.
    """

    model_name = "proportions"
    data_class = LabelProportions
    estimands = ["eta", "mean", "sd", "w", "rho", "W", "b"]
    internal_variables = ("mean_z", "sd_excess", "W_raw", "b_raw")
    laplace_coverage = (0.85, 0.91, "each class's mean and sd (Gaussian emission, exact counts; 40 simulations)")
    unit_dims = ("group",)
    required_attrs = ("model", "method", "settings", "classes", "data_kind")
    required_variables = {"posterior": ("eta",)}
    required_groups = ("posterior", "observed_data", "constant_data")
    attr_kinds = {"classes": ("a list of class names", is_labels),
                  "data_kind": ("'numeric' or 'categorical'", lambda v: v in ("numeric", "categorical")),
                  "counts_given": ("true or false", lambda v: isinstance(v, bool)),
                  "bag_likelihood": ("text", lambda v: isinstance(v, str)),
                  "log_likelihood_of": ("text", lambda v: isinstance(v, str)),
                  "approximated_groups": ("a list of group ids", lambda v: isinstance(v, list))}
    bounds = {"eta": (0.0, 1.0), "theta": (0.0, 1.0), "w": (0.0, 1.0), "rho": (0.0, 1.0), "sd": (0.0, float("inf")),
              "sd_excess": (0.0, float("inf"))}

    #: the build settings are as given (the bag likelihood may be "auto": `settings_for` resolves it)
    Settings = ProportionsSettings

    # ------------------------------------------------------------------ settings
    def check_params(self) -> None:
        """The declared settings (`ProportionsSettings`), then the rules between the bag likelihood and the
        proportions' noise, and between the features and the emission."""
        super().check_params()
        check_noisy_counts(self.bag_likelihood, self.concentration)
        check_feature_map(self.emission, self.feature_map)

    def settings_for(self, data: LabelProportions) -> dict:
        """The settings with the bag likelihood resolved against the data (`resolve_bag_likelihood`)."""
        return {**self.build_settings(),
                "bag_likelihood": resolve_bag_likelihood(self.bag_likelihood, self.concentration, data)}

    # ------------------------------------------------------------------ hooks
    def check_data(self, data: LabelProportions) -> None:
        """Features of the emission's kind, and whole counts for the exact-counts likelihood."""
        check_data(data, self.emission)
        if self.settings_for(data)["bag_likelihood"] == "exact-counts":
            data.whole_counts_or_fail()

    def data_messages(self, data: LabelProportions) -> list[str]:
        """Proportions that cannot tell the classes apart (`identifiability_message`) and constant numeric
        features, before the fit. Whether proportions that differ little told the classes apart is the
        check `held_out_groups`'s to say, after the fit: a warning read from their chi-square alone
        (`between_group_chi_square` below 10) fired on 19 of 30 fits of held-out accuracy 0.93-1.0 and missed 7
        of 21 near chance (benchmarks/RESULTS.md, issue 42)."""
        from bayes_wsc.diagnostics import GAUSSIAN_ON_CONSTANT, constant_features_message

        found = [identifiability_message(data)]
        if data.x is not None:
            found.append(constant_features_message(data.x, data.features, "their weights in the classes' softmax",
                                                   GAUSSIAN_ON_CONSTANT if self.emission == "gaussian" else None))
        return [m for m in found if m]

    def build_model(self, data: LabelProportions) -> pm.Model:
        return build_model(data, **self.settings_for(data))

    def model_inputs(self, data: LabelProportions):
        """(coords, values) of the model's graph, computed without PyMC (see `model_data`)."""
        settings = self.settings_for(data)
        check_data(data, settings["emission"])
        return (model_coords(data, settings["feature_map"], settings["n_basis"]),
                model_data(data, settings["emission"], settings["bag_likelihood"], settings["concentration"],
                           settings["feature_map"], settings["n_basis"]))

    def initial_values(self, data: LabelProportions) -> dict | list[dict]:
        """The soft-label start, then `restarts - 1` random ones (`random_starts`, seeded by `seed`)."""
        n_inputs = int(self.n_basis) if self.emission == "logistic" and self.feature_map == "rff" else None
        starts = [soft_label_start(data, self.emission, n_inputs=n_inputs)]
        restarts = DEFAULT_RESTARTS.get(self.emission, 1) if self.restarts is None else int(self.restarts)
        starts += random_starts(data, self.emission, restarts - 1, np.random.default_rng(self.seed),
                                prior_sd=self.prior_sd, intercept_sd=self.intercept_sd, n_inputs=n_inputs)
        if self.concentration is not None and self.emission != "logistic":
            theta = np.clip(data.proportions, 1e-3, None)
            for start in starts:
                start["theta"] = theta / theta.sum(axis=1, keepdims=True)
        return starts[0] if len(starts) == 1 else starts

    def nuts_start(self, start: dict) -> dict:
        """The MAP's simplexes (theta, w) moved off their boundary: a MAP share of a class with
        proportion 0, or of an unused bin, goes to 0, where a chain started there cannot adapt."""
        out = dict(start)
        for name in ("theta", "w"):
            if name in out:
                value = np.maximum(np.asarray(out[name], dtype=float), SIMPLEX_FLOOR)
                out[name] = value / value.sum(axis=-1, keepdims=True)
        return out

    def data_groups(self, data: LabelProportions) -> dict:
        observed = {"proportions": data.proportions}
        dims = {"proportions": ["group", "class"], "item_group": ["item"], "group_sizes": ["group"]}
        constant = {"item_group": data.item_group, "group_sizes": data.group_sizes}
        if data.counts is not None:
            observed["counts"] = data.counts
            dims["counts"] = ["group", "class"]
        extra_coords = {"item": ("item", list(data.item_ids))}
        if data.kind == "numeric":
            constant.update(x=data.x_raw, center=data.center, scale=data.scale)
            dims.update(x=["item", "feature"], center=["feature"], scale=["feature"])
            if self.emission == "logistic" and self.feature_map == "rff":  # what predictions expand new items with
                constant.update(fourier_basis(data.x, self.n_basis))
                dims.update(BASIS_DIMS)
                extra_coords["basis"] = ("basis", model_coords(data, "rff", self.n_basis)["basis"])
        else:
            constant["item_bin"] = data.item_bin
            dims["item_bin"] = ["item"]
        bag = self.settings_for(data)["bag_likelihood"]
        attrs = {"data_settings": dict(data.settings), "classes": list(data.classes), "data_kind": data.kind,
                 "counts_given": bool(data.counts_given), "bag_likelihood": bag,
                 # what the pointwise log-likelihood scores: `compare` refuses to rank fits that score different things
                 "log_likelihood_of": ("the class counts given the features" if self.emission == "logistic"
                                       else "the features given the proportions")}
        if data.bins is not None:
            attrs["behavior_levels"] = {c: list(lv) for c, lv in zip(data.bins.columns, data.bins.levels)}
        if bag == "exact-counts" and data.counts is not None:
            plan = count_plan(data.item_group, data.counts)
            attrs["approximated_groups"] = [str(g) for g in data.group_ids[plan.approx_groups]]
        return {"observed_data": observed, "constant_data": constant, "dims": dims, "attrs": attrs,
                "extra_coords": extra_coords}

    def model_checks(self, idata) -> list[str]:
        """Groups the exact-counts likelihood had to approximate (unidentified classes are said before the
        fit, `data_messages`)."""
        messages = []
        approximated = inference.get_attrs(idata).get("approximated_groups", [])
        if approximated:
            n_groups = idata.observed_data.sizes["group"]
            messages.append(f"{len(approximated)} of {n_groups} groups (first {approximated[0]!r}) were too costly "
                            "for the exact-counts recursion (see data.proportions.count_plan) and used the normal "
                            "approximation of their counts")
        return messages

    # ------------------------------------------------------------------ fitted values
    @property
    def bag_likelihood_(self) -> str:
        """The bag likelihood of the fit ("auto" resolved against its data; kept in the saved fit)."""
        self._check_fitted()
        return inference.get_attrs(self._fitted()).get("bag_likelihood", self.bag_likelihood)

    @property
    def classes_(self) -> list[str]:
        self._check_fitted()
        return [str(c) for c in inference.get_attrs(self._fitted())["classes"]]

    def data_from_fit(self, idata=None) -> LabelProportions:
        """The data the fit saw, rebuilt from the saved fit."""
        idata = self._fitted() if idata is None else idata
        obs, const = idata.observed_data, idata.constant_data
        attrs = inference.get_attrs(idata)
        counts = obs["counts"].values if "counts" in obs else None
        common = dict(item_group=const["item_group"].values, proportions=obs["proportions"].values,
                      group_ids=np.asarray(obs["group"].values).astype(str), classes=attrs["classes"],
                      item_ids=np.asarray(const["item"].values).astype(str), counts=counts,
                      counts_given=bool(attrs.get("counts_given", False)), settings=dict(attrs.get("data_settings", {})))
        if attrs["data_kind"] == "numeric":
            center, scale = const["center"].values, const["scale"].values
            return LabelProportions(x=(const["x"].values - center) / scale,
                                    features=[str(f) for f in const["feature"].values], center=center, scale=scale,
                                    **common)
        from bayes_wsc.data.grouped import BehaviorBins

        levels = attrs["behavior_levels"]
        bins = BehaviorBins(tuple(levels), tuple(tuple(v) for v in levels.values()))
        return LabelProportions(bins=bins, item_bin=const["item_bin"].values, **common)

    # ------------------------------------------------------------------ predictions
    def class_probabilities(self, features, ci: float = DEFAULT_CI) -> dict[str, np.ndarray]:
        """Posterior mean and HDI of P(z = l | x) for items as the model sees them (standardized
        numbers (m, D) or bin indices (m,)): "mean", "low", "high", each (m, L). Computed in chunks;
        nothing per draw is kept."""
        self._check_fitted()
        log_joint = self._log_joint_function()
        n_classes = len(self.classes_)
        m = len(features)
        n_draws = stacked(self._fitted(), "eta").shape[0]

        def draws_of(cols):
            items, cls = np.divmod(cols, n_classes)
            unique, inverse = np.unique(items, return_inverse=True)
            joint = log_joint(features[unique])  # (S, m', L)
            return maths.softmax(joint, axis=2)[:, inverse, cls]

        mean, low, high = summarize_columns(m * n_classes, draws_of, n_draws, ci)
        shape = (m, n_classes)
        return {"mean": mean.reshape(shape), "low": low.reshape(shape), "high": high.reshape(shape)}

    def fitted_basis(self) -> dict[str, np.ndarray] | None:
        """The random Fourier basis the fit's softmax reads (feature_map="rff"; kept in the fit), else None
        (also for another emission, and while a fit's groups are still being assembled)."""
        fit = self._fitted()
        if self.emission != "logistic" or fit is None or "constant_data" not in inference.group_names(fit):
            return None
        const, post = fit.constant_data, fit.posterior
        if "basis_weights" not in const or "W" not in post or post["W"].dims[-1] != "basis":
            return None
        return {name: np.asarray(const[name].values, dtype=float) for name in BASIS_DIMS}

    def classifier_view(self, data: LabelProportions) -> LabelProportions:
        """The data as the fit's classifier reads them: the features themselves, or with feature_map="rff" their
        `fitted_basis` (`basis_features`) as the columns, named by the basis, so that W[class, column] applies
        to `x` (what the checks and the held-out refits replicate from)."""
        import dataclasses

        basis = self.fitted_basis()
        if basis is None or data.x is None:
            return data
        x = basis_features(data.x, basis)
        names = [str(b) for b in self._fitted().constant_data["basis"].values]
        return dataclasses.replace(data, x=x, features=tuple(names), center=np.zeros(x.shape[1]),
                                   scale=np.ones(x.shape[1]))

    def _log_joint_function(self):
        """features -> (S, m, L) log eta_l f_l(x) per draw (log softmax for logistic), from the reported
        estimands, which every variant built from the blocks keeps."""
        post = self._fitted().posterior
        emission = self.emission
        if emission == "logistic":
            w, b = stacked(self._fitted(), "W"), stacked(self._fitted(), "b")  # (S, L, D), (S, L)
            basis = self.fitted_basis()
            if basis is not None:
                return lambda x: np.einsum("md,sld->sml", basis_features(x, basis), w, optimize=True) + b[:, None, :]
            return lambda x: np.einsum("md,sld->sml", x, w, optimize=True) + b[:, None, :]
        log_eta = np.log(stacked(self._fitted(), "eta"))  # (S, L)
        if emission == "categorical":
            rho = stacked(self._fitted(), "rho") if "rho" in post else None
            log_w = np.log(stacked(self._fitted(), "w"))  # (S, L, K)
            if rho is not None:
                return lambda bins: np.log(np.maximum(rho[:, bins, :], 1e-300))
            return lambda bins: log_eta[:, None, :] + np.transpose(log_w[:, :, bins], (0, 2, 1))
        const = self._fitted().constant_data
        center, scale = const["center"].values, const["scale"].values
        mean_z = (stacked(self._fitted(), "mean") - center) / scale
        sd_z = stacked(self._fitted(), "sd") / scale
        return lambda x: log_eta[:, None, :] + gaussian_logp_draws(x, mean_z, sd_z)

    def predict(self, items: pd.DataFrame, *, ci: float = DEFAULT_CI) -> pd.DataFrame:
        """Every input column plus `class` (the most probable), `prob_<class>` for every class (posterior
        mean of P(z = class | x)) and `prob_low`, `prob_high` (HDI at `ci`) of the chosen class. Only the
        features are read: new items come without a group. After a MAP fit the interval cells are empty."""
        self._check_fitted()
        features = self._features_of(items)
        result = self.class_probabilities(features, ci)
        classes = self.classes_
        chosen = result["mean"].argmax(axis=1)
        rows = np.arange(len(items))
        out = items.copy()
        out["class"] = np.asarray(classes, dtype=object)[chosen]
        for c, name in enumerate(classes):
            out[f"prob_{name}"] = result["mean"][:, c]
        out["prob_low"] = result["low"][rows, chosen]
        out["prob_high"] = result["high"][rows, chosen]
        return out

    def item_probabilities(self, *, ci: float = DEFAULT_CI, max_draws: int = 200, seed: int = 0) -> pd.DataFrame:
        """Each training item's class posterior given its features and its group's supervision, under the
        fit's bag likelihood, computed on demand (never stored per draw): `item`, `group`, `class`,
        `prob_<class>` and `prob_low`, `prob_high` of the chosen class.

        independent (gaussian, categorical): P(z_j = l | x_j, theta_i) proportional to theta_il f_l(x_j).
        exact-counts: P(z_j = l | X_i, m_i), exact by forward-backward over the group's items (groups the
        fit approximated use the independent form with theta_i = Pi_i). logistic with the bag-mean
        likelihood: the softmax, which that likelihood does not tie to the group. At most `max_draws`
        posterior draws are used (evenly spaced, a seeded choice beyond).
        """
        self._check_fitted()
        data = self.data_from_fit()
        log_joint = self._log_joint_function()
        features = data.x if data.kind == "numeric" else data.item_bin
        n_total = stacked(self._fitted(), "eta").shape[0]
        keep = np.round(np.linspace(0, n_total - 1, min(max_draws, n_total))).astype(np.int64)
        joint = log_joint(features)[keep]  # (S, n, L): log eta_l f_l(x) or log softmax
        log_eta = np.log(stacked(self._fitted(), "eta")[keep])
        n_classes = joint.shape[2]
        exact = self.bag_likelihood_ == "exact-counts" and data.counts is not None
        approximated = set(inference.get_attrs(self._fitted()).get("approximated_groups", []))
        if self.emission != "logistic":
            joint = joint - log_eta[:, None, :]  # log f_l(x)
            if "theta" in self._fitted().posterior:
                shares = stacked(self._fitted(), "theta")[keep]
            else:
                shares = np.broadcast_to(data.proportions, (len(keep), *data.proportions.shape))
            with np.errstate(divide="ignore"):
                independent = joint + np.log(shares[:, data.item_group, :])
        else:
            independent = joint
        prob = np.exp(independent - special.logsumexp(independent, axis=2, keepdims=True))
        if exact:
            eta = data.eta
            for g in range(data.n_groups):
                if data.group_ids[g] in approximated:
                    continue
                members = np.flatnonzero(data.item_group == g)
                lq = joint[:, members] + (np.log(eta)[None, None, :] if self.emission != "logistic" else 0.0)
                lq = lq - special.logsumexp(lq, axis=2, keepdims=True)
                prob[:, members] = count_conditional(lq, data.counts[g])
        mean = prob.mean(axis=0)
        bounds = inference.hdi(prob.reshape(prob.shape[0], -1), ci).reshape(*mean.shape, 2)
        chosen = mean.argmax(axis=1)
        rows = np.arange(data.n_items)
        out = pd.DataFrame({"item": data.item_ids, "group": data.group_ids[data.item_group],
                            "class": np.asarray(data.classes, dtype=object)[chosen]})
        for c, name in enumerate(data.classes):
            out[f"prob_{name}"] = mean[:, c]
        out["prob_low"], out["prob_high"] = bounds[rows, chosen, 0], bounds[rows, chosen, 1]
        return out

    def maskable_groups(self, data: LabelProportions) -> np.ndarray:
        """The groups a refit can leave out (`mask_groups`): every group, but those the exact-counts likelihood
        puts on the normal approximation of their counts."""
        groups = np.arange(data.n_groups)
        if self.settings_for(data)["bag_likelihood"] != "exact-counts":
            return groups
        return np.setdiff1d(groups, count_plan(data.item_group, data.whole_counts_or_fail()).approx_groups)

    def held_out_predictions(self, data: LabelProportions, folds: list[np.ndarray]) -> tuple:
        """The logistic classifier refitted by MAP without each fold of the groups, from the fit's own starts
        (`initial_values`) on the same compiled program (`mask_groups`: no new layout, no recompilation).
        Returns each item's P(z | x) under the refit without its group (n, L; NaN for groups never held
        out), each held-out group's no-skill mix (the pooled mix of the groups its refit saw, (I, L)) and
        which groups were held out (I,), for `checks.held_out_scores`.

        Not from the fit's mode: with more features than groups the MAP's landscape is flat along many
        directions and has several modes, and a refit started where every group was fitted keeps what the
        held-out groups taught it (digits in 13 groups, held-out accuracy 0.53: refits warm-started from the
        fit predicted the held-out groups' proportions explaining 0.76 of their variation, from the fit's
        own starts 0.41; benchmarks/RESULTS.md)."""
        from bayes_wsc.map_program import run_map

        self._check_fitted()
        if self.emission != "logistic":
            raise InputError("held-out groups check the logistic emission's classifier only")
        bag = self.settings_for(data)["bag_likelihood"]
        recipe = self._recipe()
        if getattr(self, "_model_recipe", None) is None:  # a loaded fit: built if its program is not cached
            self._model, self._model_recipe = None, (recipe.build, data)
        starts = self.initial_values(data)
        starts = starts if isinstance(starts, list) else [starts]
        program, fixed, inputs, _ = self._map_program(data, starts, recipe.map_fixed(data))
        starts = [{n: v for n, v in start.items() if n in program.free} for start in starts]
        observed = np.asarray(data.counts if data.counts is not None else data.expected_counts, dtype=float)
        probs = np.full((data.n_items, data.n_classes), np.nan)
        no_skill = np.full((data.n_groups, data.n_classes), np.nan)
        held = np.zeros(data.n_groups, dtype=bool)
        x = self.classifier_view(data).x
        for fold in folds:
            draws, _ = run_map(program, starts, mask_groups(inputs, data, fold, bag), fixed=fixed)
            W = np.asarray(draws.posterior["W"], dtype=float).reshape(data.n_classes, x.shape[1])
            b = np.asarray(draws.posterior["b"], dtype=float).reshape(data.n_classes)
            items = np.isin(data.item_group, fold)
            probs[items] = special.softmax(x[items] @ W.T + b, axis=1)
            kept = np.setdiff1d(np.arange(data.n_groups), fold)
            no_skill[fold] = observed[kept].sum(axis=0) / observed[kept].sum()
            held[fold] = True
        return probs, no_skill, held

    def group_fit(self) -> pd.DataFrame:
        """Per group: the given proportions beside the ones the classifier predicts for its items from their
        features alone (the mean of P(z | x), posterior mean), and their squared error: how well the
        fitted item classifier reproduces the supervision (Gamma against Pi in seed 001's terms)."""
        self._check_fitted()
        data = self.data_from_fit()
        features = data.x if data.kind == "numeric" else data.item_bin
        mean = self.class_probabilities(features, 0.9)["mean"]
        sizes = data.group_sizes
        predicted = np.zeros((data.n_groups, data.n_classes))
        np.add.at(predicted, data.item_group, mean)
        predicted /= sizes[:, None]
        out = pd.DataFrame({"group": data.group_ids, "items": sizes})
        for c, name in enumerate(data.classes):
            out[f"given_{name}"] = data.proportions[:, c]
            out[f"predicted_{name}"] = predicted[:, c]
        out["squared_error"] = ((predicted - data.proportions) ** 2).mean(axis=1)
        return out

    def key_columns(self) -> list[str]:
        """The fit's group and id columns, and `id` unless it is a feature: new items come with ids that the
        fit may never have seen as a column, and `predict` keeps them as written ('001' stays '001')."""
        keys = super().key_columns()
        features = {str(f) for f in inference.get_attrs(self._fitted()).get("data_settings", {}).get("features", [])}
        return keys + [c for c in ("id",) if c not in keys and c not in features]

    def _features_of(self, items: pd.DataFrame) -> np.ndarray:
        from bayes_wsc.data.grouped import BehaviorBins
        from bayes_wsc.data.proportions import standardize
        from bayes_wsc.data.tables import require_rows

        require_rows(items, "items")
        attrs = inference.get_attrs(self._fitted())
        if attrs["data_kind"] == "categorical":
            levels = attrs["behavior_levels"]
            return BehaviorBins(tuple(levels), tuple(tuple(v) for v in levels.values())).index(items, "items")
        const = self._fitted().constant_data
        return standardize(items, [str(f) for f in const["feature"].values], const["center"].values,
                           const["scale"].values, "items")

    # ------------------------------------------------------------------ reporting
    def write_report(self, out_dir, **kwargs):
        """Write `out_dir/report.html`: class-conditional parameters with intervals, fit to the proportions."""
        from bayes_wsc.models.proportions.report import write_report

        return write_report(self, out_dir, **kwargs)
