"""Items, the user's seed sets and the perception vector of each set (seed 004: feature-level supervision).

Three tables describe the data:

* **items**: one row per item, an id column and numeric feature columns (by
  default every numeric column other than the id). The features are
  standardized (training mean and standard deviation); the same scaling is
  applied to new items at prediction time.
* **seeds**: rows ``cluster, id``: the items the user put together in each of
  her sets (a playlist, an album, a folder). An id may appear under several
  clusters: her clusters may overlap.
* **perception**: rows ``cluster, <perception columns>``: one non-negative
  vector per set saying why its items belong together (the words of a
  playlist's title, an album's tags, 0/1 attributes she ticks).

The container validates once (every failure is a one-line `InputError`
naming the table, column, row and value) and keeps what the models use: the
standardized features, the (K, q) perception matrix, and one entry per
(set, seed item) pair, from which the (n, K) seed indicator follows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from bayes_wsc.data.tables import (MAX_ABS_STANDARDIZED, ItemFeatures, index_array, key_column, numeric_column,
                                   read_items, require_columns, require_rows)
from bayes_wsc.errors import InputError

CLUSTER_COL = "cluster"


@dataclass
class SeedSets(ItemFeatures):
    """Features of n items, K seed sets that may overlap, and their perception vectors.

    Attributes
    ----------
    item_ids, features, scaling : the items (`ItemFeatures`).
    clusters : (K,) the user's cluster names as text, in the order of the perception table.
    perception : (K, q) non-negative perception vector of each cluster.
    perception_names : (q,) the perception columns.
    seed_item, seed_cluster : (S,) the item and the cluster of each (set, seed item) pair.
    settings : how the tables were read (kept in the fit so that it can be rebuilt).
    """

    clusters: np.ndarray
    perception: np.ndarray
    perception_names: np.ndarray
    seed_item: np.ndarray
    seed_cluster: np.ndarray
    settings: dict = field(default_factory=dict)

    def __post_init__(self):
        super().__post_init__()
        self.clusters = np.asarray(self.clusters).astype(str)
        self.perception = np.asarray(self.perception, dtype=float)
        self.perception_names = np.asarray(self.perception_names).astype(str)
        self.seed_item = index_array(self.seed_item, "seed items")
        self.seed_cluster = index_array(self.seed_cluster, "seed clusters")
        n, k = self.item_ids.size, self.clusters.size
        if k < 2:
            raise InputError(f"there are {k} clusters; give seeds and a perception vector for at least 2")
        if len(set(self.clusters)) != k:
            raise InputError(f"cluster names repeat: {list(self.clusters)}")
        if self.perception.ndim != 2 or self.perception.shape[0] != k \
                or self.perception.shape[1] != self.perception_names.size or self.perception.shape[1] == 0:
            raise InputError(f"perception must be a (clusters x perception features) matrix for {k} clusters "
                             f"and {self.perception_names.size} names, got shape {self.perception.shape}")
        if not (np.isfinite(self.perception).all() and (self.perception >= 0).all()):
            raise InputError("perception vectors must be finite and non-negative")
        if (self.perception > MAX_ABS_STANDARDIZED).any():  # refused before the fit, not as its non-finite values
            row, column = np.argwhere(self.perception > MAX_ABS_STANDARDIZED)[0]
            raise InputError(f"perception of cluster {str(self.clusters[row])!r}, column "
                             f"{str(self.perception_names[column])!r}, is {float(self.perception[row, column]):.3g}, "
                             f"beyond the {MAX_ABS_STANDARDIZED:g} the model's arithmetic holds; rescale the perception "
                             "vectors")
        if self.seed_item.shape != self.seed_cluster.shape or self.seed_item.ndim != 1:
            raise InputError("seed_item and seed_cluster must be 1-D arrays of the same length")
        if ((self.seed_item < 0) | (self.seed_item >= n)).any():
            raise InputError("seed_item refers to an item that does not exist")
        if ((self.seed_cluster < 0) | (self.seed_cluster >= k)).any():
            raise InputError("seed_cluster refers to a cluster that does not exist")
        if pd.Index(self.seed_cluster * n + self.seed_item).duplicated().any():
            raise InputError("a seed item appears twice in the same cluster")
        empty = np.flatnonzero(np.bincount(self.seed_cluster, minlength=k) == 0)
        if empty.size:
            raise InputError(f"cluster {self.clusters[empty[0]]!r} has a perception vector but no seeds")

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_frames(
        cls,
        items: pd.DataFrame,
        seeds: pd.DataFrame,
        perception: pd.DataFrame,
        *,
        id_col: str = "id",
        features: Sequence[str] | None = None,
        standardize: bool = True,
    ) -> SeedSets:
        """Validate the three tables; every failure is one line naming the table, column, row, value.

        id_col : the item id column of `items`, and of `seeds` (whose rows are cluster, id_col).
        features : feature columns (default: every numeric column of `items` except `id_col`).
        """
        item_ids, scaling, matrix = read_items(items, id_col, features, standardize)
        clusters, names, vectors = _read_perception(perception)
        seed_item, seed_cluster = _read_seeds(seeds, id_col, pd.Index(item_ids), pd.Index(clusters))
        settings = {"id_col": id_col, "features": list(scaling.names), "standardize": bool(standardize)}
        return cls(item_ids, matrix, scaling, clusters, vectors, names, seed_item, seed_cluster, settings)

    # ------------------------------------------------------------------ views (and `ItemFeatures`')
    @property
    def n_clusters(self) -> int:
        return self.clusters.size

    @property
    def n_perception(self) -> int:
        return self.perception_names.size

    @property
    def n_seeds(self) -> int:
        """(set, seed item) pairs: an item in two sets counts twice."""
        return self.seed_item.size

    @property
    def seed_mask(self) -> np.ndarray:
        """(n, K) True where the item is a seed of the cluster."""
        mask = np.zeros((self.n_items, self.n_clusters), dtype=bool)
        mask[self.seed_item, self.seed_cluster] = True
        return mask

    @property
    def seeded(self) -> np.ndarray:
        """(n,) True where the item is in at least one seed set."""
        return np.bincount(self.seed_item, minlength=self.n_items) > 0

    @property
    def seed_items(self) -> np.ndarray:
        """Indices of the seeded items (sorted, each once)."""
        return np.flatnonzero(self.seeded)

    @property
    def unseeded_items(self) -> np.ndarray:
        return np.flatnonzero(~self.seeded)

    @property
    def n_overlapping_seeds(self) -> int:
        """Items that are seeds of more than one cluster."""
        return int((np.bincount(self.seed_item, minlength=self.n_items) > 1).sum())

    @property
    def seeds_per_cluster(self) -> np.ndarray:
        return np.bincount(self.seed_cluster, minlength=self.n_clusters)

    @property
    def coords(self) -> dict[str, list]:
        return {"item": list(self.item_ids), "feature": self.feature_names, "cluster": list(self.clusters),
                "perception_feature": list(self.perception_names)}

    def seeds_frame(self) -> pd.DataFrame:
        """The seeds as rows cluster, id (the id column named as it was read)."""
        id_col = self.settings.get("id_col", "id")
        return pd.DataFrame({CLUSTER_COL: self.clusters[self.seed_cluster], id_col: self.item_ids[self.seed_item]})

    def perception_frame(self) -> pd.DataFrame:
        frame = pd.DataFrame(self.perception, columns=list(self.perception_names))
        frame.insert(0, CLUSTER_COL, self.clusters)
        return frame


# ---------------------------------------------------------------------- reading
def _read_perception(frame: pd.DataFrame):
    what = "perception"
    require_rows(frame, what)
    require_columns(frame, [CLUSTER_COL], what)
    clusters = key_column(frame, CLUSTER_COL, what)
    repeated = clusters.duplicated()
    if repeated.any():
        row = int(np.flatnonzero(repeated.to_numpy())[0])
        raise InputError(f"{what} has a second vector for cluster {clusters.iloc[row]!r} (row {row + 1}); "
                         "give one row per cluster")
    names = [str(c) for c in frame.columns if c != CLUSTER_COL]
    if not names:
        raise InputError(f"{what} has no perception columns besides {CLUSTER_COL!r}")
    vectors = np.column_stack([numeric_column(frame, c, what, lower=0.0) for c in frame.columns if c != CLUSTER_COL])
    if len(clusters) < 2:
        raise InputError(f"{what} has {len(clusters)} cluster; the user's clusters must be at least 2")
    return clusters.to_numpy(), np.asarray(names), vectors


def _read_seeds(frame: pd.DataFrame, id_col: str, items: pd.Index, clusters: pd.Index):
    what = "seeds"
    require_rows(frame, what)
    require_columns(frame, [CLUSTER_COL, id_col], what)
    names = key_column(frame, CLUSTER_COL, what)
    ids = key_column(frame, id_col, what)
    cluster = clusters.get_indexer(names)
    if (cluster < 0).any():
        row = int(np.flatnonzero(cluster < 0)[0])
        raise InputError(f"{what} column {CLUSTER_COL!r} has cluster {names.iloc[row]!r} (row {row + 1}), "
                         "which has no perception vector")
    item = items.get_indexer(ids)
    if (item < 0).any():
        row = int(np.flatnonzero(item < 0)[0])
        raise InputError(f"{what} column {id_col!r} has item id {ids.iloc[row]!r} (row {row + 1}), "
                         "which is not in items")
    repeated = pd.DataFrame({"c": cluster, "i": item}).duplicated().to_numpy()
    if repeated.any():
        row = int(np.flatnonzero(repeated)[0])
        raise InputError(f"{what} row {row + 1} repeats item {ids.iloc[row]!r} in cluster {names.iloc[row]!r}")
    empty = np.flatnonzero(np.bincount(cluster, minlength=len(clusters)) == 0)
    if empty.size:
        raise InputError(f"perception has a vector for cluster {clusters[empty[0]]!r}, which has no seeds")
    return item.astype(np.int64), cluster.astype(np.int64)
