"""The paper's own algorithms for learning from label proportions (seed 001, Stolpe & Morik 2011).

* `label_proportion_errors`: Err_MSE (eq. 4) and Err_Pi = sqrt(Err_weight Err_prior) (eq. 5-7),
  times Err_T for individually labeled items (eq. 8).
* `exhaustive_labeling` (all l^k labelings of the clusters) and `greedy_labeling` (Alg. 2), each
  minimizing Err_Pi; ties between labelings are broken by Err_MSE.
* `fit_llp` (Alg. 1): k-means (scikit-learn) with a feature-weighted Euclidean distance, inside an
  evolutionary search for the feature weights with the paper's settings (maxgen = 10, psize = 25,
  mutvar = 1.0, crossprob = 0.3, tournsize = 0.25), and k chosen from [2, 12] by Err_Pi (for the
  exhaustive labeling, the k with l^k <= 3^8: every k for two classes, up to 8 for three); the model
  predicts the label of the nearest labeled cluster mean (Sec. 3.5). Features are scaled to [0, 1]
  as in Sec. 4.
* `direct_classifier`: logistic regression on the items with their group's proportions as soft
  labels (seed 000, Sec. 3.1); `oracle_classifier`: the same trained on the true labels (experiments).

Two readings of the paper are ours. Alg. 2 as printed starts `lowest_error` at 0 and so never
changes a label; we start it at infinity, as its text describes ("the label that most reduces
Err_Pi"). Alg. 1 keeps the best individual it evaluates; mutated copies and children are
evaluated for the tournament as well, and count.
"""

from __future__ import annotations

import json
import math
import numbers
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from bayes_wsc.errors import InputError

#: the paper's settings of the evolutionary strategy (Sec. 4.1)
PAPER_ES = {"maxgen": 10, "psize": 25, "mutvar": 1.0, "crossprob": 0.3, "tournsize": 0.25}
#: k tried when none is given (Sec. 4.1)
K_RANGE = tuple(range(2, 13))
LABELINGS = ("exhaustive", "greedy")
#: the exhaustive labeling refuses to try more labelings than this (l^k)
MAX_LABELINGS = 3**11
#: with k chosen from [2, 12], the exhaustive labeling tries only the k with l^k at most this
#: (every k for two classes, k <= 8 for three): each of a search's ~360 clusterings tries all l^k
EXHAUSTIVE_SEARCH_LABELINGS = 3**8
_BATCH = 8192


# ---------------------------------------------------------------------- error measures
def class_shares(proportions: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """eta(Pi, y_j): each class's share over all items (eq. 2)."""
    return (np.asarray(sizes, float)[:, None] * proportions).sum(axis=-2) / np.sum(sizes)


def label_proportion_errors(pi: np.ndarray, gamma: np.ndarray, sizes: np.ndarray,
                            labeled_error: np.ndarray | float | None = None, *, n_labeled: int = 0,
                            floors: bool = True) -> dict[str, np.ndarray]:
    """Err_MSE (eq. 4), Err_weight (eq. 6), Err_prior (eq. 7) and Err_Pi (eq. 5, or eq. 8 with
    `labeled_error` = Err_T over `n_labeled` items) of model-based proportions `gamma` (..., h, l)
    against the given `pi` (h, l).

    With `floors` (the default), the factors of the geometric mean that reach exactly 0 are floored
    at half their value for one misplaced item: Err_prior at 1 / (l n^2), Err_T at 1 / (2 t). Class
    totals that match exactly (Err_prior = 0), or labeled items all right (Err_T = 0), would
    otherwise give Err_Pi = 0 whatever the fit to each group, and among a few hundred k-means runs
    some labeling always does: the search then picks clusterings by that accident (on
    breast_cancer with pure groups, 0.56 accuracy instead of 0.9). `floors=False` is eq. 5-8 as printed.
    """
    pi, gamma = np.asarray(pi, float), np.asarray(gamma, float)
    sizes = np.asarray(sizes, float)
    h, n_classes = pi.shape
    eta = class_shares(pi, sizes)
    sq = (pi - gamma) ** 2
    mse = sq.mean(axis=(-2, -1))
    weight = (sq * eta[None, :] * (sizes / sizes.sum())[:, None]).sum(axis=(-2, -1)) / (h * n_classes)
    prior = ((eta - class_shares(gamma, sizes)) ** 2).mean(axis=-1)
    if floors:
        prior = np.maximum(prior, 1.0 / (n_classes * sizes.sum() ** 2))
    product = weight * prior
    if labeled_error is not None:
        product = product * (np.maximum(labeled_error, 0.5 / max(n_labeled, 1)) if floors else labeled_error)
    return {"err_mse": mse, "err_weight": weight, "err_prior": prior, "err_pi": np.sqrt(product)}


def cluster_group_counts(clusters: np.ndarray, groups: np.ndarray, k: int, n_groups: int) -> np.ndarray:
    """(h, k) the number of items of group i in cluster c."""
    return np.bincount(groups * k + clusters, minlength=n_groups * k).reshape(n_groups, k).astype(float)


def _labeled_error(labelings: np.ndarray, labeled_clusters, labeled_classes):
    """Err_T of each labeling (B, k): the share of labeled items whose cluster's label is wrong."""
    if labeled_clusters is None or len(labeled_clusters) == 0:
        return None
    return (labelings[:, labeled_clusters] != labeled_classes[None, :]).mean(axis=1)


def _errors_of(labelings, counts, sizes, pi, n_classes, labeled=None):
    """`label_proportion_errors` of every labeling (B, k) of the clusters at once.

    gamma_il = sum_c f_ic o_cl with f_ic = counts_ic / n_i and o the labeling's indicators, so each
    weighted squared error sum_il w_il (pi_il - gamma_il)^2 expands into a constant, a linear and a
    quadratic form in o: O(B l k^2) for all labelings, whatever the number of groups (the direct
    (B, h, l) array made the exhaustive labeling of k = 12 clusters 20x slower).
    """
    h, k = counts.shape
    n = sizes.sum()
    onehot = np.eye(n_classes)[labelings]  # (B, k, l)
    by_class = [np.ascontiguousarray(onehot[:, :, l]) for l in range(n_classes)]  # (B, k) each, for BLAS
    frac = counts / sizes[:, None]
    eta = class_shares(pi, sizes)

    def squared(w):  # sum_il w_il (pi_il - gamma_il)^2 per labeling
        linear = onehot.reshape(len(labelings), -1) @ (frac.T @ (w * pi)).ravel()
        square = sum(np.einsum("bc,bc->b", o @ ((frac * w[:, l:l + 1]).T @ frac), o) for l, o in enumerate(by_class))
        return np.maximum((w * pi**2).sum() - 2 * linear + square, 0.0)  # >= 0 up to rounding

    mse = squared(np.ones_like(pi)) / (h * n_classes)
    weight = squared(eta[None, :] * (sizes / n)[:, None]) / (h * n_classes)
    prior = ((eta[None, :] - counts.sum(axis=0) @ onehot / n) ** 2).mean(axis=-1)
    prior = np.maximum(prior, 1.0 / (n_classes * n**2))
    product = weight * prior
    if labeled is not None:
        err_t = _labeled_error(labelings, *labeled)
        product = product * np.maximum(err_t, 0.5 / max(len(labeled[1]), 1))
    return {"err_mse": mse, "err_weight": weight, "err_prior": prior, "err_pi": np.sqrt(np.maximum(product, 0.0))}


def _best(errors: dict) -> int:
    """The labeling with the lowest Err_Pi, ties broken by Err_MSE."""
    return int(np.lexsort((errors["err_mse"], errors["err_pi"]))[0])


def exhaustive_labeling(counts: np.ndarray, sizes: np.ndarray, pi: np.ndarray, labeled=None):
    """Try all l^k labelings of k clusters (Sec. 3.3); returns (labeling (k,), its errors)."""
    h, k = counts.shape
    n_classes = pi.shape[1]
    total = n_classes**k
    if total > MAX_LABELINGS:
        raise InputError(f"the exhaustive labeling would try {n_classes}^{k} = {total} labelings (more than "
                         f"{MAX_LABELINGS}); use the greedy labeling or fewer clusters")
    best, best_errors = None, None
    for start in range(0, total, _BATCH):
        codes = np.arange(start, min(start + _BATCH, total))
        labelings = np.stack(np.unravel_index(codes, (n_classes,) * k), axis=1)
        errors = _errors_of(labelings, counts, sizes, pi, n_classes, labeled)
        i = _best(errors)
        candidate = {name: float(value[i]) for name, value in errors.items()}
        if best is None or (candidate["err_pi"], candidate["err_mse"]) < (best_errors["err_pi"], best_errors["err_mse"]):
            best, best_errors = labelings[i], candidate
    return best, best_errors


def greedy_labeling(counts: np.ndarray, sizes: np.ndarray, pi: np.ndarray, labeled=None):
    """Alg. 2: every cluster starts with the first label; then, cluster by cluster, the label that
    gives the lowest Err_Pi is kept (k l evaluations)."""
    k = counts.shape[1]
    n_classes = pi.shape[1]
    labeling = np.zeros(k, dtype=np.int64)
    for c in range(k):
        trials = np.repeat(labeling[None], n_classes, axis=0)
        trials[:, c] = np.arange(n_classes)
        labeling = trials[_best(_errors_of(trials, counts, sizes, pi, n_classes, labeled))]
    errors = _errors_of(labeling[None], counts, sizes, pi, n_classes, labeled)
    return labeling, {name: float(value[0]) for name, value in errors.items()}


# ---------------------------------------------------------------------- the LLP algorithm
@dataclass
class LLPModel:
    """A fitted LLP cluster-mean model (Sec. 3.5): scaling to [0, 1], feature weights, labeled k-means centres."""

    features: list[str]
    classes: list[str]
    low: list[float]
    high: list[float]
    weights: list[float]
    centers: list[list[float]]
    labels: list[int]
    k: int
    labeling: str
    err_pi: float
    err_mse: float
    settings: dict = field(default_factory=dict)
    by_k: list[dict] = field(default_factory=list)

    def key_columns(self) -> list[str]:
        """The id columns of the training items (group, id) and `id` unless it is a feature, which readers keep
        as text ('001' stays '001')."""
        keys = [self.settings[k] for k in ("group_col", "id_col") if isinstance(self.settings.get(k), str)]
        return keys + [c for c in ("id",) if c not in keys and c not in self.features]

    def scaled(self, x: np.ndarray) -> np.ndarray:
        """Features in the data's units scaled to [0, 1] by the training range."""
        low, high = np.asarray(self.low), np.asarray(self.high)
        return (np.asarray(x, float) - low) / (high - low)

    def predict_codes(self, x: np.ndarray) -> np.ndarray:
        """The class code of the nearest labeled cluster mean, in the feature-weighted distance."""
        z = self.scaled(x) * np.sqrt(np.asarray(self.weights))[None, :]
        centers = np.asarray(self.centers) * np.sqrt(np.asarray(self.weights))[None, :]
        distance = ((z[:, None, :] - centers[None]) ** 2).sum(axis=2)
        return np.asarray(self.labels)[distance.argmin(axis=1)]

    def predict(self, items: pd.DataFrame) -> pd.DataFrame:
        """Every input column plus `class` and `prob_<class>` (1 for the predicted class, 0 for the others:
        LLP gives labels, not probabilities) and empty `prob_low`, `prob_high` (no interval)."""
        from bayes_wsc.data.proportions import standardize

        x = standardize(items, self.features, np.zeros(len(self.features)), np.ones(len(self.features)), "items")
        codes = self.predict_codes(x)
        out = items.copy()
        out["class"] = np.asarray(self.classes, dtype=object)[codes]
        for c, name in enumerate(self.classes):
            out[f"prob_{name}"] = (codes == c).astype(float)
        out["prob_low"] = np.nan
        out["prob_high"] = np.nan
        return out

    def save(self, path) -> Path:
        """Write the model as JSON (atomically, `outputs.write_json`)."""
        from bayes_wsc.outputs import write_json

        return write_json({"model": "llp", **asdict(self)}, path, "LLP model")

    @classmethod
    def load(cls, path) -> LLPModel:
        """Read a model written by `save` (`bayes-wsc baseline llp`); anything else is one line."""
        path = Path(path)
        try:
            raw = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputError(f"LLP file {str(path)!r} could not be read: {reason}") from None
        if not isinstance(raw, dict) or raw.get("model") != "llp":
            raise InputError(f"{str(path)!r} is not an LLP model written by `bayes-wsc baseline llp`")
        raw.pop("model")
        try:
            model = cls(**raw)
            centers, weights = np.asarray(model.centers, float), np.asarray(model.weights, float)
            ok = (centers.ndim == 2 and centers.shape == (len(model.labels), len(model.features))
                  and weights.shape == (len(model.features),) and len(model.low) == len(model.high) == len(model.features)
                  and all(0 <= c < len(model.classes) for c in model.labels))
        except (TypeError, ValueError) as exc:
            raise InputError(f"LLP file {str(path)!r} is incomplete or damaged: {exc}") from None
        if not ok:
            raise InputError(f"LLP file {str(path)!r} is damaged: its centres, weights and labels do not fit together")
        return model


def min_max(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each feature's training range (a constant feature gets a range of 1, so it scales to 0)."""
    low, high = x.min(axis=0), x.max(axis=0)
    return low, np.where(high > low, high, low + 1.0)


def _normalized(weights: np.ndarray) -> np.ndarray:
    """Weights in [0, 1] with the largest 1 (all zero: all one)."""
    top = weights.max(axis=-1, keepdims=True)
    return np.where(top > 0, weights / np.where(top > 0, top, 1.0), 1.0)


def fit_llp(x: np.ndarray, item_group: np.ndarray, proportions: np.ndarray, *, features=None, classes=None,
            k: int | None = None, labeling: str = "exhaustive", labels: np.ndarray | None = None, seed: int = 0,
            maxgen: int = 10, psize: int = 25, mutvar: float = 1.0, crossprob: float = 0.3,
            tournsize: float = 0.25) -> LLPModel:
    """LLP (Alg. 1) on features `x` (n, m) in the data's units, each item's group (0..h-1) and the
    groups' proportions (h, l). k=None tries every k in [2, 12] and keeps the lowest Err_Pi.
    `labels` (n,) gives class codes of individually labeled items (-1 elsewhere), used through eq. 8."""
    if labeling not in LABELINGS:
        raise InputError(f"labeling must be one of {LABELINGS}, got {labeling!r}")
    for name, value, lowest in (("maxgen", maxgen, 1), ("psize", psize, 2)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < lowest:
            raise InputError(f"{name} must be a whole number >= {lowest}, got {value!r}")
    for name, value in (("mutvar", mutvar), ("crossprob", crossprob), ("tournsize", tournsize)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0:
            raise InputError(f"{name} must be a number >= 0, got {value!r}")
    x = np.asarray(x, float)
    item_group = np.asarray(item_group, dtype=np.int64)
    proportions = np.asarray(proportions, float)
    n = x.shape[0]
    n_classes = proportions.shape[1] if proportions.ndim == 2 else 0
    if k is None:
        ks = [v for v in K_RANGE if labeling == "greedy" or n_classes**v <= EXHAUSTIVE_SEARCH_LABELINGS]
    else:
        ks = [k]
    for value in ks:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 1 <= value <= n:
            raise InputError(f"k must be a whole number from 1 to the number of items ({n}), got {value!r}")
    low, high = min_max(x)
    scaled = (x - low) / (high - low)
    sizes = np.bincount(item_group, minlength=proportions.shape[0]).astype(float)
    labeled = None
    if labels is not None:
        labels = np.asarray(labels, dtype=np.int64)
        known = np.flatnonzero(labels >= 0)
        labeled = (known, labels[known]) if known.size else None
    settings = {"maxgen": maxgen, "psize": psize, "mutvar": mutvar, "crossprob": crossprob, "tournsize": tournsize,
                "seed": seed, "labeling": labeling, "k": k, "n_labeled": 0 if labeled is None else int(labeled[0].size)}
    rng = np.random.default_rng(seed)
    runs = []
    for value in ks:
        t0 = time.perf_counter()
        result = _evolve(scaled, item_group, proportions, sizes, int(value), labeling, labeled, rng, maxgen, psize,
                         mutvar, crossprob, tournsize)
        result["seconds"] = time.perf_counter() - t0
        runs.append(result)
    best = min(runs, key=lambda r: (r["err_pi"], r["err_mse"]))
    m = x.shape[1]
    return LLPModel(
        features=[str(f) for f in (features if features is not None else [f"x{j + 1}" for j in range(m)])],
        classes=[str(c) for c in (classes if classes is not None else range(proportions.shape[1]))],
        low=low.tolist(), high=high.tolist(), weights=best["weights"].tolist(), centers=best["centers"].tolist(),
        labels=best["labels"].tolist(), k=best["k"], labeling=labeling, err_pi=best["err_pi"],
        err_mse=best["err_mse"], settings=settings,
        by_k=[{"k": r["k"], "err_pi": r["err_pi"], "err_mse": r["err_mse"], "evaluations": r["evaluations"],
               "seconds": round(r["seconds"], 3)} for r in runs])


def fit_llp_data(data, **kwargs) -> LLPModel:
    """`fit_llp` on a `LabelProportions` container with numeric features (its data's units)."""
    if data.kind != "numeric":
        raise InputError("LLP clusters numeric features; these data have categorical ones")
    model = fit_llp(data.x_raw, data.item_group, data.proportions, features=list(data.features),
                    classes=list(data.classes), **kwargs)
    model.settings.update({k: data.settings[k] for k in ("group_col", "id_col") if isinstance(data.settings.get(k), str)})
    return model


def _evolve(scaled, item_group, proportions, sizes, k, labeling, labeled, rng, maxgen, psize, mutvar, crossprob,
            tournsize) -> dict:
    """One run of Alg. 1 at a fixed k: the best individual evaluated."""
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    labeler = exhaustive_labeling if labeling == "exhaustive" else greedy_labeling
    n_groups, m = proportions.shape[0], scaled.shape[1]
    best = {"err_pi": np.inf, "err_mse": np.inf}
    cache: dict[bytes, float] = {}

    def evaluate(weights):
        key = weights.tobytes()
        if key not in cache:
            root = np.sqrt(weights)
            with warnings.catch_warnings():  # repeated points: fewer distinct clusters than k, which is allowed
                warnings.simplefilter("ignore", ConvergenceWarning)
                kmeans = KMeans(n_clusters=k, n_init=1, random_state=int(rng.integers(2**31))).fit(scaled * root)
            clusters = kmeans.labels_
            counts = cluster_group_counts(clusters, item_group, k, n_groups)
            lab = None if labeled is None else (clusters[labeled[0]], labeled[1])
            labels, errors = labeler(counts, sizes, proportions, lab)
            cache[key] = errors["err_pi"]
            if (errors["err_pi"], errors["err_mse"]) < (best["err_pi"], best["err_mse"]):
                centers = kmeans.cluster_centers_ / np.where(root > 0, root, 1.0)
                best.update(errors, weights=weights.copy(), centers=centers, labels=labels, k=k)
        return cache[key]

    population = _normalized(rng.random((psize, m)))
    with threadpool_limits(1):  # k-means on a few hundred items: threads only contend
        for generation in range(maxgen):
            fitness = np.array([evaluate(w) for w in population])
            if generation + 1 == maxgen:
                break
            copies = _normalized(np.clip(population + rng.normal(0.0, math.sqrt(mutvar), population.shape), 0.0, 1.0))
            pool = np.concatenate([population, copies])
            parents = pool[rng.random(len(pool)) < crossprob]
            rng.shuffle(parents)
            pairs = parents[: len(parents) // 2 * 2].reshape(-1, 2, m)
            mask = rng.random((len(pairs), m)) < 0.5
            children = np.concatenate([np.where(mask, pairs[:, 0], pairs[:, 1]),
                                       np.where(mask, pairs[:, 1], pairs[:, 0])]) if len(pairs) else np.zeros((0, m))
            candidates = np.concatenate([pool, children])
            scores = np.concatenate([fitness, [evaluate(w) for w in copies], [evaluate(w) for w in children]])
            size = max(1, int(math.ceil(tournsize * len(candidates))))
            entrants = np.array([rng.choice(len(candidates), size, replace=False) for _ in range(psize)])
            population = candidates[entrants[np.arange(psize), scores[entrants].argmin(axis=1)]]
    best["evaluations"] = len(cache)
    return best


# ---------------------------------------------------------------------- direct and oracle
def direct_classifier(x: np.ndarray, item_group: np.ndarray, proportions: np.ndarray, *, C: float = 1.0):
    """Logistic regression on the items with their group's proportions as soft labels: each item
    enters once per class with that class's proportion as its weight (seed 000, Sec. 3.1)."""
    from sklearn.linear_model import LogisticRegression

    n, n_classes = x.shape[0], proportions.shape[1]
    weights = proportions[item_group].T.ravel()  # (l * n,)
    keep = weights > 0
    xs = np.tile(x, (n_classes, 1))[keep]
    ys = np.repeat(np.arange(n_classes), n)[keep]
    return LogisticRegression(C=C, max_iter=2000).fit(xs, ys, sample_weight=weights[keep])


def oracle_classifier(x: np.ndarray, labels: np.ndarray, *, C: float = 1.0):
    """Logistic regression on the true labels of the training items (the experiments' upper reference)."""
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=C, max_iter=2000).fit(x, labels)
