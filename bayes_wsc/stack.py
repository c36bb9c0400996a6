"""The two dependency families the package runs on, and the one place outside `inference.py` (ArviZ's
seam) that knows which one is installed.

pyproject.toml pairs them by Python version: Python 3.11 gets PyMC 5, PyTensor 2 and ArviZ 0.2x;
Python 3.12 and newer get PyMC 6, PyTensor 3 and ArviZ 1. Where a PyTensor or PyMC spelling changed
between them and no spelling serves both, the difference is bridged here, once; every other module
uses the spelling both families accept (`pytensor.graph.replace.graph_replace`, say). Versions are read
from the installed packages' metadata, so asking costs no import.
"""

from __future__ import annotations

import functools


@functools.cache
def major(distribution: str) -> int:
    """The installed major version of a distribution (`pytensor`, `pymc`, `arviz`)."""
    from importlib.metadata import version

    return int(version(distribution).split(".")[0])


def infer_shape(shapes_of):
    """An Op's `infer_shape` method from `shapes_of(node, input_shapes)`, in the signature the installed
    PyTensor calls: `(node, shapes)` from PyTensor 3 on, `(fgraph, node, shapes)` before (PyTensor 3
    still calls the old one, with a DeprecationWarning)."""
    if major("pytensor") >= 3:
        def method(self, node, shapes):
            return shapes_of(node, shapes)
    else:
        def method(self, fgraph, node, shapes):
            return shapes_of(node, shapes)
    return method
