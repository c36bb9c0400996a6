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

Without a C++ compiler PyTensor warns at import that performance "may be
severely degraded". Not here: MAP and NUTS run on PyMC's JAX graph, and the
few one-shot evaluations use PyTensor's Python linker, so nothing on the
default path compiles C. Where no `g++` is on the PATH we set `cxx` to empty,
PyTensor's documented way to say so, unless the user set it.

PyTensor writes the Python source of every function it generates (each
graph turned into JAX: about 25 for a fit that builds its program or runs
NUTS) to a file of its own in the system's temporary folder, for tracebacks,
and never removes it. `generated_code_in_memory` (applied when `fit` loads
PyTensor) compiles that code from memory instead: nothing is written, and a
traceback through generated code shows its file name without its lines.

ArviZ 0.23 announces its coming refactor once a day when it is first
imported, which PyMC does: a notice a user can do nothing about, filtered
by its message here (this package keeps its ArviZ calls in `inference.py`).

xarray asks whether Dask is installed each time it builds or decodes a variable, and imports `dask.base`
and `dask.array` (0.5-1.2 s, a third of `bayes-wsc summary`) when it is, even for arrays held in memory.
The commands that read a saved fit into memory (`summary`, `predict`, `check`, `ppc`) never use Dask, so
`without_dask` (applied by the command line for them, never on `import bayes_wsc`) marks it absent for
that process, as `import dask` would find it on a machine without it.
"""

from __future__ import annotations

import os
import sys
import warnings


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


def _no_cxx_compiler() -> bool:
    import shutil

    return "cxx" not in os.environ.get("PYTENSOR_FLAGS", "") and shutil.which("g++") is None


def _add_flag(flag: str) -> None:
    flags = os.environ.get("PYTENSOR_FLAGS", "")
    os.environ["PYTENSOR_FLAGS"] = ",".join(f for f in (flags, flag) if f)


def configure() -> None:
    """Idempotent; safe whether or not PyTensor has been imported already."""
    warnings.filterwarnings("ignore", message=r"\s*ArviZ is undergoing a major refactor", category=FutureWarning)
    if "pytensor" not in sys.modules and _no_cxx_compiler():
        _add_flag("cxx=")
    if _user_configured_blas() or not _numpy_blas_is_pypi_build():
        return
    if "pytensor" in sys.modules:
        import pytensor

        pytensor.config.blas__ldflags = ""
    else:
        _add_flag("blas__ldflags=")


def without_dask() -> None:
    """For a process that will not use Dask: xarray and every later `import dask` see it as not installed
    (`sys.modules["dask"] = None`, which `importlib.util.find_spec` answers with None). Does nothing once
    Dask or xarray has been imported: xarray remembers that Dask is available (`module_available` is cached)
    and would then import `dask.base` from the absent package; so a command run in a process that has used
    xarray already (a test, a notebook calling the command line) keeps Dask as it is."""
    if "dask" not in sys.modules and "xarray" not in sys.modules:
        sys.modules["dask"] = None


class _SourceInMemory:
    """Stands for the `NamedTemporaryFile(delete=False)` that `pytensor.link.utils.compile_function_src`
    writes a generated function's source to, only to name it in tracebacks: the source is compiled
    from the string it already holds, so nothing needs to reach the disk."""

    _count = 0

    def __init__(self, *args, **kwargs):
        _SourceInMemory._count += 1
        self.name = f"<pytensor generated code {_SourceInMemory._count}>"

    def write(self, data) -> int:
        return len(data)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return False


def generated_code_in_memory() -> None:
    """Idempotent; PyTensor must be importable. A PyTensor whose `compile_function_src` no longer
    goes through `NamedTemporaryFile` is left as it is."""
    from pytensor.link import utils

    if getattr(utils, "NamedTemporaryFile", None) is not None and "compile_function_src" in vars(utils):
        utils.NamedTemporaryFile = _SourceInMemory
