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


def run(argv, *, env=None, stdout=subprocess.PIPE):
    """`bayes-wsc argv` in a process of its own, as a user runs it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "bayes_wsc.cli", *map(str, argv)], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


@pytest.fixture(scope="module")
def fit_file(tmp_path_factory):
    """A small MAP fit of the first model, saved."""
    from bayes_wsc.models.wsc import WSC
    from bayes_wsc.simulate import simulate_wsc

    data, _ = simulate_wsc(n_groups=12, items_per_group=10, n_bins=3, seed=5)
    path = tmp_path_factory.mktemp("hygiene") / "fit.nc"
    WSC(seed=1, checks=False).fit(data).save(path)
    return path


def test_a_closed_pipe_ends_the_output_quietly(fit_file):
    """`bayes-wsc summary FIT.nc | head -1` ended in 'error: cannot use: Broken pipe' and exit 2."""
    for argv in (["--help"], ["summary", fit_file]):
        read, write = os.pipe()
        os.close(read)  # the reader is gone before the first line
        try:
            proc = run(argv, stdout=write)
        finally:
            os.close(write)
        assert proc.returncode == 0 and proc.stderr == "", (argv, proc.stderr)


def test_a_cache_folder_that_cannot_be_written_is_a_note_not_an_error(fit_file, tmp_path):
    """ArviZ failed to import ('cannot use .../arviz') after the data were read."""
    (tmp_path / "file").write_text("not a folder")
    unwritable = tmp_path / "file" / "cache"
    proc = run(["summary", fit_file], env={"XDG_CACHE_HOME": str(unwritable), "TMPDIR": str(tmp_path)})
    assert proc.returncode == 0 and "model: wsc" in proc.stdout, proc.stderr
    note, = proc.stderr.strip().splitlines()
    assert note.startswith(f"bayes-wsc: note: the cache folder {str(unwritable)!r} cannot be written (Not a directory)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]  # the temporary cache is removed


NOISY_COMMAND = """
import logging, sys, warnings
from bayes_wsc import cli
from bayes_wsc.errors import FitWarning, InputError

def noisy(args):
    # a library that sets up its own logging when nothing else has, as PyMC and PyTensor do at import
    chatty = logging.getLogger("somelib")
    if not logging.root.handlers:
        chatty.setLevel(logging.INFO)
        chatty.addHandler(logging.StreamHandler())
    chatty.info("Initializing NUTS using adapt_diag...")
    logging.getLogger("pymc").warning("Only 30 samples per chain.")
    warnings.warn("ArviZ is changing", FutureWarning)
    warnings.warn("os.fork() was called", RuntimeWarning)
    warnings.warn("the chains disagree:\\n  R-hat of rho is 1.05", FitWarning)
    if args.fit.endswith("bad.nc"):
        raise InputError("fit file 'bad.nc' is not a netCDF fit")
    print("done")

cli.COMMANDS["summary"] = noisy
sys.exit(cli.main(["summary", sys.argv[1]]))
"""


@pytest.mark.parametrize("fit, code, lines", [
    ("good.nc", 0, ["bayes-wsc: warning: the chains disagree: R-hat of rho is 1.05"]),
    ("bad.nc", 2, ["bayes-wsc: warning: the chains disagree: R-hat of rho is 1.05",
                   "bayes-wsc: error: fit file 'bad.nc' is not a netCDF fit"]),
])
def test_library_warnings_stay_off_stderr_and_the_packages_own_are_one_line(tmp_path, fit, code, lines):
    (tmp_path / fit).write_text("x")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONWARNINGS", None)
    proc = subprocess.run([sys.executable, "-c", NOISY_COMMAND, fit], capture_output=True, text=True, env=env,
                          cwd=tmp_path)
    assert proc.returncode == code and proc.stderr.splitlines() == lines, proc.stderr
    # asked for, Python's warnings are all shown
    proc = subprocess.run([sys.executable, "-W", "default", "-c", NOISY_COMMAND, fit], capture_output=True, text=True,
                          env=env, cwd=tmp_path)
    assert "FutureWarning: ArviZ is changing" in proc.stderr and "RuntimeWarning" in proc.stderr
