"""Read-only commands stay light: `summary` and `predict` of a saved fit of every registered model,
MAP and NUTS (the fits `conftest.model_fits` shares with the contract suite), import neither PyMC nor
PyTensor, nor ArviZ (4-5 s of plotting stack; `draw_stats` computes its summary and HDI in NumPy), nor Dask
(xarray imported it for arrays held in memory: `_runtime.without_dask`) nor `scipy.fft` (`draw_stats` pads its
FFTs itself); `summary` of a MAP fit imports no `scipy.special` either (the models' files import it on first
use). Each runs in a fresh process, and `sys.modules` says what was imported."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import model_fits, registry

HEAVY = ("pymc", "pytensor", "arviz", "dask", "scipy.fft")
RUN = """
import sys
from bayes_wsc.cli import main
for argv in (sys.argv[1:3], sys.argv[3:]):
    code = main(argv)
    if code:
        sys.exit(code)
    if argv[0] == "summary":
        print("SUMMARY LOADED", sorted(m for m in ("scipy.special",) if m in sys.modules))
print("LOADED", sorted(m for m in {heavy!r} if sys.modules.get(m) is not None))  # None: marked absent
""".format(heavy=HEAVY)


@pytest.mark.parametrize("method", ["map", "nuts"])
@pytest.mark.parametrize("model", [spec.name for spec in registry.MODELS])
def test_summary_and_predict_import_no_pymc_pytensor_or_arviz(model, method, tmp_path):
    fits = model_fits(model)
    path, items = fits[method].save(tmp_path / "fit.nc"), tmp_path / "items.csv"
    fits.items.to_csv(items, index=False)
    proc = subprocess.run([sys.executable, "-c", RUN, "summary", str(path), "predict", str(path), "--items", str(items),
                           "--out", str(tmp_path / "pred.csv")],
                          capture_output=True, text=True, env=dict(os.environ), timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert f"model: {model}" in proc.stdout and (tmp_path / "pred.csv").exists()
    assert "LOADED []" in proc.stdout.split("SUMMARY LOADED")[-1], (
        f"`summary` or `predict` of a {method} fit of {model} imported {proc.stdout.split('LOADED')[-1].strip()}")
    if method == "map":  # the models' files import scipy.special on first use (0.2 s); a MAP has no chains
        assert "SUMMARY LOADED []" in proc.stdout, f"`summary` of a MAP fit of {model} imported scipy.special"


CHECK = """
import sys
from bayes_wsc.cli import main
code = main(sys.argv[1:])
print("LOADED", sorted(m for m in ("arviz", "matplotlib") if m in sys.modules))
sys.exit(code)
"""


@pytest.mark.parametrize("model", [spec.name for spec in registry.MODELS])
def test_check_of_a_nuts_fit_imports_no_arviz(model, tmp_path):
    """`check` computes LOO's Pareto k in NumPy (`psis.py`): ArviZ and matplotlib stay unloaded. The first
    model's aggregation check refits a MAP, whose program is built with PyMC when none is cached (and PyMC 5
    imports ArviZ): so the check runs twice, and the second run, with the program cached, is the one held."""
    path = model_fits(model)["nuts"].save(tmp_path / "fit.nc")
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", CHECK, "check", str(path)], capture_output=True, text=True,
                              env=dict(os.environ), timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "loo_pareto_k" in proc.stdout
    assert "LOADED []" in proc.stdout, f"`check` of a NUTS fit of {model} imported {proc.stdout.split('LOADED')[-1]}"


REPORT = """
import sys
from bayes_wsc.cli import main
code = main(sys.argv[1:])
print("LOADED", sorted(m for m in ("arviz", "pymc") if m in sys.modules))
sys.exit(code)
"""


@pytest.mark.slow
@pytest.mark.parametrize("model", [spec.name for spec in registry.MODELS])
def test_report_of_a_nuts_fit_imports_no_arviz(model, tmp_path):
    """`report` reads the fit as its groups (`fit_criticism.report`): wrapping it for ArviZ 0.2x imported ArviZ,
    2-3 s of CPU that drew nothing (benchmarks/RESULTS.md, issue 38). Run twice, the second held, as `check`."""
    path = model_fits(model)["nuts"].save(tmp_path / "fit.nc")
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", REPORT, "report", str(path), "--out", str(tmp_path / "report")],
                              capture_output=True, text=True, env=dict(os.environ), timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "report" / "report.html").exists()
    assert "LOADED []" in proc.stdout, f"`report` of a NUTS fit of {model} imported {proc.stdout.split('LOADED')[-1]}"


def test_without_dask_leaves_a_process_that_has_used_xarray_as_it_is():
    """A command run in-process after xarray has looked for Dask (a test, a notebook) must not mark Dask absent:
    xarray caches that Dask is available and would import `dask.base` from the absent package."""
    import sys

    import xarray  # noqa: F401

    from bayes_wsc._runtime import without_dask

    before = sys.modules.get("dask", "not imported")
    without_dask()
    assert sys.modules.get("dask", "not imported") is before
