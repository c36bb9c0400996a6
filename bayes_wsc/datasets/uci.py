"""The UCI data sets that ship with scikit-learn (no download), as a user would hold them.

Two papers' studies use them (seed 002, Sec. 3.2: the experts' constraints; seed 001, Sec. 4: label
proportions), so they live here, below both models.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayes_wsc.errors import InputError


def _bunch(name: str):
    from sklearn import datasets

    loaders = {"breast_cancer": datasets.load_breast_cancer, "wine": datasets.load_wine,
               "iris": datasets.load_iris}
    if name not in loaders:
        raise InputError(f"unknown data set {name!r}; choose one of {sorted(loaders)}")
    return loaders[name]()


def load_uci(name: str) -> tuple[pd.DataFrame, np.ndarray]:
    """A UCI data set bundled with scikit-learn as (items table with `id` and features, true classes).

    breast_cancer: 569 x 30, 2 classes; wine: 178 x 13, 3 classes; iris: 150 x 4, 3 classes.
    """
    bunch = _bunch(name)
    items = pd.DataFrame(bunch.data, columns=[str(c).replace(" ", "_") for c in bunch.feature_names])
    items.insert(0, "id", [f"{name}{i}" for i in range(len(items))])
    return items, np.asarray(bunch.target, dtype=np.int64)


def uci_class_names(name: str) -> np.ndarray:
    """The names of the classes 0, 1, ... of `load_uci(name)`, as scikit-learn gives them (malignant, benign...)."""
    return np.asarray([str(c) for c in _bunch(name).target_names])
