"""The data a model's graph reads, declared one way.

A model block computes the data-derived values it reads in NumPy, by name, with a function of the data
container and its settings that needs no PyMC (`models.wsc.click_inputs`,
`models.proportions.emission_inputs`, ...), and declares them in the model with `declare`. A model's
`model_data` is the union of those functions, so the values a cached MAP program runs on
(`Estimator.model_inputs`) are computed by the code that builds the graph; whenever a program is built,
the estimator checks that the two agree (`fit_starts._check_model_inputs`). PyMC is imported only when
a model is built.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np


def declare(values: Mapping[str, np.ndarray], dims: Mapping[str, str | tuple[str, ...]] | None = None, *,
            only: Iterable[str] | None = None) -> dict:
    """Each of `values` (or of the names in `only`) as `pm.Data` in the current model, with the dims
    that `dims` gives its name (none otherwise); returns {name: variable}. A name the model already
    holds is returned as it is, after checking that it holds the same value: two blocks may read one
    input, and a variant may declare an input before the package's block that reads it."""
    import pymc as pm

    model = pm.modelcontext(None)
    dims = dims or {}
    declared = {}
    for name in values if only is None else only:
        value = values[name]
        if name in model.named_vars:
            held = model.named_vars[name]
            if not hasattr(held, "get_value"):
                raise ValueError(f"the model already has a variable {name!r} that is not data")
            if not np.array_equal(np.asarray(held.get_value()), np.asarray(value)):
                raise ValueError(f"the model already holds data {name!r} with other values")
            declared[name] = held
        else:
            declared[name] = pm.Data(name, value, dims=dims.get(name))
    return declared
