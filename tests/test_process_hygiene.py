"""Issue 25: what a command leaves besides its outputs, and what it prints besides them: temporary
files, caches, a closed pipe, library warnings."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_generated_code_leaves_no_file_in_the_temporary_folder(tmp_path, monkeypatch):
    """PyTensor wrote each generated function's source to a file of its own (about 25 per fit)."""
    import tempfile

    import bayes_wsc.fit  # noqa: F401 - loads PyTensor the way a fit does
    import pytensor
    import pytensor.tensor as pt

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    x = pt.dvector("x")
    double = pytensor.function([x], pt.exp(x) * 2, mode="JAX")
    assert np.allclose(double(np.array([0.0, 1.0])), [2.0, 2 * np.e])
    assert list(tmp_path.iterdir()) == []
