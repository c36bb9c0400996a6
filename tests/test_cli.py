"""The first model's command line end to end: crossed behavior columns, weights, HE as a probability, a
variant file; `--help` without the libraries; outputs onto devices refused. (Every command on every
model's fit file is in test_contract.py.)"""

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayes_wsc.cli import main
from bayes_wsc.estimator import load
from bayes_wsc.simulate import counts_to_clicks, simulate_wsc

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """Files a user would have: crossed behavior columns, per-item weights, HE as a probability."""
    path = tmp_path_factory.mktemp("cli")
    data, _ = simulate_wsc(n_groups=60, items_per_group=30, n_bins=6, seed=9)
    clicks, groups = counts_to_clicks(data)
    level = clicks.pop("behavior").str[1:].astype(int)
    clicks["speed"] = np.where(level > 3, "fast", "slow")
    clicks["depth"] = (level - 1) % 3
    clicks["w"] = 1.0
    clicks.to_csv(path / "clicks.csv", index=False)
    groups.assign(he_prob=1 / (1 + np.exp(-groups.pop("he")))).to_parquet(path / "groups.parquet")
    return path


def test_fit_summary_predict_report(workdir, capsys):
    fit_path = workdir / "fit.nc"
    code = main(["fit", "wsc", "--clicks", str(workdir / "clicks.csv"), "--groups", str(workdir / "groups.parquet"),
                 "--he-prob-col", "he_prob", "--weight-col", "w", "--max-group-weight", "25",
                 "--out", str(fit_path), "--report", str(workdir / "report")])
    out = capsys.readouterr().out
    assert code == 0 and fit_path.exists()
    assert "rho[speed=fast, depth=2]" in out and "Diagnostics" in out
    assert (workdir / "report" / "report.html").exists()

    items = pd.DataFrame({"group": ["g0", "unknown", "g5"], "speed": ["fast", "slow", "slow"],
                          "depth": [2, 0, 1], "note": ["kept", "kept", "kept"]})
    items.to_csv(workdir / "items.csv", index=False)
    assert main(["predict", str(fit_path), "--items", str(workdir / "items.csv"),
                 "--out", str(workdir / "pred.csv"), "--ci", "0.9"]) == 0
    pred = pd.read_csv(workdir / "pred.csv")
    assert list(pred.columns) == ["group", "speed", "depth", "note", "prob", "prob_low", "prob_high"]
    # a MAP fit has no interval: empty cells (it used to write prob_low == prob == prob_high)
    assert pred.prob.between(0, 1).all() and pred.prob_low.isna().all() and pred.prob_high.isna().all()
    est = load(fit_path)
    rho = est.idata_.posterior["rho"].sel(bin="speed=slow, depth=0").values.mean()
    assert pred.prob[1] == pytest.approx(rho)  # unknown group -> population rho

    assert main(["summary", str(fit_path)]) == 0
    assert "model: wsc" in capsys.readouterr().out
    assert main(["report", str(fit_path), "--out", str(workdir / "again")]) == 0
    assert (workdir / "again" / "report.html").exists()


def test_unseen_behavior_level_is_named(workdir, capsys):
    fit_path = workdir / "fit_small.nc"
    assert main(["fit", "wsc", "--clicks", str(workdir / "clicks.csv"), "--groups",
                 str(workdir / "groups.parquet"), "--weight-col", "w", "--out", str(fit_path)]) == 0
    pd.DataFrame({"speed": ["warp"], "depth": [0]}).to_csv(workdir / "odd.csv", index=False)
    capsys.readouterr()
    code = main(["predict", str(fit_path), "--items", str(workdir / "odd.csv"), "--out", str(workdir / "p.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "'speed' has level 'warp'" in err


def test_variant_from_the_command_line(workdir, capsys):
    fit_path = workdir / "fit_variant.nc"
    code = main(["fit", "wsc", "--clicks", str(workdir / "clicks.csv"), "--groups", str(workdir / "groups.parquet"),
                 "--weight-col", "w", "--model", str(ROOT / "models" / "product_emissions.py"),
                 "--out", str(fit_path)])
    assert code == 0
    assert "w1_speed" in load(fit_path).idata_.posterior


def test_help_starts_fast():
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "bayes_wsc.cli", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "demo" in proc.stdout
    assert time.perf_counter() - t0 < 3.0  # lazy imports: no PyMC, JAX or ArviZ on this path
    proc = subprocess.run([sys.executable, "-c", "import sys, bayes_wsc.cli; "
                           "print(sorted(m for m in ('pymc', 'jax', 'arviz', 'pytensor') if m in sys.modules))"],
                          capture_output=True, text=True)
    assert proc.stdout.strip() == "[]"


def test_an_output_onto_a_device_or_a_pipe_is_refused_in_one_line(tmp_path, capsys):
    """As root, `--out /dev/null` renamed a new file onto the device."""
    import os

    fit = tmp_path / "fit.nc"
    fit.write_text("not even a fit: the outputs are checked first")
    os.mkfifo(tmp_path / "pipe")
    for out, words in (("/dev/null", "it is a character device"), (str(tmp_path / "pipe"), "it is a named pipe"),
                       ("/dev/stdout", "it is a link to the file descriptor")):
        assert main(["check", str(fit), "--out", out]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and words in err and "not a regular file" in err, err
    assert Path("/dev/null").is_char_device()


def test_a_logger_outside_loggings_tree_stays_off_stderr():
    """ArviZ logs a one-chain fit's "Shape validation failed" on a logger of its own, outside logging's
    tree: Python's last-resort handler printed it on stderr. Below ERROR nothing reaches stderr, as for
    every other library; the handler is restored after the command."""
    import contextlib
    import io
    import logging

    from bayes_wsc.cli import _LibraryMessages

    outside = logging.Logger("outside")  # as arviz._log: no parent, no handler
    before = logging.lastResort.level
    err = io.StringIO()
    with contextlib.redirect_stderr(err), _LibraryMessages():
        outside.warning("Shape validation failed: input_shape: (1, 10)")
        outside.error("a real failure")
    assert "Shape validation" not in err.getvalue() and "a real failure" in err.getvalue()
    assert logging.lastResort.level == before
