"""Checks of single values that the estimator, its fit files and the models share.

What kind a value is (`is_count`, `is_labels`...), one `InputError` line when a value is not what is
asked (`check_whole`, `check_path`, `check_finite`), and how a message shows a value (`_described`,
`_shown`). They were the estimator's; they live here, below it, so that the modules that read fit files
and variant files and check model classes use them without importing the estimator. Standard library
only at import (NumPy inside `check_finite`).
"""

from __future__ import annotations

import numbers
from pathlib import Path

from bayes_wsc.errors import InputError
from bayes_wsc.settings import is_real as _is_real, is_whole as _is_whole  # noqa: F401  (one definition each)


def is_count(value) -> bool:
    return _is_whole(value) and value >= 0


def check_whole(name: str, value, lowest: int = 1) -> None:
    """A setting that counts something (draws, restarts): a whole number >= `lowest`, or one line naming it."""
    if not (_is_whole(value) and value >= lowest):
        raise InputError(f"{name} must be a whole number >= {lowest}, got {value!r}")


def is_labels(value) -> bool:
    """Class names: a non-empty list of text or numbers (never booleans or containers)."""
    return (isinstance(value, list) and len(value) > 0
            and all(isinstance(v, (str, numbers.Real)) and not isinstance(v, bool) for v in value))


def _is_mapping(value) -> bool:
    return isinstance(value, dict)


def _is_texts(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def check_finite(posterior: dict) -> None:
    """Refuse a fit whose draws hold NaN or infinity: a number the arithmetic could not hold is
    never saved or reported as a result."""
    import numpy as np

    for name, values in posterior.items():
        values = np.asarray(values)
        if values.dtype.kind in "fc" and not np.isfinite(values).all():
            bad = int((~np.isfinite(values)).sum())
            raise InputError(f"the fit produced {bad} non-finite value{'s' if bad > 1 else ''} of {name!r} "
                             f"(of {values.size}): the data are beyond what the model's arithmetic holds "
                             "(look for extreme values); nothing was saved")


def check_path(path, what: str, kind: str = "a fit file") -> None:
    """A file path (text or a path object), else one line naming what `what` got."""
    import os

    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise InputError(f"{what} expects the path of {kind} (a str or pathlib.Path), got {_described(path)}")


def _described(value) -> str:
    """What a value is, for a message: None, 'a pandas DataFrame', 'a str ('clicks.csv')'..."""
    if value is None:
        return "None"
    kind = type(value)
    module = "" if kind.__module__ == "builtins" else f"{kind.__module__.split('.')[0]} "
    text = f"a {module}{kind.__name__}"
    if isinstance(value, (str, Path, numbers.Number)):
        shown = repr(str(value) if isinstance(value, Path) else value)
        text += f" ({shown[:60]})"
    return text


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
