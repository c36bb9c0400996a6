"""Feature-level supervision (seed 004): the simulated study and the digits example.

**Simulated study** (`simulate_study`). The raw features carry a dominant
cluster structure that is not the user's: G well-separated groups in random
directions, which k-means on the features finds. The user's K clusters live
elsewhere: each cluster k is a set of q perception attributes (its 0/1
perception vector p_k, two attributes by default, some shared between
clusters), an item of cluster k carries those attributes, and attribute j
raises its own few features by `user_separation` (non-negative loadings, as
in the paper's non-negative data). A share `overlap` of the items belongs to
two clusters that share an attribute and carries the union of their
attributes. The user gives 3-10 seeds per cluster, drawn from its members;
a seed that belongs to two clusters is put in both sets with probability
`seed_overlap`. Every item belongs to at least one of her clusters.

**Digits** (`digits_example`): scikit-learn's 8 x 8 handwritten digits (1797
items, 64 pixel features), whose dominant structure is the ten digits; the
user's clusters are concepts that unite digits: "closed loop" (0, 6, 8, 9),
"straight strokes only" (1, 4, 7) and "open curves" (2, 3, 5), described by
the perception features loop, curve, straight and open.

**Distractor study** (`simulate_distractor_study`): a few hundred items whose
strongest structure (well-separated groups) lives in features of its own and
is independent of the user's three clusters, which live in other features,
two of them overlapping; 5 seeds per cluster. **The family of distractor
studies** (`distractor_family`): the same geometry with every knob drawn per
data set (nuisance clusters and their strength, 2-5 user clusters, their
overlap, the dimensions, 3-10 seeds per cluster).

All three return tables in the form a user would have (items, seeds, perception),
with the true memberships.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from bayes_wsc.errors import InputError

#: the digits example: concept -> (digits, perception attributes)
DIGIT_CONCEPTS = {
    "closed_loop": ((0, 6, 8, 9), ("loop", "curve")),
    "straight_strokes": ((1, 4, 7), ("straight", "open")),
    "open_curves": ((2, 3, 5), ("curve", "open")),
}
DIGIT_PERCEPTION = ("loop", "curve", "straight", "open")


@dataclass
class PerceptionStudy:
    """A data set with feature-level supervision and its truth.

    items : one row per item, `id` and the feature columns.
    seeds : rows cluster, id (an id may appear under two clusters).
    perception : rows cluster, <perception columns>.
    membership : (n, K) True where the item belongs to the user's cluster (clusters may overlap).
    dominant : (n,) the raw features' own group of each item (the structure k-means finds).
    clusters : the K cluster names, in the order of `perception` and of `membership`'s columns.
    """

    items: pd.DataFrame
    seeds: pd.DataFrame
    perception: pd.DataFrame
    membership: np.ndarray
    dominant: np.ndarray
    clusters: list[str]

    def data(self, **kwargs):
        """The three tables validated as `SeedSets` (kwargs go to `SeedSets.from_frames`)."""
        from bayes_wsc.models.perception.data import SeedSets

        return SeedSets.from_frames(self.items, self.seeds, self.perception, **kwargs)

    @property
    def primary(self) -> np.ndarray:
        """(n,) the first cluster of each item (its only one unless it is in two)."""
        return self.membership.argmax(axis=1)


def _check_whole(name: str, value, lowest: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lowest:
        raise InputError(f"{name} must be a whole number >= {lowest}, got {value!r}")
    return int(value)


def _perception_vectors(n_clusters: int, n_perception: int, per_cluster: int, rng) -> np.ndarray:
    """K distinct 0/1 vectors with `per_cluster` attributes each, at least two clusters sharing one."""
    for _ in range(1000):
        vectors = np.zeros((n_clusters, n_perception))
        for k in range(n_clusters):
            vectors[k, rng.choice(n_perception, per_cluster, replace=False)] = 1.0
        distinct = len({tuple(v) for v in vectors}) == n_clusters
        shares = ((vectors @ vectors.T) - np.diag(np.diag(vectors @ vectors.T)) > 0).any()
        if distinct and (shares or per_cluster == 1):
            return vectors
    raise InputError(f"cannot draw {n_clusters} distinct perception vectors of {per_cluster} of "
                     f"{n_perception} attributes")


def _draw_seeds(membership: np.ndarray, seeds_min: int, seeds_max: int, seed_overlap: float, rng):
    """Rows (cluster index, item index): `seeds_min`..`seeds_max` members of each cluster; a seed
    that belongs to a second cluster is a seed of that one too with probability `seed_overlap`."""
    rows = set()
    for k in range(membership.shape[1]):
        members = np.flatnonzero(membership[:, k])
        count = min(int(rng.integers(seeds_min, seeds_max + 1)), members.size)
        for i in rng.choice(members, count, replace=False):
            rows.add((k, int(i)))
            for other in np.flatnonzero(membership[i]):
                if other != k and rng.uniform() < seed_overlap:
                    rows.add((int(other), int(i)))
    return sorted(rows)


def simulate_study(
    n_items: int = 1000,
    *,
    n_features: int = 20,
    n_clusters: int = 4,
    n_perception: int = 6,
    attributes_per_cluster: int = 2,
    features_per_attribute: int = 2,
    n_dominant: int = 3,
    dominant_separation: float = 6.0,
    user_separation: float = 2.5,
    overlap: float = 0.15,
    seeds_min: int = 3,
    seeds_max: int = 10,
    seed_overlap: float = 0.5,
    seed: int | None = 0,
) -> PerceptionStudy:
    """The simulated study (see the module docstring); `seed` makes it reproducible.

    n_features must hold `n_perception * features_per_attribute` attribute features; the rest carry
    only the dominant structure and noise. Features have unit noise; the dominant groups' centres
    are `dominant_separation` apart in random directions, an attribute adds `user_separation` to
    each of its features.
    """
    n_items = _check_whole("n_items", n_items, 10)
    n_clusters = _check_whole("n_clusters", n_clusters, 2)
    n_perception = _check_whole("n_perception", n_perception, 1)
    per_cluster = _check_whole("attributes_per_cluster", attributes_per_cluster, 1)
    per_attribute = _check_whole("features_per_attribute", features_per_attribute, 1)
    n_dominant = _check_whole("n_dominant", n_dominant, 1)
    seeds_min = _check_whole("seeds_min", seeds_min, 1)
    seeds_max = _check_whole("seeds_max", seeds_max, seeds_min)
    n_features = _check_whole("n_features", n_features, n_perception * per_attribute)
    if per_cluster > n_perception:
        raise InputError(f"attributes_per_cluster ({per_cluster}) exceeds n_perception ({n_perception})")
    for name, value in (("overlap", overlap), ("seed_overlap", seed_overlap)):
        if not 0 <= value <= 1:
            raise InputError(f"{name} must be in [0, 1], got {value!r}")
    rng = np.random.default_rng(seed)
    vectors = _perception_vectors(n_clusters, n_perception, per_cluster, rng)

    primary = rng.integers(0, n_clusters, n_items)
    membership = np.zeros((n_items, n_clusters), dtype=bool)
    membership[np.arange(n_items), primary] = True
    shares = vectors @ vectors.T > 0
    for i in np.flatnonzero(rng.uniform(size=n_items) < overlap):
        partners = [k for k in np.flatnonzero(shares[primary[i]]) if k != primary[i]] \
            or [k for k in range(n_clusters) if k != primary[i]]
        membership[i, rng.choice(partners)] = True
    attributes = (membership.astype(float) @ vectors > 0).astype(float)  # the union of the clusters' attributes

    loadings = np.zeros((n_perception, n_features))
    for j in range(n_perception):
        loadings[j, j * per_attribute:(j + 1) * per_attribute] = user_separation
    basis, _ = np.linalg.qr(rng.standard_normal((n_features, n_features)))
    centres = dominant_separation / np.sqrt(2.0) * basis[:, :n_dominant].T  # pairwise distance = separation
    dominant = rng.integers(0, n_dominant, n_items)
    x = attributes @ loadings + centres[dominant] + rng.standard_normal((n_items, n_features))

    names = [f"c{k}" for k in range(n_clusters)]
    ids = [f"item{i}" for i in range(n_items)]
    items = pd.DataFrame(x, columns=[f"x{f + 1}" for f in range(n_features)])
    items.insert(0, "id", ids)
    rows = _draw_seeds(membership, seeds_min, seeds_max, seed_overlap, rng)
    seeds = pd.DataFrame({"cluster": [names[k] for k, _ in rows], "id": [ids[i] for _, i in rows]})
    perception = pd.DataFrame(vectors, columns=[f"a{j + 1}" for j in range(n_perception)])
    perception.insert(0, "cluster", names)
    return PerceptionStudy(items, seeds, perception, membership, dominant, names)


def simulate_distractor_study(
    n_items: int = 400,
    *,
    n_clusters: int = 3,
    n_perception: int | None = None,
    n_distractor_features: int = 10,
    n_noise_features: int = 30,
    n_dominant: int = 4,
    dominant_separation: float = 8.0,
    user_separation: float = 2.5,
    features_per_attribute: int = 2,
    overlap: float = 0.2,
    seeds_per_cluster: int = 5,
    seed: int | None = 0,
) -> PerceptionStudy:
    """The distractor study: a strong structure the user does not care about, in features of its own.

    With 3 clusters (the default) over 4 perception attributes: c0 = {a1, a2}, c1 = {a2, a3}, c2 = {a4};
    otherwise `n_clusters` distinct vectors of 2 of `n_perception` attributes (default n_clusters + 1),
    drawn at random. An item's clusters: its own, and with probability `overlap` one that shares an
    attribute with it (c0 and c1 by default), carrying the union of their attributes. Attribute j
    raises its own `features_per_attribute` features by `user_separation` (unit noise). The other
    `n_distractor_features` features hold `n_dominant` groups (the nuisance clusters) whose centres are
    `dominant_separation` apart in random directions of those features only, independent of the user's
    clusters (the structure k-means on X finds); `n_noise_features` more are pure noise.
    `seeds_per_cluster` seeds per cluster, drawn from its members (an item in two clusters is a seed of
    the set it was drawn for). `dominant` holds the nuisance group. Issue 29's situation: hundreds of
    items, few seeds; `distractor_family` varies every knob.
    """
    n_items = _check_whole("n_items", n_items, 10)
    n_clusters = _check_whole("n_clusters", n_clusters, 2)
    n_distractor = _check_whole("n_distractor_features", n_distractor_features, 1)
    n_noise = _check_whole("n_noise_features", n_noise_features, 0)
    n_dominant = _check_whole("n_dominant", n_dominant, 1)
    if n_dominant > n_distractor:
        raise InputError(f"n_dominant ({n_dominant}) exceeds n_distractor_features ({n_distractor})")
    per_attribute = _check_whole("features_per_attribute", features_per_attribute, 1)
    seeds_per_cluster = _check_whole("seeds_per_cluster", seeds_per_cluster, 1)
    if not 0 <= overlap <= 1:
        raise InputError(f"overlap must be in [0, 1], got {overlap!r}")
    for name, value in (("dominant_separation", dominant_separation), ("user_separation", user_separation)):
        if not (isinstance(value, (int, float, np.number)) and np.isfinite(value) and value >= 0):
            raise InputError(f"{name} must be a number >= 0, got {value!r}")
    rng = np.random.default_rng(seed)
    if n_clusters == 3 and n_perception is None:
        vectors = np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    else:
        n_perception = _check_whole("n_perception", n_clusters + 1 if n_perception is None else n_perception, 2)
        vectors = _perception_vectors(n_clusters, n_perception, 2, rng)
    n_perception = vectors.shape[1]
    primary = rng.integers(0, n_clusters, n_items)
    membership = np.zeros((n_items, n_clusters), dtype=bool)
    membership[np.arange(n_items), primary] = True
    shares = (vectors @ vectors.T > 0) & ~np.eye(n_clusters, dtype=bool)
    for i in np.flatnonzero(rng.uniform(size=n_items) < overlap):
        partners = np.flatnonzero(shares[primary[i]])
        if partners.size:
            membership[i, partners[0] if partners.size == 1 else rng.choice(partners)] = True
    attributes = (membership.astype(float) @ vectors > 0).astype(float)
    n_user = n_perception * per_attribute
    loadings = np.zeros((n_perception, n_user))
    for j in range(n_perception):
        loadings[j, j * per_attribute:(j + 1) * per_attribute] = user_separation
    basis, _ = np.linalg.qr(rng.standard_normal((n_distractor, n_distractor)))
    centres = dominant_separation / np.sqrt(2.0) * basis[:, :n_dominant].T  # pairwise distance = separation
    dominant = rng.integers(0, n_dominant, n_items)
    x = np.hstack([attributes @ loadings, centres[dominant], np.zeros((n_items, n_noise))])
    x += rng.standard_normal(x.shape)
    columns = [f"u{f + 1}" for f in range(n_user)] + [f"g{f + 1}" for f in range(n_distractor)] \
        + [f"n{f + 1}" for f in range(n_noise)]
    names = [f"c{k}" for k in range(n_clusters)]
    ids = [f"item{i}" for i in range(n_items)]
    items = pd.DataFrame(x, columns=columns)
    items.insert(0, "id", ids)
    rows = _draw_seeds(membership, seeds_per_cluster, seeds_per_cluster, 0.0, rng)
    seeds = pd.DataFrame({"cluster": [names[k] for k, _ in rows], "id": [ids[i] for _, i in rows]})
    perception = pd.DataFrame(vectors, columns=[f"a{j + 1}" for j in range(n_perception)])
    perception.insert(0, "cluster", names)
    return PerceptionStudy(items, seeds, perception, membership, dominant, names)


#: the ranges `distractor_family` draws each knob of `simulate_distractor_study` from
FAMILY_RANGES = {"n_clusters": (2, 5), "n_dominant": (2, 6), "dominant_separation": (4.0, 10.0),
                 "user_separation": (1.5, 3.5), "overlap": (0.0, 0.3), "n_distractor_features": (6, 15),
                 "n_noise_features": (0, 40), "seeds_per_cluster": (3, 10)}


def distractor_knobs(index: int, seed: int = 0) -> dict:
    """The knobs of data set `index` of the distractor family: each drawn uniformly from `FAMILY_RANGES`
    (whole numbers for counts), reproducibly from (seed, index)."""
    index = _check_whole("index", index, 0)
    rng = np.random.default_rng([int(seed), index])
    knobs = {}
    for name, (low, high) in FAMILY_RANGES.items():
        whole = isinstance(low, int)
        knobs[name] = int(rng.integers(low, high + 1)) if whole else round(float(rng.uniform(low, high)), 2)
    knobs["n_distractor_features"] = max(knobs["n_distractor_features"], knobs["n_dominant"])
    return knobs


def distractor_family(index: int, *, n_items: int = 400, seed: int = 0) -> tuple[PerceptionStudy, dict]:
    """Data set `index` of the family of distractor studies (`distractor_knobs`): the number and strength
    of the nuisance clusters, the user's clusters (2-5), their overlap, the dimensions and the seeds per
    cluster (3-10) vary from one data set to the next. Returns the study and its knobs."""
    knobs = distractor_knobs(index, seed)
    return simulate_distractor_study(n_items, seed=family_data_seed(index, seed), **knobs), knobs


def family_data_seed(index: int, seed: int = 0) -> int:
    """The random seed of data set `index` of the distractor family's draw `seed` (its knobs have their own)."""
    return int(seed) * 100_003 + int(index)


def digits_example(seeds_per_cluster: int = 5, *, seed: int | None = 0) -> PerceptionStudy:
    """scikit-learn's digits with the concepts of `DIGIT_CONCEPTS` as the user's clusters and
    `seeds_per_cluster` random seeds per concept; `dominant` holds the digit."""
    from sklearn.datasets import load_digits

    seeds_per_cluster = _check_whole("seeds_per_cluster", seeds_per_cluster, 1)
    bunch = load_digits()
    digit = np.asarray(bunch.target, dtype=np.int64)
    names = list(DIGIT_CONCEPTS)
    membership = np.column_stack([np.isin(digit, DIGIT_CONCEPTS[c][0]) for c in names])
    ids = [f"digit{i}" for i in range(digit.size)]
    items = pd.DataFrame(bunch.data, columns=[f"pixel{p}" for p in range(bunch.data.shape[1])])
    items.insert(0, "id", ids)
    rng = np.random.default_rng(seed)
    rows = _draw_seeds(membership, seeds_per_cluster, seeds_per_cluster, 0.0, rng)
    seeds = pd.DataFrame({"cluster": [names[k] for k, _ in rows], "id": [ids[i] for _, i in rows]})
    vectors = np.array([[float(a in DIGIT_CONCEPTS[c][1]) for a in DIGIT_PERCEPTION] for c in names])
    perception = pd.DataFrame(vectors, columns=list(DIGIT_PERCEPTION))
    perception.insert(0, "cluster", names)
    return PerceptionStudy(items, seeds, perception, membership, digit, names)


# ---------------------------------------------------------------------- data from the model itself
def _coarsened_seeds(z: np.ndarray, seeded: np.ndarray, n_clusters: int, coarsen: float, rng) -> list[tuple[int, int]]:
    """Rows (cluster, item) of the seeded items: each in its own cluster and, with probability
    `coarsen`, also in one other cluster drawn uniformly. The chance of a set {a, b} is the same
    whether z is a or b (coarsening at random), so P(z in S | x) is the exact likelihood."""
    rows = []
    for i in seeded:
        rows.append((int(z[i]), int(i)))
        if n_clusters > 1 and rng.uniform() < coarsen:
            other = rng.choice([k for k in range(n_clusters) if k != z[i]])
            rows.append((int(other), int(i)))
    return sorted(rows)


def model_probabilities(x: np.ndarray, W: np.ndarray, b: np.ndarray, perception: np.ndarray) -> np.ndarray:
    """P(z = k | x) of the perception model (`models.perception.membership_log_probabilities`)."""
    from bayes_wsc.models.perception.model import membership_log_probabilities

    return np.exp(membership_log_probabilities(x, W, b, perception))


@dataclass
class ModelTruth:
    """The parameters that generated `simulate_model`'s data (on the features as simulated)."""

    W: np.ndarray
    b: np.ndarray
    z: np.ndarray

    def standardized(self, data) -> tuple[np.ndarray, np.ndarray]:
        """(W, b) on `data`'s standardized features: x W + b = x_std (scale W) + (b + mean W)."""
        return data.scaling.scale[:, None] * self.W, self.b + data.scaling.mean @ self.W


def simulate_model(
    n_items: int = 1000,
    *,
    n_features: int = 5,
    perception: np.ndarray | None = None,
    seeds_per_cluster: int = 50,
    coarsen: float = 0.1,
    weight_scale: float = 3.0,
    intercept_sd: float = 1.0,
    W: np.ndarray | None = None,
    b: np.ndarray | None = None,
    seed: int | None = 0,
) -> tuple[PerceptionStudy, ModelTruth]:
    """Data from the perception model itself (`bayes_wsc.models.perception.model`), for recovery tests.

    x ~ Normal(0, I); W, b drawn from the model's prior unless given; z_i ~ P(z | x_i); then
    `seeds_per_cluster` items of each cluster are seeds, each also put in one other set with
    probability `coarsen` (coarsening at random). perception defaults to 3 clusters over 3 features
    ([1,1,0], [0,1,1], [1,0,1]: each pair of clusters shares one).
    """
    n_items = _check_whole("n_items", n_items, 10)
    n_features = _check_whole("n_features", n_features, 1)
    seeds_per_cluster = _check_whole("seeds_per_cluster", seeds_per_cluster, 1)
    P = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0]]) if perception is None \
        else np.asarray(perception, dtype=float)
    n_clusters, n_perception = P.shape
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_items, n_features))
    W = rng.normal(0.0, weight_scale / np.sqrt(n_features), (n_features, n_perception)) if W is None else np.asarray(W)
    b = rng.normal(0.0, intercept_sd, n_perception) if b is None else np.asarray(b)
    probs = model_probabilities(x, W, b, P)
    z = np.array([rng.choice(n_clusters, p=p) for p in probs])
    seeded = []
    for k in range(n_clusters):
        members = np.flatnonzero(z == k)
        if members.size == 0:
            raise InputError(f"cluster {k} drew no items; use more items or other parameters")
        seeded += list(rng.choice(members, min(seeds_per_cluster, members.size), replace=False))
    rows = _coarsened_seeds(z, np.sort(seeded), n_clusters, coarsen, rng)
    names = [f"c{k}" for k in range(n_clusters)]
    ids = [f"item{i}" for i in range(n_items)]
    items = pd.DataFrame(x, columns=[f"x{f + 1}" for f in range(n_features)])
    items.insert(0, "id", ids)
    seeds = pd.DataFrame({"cluster": [names[k] for k, _ in rows], "id": [ids[i] for _, i in rows]})
    frame = pd.DataFrame(P, columns=[f"a{j + 1}" for j in range(n_perception)])
    frame.insert(0, "cluster", names)
    membership = np.zeros((n_items, n_clusters), dtype=bool)
    membership[np.arange(n_items), z] = True
    return PerceptionStudy(items, seeds, frame, membership, z, names), ModelTruth(W, b, z)


@dataclass
class MixtureTruth:
    """The parameters that generated `simulate_mixture_model`'s data (on the features as simulated)."""

    A: np.ndarray
    B: np.ndarray
    sd: np.ndarray
    z: np.ndarray
    g: np.ndarray


def simulate_mixture_model(
    n_items: int = 600,
    *,
    n_features: int = 6,
    groups: int = 2,
    perception: np.ndarray | None = None,
    seeds_per_cluster: int = 10,
    shift: float = 2.5,
    seed: int | None = 0,
) -> tuple[PerceptionStudy, MixtureTruth]:
    """Data from the seeded mixture itself (`PerceptionMixture` in `bayes_wsc.models.perception.model`), for recovery tests.

    z_i uniform over the K clusters, g_i uniform over the groups, x_i ~ Normal(A p_k + B_g, diag(sd^2))
    with A's entries ~ Normal(0, shift^2 / q), B's ~ Normal(0, shift^2), sd ~ U(0.5, 1.5);
    `seeds_per_cluster` items of each cluster are its seeds (one set each). perception defaults to
    3 clusters over 3 features, each pair sharing one.
    """
    n_items = _check_whole("n_items", n_items, 10)
    n_features = _check_whole("n_features", n_features, 1)
    groups = _check_whole("groups", groups, 1)
    seeds_per_cluster = _check_whole("seeds_per_cluster", seeds_per_cluster, 1)
    P = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0]]) if perception is None \
        else np.asarray(perception, dtype=float)
    n_clusters, n_perception = P.shape
    rng = np.random.default_rng(seed)
    A = rng.normal(0.0, shift / np.sqrt(n_perception), (n_features, n_perception))
    B = rng.normal(0.0, shift, (groups, n_features))
    sd = rng.uniform(0.5, 1.5, n_features)
    z, g = rng.integers(0, n_clusters, n_items), rng.integers(0, groups, n_items)
    x = P[z] @ A.T + B[g] + sd * rng.standard_normal((n_items, n_features))
    rows = []
    for k in range(n_clusters):
        members = np.flatnonzero(z == k)
        rows += [(k, int(i)) for i in rng.choice(members, min(seeds_per_cluster, members.size), replace=False)]
    names = [f"c{k}" for k in range(n_clusters)]
    ids = [f"item{i}" for i in range(n_items)]
    items = pd.DataFrame(x, columns=[f"x{f + 1}" for f in range(n_features)])
    items.insert(0, "id", ids)
    seeds = pd.DataFrame({"cluster": [names[k] for k, _ in sorted(rows)], "id": [ids[i] for _, i in sorted(rows)]})
    frame = pd.DataFrame(P, columns=[f"a{j + 1}" for j in range(n_perception)])
    frame.insert(0, "cluster", names)
    membership = np.zeros((n_items, n_clusters), dtype=bool)
    membership[np.arange(n_items), z] = True
    return PerceptionStudy(items, seeds, frame, membership, g, names), MixtureTruth(A, B, sd, z, g)


def differs_from_the_fit(study: str) -> str:
    """How a study's items differ from a draw of the perception model's own prior (truth.json's
    `differs_from_the_fit`); `sbc_case` draws W and b from the fit's prior as `--study model` does."""
    if study == "model":
        return ("W and b are one draw from the conditional fit's default prior (weight_scale 3, intercept_sd 1) and "
                "each item's cluster from P(z | x) at them: the conditional model itself; seeds are coarsened at "
                "random (a seed put in one other set with probability 0.1), for which the fit's likelihood is "
                "exact. Nothing else differs; fit with --formulation conditional. `sbc_case` of "
                "bayes_wsc.models.perception.simulate draws from the same prior "
                "for tests/test_truth_coverage_slow.py.")
    return ("the items are a study or a data set, not draws from the perception model: no W or b generated them, so "
            "nothing is drawn from the fit's prior and only pi (each cluster's share of the items) can be compared. "
            "Data drawn from the fit's own prior: --study model, or `sbc_case` of bayes_wsc.models.perception.simulate, "
            "which tests/test_truth_coverage_slow.py fits.")


def example(seed: int | None = 0):
    """Small data of the model: 80 items with 3 features, 3 clusters over 3 perception features, 10
    seeds per cluster (`simulate_model`). The registry's example of the model
    (`registry.ModelSpec.example`), for tests and trials."""
    return simulate_model(80, n_features=3, seeds_per_cluster=10, seed=seed)[0].data()


def sbc_case(
    n_items: int = 60,
    n_features: int = 2,
    *,
    n_seeded: int = 45,
    coarsen: float = 0.2,
    weight_scale: float = 3.0,
    intercept_sd: float = 1.0,
    draws: int = 500,
    tune: int = 500,
    chains: int = 2,
    target_accept: float = 0.8,
    seed: int = 0,
):
    """Simulation-based calibration of `PerceptionClustering` (see `bayes_wsc.sbc`): the small version.

    Fixed: the items' standardized features (x ~ N(0, I)), which `n_seeded` items are seeds, and the
    perception vectors of 3 clusters over 3 features (each pair sharing one). Drawn per simulation
    from the model's own prior: W and b. Then every seeded item draws z_i ~ P(z | x_i) and its set is
    {z_i}, or with probability `coarsen` {z_i, another cluster} (coarsening at random, for which the
    model's likelihood is exact). A simulation in which some cluster gets no seed cannot be a data
    set (the container refuses it) and is redrawn; `redrawn` in the returned case counts them, and
    each one biases the ranks a little, so it should stay 0.

    Ranked: every entry of W and b, and pi (the share of the items in each cluster).
    """
    from bayes_wsc.data.tables import FeatureScaling
    from bayes_wsc.models.perception.data import SeedSets
    from bayes_wsc.models.perception.model import PerceptionClustering
    from bayes_wsc.sbc import SBCCase

    P = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0]])
    rng = np.random.default_rng([seed, 2016])
    x = rng.standard_normal((n_items, n_features))
    x = (x - x.mean(axis=0)) / x.std(axis=0)
    ids = np.array([f"item{i}" for i in range(n_items)])
    names = np.array(["c0", "c1", "c2"])
    seeded = np.sort(rng.choice(n_items, n_seeded, replace=False))
    scaling = FeatureScaling(tuple(f"x{f + 1}" for f in range(n_features)), np.zeros(n_features), np.ones(n_features))

    def make(rows):
        rows = np.asarray(rows, dtype=np.int64).reshape(-1, 2)
        return SeedSets(ids, x, scaling, names, P, np.array(["a1", "a2", "a3"]), rows[:, 1], rows[:, 0])

    template = make([(k, i) for k, i in zip(range(3), seeded[:3])])
    redrawn = {"count": 0}

    def simulate(draw, sim_rng):
        probs = model_probabilities(x, np.asarray(draw["W"]), np.asarray(draw["b"]), P)
        while True:
            z = np.array([sim_rng.choice(3, p=probs[i]) for i in range(n_items)])
            rows = _coarsened_seeds(z, seeded, 3, coarsen, sim_rng)
            if len({k for k, _ in rows}) == 3:
                return make(rows)
            redrawn["count"] += 1

    def estimator(fit_seed):
        return PerceptionClustering(method="nuts", draws=draws, tune=tune, chains=chains, seed=fit_seed,
                                    target_accept=target_accept, weight_scale=weight_scale,
                                    intercept_sd=intercept_sd, progressbar=False)

    quantities = [f"W[{f},{j}]" for f in range(n_features) for j in range(3)] + [f"b[{j}]" for j in range(3)] \
        + [f"pi[{k}]" for k in range(3)]
    case = SBCCase("perception", template, simulate, estimator, quantities,
                   description=f"perception model, {n_items} items ({n_seeded} seeds), {n_features} features, "
                               f"3 clusters over 3 perception features, coarsening {coarsen}")
    case.redrawn = redrawn
    return case
