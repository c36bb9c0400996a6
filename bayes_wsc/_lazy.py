"""Modules imported on first use: a MAP whose compiled program is cached never needs PyMC."""

from __future__ import annotations

import importlib


class LazyModule:
    """Stands for the module `name` and imports it at the first attribute access."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"<lazily imported module {self._name!r}>"


#: a model folder's modules, one per role: never forwarded to its model file (they are imported as modules)
FOLDER_ROLES = frozenset({"data", "model", "checks", "command", "simulate", "report", "baselines"})


def forward(package: str, module: str = "model"):
    """A package's module-level `__getattr__` (PEP 562) answering with the names of `package.module`,
    imported on first use: a model folder (`models/<name>/`) keeps the import path its model file had
    (`from bayes_wsc.models.wsc import WSC`), while importing one of its other modules (the command, at the
    command line's start-up) loads no model."""

    def __getattr__(name: str):
        if name.startswith("__") or name in FOLDER_ROLES:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        try:
            return getattr(importlib.import_module(f"{package}.{module}"), name)
        except AttributeError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None

    return __getattr__
