"""Items with numeric features and a label that only some of them carry (seed 003).

One row per item: feature columns (numbers) and a label column in which an
empty cell means "unlabeled". Labels are classes: two (binary, the paper's
Bernoulli) or more (one categorical per cluster). The container validates
once, standardizes every feature (the model's priors are set on that scale)
and keeps the centre and scale, so that new items are put on the same scale
at prediction time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from bayes_wsc.data.tables import (DEFAULT_ID_COL, FeatureScaling, check_scaled_features, feature_columns, float_array,
                                   index_array, optional_id_column, read_ids, require_columns, require_id_column,
                                   require_rows, require_unique, standardize, text_column)
from bayes_wsc.errors import InputError

#: more distinct labels than this look like a continuous outcome, not classes
MAX_CLASSES = 50


def _class_name(value) -> str:
    """A label cell as the text of its class: whole numbers lose their '.0' (pandas reads 0/1 with a
    missing cell as floats), text is kept as written (' 1' is not '1', as behavior levels)."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    return str(value)


def _sorted_classes(names: Sequence[str]) -> tuple[str, ...]:
    """Distinct class names, numerically when every name is a number."""
    uniques = list(dict.fromkeys(names))
    numbers = pd.to_numeric(pd.Series(uniques, dtype=object), errors="coerce")
    if len(uniques) and numbers.notna().all():
        return tuple(uniques[i] for i in np.argsort(numbers.to_numpy(dtype=float), kind="stable"))
    return tuple(sorted(uniques))


@dataclass
class LabeledItems:
    """Standardized features and partly observed class labels.

    Attributes
    ----------
    x : (n, D) features on the standardized scale, (raw - center) / scale.
    y : (n,) class index of each label, -1 where the item is unlabeled.
    features : the D feature column names.
    classes : the C class names (text); for two classes the second is the positive one (y = 1).
    center, scale : (D,) the mean and standard deviation used to standardize.
    item_ids : (n,) item identifiers as text (row numbers when the data have no id column).
    """

    x: np.ndarray
    y: np.ndarray
    features: tuple[str, ...]
    classes: tuple[str, ...]
    center: np.ndarray
    scale: np.ndarray
    item_ids: np.ndarray
    settings: dict = field(default_factory=dict)

    def __post_init__(self):
        self.y = index_array(self.y, "label codes")
        self.features = tuple(str(f) for f in self.features)
        self.classes = tuple(str(c) for c in self.classes)
        self.item_ids = np.asarray(self.item_ids).astype(str)
        self.x, self.center, self.scale = check_scaled_features(self.x, self.features, self.center, self.scale)
        n = self.x.shape[0]
        if self.y.shape != (n,) or self.item_ids.shape != (n,):
            raise InputError(f"{n} items but {self.y.size} labels and {self.item_ids.size} ids")
        if n < 2:
            raise InputError(f"there are {n} items; a mixture needs at least 2")
        if len(self.classes) < 2:
            raise InputError(f"labels need at least two classes, got {list(self.classes)}")
        if len(set(self.classes)) != len(self.classes):
            raise InputError(f"class names repeat: {list(self.classes)}")
        if ((self.y < -1) | (self.y >= len(self.classes))).any():
            raise InputError(f"label codes must be -1 (unlabeled) or 0..{len(self.classes) - 1}")
        require_unique(self.item_ids, "item id")

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        *,
        label_col: str = "y",
        features: Sequence[str] | None = None,
        classes: Sequence | None = None,
        id_col: str | None = DEFAULT_ID_COL,
        what: str = "items",
    ) -> LabeledItems:
        """Validate one row per item; every failure is one line naming the column, row and value.

        features : the feature columns (default: every column but the label and id columns).

        id_col : the items' id column: by default `id` when the table has one, else the rows are
            numbered; None numbers the rows whatever the columns.

        classes : the class names in order (default: the distinct labels, sorted; 0/1 labels give
            the classes 0 and 1 even when only one of them appears). With two classes the second
            is the positive one whose probability `predict` reports as `prob`.
        """
        require_rows(frame, what)
        if len(frame) == 1:
            raise InputError(f"{what} has one row; a mixture needs at least 2 items")
        require_columns(frame, [label_col], what)
        id_col = optional_id_column(frame, id_col)
        require_id_column(frame, id_col, what, label_col, "label")
        features, hint = feature_columns(frame, features, (label_col, id_col), what, role="label or id")
        scaling, x = FeatureScaling.read(frame, features, f"{what} feature", hint=hint)
        y, class_names = read_labels(frame, label_col, what, classes)
        ids = read_ids(frame, id_col, what)
        settings = {"label_col": label_col, "features": features, "id_col": id_col}
        return cls(x, y, features, class_names, scaling.mean, scaling.scale, ids, settings)

    @classmethod
    def from_arrays(
        cls,
        x: np.ndarray,
        y: np.ndarray,
        *,
        features: Sequence[str] | None = None,
        classes: Sequence | None = None,
    ) -> LabeledItems:
        """From a raw (n, D) feature array and labels with NaN (or None) for unlabeled items."""
        x = float_array(x, "features")
        if x.ndim == 1:
            x = x[:, None]
        names = [f"x{j + 1}" for j in range(x.shape[1])] if features is None else list(features)
        if len(names) != x.shape[1]:
            raise InputError(f"{x.shape[1]} feature columns but {len(names)} names")
        if "y" in names:
            raise InputError("a feature may not be named 'y' (the label)")
        if len(y) != x.shape[0]:
            raise InputError(f"{x.shape[0]} items but {len(y)} labels")
        frame = pd.DataFrame(x, columns=names)
        frame["y"] = pd.Series(list(y), dtype=object)
        return cls.from_frame(frame, label_col="y", features=names, classes=classes)

    # ------------------------------------------------------------------ views
    @property
    def n_items(self) -> int:
        return self.x.shape[0]

    @property
    def n_features(self) -> int:
        return self.x.shape[1]

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def labeled(self) -> np.ndarray:
        """(n,) True where the item has a label."""
        return self.y >= 0

    @property
    def n_labeled(self) -> int:
        return int(self.labeled.sum())

    @property
    def onehot(self) -> np.ndarray:
        """(n, C) indicator of each item's class; all zeros for an unlabeled item."""
        out = np.zeros((self.n_items, self.n_classes))
        rows = np.flatnonzero(self.labeled)
        out[rows, self.y[rows]] = 1.0
        return out

    @property
    def x_raw(self) -> np.ndarray:
        """Features on the scale of the data."""
        return self.x * self.scale + self.center

    @property
    def coords(self) -> dict[str, list]:
        return {"item": list(self.item_ids), "feature": list(self.features), "class": list(self.classes)}

    def standardize(self, frame: pd.DataFrame, what: str = "items") -> np.ndarray:
        """The feature columns of new items on the scale of these data (for prediction)."""
        return standardize(frame, self.features, self.center, self.scale, what)

    def with_labels(self, y: np.ndarray) -> LabeledItems:
        """The same items with other label codes (-1 = unlabeled): hiding labels, simulations."""
        return LabeledItems(self.x, y, self.features, self.classes, self.center, self.scale, self.item_ids,
                            dict(self.settings))


# ---------------------------------------------------------------------- helpers
def read_labels(frame: pd.DataFrame, label_col: str, what: str, classes: Sequence | None):
    """Class codes (-1 where the cell is empty) and the class names."""
    raw = frame[label_col]
    missing = raw.isna().to_numpy() | raw.map(lambda v: isinstance(v, str) and v == "").to_numpy(dtype=bool)
    text_column(raw, label_col, f"{what} label")
    blank = raw.map(lambda v: isinstance(v, str) and v != "" and not v.strip()).to_numpy(dtype=bool)
    if blank.any():
        row = int(np.flatnonzero(blank)[0])
        raise InputError(f"{what} label column {label_col!r} has a cell of only spaces {raw.iloc[row]!r} (row "
                         f"{row + 1}): a label is text as written, and only an empty cell means unlabeled")
    names = np.array([""] * len(raw), dtype=object)
    for row in np.flatnonzero(~missing):
        value = raw.iloc[row]
        if isinstance(value, str):  # text as written ('01' is not '1'); a fraction is not a class
            number = pd.to_numeric(value, errors="coerce")
            if np.isfinite(number) and not float(number).is_integer():
                value = float(number)
        if isinstance(value, (float, np.floating)) and not float(value).is_integer():
            raise InputError(f"{what} label column {label_col!r} has value {float(value)!r} (row {row + 1}); "
                             "labels must be classes (whole numbers or text)")
        names[row] = _class_name(value)
    observed = [names[r] for r in np.flatnonzero(~missing)]
    if classes is not None:
        class_names = tuple(_class_name(c) for c in classes)
        if len(class_names) < 2:
            raise InputError(f"give at least two classes, got {list(class_names)}")
        if len(set(class_names)) != len(class_names):
            raise InputError(f"classes repeat: {list(class_names)}")
    else:
        class_names = _sorted_classes(observed)
        if set(class_names) <= {"0", "1"}:
            class_names = ("0", "1")
        elif len(class_names) == 1:
            raise InputError(f"{what} label column {label_col!r} holds only the class {class_names[0]!r}; "
                             "name all the classes (classes=..., or --classes on the command line)")
        elif len(class_names) > MAX_CLASSES:
            raise InputError(f"{what} label column {label_col!r} has {len(class_names)} distinct values (more than "
                             f"{MAX_CLASSES}); labels must be classes, not a continuous outcome")
    codes = pd.Index(list(class_names)).get_indexer(pd.Index(list(names)))
    outside = ~missing & (codes < 0)
    if outside.any():
        row = int(np.flatnonzero(outside)[0])
        raise InputError(f"{what} label column {label_col!r} has value {names[row]!r} (row {row + 1}), "
                         f"which is not one of the classes {list(class_names)}")
    codes = np.where(missing, -1, codes)
    return codes.astype(np.int64), class_names
