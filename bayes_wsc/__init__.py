"""Bayesian weakly supervised clustering in PyMC: item-level latent classes from coarse supervision.

The package imports nothing heavy here, so the command line starts at once;
the public API (every registered model's estimator and data container,
`load`, `compare`, `InputError`, `FitWarning`; see `registry.py`) loads on
first use:

    from bayes_wsc import GroupedCounts, WSC, load
"""

from bayes_wsc._moved import install as _install_old_paths
from bayes_wsc._runtime import configure as _configure
from bayes_wsc.registry import public_names as _public_names

_configure()
_install_old_paths()

_LAZY = {**_public_names(), "simulate_wsc": "bayes_wsc.simulate:simulate_wsc"}

__all__ = sorted(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        from bayes_wsc.registry import resolve

        return resolve(_LAZY[name])
    raise AttributeError(f"module 'bayes_wsc' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
