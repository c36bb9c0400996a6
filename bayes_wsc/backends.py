"""Which NUTS implementations and arithmetic the package offers.

Free of PyMC and JAX, so that an estimator's settings are checked before
either loads.
"""

from __future__ import annotations

import importlib.util

from bayes_wsc.errors import InputError

NUTS_BACKENDS = ("numpyro", "pymc", "nutpie", "blackjax")
#: arithmetic of the NumPyro sampler; the other backends run PyMC's float64 graph
PRECISIONS = ("float64", "float32")


def default_backend() -> str:
    """NumPyro when it is installed (checked without importing JAX); else PyMC's own NUTS.

    The choice follows the measured ESS per second in benchmarks/RESULTS.md.
    """
    return "numpyro" if importlib.util.find_spec("numpyro") is not None else "pymc"


def check_precision_backend(precision: str | None, backend: str) -> None:
    """Only NumPyro samples in float32; the other backends run PyMC's float64 graph."""
    if precision == "float32" and backend != "numpyro":
        raise InputError(f"precision 'float32' needs the numpyro backend, got backend {backend!r}")
