"""Deliberate configuration of the numerical stack, applied when the package is imported.

PyTensor compiles C code and links it to a BLAS. NumPy wheels from PyPI carry
their OpenBLAS under renamed symbols that PyTensor cannot link, so on such an
install PyTensor warns on first use that it "could not link to a BLAS
installation". A user can do nothing about that warning. PyTensor then calls
BLAS through NumPy's C-API, which reaches the same OpenBLAS; and this
package's models are elementwise (count tables, log-sum-exp), with no large
matrix products. So where NumPy's BLAS is the renamed PyPI build, we set
`blas__ldflags` to empty on purpose, which is exactly PyTensor's fallback,
minus the warning. Any setting of the user's (PYTENSOR_FLAGS, .pytensorrc)
wins; a conda or system BLAS is left to PyTensor's own detection.
"""

from __future__ import annotations

import os
import sys


def _numpy_blas_is_pypi_build() -> bool:
    try:
        import numpy as np

        name = np.__config__.CONFIG["Build Dependencies"]["blas"]["name"]
    except Exception:  # noqa: BLE001 - unknown layouts fall back to PyTensor's detection
        return False
    return str(name).startswith("scipy-openblas")


def _user_configured_blas() -> bool:
    if "blas__ldflags" in os.environ.get("PYTENSOR_FLAGS", ""):
        return True
    rc_files = os.environ.get("PYTENSORRC", os.path.expanduser("~/.pytensorrc")).split(os.pathsep)
    for rc in rc_files:
        try:
            with open(rc) as handle:
                if "ldflags" in handle.read():
                    return True
        except OSError:
            continue
    return False


def configure() -> None:
    """Idempotent; safe whether or not PyTensor has been imported already."""
    if _user_configured_blas() or not _numpy_blas_is_pypi_build():
        return
    if "pytensor" in sys.modules:
        import pytensor

        pytensor.config.blas__ldflags = ""
    else:
        flags = os.environ.get("PYTENSOR_FLAGS", "")
        os.environ["PYTENSOR_FLAGS"] = ",".join(f for f in (flags, "blas__ldflags=") if f)
