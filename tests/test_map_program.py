"""The MAP's compiled program and its disk cache: same fit whether built or loaded, and no PyMC
or ArviZ in a command-line MAP that finds its program cached."""

import json
import os
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest

from bayes_wsc import inference, map_program
from bayes_wsc.errors import FitWarning
from bayes_wsc.estimator import load
from bayes_wsc.jax_setup import _date_undated_entries
from bayes_wsc.models.wsc import WSC
from bayes_wsc.simulate import counts_to_clicks, simulate_wsc


@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    """An empty program cache (JAX's own compile cache is process-wide and stays where it is)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def data():
    return simulate_wsc(n_groups=40, items_per_group=30, n_bins=5, seed=21)[0]


def fitted(data, **settings):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        est = WSC(**settings).fit(data)
    return est, inference.get_attrs(est._fitted())["fit_info"]["map"]


def test_a_cached_program_gives_the_same_fit_without_building_the_model(data, cache_home):
    built, built_info = fitted(data)
    assert built_info["compiled_program"] == "built"
    assert len(list((cache_home / "bayes_wsc" / "map_programs").iterdir())) == 1
    cached, cached_info = fitted(data)
    assert cached_info["compiled_program"] == "cache"
    assert cached._model is None  # PyMC's model was not built ...
    assert {rv.name for rv in cached.model_.free_RVs} == {"mu", "mu_loc", "mu_scale", "w0", "w1"}  # ... until asked
    for name in ("rho", "pi", "mu", "w0", "w1", "mu_scale"):
        np.testing.assert_array_equal(cached.idata_.posterior[name].values, built.idata_.posterior[name].values)
        assert cached.idata_.posterior[name].dims == built.idata_.posterior[name].dims
    assert built_info["iterations"] == cached_info["iterations"]
    assert built_info["held_fixed"] == cached_info["held_fixed"]


def test_the_key_follows_structure_not_data_values(data):
    """Data of the same shapes share a program (their values are inputs); anything structural does not."""
    def key(data=data, settings=None, fixed=None, starts=("mu",), laplace=None, name="wsc"):
        coords, values = WSC().model_inputs(data)
        return map_program.cache_key(name, settings or {"wh": 10.0}, coords,
                                     {**values, **(fixed if fixed is not None else {"s": 1.0})}, starts, laplace)

    other = simulate_wsc(n_groups=40, items_per_group=30, n_bins=5, seed=22)[0]
    assert not np.array_equal(other.counts, data.counts)
    assert key() == key(other) == key(fixed={"s": 2.0})
    others = [
        key(simulate_wsc(n_groups=41, items_per_group=30, n_bins=5, seed=21)[0]),
        key(simulate_wsc(n_groups=40, items_per_group=30, n_bins=6, seed=21)[0]),
        key(settings={"wh": 5.0}),
        key(fixed={"t": 1.0}),
        key(fixed={"s": np.ones(2)}),
        key(starts=("mu", "w0")),
        key(laplace={"jacobian": True, "local": ["mu"]}),
        key(name="experts"),
    ]
    assert len({key(), *others}) == 9


def test_a_broken_cache_entry_is_rebuilt_not_fatal(data, cache_home):
    fitted(data, mu_prior="flat")
    (entry,) = (cache_home / "bayes_wsc" / "map_programs").iterdir()
    (entry / "value_and_grad.bin").write_bytes(b"not a program")
    est, info = fitted(data, mu_prior="flat")
    assert info["compiled_program"] == "built" and info["converged"]
    assert fitted(data, mu_prior="flat")[1]["compiled_program"] == "cache"


def test_a_program_loaded_once_is_kept_while_its_folder_exists(data, cache_home):
    """A fit that runs one program several times (restarts, held-out refits) loads it once: `load` gives the
    program this process loaded before, and nothing once its folder is gone."""
    fitted(data, mu_prior="flat")  # built and stored
    (entry,) = (cache_home / "bayes_wsc" / "map_programs").iterdir()
    first = map_program.load(entry.name)
    assert first is not None and first.origin == "cache"
    assert map_program.load(entry.name) is first
    assert fitted(data, mu_prior="flat")[1]["compiled_program"] == "cache"
    shutil.rmtree(entry)
    assert map_program.load(entry.name) is None
    assert fitted(data, mu_prior="flat")[1]["compiled_program"] == "built"


class MyWSC(WSC):
    def build_model(self, data):  # code the cache key cannot see
        return super().build_model(data)


def test_variant_files_and_subclassed_models_are_not_cached(data, cache_home):
    """(checks=False: the aggregation check refits the package's own model, which is cached.)"""
    variant = os.path.join(os.path.dirname(__file__), "..", "models", "product_emissions.py")
    for _ in range(2):
        assert fitted(data, model_file=variant, checks=False)[1]["compiled_program"] == "built"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            est = MyWSC(checks=False).fit(data)
        assert inference.get_attrs(est._fitted())["fit_info"]["map"]["compiled_program"] == "built"
    assert not (cache_home / "bayes_wsc" / "map_programs").exists()


def test_the_cache_is_trimmed_least_recently_used_first(tmp_path):
    for i, name in enumerate(["old", "mid", "new"]):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "blob").write_bytes(b"x" * 100)
        os.utime(folder, (1000 + i, 1000 + i))
    map_program._trim(tmp_path, 250)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mid", "new"]


def test_jax_cache_entries_without_a_last_use_file_get_one(tmp_path):
    """JAX's bounded cache fails every write while one entry lacks its `-atime` file."""
    (tmp_path / "jit_f-abc-cache").write_bytes(b"program")
    (tmp_path / "jit_g-def-cache").write_bytes(b"program")
    (tmp_path / "jit_g-def-atime").write_bytes((5).to_bytes(8, "little"))
    _date_undated_entries(str(tmp_path))
    assert (tmp_path / "jit_f-abc-atime").stat().st_size == 8
    assert (tmp_path / "jit_g-def-atime").read_bytes() == (5).to_bytes(8, "little")


def test_map_summary_reads_as_arviz_labels_it(data, cache_home):
    import arviz_family

    est, _ = fitted(data)
    names = ["rho", "pi", "w0"]
    ours = inference.summary(inference.groups_of(est.idata_), names)
    with warnings.catch_warnings():  # the sd of one draw
        warnings.simplefilter("ignore", RuntimeWarning)
        theirs = arviz_family.summary(est.idata_, names, kind="stats")["mean"]
    assert list(ours.index) == list(theirs.index)
    np.testing.assert_allclose(ours["map"].values, theirs.values)


def test_a_weak_wh_is_reported_whether_the_program_is_built_or_cached(data, cache_home):
    for expected in ("built", "cache"):
        with pytest.warns(FitWarning, match="little weight") as caught:
            est = WSC(wh=0.5).fit(data)
        assert sum("little weight" in str(w.message) for w in caught) == 1
        assert inference.get_attrs(est._fitted())["fit_info"]["map"]["compiled_program"] == expected
        assert any("little weight" in m for m in est.diagnostics_)


CLI_RUN = """
import sys
from bayes_wsc.cli import main
code = main(sys.argv[1:])
print("LOADED", [m for m in ("pymc", "pytensor", "arviz", "scipy.stats") if m in sys.modules])
sys.exit(code)
"""


def test_a_cached_command_line_map_loads_neither_pymc_nor_arviz(data, tmp_path, monkeypatch):
    """The second run is on new data of the same shapes: the program is the first run's. Nor does it
    load scipy.stats (0.8 s), which the fit-time checks do without."""
    new_data = simulate_wsc(n_groups=40, items_per_group=30, n_bins=5, seed=22)[0]
    for run, table in (("first", data), ("second", new_data)):
        clicks, groups = counts_to_clicks(table)
        clicks.to_csv(tmp_path / f"{run}_clicks.csv", index=False)
        groups.to_csv(tmp_path / f"{run}_groups.csv", index=False)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    outputs, fits = [], []
    for run in ("first", "second"):
        out = tmp_path / f"{run}.nc"
        proc = subprocess.run([sys.executable, "-c", CLI_RUN, "fit", "wsc", "--clicks", str(tmp_path / f"{run}_clicks.csv"),
                               "--groups", str(tmp_path / f"{run}_groups.csv"), "--out", str(out)],
                              capture_output=True, text=True, env=env, timeout=600)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""  # no warnings either way
        outputs.append(proc.stdout)
        fits.append(load(out))
    assert "LOADED ['pymc', 'pytensor'" in outputs[0]  # building the program (PyMC 5 also loads ArviZ there)
    assert "LOADED []" in outputs[1]
    info = [json.loads(f.idata_.posterior.attrs["fit_info"])["map"]["compiled_program"] for f in fits]
    assert info == ["built", "cache"]
    # the cached run's fit is the one a program built for the new data gives
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty"))
    built, built_info = fitted(new_data)
    assert built_info["compiled_program"] == "built"
    second = fits[1].idata_
    for name in ("rho", "pi", "mu", "w0", "w1", "mu_scale"):
        np.testing.assert_array_equal(second.posterior[name].values, built.idata_.posterior[name].values)
    np.testing.assert_array_equal(second.posterior["group"].values.astype(str), new_data.group_ids.astype(str))
    np.testing.assert_array_equal(second.observed_data["counts"].values, new_data.counts)
    table = [line for line in outputs[1].splitlines() if line.startswith(("rho", "pi", "w0"))]
    assert table and table != [line for line in outputs[0].splitlines() if line.startswith(("rho", "pi", "w0"))]
