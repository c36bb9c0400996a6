"""Bayesian weakly supervised clustering in PyMC: item-level latent classes from coarse supervision.

The package imports nothing heavy here, so the command line starts at once;
the public API loads on first use:

    from bayes_wsc import GroupedCounts, WSC, load
"""

from bayes_wsc._runtime import configure as _configure

_configure()

__all__ = ["GroupedCounts", "WSC", "compare", "load", "simulate_wsc"]

_LAZY = {
    "GroupedCounts": "bayes_wsc.data.grouped",
    "WSC": "bayes_wsc.models.wsc",
    "load": "bayes_wsc.estimator",
    "compare": "bayes_wsc.estimator",
    "simulate_wsc": "bayes_wsc.simulate",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'bayes_wsc' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
