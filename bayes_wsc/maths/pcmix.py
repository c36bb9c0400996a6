"""The supervised Gaussian mixture of seed 003 in NumPy: its parameters, priors, densities and starts.

What both the Bayesian model (`models/pcmix/model.py`) and the paper's own algorithms (`models/pcmix/baselines.py`:
ML+rep by EM, the PC objective) stand on, so that neither imports the other. Everything works on the
standardized features of `LabeledItems`, where the weakly informative priors are set.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bayes_wsc.data.labeled import LabeledItems
from bayes_wsc.errors import InputError
from bayes_wsc.maths import LOG_2PI, diag_normal_weights, quadratic_features
from bayes_wsc.settings import real


@dataclass(frozen=True)
class Priors:
    """The regularization R(xi) of both objectives.

    pi ~ Dirichlet(pi_concentration) and rho_k ~ Beta / Dirichlet(rho_concentration): eq. 25 (1.01).
    mean_kj ~ Normal(0, mean_sd) and sd_kj = sd_floor + e_kj, e_kj ~ Gamma(sd_shape, sd_rate): weakly
    informative on standardized features. The Gamma's shape 2 makes its density vanish at e = 0, which
    keeps a component from collapsing onto a single point; the floor is the paper's 0.001.
    """

    pi_concentration: float = 1.01
    rho_concentration: float = 1.01
    mean_sd: float = 3.0
    sd_shape: float = 2.0
    sd_rate: float = 1.0
    sd_floor: float = 0.001


@dataclass
class Params:
    """Mixture parameters on the standardized scale: pi (K,), mean and sd (K, D), rho (K, C)."""

    pi: np.ndarray
    mean: np.ndarray
    sd: np.ndarray
    rho: np.ndarray

    def copy(self) -> Params:
        return Params(self.pi.copy(), self.mean.copy(), self.sd.copy(), self.rho.copy())


# ---------------------------------------------------------------------- densities
def component_logp(x: np.ndarray, mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """(n, K) log f(x_d | k) for diagonal Gaussians."""
    z = (x[:, None, :] - mean[None]) / sd[None]
    return -0.5 * np.sum(z**2, axis=-1) - np.sum(np.log(sd), axis=-1)[None] - 0.5 * LOG_2PI * x.shape[1]


def component_logp_draws(x: np.ndarray, mean_z: np.ndarray, sd_z: np.ndarray) -> np.ndarray:
    """log f(x_d | k) for many draws at once: x (m, D), mean_z and sd_z (S, K, D) -> (S, m, K).

    The square is expanded so that no (S, m, K, D) array is formed; the (S, m, K) steps after it are made
    in place (the same operations in the same order).
    """
    precision = 1.0 / sd_z**2
    quad = (np.einsum("md,skd->smk", x**2, precision, optimize=True)
            - 2 * np.einsum("md,skd->smk", x, mean_z * precision, optimize=True)
            + np.sum(mean_z**2 * precision, axis=-1)[:, None, :])
    out = np.maximum(quad, 0.0, out=quad)
    out *= -0.5
    out -= np.sum(np.log(sd_z), axis=-1)[:, None, :]
    out -= 0.5 * LOG_2PI * x.shape[1]
    return out


def component_logp_rows(x: np.ndarray, mean_z: np.ndarray, sd_z: np.ndarray,
                        log_weight: np.ndarray | None = None) -> np.ndarray:
    """`component_logp_draws` laid out (K, m, S), each component's block contiguous in the draws, for `predict`,
    plus `log_weight` (S, K) when given (log pi: the joint log density). One matrix product per component
    (`maths.quadratic_features` against `maths.diag_normal_weights`) and nothing after it: every (m, S) block is
    made once, where the components' log-sum-exp is elementwise across blocks and each item's draws are a row to
    sort for its interval. The same values to float rounding (the square expanded in one sum)."""
    features = quadratic_features(x)  # (m, 2D + 1)
    weights = diag_normal_weights(mean_z, sd_z, log_weight).transpose(1, 2, 0).copy()  # (K, 2D + 1, S)
    out = np.empty((sd_z.shape[1], x.shape[0], sd_z.shape[0]))
    for k, block in enumerate(out):
        np.matmul(features, weights[k], out=block)
    return out


def label_logp(onehot: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """(n, K) log g(y_d | k); zero rows for unlabeled items."""
    return onehot @ np.log(rho).T


# ---------------------------------------------------------------------- starts
def kmeans_start(data: LabeledItems, components: int, seed: int | None) -> Params:
    """k-means clusters (scikit-learn) turned into mixture parameters, with +1 smoothing."""
    from sklearn.cluster import KMeans

    assign = KMeans(n_clusters=components, n_init=3, random_state=seed).fit_predict(data.x)
    counts = np.bincount(assign, minlength=components).astype(float)
    pi = (counts + 1.0) / (counts.sum() + components)
    mean = np.stack([data.x[assign == k].mean(axis=0) if counts[k] else data.x.mean(axis=0)
                     for k in range(components)])
    sd = np.stack([data.x[assign == k].std(axis=0) if counts[k] > 1 else np.ones(data.n_features)
                   for k in range(components)])
    sd = np.maximum(sd, 0.05)
    labels = np.zeros((components, data.n_classes))
    np.add.at(labels, assign, data.onehot)
    rho = (labels + 1.0) / (labels.sum(axis=1, keepdims=True) + data.n_classes)
    return Params(pi, mean, sd, rho)


def random_start(data: LabeledItems, components: int, rng: np.random.Generator) -> Params:
    """Means at distinct random items, sds log-uniform in [0.1, 2], weights and label probabilities
    drawn from flat Dirichlets (kept away from 0 and 1)."""
    rows = rng.choice(data.n_items, size=components, replace=False)
    mean = data.x[rows] + 0.05 * rng.standard_normal((components, data.n_features))
    sd = np.exp(rng.uniform(np.log(0.1), np.log(2.0), size=(components, data.n_features)))
    pi = np.clip(rng.dirichlet(np.ones(components)), 0.05, None)
    rho = np.clip(rng.dirichlet(np.ones(data.n_classes), size=components), 0.02, None)
    return Params(pi / pi.sum(), mean, sd, rho / rho.sum(axis=1, keepdims=True))


def random_starts(data: LabeledItems, components: int, n_starts: int, seed: int | None) -> list[Params]:
    """`n_starts` starts: k-means first, then random ones, reproducible from `seed`."""
    check_components(data, components)
    if n_starts < 1:
        raise InputError(f"restarts must be at least 1, got {n_starts!r}")
    rng = np.random.default_rng(seed)
    kmeans_seed = int(rng.integers(2**31))
    return [kmeans_start(data, components, kmeans_seed)] + [random_start(data, components, rng)
                                                           for _ in range(n_starts - 1)]


def check_components(data: LabeledItems, components) -> None:
    if isinstance(components, bool) or not isinstance(components, (int, np.integer)) or components < 1:
        raise InputError(f"components (K) must be a whole number >= 1, got {components!r}")
    if components > data.n_items:
        raise InputError(f"components (K = {components}) exceeds the number of items ({data.n_items})")


def lam_text(lam: float) -> str:
    """lam as short text that reads back as the same number ('4', '0.5', '1.0000001'): file names and
    labels of a path, distinct for distinct lams (`:g` alone keeps 6 digits, so 1 and 1.0000001 met)."""
    short = f"{lam:g}"
    return short if float(short) == lam else repr(float(lam))


def check_lam(lam) -> float:
    """lam as a float: a finite number >= 0, or text that reads as one (`settings.real`)."""
    return real("lam", lam)
