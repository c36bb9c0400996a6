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
