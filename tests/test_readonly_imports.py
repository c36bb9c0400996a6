"""Read-only commands stay light (issue 26): `summary` and `predict` of a saved fit of every model,
MAP and NUTS, import neither PyMC nor PyTensor, nor ArviZ (4-5 s of plotting stack; `draw_stats`
computes its summary and HDI in NumPy). Each runs in a fresh process, and `sys.modules` says what
was imported."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from bayes_wsc.cli import main

MODELS = ("wsc", "experts", "pcmix", "proportions", "perception")
HEAVY = ("pymc", "pytensor", "arviz")
RUN = """
import sys
from bayes_wsc.cli import main
for argv in (sys.argv[1:3], sys.argv[3:]):
    code = main(argv)
    if code:
        sys.exit(code)
print("LOADED", sorted(m for m in {heavy!r} if m in sys.modules))
""".format(heavy=HEAVY)


def features(n: int, *, with_id: bool = True, label: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(2)
    side = np.arange(n) % 2
    frame = pd.DataFrame({"x1": rng.normal(3 * side, 0.5).round(3), "x2": rng.normal(-side, 0.5).round(3)})
    if label:
        frame["y"] = pd.Series(np.where(np.arange(n) % 3 == 0, side, -1)).astype(object).where(lambda y: y != -1)
    if with_id:
        frame.insert(0, "id", [f"i{k}" for k in range(n)])
    return frame


def write_inputs(folder) -> dict[str, tuple[list[str], str]]:
    """Each model's fit arguments (small data) and the items file its predict reads."""
    rng = np.random.default_rng(1)
    groups = [f"g{i}" for i in range(6)]
    pd.DataFrame({"group": np.repeat(groups, 8), "bounce": rng.choice(["y", "n"], 48)}).to_csv(
        folder / "clicks.csv", index=False)
    pd.DataFrame({"group": groups, "he": [1.0, -0.5, 0.3, -1.2, 0.1, 0.8]}).to_csv(folder / "groups.csv", index=False)
    pd.DataFrame({"group": ["g0", "zz"], "bounce": ["y", "n"]}).to_csv(folder / "new_clicks.csv", index=False)
    features(12).to_csv(folder / "items.csv", index=False)
    features(5).to_csv(folder / "new_items.csv", index=False)
    features(16, with_id=False, label=True).to_csv(folder / "labeled.csv", index=False)
    features(5, with_id=False).to_csv(folder / "new_points.csv", index=False)
    pairs = [(0, 2, 1), (1, 3, 1), (0, 1, 0), (2, 3, 0), (4, 6, 1), (5, 7, 1), (4, 5, 0), (6, 9, 0), (8, 10, 1)]
    pd.DataFrame([(e, f"i{i}", f"i{j}", link) for e in ("e1", "e2") for i, j, link in pairs],
                 columns=["expert", "i", "j", "link"]).to_csv(folder / "constraints.csv", index=False)
    pd.DataFrame({"cluster": ["A", "A", "A", "B", "B", "B"], "id": ["i0", "i2", "i4", "i1", "i3", "i5"]}).to_csv(
        folder / "seeds.csv", index=False)
    pd.DataFrame({"cluster": ["A", "B"], "loop": [1.0, 0.0], "line": [0.0, 1.0]}).to_csv(
        folder / "perception.csv", index=False)
    crack = np.concatenate([np.arange(5) < k for k in range(6)]).astype(int)
    sticks = [f"c{i}" for i in range(6)]
    pd.DataFrame({"group": np.repeat(sticks, 5), "x1": rng.normal(2 * crack, 0.5).round(3),
                  "x2": rng.normal(-crack, 0.5).round(3)}).to_csv(folder / "sticks.csv", index=False)
    pd.DataFrame({"group": sticks, "ok": 1 - np.arange(6) / 5, "crack": np.arange(6) / 5}).to_csv(
        folder / "shares.csv", index=False)
    f = lambda name: str(folder / name)  # noqa: E731
    return {
        "wsc": (["--clicks", f("clicks.csv"), "--groups", f("groups.csv")], f("new_clicks.csv")),
        "experts": (["--items", f("items.csv"), "--constraints", f("constraints.csv"), "--clusters", "2",
                     "--restarts", "2"], f("new_items.csv")),
        "pcmix": (["--items", f("labeled.csv"), "--components", "2", "--lam", "4", "--restarts", "2"],
                  f("new_points.csv")),
        "proportions": (["--items", f("sticks.csv"), "--proportions", f("shares.csv")], f("new_items.csv")),
        "perception": (["--items", f("items.csv"), "--seeds", f("seeds.csv"), "--perception", f("perception.csv"),
                        "--restarts", "1"], f("new_items.csv")),
    }


@pytest.fixture(scope="module")
def fits(tmp_path_factory):
    folder = tmp_path_factory.mktemp("readonly")
    inputs = write_inputs(folder)
    out = {}
    for model in MODELS:
        args, items = inputs[model]
        for method, extra in (("map", []), ("nuts", ["--draws", "20", "--tune", "20", "--chains", "2"])):
            path = folder / f"{model}_{method}.nc"
            assert main(["fit", model, *args, "--method", method, *extra, "--seed", "1", "--no-progress",
                         "--out", str(path)]) == 0
            out[model, method] = (path, items)
    return out


@pytest.mark.parametrize("method", ["map", "nuts"])
@pytest.mark.parametrize("model", MODELS)
def test_summary_and_predict_import_no_pymc_pytensor_or_arviz(fits, model, method, tmp_path):
    path, items = fits[model, method]
    proc = subprocess.run([sys.executable, "-c", RUN, "summary", str(path), "predict", str(path), "--items", items,
                           "--out", str(tmp_path / "pred.csv")],
                          capture_output=True, text=True, env=dict(os.environ), timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert f"model: {model}" in proc.stdout and (tmp_path / "pred.csv").exists()
    assert "LOADED []" in proc.stdout, (f"`summary` or `predict` of a {method} fit of {model} imported "
                                        f"{proc.stdout.split('LOADED')[-1].strip()}")
