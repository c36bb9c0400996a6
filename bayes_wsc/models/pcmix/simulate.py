"""The two toy studies of seed 003 (Hughes et al.): Sec. 3.2 (1-D intervals) and Sec. 3.3 (5-D blobs).

Each returns the items as a user's table would hold them (features and a
label column, empty where the label is hidden) and the truth: every label,
and which interval or blob each item came from. Both are built so that a
K = 2 Gaussian mixture is misspecified, and the question is which compromise
each objective picks; the truth still holds the parameters of the sources
that generated the items, in the fit's terms (`PCToyTruth.parameters`: pi,
mean, sd and rho per source), for a user to compare a fit with.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import ndtr

from bayes_wsc.data.labeled import LabeledItems
from bayes_wsc.errors import InputError


@dataclass
class PCToyTruth:
    """What the simulation knows: all labels (0/1), the source of each item, which labels were kept,
    and the sources' parameters named as the fit's posterior variables (`parameters`: pi[source],
    mean[source, feature], sd[source, feature] and rho[source] = P(y = 1 | source), sources in the
    order of `sources`)."""

    y: np.ndarray
    source: np.ndarray
    labeled: np.ndarray
    sources: tuple[str, ...] = ()
    parameters: dict[str, np.ndarray] | None = None

    @property
    def error_floor(self) -> float:
        """Error rate of predicting the majority class everywhere (the trivial rate)."""
        return float(min(self.y.mean(), 1 - self.y.mean()))


def _table(x: np.ndarray, y: np.ndarray, labeled: np.ndarray, names: list[str]) -> pd.DataFrame:
    frame = pd.DataFrame(x, columns=names)
    frame["y"] = pd.array(np.where(labeled, y, 0), dtype="Int64")
    frame.loc[~labeled, "y"] = pd.NA
    return frame


def simulate_intervals(
    n_a: int = 175,
    n_b: int = 100,
    n_c: int = 75,
    *,
    positive_share_a: float = 0.5,
    seed: int | None = 0,
) -> tuple[pd.DataFrame, PCToyTruth]:
    """Sec. 3.2: x on the real line from three uniform intervals, every label observed.

    A: `n_a` points on [-1, 1] whose labels are Bernoulli(`positive_share_a`) ("roughly even");
    B: `n_b` points on [1, 1.5], all positive; C: `n_c` points on [1.5, 2], all negative.
    Returns a table with columns x and y, and the truth (source "A", "B" or "C").
    """
    for name, value in (("n_a", n_a), ("n_b", n_b), ("n_c", n_c)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise InputError(f"{name} must be a whole number >= 0, got {value!r}")
    if not 0 <= positive_share_a <= 1:
        raise InputError(f"positive_share_a must be in [0, 1], got {positive_share_a!r}")
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.uniform(-1.0, 1.0, n_a), rng.uniform(1.0, 1.5, n_b), rng.uniform(1.5, 2.0, n_c)])
    y = np.concatenate([rng.random(n_a) < positive_share_a, np.ones(n_b, bool), np.zeros(n_c, bool)]).astype(int)
    source = np.repeat(np.array(["A", "B", "C"]), [n_a, n_b, n_c])
    labeled = np.ones(x.size, dtype=bool)
    bounds = np.array([[-1.0, 1.0], [1.0, 1.5], [1.5, 2.0]])
    counts = np.array([n_a, n_b, n_c], dtype=float)
    parameters = {"pi": counts / counts.sum(), "mean": bounds.mean(axis=1)[:, None],  # a uniform's mean and sd
                  "sd": (bounds[:, 1] - bounds[:, 0])[:, None] / np.sqrt(12.0),
                  "rho": np.array([positive_share_a, 1.0, 0.0])}
    return _table(x[:, None], y, labeled, ["x"]), PCToyTruth(y, source, labeled, ("A", "B", "C"), parameters)


#: the two blobs of Sec. 3.3: means and variances (the diagonal covariance matrices)
BLOB_MEANS = np.array([[-1.0, 0, 0, 0, 0], [1.0, 0, 0, 0, 0]])
BLOB_VARIANCES = np.array([[2.0, 1, 1, 0.5, 1], [2.0, 1, 1, 1, 0.5]])


def simulate_two_blobs(
    n: int = 5000,
    labeled_fraction: float = 1.0,
    *,
    band: float = 0.1,
    seed: int | None = 0,
) -> tuple[pd.DataFrame, PCToyTruth]:
    """Sec. 3.3: x in R^5 from 1/2 N(m1, S1) + 1/2 N(m2, S2) (diagonal), y = 1 iff |x_2| < `band`.

    A random `labeled_fraction` b of the items keep their label (round(b n) of them); the others
    have an empty label cell. Returns a table with columns x1..x5 and y, and the truth (source
    "blob 1" or "blob 2", all labels, the labeled mask).
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise InputError(f"n must be a whole number >= 2, got {n!r}")
    if not 0 <= labeled_fraction <= 1:
        raise InputError(f"labeled_fraction must be in [0, 1], got {labeled_fraction!r}")
    if not band > 0:
        raise InputError(f"band must be positive, got {band!r}")
    rng = np.random.default_rng(seed)
    blob = rng.integers(0, 2, n)
    x = BLOB_MEANS[blob] + np.sqrt(BLOB_VARIANCES[blob]) * rng.standard_normal((n, 5))
    y = (np.abs(x[:, 1]) < band).astype(int)
    labeled = np.zeros(n, dtype=bool)
    labeled[rng.choice(n, size=int(round(labeled_fraction * n)), replace=False)] = True
    source = np.where(blob == 0, "blob 1", "blob 2")
    sd = np.sqrt(BLOB_VARIANCES)
    parameters = {"pi": np.array([0.5, 0.5]), "mean": BLOB_MEANS.copy(), "sd": sd,  # y = 1 iff |x_2| < band:
                  "rho": ndtr((band - BLOB_MEANS[:, 1]) / sd[:, 1]) - ndtr((-band - BLOB_MEANS[:, 1]) / sd[:, 1])}
    return (_table(x, y, labeled, [f"x{j + 1}" for j in range(5)]),
            PCToyTruth(y, source, labeled, ("blob 1", "blob 2"), parameters))


def toy_items(frame: pd.DataFrame) -> LabeledItems:
    """The validated container of a toy table (binary classes 0 and 1)."""
    return LabeledItems.from_frame(frame, label_col="y", classes=[0, 1])


def differs_from_the_fit(study: str) -> str:
    """How a study's items differ from a draw of the PC mixture's own model (truth.json's
    `differs_from_the_fit`); `sbc_case` draws every parameter from the fit's prior instead."""
    if study == "blobs":
        source = ("the two sources are Gaussian (the fit's mixture at --components 2), but y = 1 iff |x2| < 0.1 "
                  "is a function of x, where the fit draws y ~ Bernoulli(rho_z) given the component alone: rho is "
                  "each source's share of positives, not a parameter that generated y")
    else:
        source = ("the sources are uniform on their intervals, not Gaussian, so no mixture of the fit's holds "
                  "them exactly (mean and sd are each interval's); y ~ Bernoulli(rho_z) given the source, as the "
                  "fit assumes")
    return ("pi, mean, sd and rho are the paper's fixed study values, not a draw from the fit's prior (pi ~ "
            "Dirichlet, standardized means ~ N(0, --mean-prior-sd), sd - floor ~ Gamma(2, --sd-prior-rate), rho ~ "
            f"Beta); {source}. Data drawn from the fit's own prior (at lam = 1): `sbc_case` of "
            "bayes_wsc.models.pcmix.simulate, "
            "which tests/test_truth_coverage_slow.py fits.")


def example(seed: int | None = 0) -> LabeledItems:
    """Small data of the model: Sec. 3.2's three intervals at 70 + 40 + 30 labeled points. The
    registry's example of the model (`registry.ModelSpec.example`), for tests and trials."""
    return toy_items(simulate_intervals(70, 40, 30, seed=seed)[0])


def sbc_case(
    n_items: int = 40,
    n_features: int = 1,
    components: int = 2,
    labeled_fraction: float = 0.5,
    *,
    sd_floor: float = 0.001,
    mean_prior_sd: float = 3.0,
    sd_prior_rate: float = 1.0,
    concentration: float = 1.01,
    restarts: int = 4,
    draws: int = 500,
    tune: int = 500,
    chains: int = 2,
    target_accept: float = 0.8,
    n_items_ranked: int = 4,
):
    """Simulation-based calibration of `PCMixture` at lam = 1, the ordinary posterior of the joint
    model (see `bayes_wsc.sbc`); at any other lam the draws are not a posterior and SBC does not apply.

    Drawn per simulation from the model's own prior (`pm.draw`): pi, mean_z, sd_excess and rho.
    Then z_d ~ Categorical(pi), x_d ~ N(mean_z[z], sd_z[z]) and, for the first
    round(`labeled_fraction` n) items (which items carry a label is fixed, so labels are missing
    at random), y_d ~ Bernoulli(rho[z]). The container is built with centre 0 and scale 1: the
    model's parameters live on the standardized scale, and re-standardizing simulated features
    would move the data away from the draw that generated them (`from_frame` standardizes every
    user's table; here that step is the identity).

    Ranked, all invariant to relabeling the components (the estimator relabels draws against its
    MAP, while the truth has its own labels, so pi[0] or rho[0] of the fit would not be
    comparable): `pi_max`, the larger weight; the components sorted by their mean on the first
    feature, `sorted_pi[0]`, `sorted_mean[k]`, `sorted_sd[k]`, `sorted_rho[k]` (the order is taken
    within each draw and within the truth alike); `label_prob[i]`, P(y = 1 | x) of
    `n_items_ranked` fixed items (half labeled, half not); and the log-likelihood terms
    `data_loglik` and `label_loglik` (functions of the parameters and the data, which SBC covers).
    """
    from bayes_wsc.data.labeled import LabeledItems
    from bayes_wsc.models.pcmix.model import PCMixture
    from bayes_wsc.sbc import SBCCase

    if not 0 < labeled_fraction <= 1:
        raise InputError(f"labeled_fraction must be in (0, 1], got {labeled_fraction!r}")
    n_labeled = max(1, int(round(labeled_fraction * n_items)))
    features = [f"x{j + 1}" for j in range(n_features)]
    ids = np.array([f"item{i}" for i in range(n_items)])
    labeled = np.arange(n_items) < n_labeled
    template = LabeledItems(np.linspace(-1.0, 1.0, n_items)[:, None] * np.ones(n_features),
                            np.where(labeled, np.arange(n_items) % 2, -1), features, ("0", "1"),
                            np.zeros(n_features), np.ones(n_features), ids)
    half = n_items_ranked // 2
    ranked_items = np.unique(np.concatenate([np.arange(half), n_labeled + np.arange(n_items_ranked - half)]))
    ranked_items = ranked_items[ranked_items < n_items]

    def simulate(draw, rng):
        pi = np.asarray(draw["pi"], dtype=float)
        z = rng.choice(components, size=n_items, p=pi / pi.sum())
        sd = sd_floor + np.asarray(draw["sd_excess"], dtype=float)
        x = np.asarray(draw["mean_z"])[z] + sd[z] * rng.standard_normal((n_items, n_features))
        y = np.where(labeled, (rng.random(n_items) < np.asarray(draw["rho"])[z]).astype(np.int64), -1)
        return LabeledItems(x, y, features, ("0", "1"), np.zeros(n_features), np.ones(n_features), ids)

    class SBCPCMixture(PCMixture):
        """PCMixture with label-invariant Deterministics to rank (the model itself unchanged)."""

        def build_model(self, data):
            import pymc as pm
            import pytensor.tensor as pt

            from bayes_wsc.likelihoods import diag_normal_logp

            model = super().build_model(data)
            with model:
                pi, mean_z, rho = model["pi"], model["mean_z"], model["rho"]
                sd_z = sd_floor + model["sd_excess"]
                order = pt.argsort(mean_z[:, 0])
                pm.Deterministic("pi_max", pt.max(pi))
                pm.Deterministic("sorted_pi", pi[order])
                pm.Deterministic("sorted_mean", mean_z[order, 0])
                pm.Deterministic("sorted_sd", sd_z[order, 0])
                pm.Deterministic("sorted_rho", rho[order])
                joint = pt.log(pi)[None, :] + diag_normal_logp(model["x"][ranked_items], mean_z, sd_z)
                resp = pt.special.softmax(joint, axis=-1)
                pm.Deterministic("label_prob", pt.dot(resp, rho))
            return model

    def estimator(seed):
        return SBCPCMixture(components=components, lam=1.0, restarts=restarts, sd_floor=sd_floor,
                            mean_prior_sd=mean_prior_sd, sd_prior_rate=sd_prior_rate, concentration=concentration,
                            method="nuts", draws=draws, tune=tune, chains=chains, seed=seed,
                            target_accept=target_accept, progressbar=False)

    quantities = ["pi_max", "sorted_pi[0]"]
    quantities += [f"sorted_{name}[{k}]" for name in ("mean", "sd", "rho") for k in range(components)]
    quantities += [f"label_prob[{i}]" for i in range(len(ranked_items))] + ["data_loglik", "label_loglik"]
    description = (f"PC mixture at lam = 1, n = {n_items} items ({n_labeled} labeled), D = {n_features}, "
                   f"K = {components}, two classes; priors Dirichlet({concentration}), N(0, {mean_prior_sd}), "
                   f"{sd_floor} + Gamma(2, {sd_prior_rate}); MAP {restarts} restarts, NUTS {chains} chains x "
                   f"({tune} tune + {draws} draws). Ranked (label-invariant): the larger weight, components "
                   "sorted by their mean on x1 (weight, mean, sd, P(y = 1)), P(y = 1 | x) of items "
                   f"{[int(i) for i in ranked_items]}, the data and label log-likelihoods")
    return SBCCase("pcmix", template, simulate, estimator, quantities, description=description)
