"""Data for the label-proportions model (seed 001): simulated from each emission, and the Sec. 4 protocol.

* `simulate_proportions`: groups with varied class shares, items' classes drawn from them, features
  from the chosen emission (gaussian, categorical, logistic); returns the container and the truth.
* `random_groups`, `class_counts`: the paper's experiment (Sec. 4.1) partitions a training fold into
  groups of size sigma uniformly at random (the last one smaller) and gives each group its label
  proportions; `load_uci` (in `datasets/uci.py`) reads breast_cancer and wine from scikit-learn.
* `sbc_case`: simulation-based calibration of the model (`bayes_wsc.sbc`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from bayes_wsc.data.proportions import LabelProportions
from bayes_wsc.datasets.uci import load_uci  # noqa: F401  (the Sec. 4 data sets)
from bayes_wsc.errors import InputError


@dataclass
class ProportionsTruth:
    """What generated simulated label-proportion data: every item's class and the emission's parameters
    (mean, sd (L, D) for gaussian on the model's standardized scale; w (L, K) for categorical; W (L, D)
    and b (L,) for logistic, zero-sum), and the groups' class shares theta (I, L)."""

    z: np.ndarray
    theta: np.ndarray
    params: dict


def random_groups(n: int, sigma: int, rng: np.random.Generator) -> np.ndarray:
    """Group index of n items: a uniform random partition into groups of `sigma` (the last smaller)."""
    if n < 1 or sigma < 1:
        raise InputError(f"need n >= 1 items and groups of sigma >= 1, got {n} and {sigma}")
    groups = np.empty(n, dtype=np.int64)
    groups[rng.permutation(n)] = np.arange(n) // sigma
    return groups


def class_formed_groups(labels: np.ndarray, mix, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Groups formed by class, two classes: group g takes `size` items of which round(mix[g] size) are of
    class 1, drawn without replacement by label. Returns the items taken (indices into `labels`) and their
    groups. Such groups hold a class more often than a classifier of their items' features expects (the
    case of `checks.proportions.design_shift`)."""
    ones, zeros = rng.permutation(np.flatnonzero(labels == 1)), rng.permutation(np.flatnonzero(labels == 0))
    taken, groups, a, b = [], [], 0, 0
    for g, share in enumerate(mix):
        k = int(round(share * size))
        if a + k > ones.size or b + size - k > zeros.size:
            raise InputError(f"class_formed_groups: too few items of a class for groups of {size} with mix {tuple(mix)}")
        taken += [ones[a:a + k], zeros[b:b + size - k]]
        groups.append(np.full(size, g))
        a, b = a + k, b + size - k
    return np.concatenate(taken), np.concatenate(groups)


def class_counts(labels: np.ndarray, groups: np.ndarray, n_classes: int) -> np.ndarray:
    """(I, L) the number of items of each class in each group."""
    n_groups = int(groups.max()) + 1
    return np.bincount(groups * n_classes + labels, minlength=n_groups * n_classes).reshape(n_groups, n_classes)


def simulate_proportions(emission: str = "gaussian", *, n_groups: int = 50, group_size: int = 8, n_classes: int = 2,
                         n_features: int = 3, n_bins: int = 6, share_concentration: float = 0.5,
                         separation: float = 2.0, seed: int = 0) -> tuple[LabelProportions, ProportionsTruth]:
    """Groups of `group_size` items whose class shares theta_i ~ Dirichlet(`share_concentration`) vary
    across groups; z_ij ~ Categorical(theta_i) and the counts of z are the data's proportions (known
    exactly, as the exact-counts likelihood assumes). Features:

    gaussian: x | z = l ~ N(mean_l, sd_l), mean ~ N(0, separation), sd ~ U(0.5, 1.5), kept on the
        model's own scale (not re-standardized), so the truth is comparable with the fit;
    categorical: bin | z = l ~ Categorical(w_l), w_l ~ Dirichlet(1) over `n_bins` bins;
    logistic: x ~ N(0, 1) and z | x ~ softmax(x W + b) with W ~ N(0, separation), b ~ N(0, 1); the
        groups are then formed by z's counts as drawn (theta unused).
    """
    draw = _draw(emission, n_groups, group_size, n_classes, n_features, n_bins, share_concentration, separation,
                 seed)
    if emission == "categorical":
        data = LabelProportions.from_bins(draw["bin"], draw["group"], draw["proportions"], n_bins,
                                          counts=draw["counts"])
    else:
        data = LabelProportions.from_arrays(draw["x"], draw["group"], draw["proportions"], standardize=False,
                                            counts=draw["counts"])
    return data, ProportionsTruth(draw["z"], draw["theta"], draw["params"])


def differs_from_the_fit(emission: str, separation: float = 2.0, share_concentration: float = 0.5) -> str:
    """How `simulate_proportion_tables`'s data differ from a draw of the fit's own model at its defaults
    (truth.json's `differs_from_the_fit`); `sbc_case` draws the emission from the fit's prior instead."""
    own = {
        "gaussian": f"each class's means ~ N(0, {separation:g}^2) and sds ~ Uniform(0.5, 1.5) on the raw features, "
                    "where the fit's prior is N(0, 3^2) on the means and 0.001 + Gamma(2, 1) on the sds of the "
                    "standardized features",
        "categorical": "each class's bin probabilities w ~ Dirichlet(1), the fit's own prior at its default "
                       "--w-concentration 1: drawn from the fit's prior",
        "logistic": f"W's entries ~ N(0, {separation:g}^2) (then centred over the classes) and b ~ N(0, 1) on "
                    "features x ~ N(0, I), where the fit's prior is W ~ N(0, 1), b ~ N(0, 2^2) on standardized "
                    "features; the classes are drawn from softmax(x W + b) and the proportions are their shares",
    }[emission]
    counts = ("" if emission == "logistic" else
              f" Each group's class shares theta ~ Dirichlet({share_concentration:g}) drew its items' classes; the "
              "fit (exact counts) takes the proportions as given, so theta is the draw behind them, not an "
              "estimand.")
    return (f"{own}.{counts} Data drawn from the fit's own prior: `sbc_case` of "
            "bayes_wsc.models.proportions.simulate, "
            "which tests/test_truth_coverage_slow.py fits.")


def example(seed: int = 0) -> LabelProportions:
    """Small data of the model: 16 groups of 6 items, two classes, 2 Gaussian features. The registry's
    example of the model (`registry.ModelSpec.example`), for tests and trials."""
    return simulate_proportions("gaussian", n_groups=16, group_size=6, n_features=2, seed=seed)[0]


def simulate_proportion_tables(emission: str = "gaussian", *, n_groups: int = 50, group_size: int = 8,
                               n_classes: int = 2, n_features: int = 3, n_bins: int = 6,
                               share_concentration: float = 0.5, separation: float = 2.0, seed: int = 0):
    """The data of `simulate_proportions` (the same draw for the same arguments) as a user's tables:
    items (id, group, features x1.. or the column `bin` with levels b1..) and proportions (group and
    one column per class, class0.., each group's shares), with the truth."""
    draw = _draw(emission, n_groups, group_size, n_classes, n_features, n_bins, share_concentration, separation,
                 seed)
    n = draw["z"].size
    group_ids = np.array([f"g{i}" for i in range(n_groups)])
    items = pd.DataFrame({"id": [f"item{i}" for i in range(n)], "group": group_ids[draw["group"]]})
    if emission == "categorical":
        items["bin"] = [f"b{k + 1}" for k in draw["bin"]]
    else:
        for d in range(n_features):
            items[f"x{d + 1}"] = draw["x"][:, d]
    classes = [f"class{l}" for l in range(n_classes)]
    proportions = pd.DataFrame(draw["proportions"], columns=classes)
    proportions.insert(0, "group", group_ids)
    return items, proportions, ProportionsTruth(draw["z"], draw["theta"], draw["params"])


def _draw(emission, n_groups, group_size, n_classes, n_features, n_bins, share_concentration, separation, seed):
    if emission not in ("gaussian", "categorical", "logistic"):
        raise InputError(f"emission must be gaussian, categorical or logistic, got {emission!r}")
    rng = np.random.default_rng(seed)
    n = n_groups * group_size
    groups = np.repeat(np.arange(n_groups), group_size)
    theta = rng.dirichlet(np.full(n_classes, share_concentration), n_groups)
    params: dict = {}
    x = item_bin = None
    if emission == "logistic":
        x = rng.standard_normal((n, n_features))
        w = rng.normal(0, separation, (n_features, n_classes))
        b = rng.normal(0, 1, n_classes)
        logits = x @ w + b
        prob = np.exp(logits - logits.max(axis=1, keepdims=True))
        prob /= prob.sum(axis=1, keepdims=True)
        z = (rng.random((n, 1)) > np.cumsum(prob, axis=1)).sum(axis=1)
        params.update(W=(w - w.mean(axis=1, keepdims=True)).T, b=b - b.mean())
    else:
        z = (rng.random((n, 1)) > np.cumsum(theta[groups], axis=1)).sum(axis=1)
    z = np.minimum(z, n_classes - 1)
    counts = class_counts(z, groups, n_classes)
    proportions = counts / group_size
    if emission == "gaussian":
        mean = rng.normal(0, separation, (n_classes, n_features))
        sd = rng.uniform(0.5, 1.5, (n_classes, n_features))
        x = mean[z] + sd[z] * rng.standard_normal((n, n_features))
        params.update(mean=mean, sd=sd)
    if emission == "categorical":
        w = rng.dirichlet(np.ones(n_bins), n_classes)
        item_bin = (rng.random((n, 1)) > np.cumsum(w[z], axis=1)).sum(axis=1).clip(0, n_bins - 1)
        params.update(w=w)
    return {"x": x, "bin": item_bin, "group": groups, "z": z, "counts": counts, "proportions": proportions,
            "theta": theta, "params": params}


def uci_proportion_tables(name: str, group_size: int, *, seed: int = 0):
    """The protocol of Sec. 4.1 on a UCI data set: every feature scaled to [0, 1], the items split
    into groups of `group_size` uniformly at random (the last one smaller), and each group's label
    proportions. Returns items (id, group, features), proportions (group, one column per class named
    as scikit-learn names it), and the true class of every item."""
    from bayes_wsc.datasets.uci import uci_class_names

    items, labels = load_uci(name)
    features = items.columns[1:]
    x = items[features].to_numpy(dtype=float)
    low, high = x.min(axis=0), x.max(axis=0)
    items[features] = (x - low) / np.where(high > low, high - low, 1.0)
    rng = np.random.default_rng(seed)
    groups = random_groups(len(items), group_size, rng)
    names = uci_class_names(name)
    counts = class_counts(labels, groups, names.size)
    group_ids = np.array([f"g{i}" for i in range(counts.shape[0])])
    items.insert(1, "group", group_ids[groups])
    proportions = pd.DataFrame(counts / counts.sum(axis=1, keepdims=True), columns=names)
    proportions.insert(0, "group", group_ids)
    return items, proportions, names[labels]


def sbc_case(emission: str = "gaussian", bag_likelihood: str = "exact-counts", *, n_groups: int = 12,
             group_size: int = 4, n_classes: int = 2, n_features: int = 1, n_bins: int = 4, draws: int = 500,
             tune: int = 500, chains: int = 2, target_accept: float = 0.9):
    """Simulation-based calibration of `ProportionsClassifier` (see `bayes_wsc.sbc`).

    The groups and their class counts are fixed (a template with varied counts, every class present);
    per simulation the emission's parameters are drawn from the model's own prior (`pm.draw`), then
    the items' classes: with exact-counts, a uniformly random assignment with the group's counts (the
    model's P(Z | m)); with the independent likelihood, z_ij ~ Categorical(Pi_i). Features given the
    classes come from the emission (on the model's own scale: centre 0, scale 1). For `logistic` the
    features are fixed and the classes drawn from the softmax, so the counts are what is simulated.

    Ranked: the emission's parameters of every class on the first feature (mean and sd; w of every
    bin; W and b) and the group log-likelihood of the first group.
    """
    from bayes_wsc.models.proportions.model import ProportionsClassifier
    from bayes_wsc.sbc import SBCCase

    rng = np.random.default_rng(123)
    groups = np.repeat(np.arange(n_groups), group_size)
    counts = np.stack([np.bincount(rng.integers(0, n_classes, group_size), minlength=n_classes)
                       for _ in range(n_groups)])
    counts[:n_classes] = 0
    counts[np.arange(n_classes), np.arange(n_classes)] = group_size  # some pure groups: every class present
    proportions = counts / group_size
    n = groups.size
    if emission == "categorical":
        template = LabelProportions.from_bins(np.arange(n) % n_bins, groups, proportions, n_bins, counts=counts)
    else:
        x_fixed = rng.standard_normal((n, n_features))
        template = LabelProportions.from_arrays(x_fixed, groups, proportions, standardize=False, counts=counts)

    def classes(sim_rng):
        if bag_likelihood == "exact-counts":
            z = np.empty(n, dtype=np.int64)
            for g in range(n_groups):
                members = np.flatnonzero(groups == g)
                z[members] = sim_rng.permutation(np.repeat(np.arange(n_classes), counts[g]))
            return z
        return (sim_rng.random((n, 1)) > np.cumsum(proportions[groups], axis=1)).sum(axis=1).clip(0, n_classes - 1)

    def simulate(draw, sim_rng):
        if emission == "logistic":
            logits = template.x @ np.asarray(draw["W_raw"]) + np.asarray(draw["b_raw"])
            prob = np.exp(logits - logits.max(axis=1, keepdims=True))
            prob /= prob.sum(axis=1, keepdims=True)
            z = (sim_rng.random((n, 1)) > np.cumsum(prob, axis=1)).sum(axis=1).clip(0, n_classes - 1)
            sim_counts = class_counts(z, groups, n_classes)
            return template.with_proportions(sim_counts / group_size, sim_counts)
        z = classes(sim_rng)
        if emission == "categorical":
            w = np.asarray(draw["w"])
            item_bin = (sim_rng.random((n, 1)) > np.cumsum(w[z], axis=1)).sum(axis=1).clip(0, n_bins - 1)
            return LabelProportions.from_bins(item_bin, groups, proportions, n_bins, counts=counts)
        mean, sd = np.asarray(draw["mean_z"]), 1e-3 + np.asarray(draw["sd_excess"])
        x = mean[z] + sd[z] * sim_rng.standard_normal((n, n_features))
        return LabelProportions.from_arrays(x, groups, proportions, standardize=False, counts=counts)

    def estimator(seed):
        return ProportionsClassifier(emission=emission, bag_likelihood=bag_likelihood, method="nuts", draws=draws,
                                     tune=tune, chains=chains, seed=seed, target_accept=target_accept,
                                     progressbar=False)

    if emission == "gaussian":
        quantities = [f"{name}[{l},0]" for name in ("mean", "sd") for l in range(n_classes)]
    elif emission == "categorical":
        quantities = [f"w[{l},{k}]" for l in range(n_classes) for k in range(n_bins)]
    else:
        quantities = [f"W[{l},0]" for l in range(n_classes)] + [f"b[{l}]" for l in range(n_classes)]
    description = (f"label proportions, {emission} emission, {bag_likelihood} bag likelihood: {n_groups} groups of "
                   f"{group_size} items, {n_classes} classes, {n_features if emission != 'categorical' else n_bins} "
                   f"{'features' if emission != 'categorical' else 'bins'}; NUTS {chains} chains x ({tune} tune + "
                   f"{draws} draws)")
    return SBCCase(f"proportions_{emission}", template, simulate, estimator, quantities, description=description)
