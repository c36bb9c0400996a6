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
* `fit_mean_map` and `fit_invcal`: the two kernel baselines of the paper's Sec. 4, Mean Map
  (Quadrianto et al. 2009) and inverse calibration (Rueping 2010), with the paper's six kernels
  (`KERNELS`); the paper ran the authors' R scripts, these are written from the methods' papers.

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


# ---------------------------------------------------------------------- Mean Map and inverse calibration
#: the kernels the paper tried for its kernel baselines (Sec. 4.1): linear, polynomial of degree 2 and 3
#: (scikit-learn's gamma = 1 / features, coef0 = 1) and radial basis with gamma 0.01, 0.1 and 1
KERNELS = ("linear", "poly2", "poly3", "rbf0.01", "rbf0.1", "rbf1")
#: Mean Map's explicit feature map for a non-linear kernel: Nystroem with at most this many landmarks
#: (exact when the training set is no larger)
MEAN_MAP_LANDMARKS = 500


def kernel_parameters(kernel: str) -> dict:
    """scikit-learn's `pairwise_kernels` arguments of one of `KERNELS`."""
    if kernel == "linear":
        return {"metric": "linear"}
    if kernel in ("poly2", "poly3"):
        return {"metric": "poly", "degree": int(kernel[-1]), "coef0": 1.0}
    if kernel.startswith("rbf"):
        try:
            return {"metric": "rbf", "gamma": float(kernel[3:])}
        except ValueError:
            pass
    raise InputError(f"kernel: {kernel!r} is none of {', '.join(KERNELS)}")


def _group_means(item_group: np.ndarray, n_groups: int) -> np.ndarray:
    """(G, n) matrix whose row g averages the items of group g."""
    from scipy import sparse

    n = item_group.size
    counts = np.bincount(item_group, minlength=n_groups).astype(float)
    return sparse.csr_matrix((1.0 / counts[item_group], (item_group, np.arange(n))), shape=(n_groups, n))


def _check_llp_inputs(x, item_group, proportions):
    x = np.asarray(x, dtype=float)
    item_group = np.asarray(item_group)
    proportions = np.asarray(proportions, dtype=float)
    if x.ndim != 2 or item_group.shape != (x.shape[0],):
        raise InputError(f"items: features of shape {x.shape} do not match {item_group.size} group indices")
    if proportions.ndim != 2 or item_group.min() < 0 or item_group.max() >= proportions.shape[0]:
        raise InputError(f"item_group: indices must lie in [0, {proportions.shape[0]}) (one row of proportions each)")
    if np.bincount(item_group, minlength=proportions.shape[0]).min() == 0:
        raise InputError("item_group: every group must hold at least one item")
    return x, item_group.astype(np.int64), proportions


@dataclass
class MeanMapModel:
    """p(y | x) = softmax(phi(x) theta) with theta fitted by Mean Map; phi(x) = [features, 1] for the
    linear kernel, [Nystroem map, 1] otherwise."""

    theta: np.ndarray
    feature_map: object | None
    kernel: str

    def _features(self, x):
        x = np.asarray(x, dtype=float)
        z = x if self.feature_map is None else self.feature_map.transform(x)
        return np.hstack([z, np.ones((z.shape[0], 1))])

    def predict_proba(self, x) -> np.ndarray:
        from scipy.special import softmax

        return softmax(self._features(x) @ self.theta, axis=1)

    def predict(self, x) -> np.ndarray:
        return self.predict_proba(x).argmax(axis=1)


def mean_map_features(x: np.ndarray, kernel: str, seed: int | None = 0):
    """The explicit feature map of a non-linear kernel (Nystroem, fitted on `x`), None for the linear one; it
    depends on the items alone, so fits on the same items with other groups can share it."""
    params = kernel_parameters(kernel)
    if params["metric"] == "linear":
        return None
    from sklearn.kernel_approximation import Nystroem

    extra = {k: v for k, v in params.items() if k != "metric"}
    return Nystroem(kernel=params["metric"], n_components=min(len(x), MEAN_MAP_LANDMARKS), random_state=seed,
                    **extra).fit(np.asarray(x, dtype=float))


def fit_mean_map(x: np.ndarray, item_group: np.ndarray, proportions: np.ndarray, *, kernel: str = "linear",
                 C: float = 1.0, seed: int | None = 0, feature_map=None) -> MeanMapModel:
    """Mean Map (Quadrianto, Smola, Caetano & Le 2009): a conditional exponential model p(y | x) fitted
    with the labels entering only through mu_XY = sum_y p(y) e_y (x) E[phi(x) | y], whose class means
    are recovered from the group means by least squares (group mean = sum_y pi_gy E[phi | y]).

    Minimizes sum_i log sum_y exp(phi_i theta_y) - sum_y n_y <theta_y, E[phi | y]> + ||theta||^2 / (2 C)
    (the bias row unpenalized) by L-BFGS; C = 1 as for the direct and oracle baselines. Needs at least
    as many groups as classes with proportions of full rank. `feature_map`: `mean_map_features(x, kernel)`
    computed once for several fits on the same items."""
    from scipy.optimize import minimize
    from scipy.special import logsumexp, softmax

    x, item_group, proportions = _check_llp_inputs(x, item_group, proportions)
    n, n_classes = x.shape[0], proportions.shape[1]
    if np.linalg.matrix_rank(proportions) < n_classes:
        raise InputError(f"proportions: Mean Map needs the {proportions.shape[0]} groups' proportions to have rank "
                         f"{n_classes} (one per class) to recover the class means")
    if feature_map is None:
        feature_map = mean_map_features(x, kernel, seed)
    model = MeanMapModel(np.zeros(0), feature_map, kernel)
    phi = model._features(x)
    sizes = np.bincount(item_group, minlength=proportions.shape[0]).astype(float)
    set_means = np.asarray(_group_means(item_group, proportions.shape[0]) @ phi)
    class_means, *_ = np.linalg.lstsq(proportions, set_means, rcond=None)  # (L, D)
    class_counts = sizes @ proportions  # n_y
    target = (class_counts[:, None] * class_means).T  # (D, L)
    penalty = np.ones((phi.shape[1], 1))
    penalty[-1] = 0.0

    def objective(flat):
        theta = flat.reshape(phi.shape[1], n_classes)
        scores = phi @ theta
        value = logsumexp(scores, axis=1).sum() - np.sum(target * theta) + np.sum(penalty * theta**2) / (2 * C)
        grad = phi.T @ softmax(scores, axis=1) - target + penalty * theta / C
        return value, grad.ravel()

    result = minimize(objective, np.zeros(phi.shape[1] * n_classes), jac=True, method="L-BFGS-B",
                      options={"maxiter": 2000})
    model.theta = result.x.reshape(phi.shape[1], n_classes)
    return model


@dataclass
class InvCalModel:
    """f(x) = sum_g a_g mean_{x' in g} k(x, x') + b, fitted by inverse calibration; class 1 when f(x) > 0,
    P(y = 1 | x) = sigmoid(f(x))."""

    svr: object
    x_train: np.ndarray
    item_group: np.ndarray
    n_groups: int
    kernel: str

    def decision_function(self, x) -> np.ndarray:
        from sklearn.metrics.pairwise import pairwise_kernels

        k = pairwise_kernels(np.asarray(x, dtype=float), self.x_train, **kernel_parameters(self.kernel))
        return self.svr.predict(np.asarray(_group_means(self.item_group, self.n_groups) @ k.T).T)

    def predict(self, x) -> np.ndarray:
        return (self.decision_function(x) > 0).astype(np.int64)


def fit_invcal(x: np.ndarray, item_group: np.ndarray, proportions: np.ndarray, *, kernel: str = "linear",
               C: float = 1.0, epsilon: float = 0.1) -> InvCalModel:
    """Inverse calibration (Rueping 2010), two classes: support vector regression whose constraint is on
    each group's mean score, `|mean_{x in g} f(x) - logit(p_g)| <= epsilon + slack`, f in the kernel's space.

    That is an SVR on the groups with the kernel between group means, mean_{x in g, x' in h} k(x, x')
    (scikit-learn's `SVR(kernel="precomputed")`). The targets are empirical logits, log((c + 1/2) / (n_g - c
    + 1/2)) for c items of class 1 among n_g, finite for shares of 0 and 1. C = 1 and epsilon = 0.1 are
    scikit-learn's defaults."""
    from sklearn.metrics.pairwise import pairwise_kernels
    from sklearn.svm import SVR

    x, item_group, proportions = _check_llp_inputs(x, item_group, proportions)
    if proportions.shape[1] != 2:
        raise InputError(f"proportions: inverse calibration takes two classes, not {proportions.shape[1]}")
    n_groups = proportions.shape[0]
    sizes = np.bincount(item_group, minlength=n_groups).astype(float)
    ones = proportions[:, 1] * sizes
    means = _group_means(item_group, n_groups)
    k = pairwise_kernels(x, **kernel_parameters(kernel))
    gram = np.asarray(means @ np.asarray(means @ k).T)  # (G, G): mean kernel between groups
    svr = SVR(kernel="precomputed", C=C, epsilon=epsilon).fit(gram, np.log((ones + 0.5) / (sizes - ones + 0.5)))
    return InvCalModel(svr, x, item_group, n_groups, kernel)
