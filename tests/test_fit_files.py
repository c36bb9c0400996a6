"""Fit files that read as netCDF but were damaged or edited after they were written.

`corrupted` takes a real small saved fit and makes one damaged copy per kind: an attr dropped, an
attr of a wrong type, NaN or an out-of-range value written into a posterior variable, a group
removed, an unknown model name, a setting out of range. Every read-only command (predict, report,
summary, check, ppc) on each must end as the command line's contract says
(`test_harness.run_case`): one line and exit 2 for a file it cannot use, naming the problem; or,
for a fit with draws where only some draws are damaged, a warning per damaged variable and the
same output as from the fit without those draws.
"""

from __future__ import annotations

import json
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import test_harness as harness
from test_harness import ENTRY_POINTS, Case, Entry, Layout, fit_models, run_case, run_cli

from bayes_wsc import inference, registry
from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.estimator import load

MODELS = registry.NAMES


def new_items(model: str):
    """The table `bayes-wsc predict` reads for a fit of `model`: that of its row in `test_harness.ENTRY_POINTS`
    (made from its entry in `contract_cases.COMMAND_LINES`)."""
    rows = [e for e in ENTRY_POINTS if e.name == "predict" and fit_models(e) == [model]]
    assert rows, f"test_harness.ENTRY_POINTS has no predict row for model {model!r}: add its COMMAND_LINES entry"
    return rows[0].tables["items"]


# ---------------------------------------------------------------------- the generator
def _groups(path: Path) -> inference.Groups:
    idata = inference.load(path)
    return inference.Groups({name: idata[name].copy(deep=True) for name in inference.group_names(idata)})


def _set_attr(groups, name, value):
    for ds in groups.values():
        if value is None:
            ds.attrs.pop(name, None)
        else:
            ds.attrs[name] = value


def _write_into(groups, name, value, draw=0):
    """`value` into the first element of posterior variable `name` at one draw of the first chain."""
    variable = groups["posterior"][name]
    values = variable.transpose("chain", "draw", ...).values.astype(float)
    values[(0, draw) + (0,) * (values.ndim - 2)] = value
    groups["posterior"][name] = (("chain", "draw", *variable.transpose("chain", "draw", ...).dims[2:]), values)


def _cls(model):
    return registry.get(model).estimator_class()


def _bounded(model) -> str:
    return next(iter(_cls(model).bounds))


#: kind -> (damage(groups, model), words of the one-line error)
DAMAGE = {
    "attr dropped": (lambda g, m: _set_attr(g, _cls(m).required_attrs[-1], None), "lacks attribute"),
    "attr of a wrong type": (lambda g, m: _set_attr(g, "data_settings", json.dumps([1, 2])),
                             "attribute 'data_settings' is [1, 2], not a mapping"),
    "NaN in a posterior variable": (lambda g, m: _write_into(g, next(iter(g["posterior"].data_vars)), np.nan),
                                    "cannot produce (NaN) in its only draw"),
    "value out of range": (lambda g, m: _write_into(g, _bounded(m), 1.5 if _cls(m).bounds[_bounded(m)][1] == 1
                                                    else -1.0), "cannot produce (outside ["),
    "no posterior group": (lambda g, m: g.pop("posterior"), "is not a bayes_wsc fit"),
    "no observed_data group": (lambda g, m: g.pop("observed_data"), "observed_data"),
    "unknown model": (lambda g, m: _set_attr(g, "model", "quantum"), "holds a model 'quantum'"),
    "setting out of range": (lambda g, m: _set_attr(g, "settings", json.dumps(
        {**json.loads(g["posterior"].attrs["settings"]), "seed": -3})), "refuses: seed must be"),
}


def corrupted(fit: Path, model: str, kind: str, out: Path) -> Path:
    """A copy of `fit` with one kind of damage (`DAMAGE`), written as a fit is."""
    groups = _groups(fit)
    DAMAGE[kind][0](groups, model)
    inference.save(groups, out)
    return out


# ---------------------------------------------------------------------- the fits
def _fit(model: str, root: Path, extra=()) -> Path:
    """A fit of `model` made by its harness row "fit MODEL" from the clean files."""
    entry = next(e for e in ENTRY_POINTS if e.name == f"fit {model}")
    entry = Entry(entry.name, entry.argv + tuple(extra), entry.tables, entry.outputs, entry.check)
    workdir = Path(tempfile.mkdtemp(dir=root))
    layouts = {name: Layout(t.frame.copy()) for name, t in entry.tables.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code, _ = run_case(entry, layouts, Case("clean", expect="ok"), {}, workdir)
    assert code == 0, model
    return workdir / "out" / "fit.nc"


@pytest.fixture(scope="module")
def map_fits(tmp_path_factory):
    root = tmp_path_factory.mktemp("map_fits")
    return {model: _fit(model, root) for model in MODELS}


@pytest.fixture(scope="module")
def laplace_fits(tmp_path_factory):
    root = tmp_path_factory.mktemp("laplace_fits")
    return {model: _fit(model, root, ("--method", "laplace", "--draws", "12")) for model in ("wsc", "pcmix")}


def commands(fit: Path, items: Path, out: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Every read-only command on `fit`: its argv and its outputs."""
    return {
        "predict": (["predict", str(fit), "--items", str(items), "--out", str(out / "p.csv")],
                    {"out": str(out / "p.csv")}),
        "report": (["report", str(fit), "--out", str(out / "report")], {"out": str(out / "report")}),
        "summary": (["summary", str(fit)], {}),
        "check": (["check", str(fit), "--draws", "12", "--out", str(out / "checks.csv")],
                  {"out": str(out / "checks.csv")}),
        "ppc": (["ppc", str(fit), "--draws", "12", "--out", str(out / "ppc.nc")], {"out": str(out / "ppc.nc")}),
    }


# ---------------------------------------------------------------------- the tests
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("kind", list(DAMAGE))
def test_damaged_fit_is_one_line_for_every_command(map_fits, tmp_path, model, kind):
    """A MAP fit damaged in any way: each read-only command exits 2 with one line naming the file and the
    problem, writes nothing, and leaves the file as it was; `load` raises the same `InputError`."""
    bad = corrupted(map_fits[model], model, kind, tmp_path / "bad.nc")
    before = bad.read_bytes()
    items = Layout(new_items(model).frame).write(tmp_path / "items")
    words = DAMAGE[kind][1]
    with pytest.raises(InputError) as error:
        load(bad)
    assert words in str(error.value) and "\n" not in str(error.value), str(error.value)
    for command, (argv, outputs) in commands(bad, items, tmp_path / "out").items():
        code, stdout, stderr = run_cli(argv)
        lines = stderr.strip().splitlines()
        assert code == 2 and len(lines) == 1 and "Traceback" not in stderr, f"{command}: exit {code}: {stderr}"
        assert words in lines[0] and "bad.nc" in lines[0], f"{command}: {lines[0]}"
        assert harness.nothing_written(outputs), command
    assert bad.read_bytes() == before


def test_a_model_loads_only_its_own_fits(map_fits):
    """`PCMixture.load` of a wsc fit names both models; of its own fit, it is `load`'s estimator."""
    with pytest.raises(InputError, match="holds a 'wsc' fit, not a 'pcmix' one"):
        _cls("pcmix").load(map_fits["wsc"])
    assert type(_cls("pcmix").load(map_fits["pcmix"])) is type(load(map_fits["pcmix"]))
    with pytest.raises(InputError, match="path must be a str or pathlib.Path, got NoneType"):
        inference.load(None)


def test_every_model_declares_bounds_and_groups():
    """What `load` checks is declared for every registered model (so the generator reaches each)."""
    for model in registry.NAMES:
        cls = _cls(model)
        assert cls.bounds and "posterior" in cls.required_groups, model


@pytest.mark.parametrize("model", ["wsc", "pcmix"])
def test_some_damaged_draws_are_left_out_with_a_warning(laplace_fits, tmp_path, model):
    """A fit with draws, NaN in one draw of a posterior variable and a value out of range in another
    draw: each command warns once per variable, and gives what the fit without those two draws gives."""
    fit = laplace_fits[model]
    groups = _groups(fit)
    first = next(iter(groups["posterior"].data_vars))
    _write_into(groups, first, np.nan, draw=2)
    _write_into(groups, _bounded(model), -1.0, draw=5)
    bad = tmp_path / "bad.nc"
    inference.save(groups, bad)
    trimmed = tmp_path / "trimmed.nc"
    keep = [d for d in range(groups["posterior"].sizes["draw"]) if d not in (2, 5)]
    inference.save(inference.select_draws(_groups(fit), np.array(keep)), trimmed)
    with pytest.warns(FitWarning, match="those draws are left out") as seen:
        est = load(bad)
    assert len([w for w in seen if issubclass(w.category, FitWarning)]) == 2
    assert est.idata_.posterior.sizes["draw"] == len(keep)
    items = Layout(new_items(model).frame).write(tmp_path / "items")
    for command, (argv, outputs) in commands(bad, items, tmp_path / "bad_out").items():
        code, stdout, stderr = run_cli(argv)
        assert code == 0 and "Traceback" not in stderr, f"{command}: {stderr}"
        warned = [line for line in stderr.strip().splitlines() if "left out" in line]
        assert len(warned) == 2 and all("bad.nc" in line for line in warned), f"{command}: {stderr}"
        clean_argv, clean_outputs = commands(trimmed, items, tmp_path / f"clean_{command}")[command]
        code, clean_stdout, _ = run_cli(clean_argv)
        assert code == 0
        if command == "summary":
            assert stdout.replace(str(bad), "") == clean_stdout.replace(str(trimmed), "")
        elif command in ("predict", "check"):
            pd.testing.assert_frame_equal(pd.read_csv(outputs["out"]), pd.read_csv(clean_outputs["out"]))
        elif command == "ppc":
            import arviz as az

            a, b = az.from_netcdf(outputs["out"]), az.from_netcdf(clean_outputs["out"])
            for name, values in a.posterior_predictive.data_vars.items():
                np.testing.assert_allclose(values.values, b.posterior_predictive[name].values)
        else:
            assert (Path(outputs["out"]) / "report.html").exists()


@pytest.mark.parametrize("damage", ["NaN he", "negative counts"])
def test_damaged_observed_data_name_the_fit_file_as_damaged(map_fits, tmp_path, damage):
    """NaN in the saved HE, or a negative count: the commands that read the data say the fit file is
    damaged, naming it, in one line."""
    groups = _groups(map_fits["wsc"])
    name = "he" if damage == "NaN he" else "counts"
    values = groups["observed_data"][name].values.astype(float)
    values.flat[0] = np.nan if damage == "NaN he" else -3.0
    groups["observed_data"][name] = (groups["observed_data"][name].dims, values)
    bad = inference.save(groups, tmp_path / "bad.nc")
    with pytest.raises(InputError, match=r"fit file '.*bad.nc' is damaged: the data it holds are refused"):
        load(bad).data_from_fit()
    code, _, stderr = run_cli(["check", str(bad), "--draws", "12"])
    assert code == 2 and len(stderr.strip().splitlines()) == 1 and "bad.nc' is damaged" in stderr, stderr


# ---------------------------------------------------------------------- a fit file never runs code
PLANTED = '''"""A file a fit's attributes may name: importing it leaves a marker."""
from pathlib import Path

Path({marker!r}).write_text("imported")


def build_model(data, mu=None, **settings):
    raise RuntimeError("never built")


CHECKS = (build_model,)
'''


def _naming(fit: Path, planted: Path, out: Path, kind: str) -> Path:
    """A copy of `fit` whose settings name `planted` as its variant file: as a fit written before fits
    stored their variant's facts, with its source (`old`) or without (`bare`), or with facts (`facts`)."""
    groups = _groups(fit)
    settings = json.loads(groups["posterior"].attrs["settings"])
    _set_attr(groups, "settings", json.dumps({**settings, "model_file": str(planted)}))
    if kind == "old":
        _set_attr(groups, "model_source", planted.read_text())
    elif kind == "facts":
        _set_attr(groups, "model_source", planted.read_text())
        _set_attr(groups, "variant", json.dumps({"sha256": "0" * 64, "build_model_takes": ["data", "mu"],
                                                 "checks": None}))
    inference.save(groups, out)
    return out


@pytest.mark.parametrize("kind", ["old", "bare", "facts"])
def test_reading_a_fit_never_imports_the_file_it_names(map_fits, laplace_fits, tmp_path, kind):
    """A fit whose attributes name a Python file (one that leaves a marker when imported): `load` and every
    read-only command read it without importing the file (a wsc Laplace fit asks whether the variant takes
    mu: the fit's stored facts answer, or for an older fit its source, parsed, not run); `check` of a
    variant that declares checks asks for the file by name, and a named file is run only when it is the
    one the fit was made with."""
    import sys

    marker = tmp_path / "marker"
    planted = tmp_path / "planted.py"
    planted.write_text(PLANTED.format(marker=str(marker)))
    fits = {"laplace wsc": laplace_fits["wsc"]}  # the fit whose reading asks the variant a question
    if kind == "old":
        fits.update({f"map {m}": map_fits[m] for m in MODELS})
    for name, fit in fits.items():
        model = name.split()[-1]
        bad = _naming(fit, planted, tmp_path / f"{name.replace(' ', '_')}.nc", kind)
        est = load(bad)
        assert est.model_file == str(planted)
        items = Layout(new_items(model).frame).write(tmp_path / f"items_{model}")
        for command, (argv, _) in commands(bad, items, tmp_path / f"out_{kind}_{name.replace(' ', '_')}").items():
            code, _, stderr = run_cli(argv)
            assert code in (0, 2) and "Traceback" not in stderr, f"{name} {command}: {stderr}"
            if code == 2:
                assert len(stderr.strip().splitlines()) == 1, f"{name} {command}: {stderr}"
            if command == "check" and kind == "old":  # its source declares checks: they need the file named
                assert code == 2 and "--model FILE.py" in stderr, stderr
            assert not marker.exists(), f"{name} {command} imported {planted}"
        assert not any(m.startswith("bayes_wsc_variant_planted") for m in sys.modules)
    code, _, stderr = run_cli(["check", str(bad), "--draws", "12", "--model", str(planted)])
    if kind == "old":  # the very file whose source the fit kept: the user asked for it, so it runs
        assert code == 2 and marker.exists() and "check" in stderr, stderr
    else:  # another file than the fit's, or a default fit: refused before anything is imported
        assert code == 2 and not marker.exists() and len(stderr.strip().splitlines()) == 1, stderr


def test_the_reader_reads_every_model_s_fits_as_xarray_does(map_fits, laplace_fits, tmp_path):
    """`netcdf_reader` (what `load` reads a fit with) against xarray's h5netcdf engine, on MAP fits of every
    model, Laplace fits with and without a saved log-likelihood, and a `ppc` file: the same Datasets."""
    from test_netcdf_reader import assert_same_groups, engine_groups

    from bayes_wsc import netcdf_reader

    code, _, stderr = run_cli(["ppc", str(laplace_fits["pcmix"]), "--draws", "5", "--out", str(tmp_path / "ppc.nc")])
    assert code == 0, stderr
    for path in [*map_fits.values(), *laplace_fits.values(), tmp_path / "ppc.nc"]:
        assert_same_groups(netcdf_reader.read_groups(path), engine_groups(path))


def test_a_log_likelihood_left_in_the_file_is_read_on_first_use(laplace_fits, tmp_path):
    """`load(path, log_likelihood_on_first_use=True)` (the read-only commands') leaves the file's
    log-likelihood in it until something reads it: then the fit is the one `load` gives; saved again, the
    file holds it; and a file changed or removed after the load is a one-line error, not another fit's values."""
    import os
    import shutil

    fit = tmp_path / "fit.nc"
    shutil.copyfile(laplace_fits["pcmix"], fit)
    assert inference.has_group(fit, "log_likelihood")
    eager = load(fit)
    later = load(fit, log_likelihood_on_first_use=True)
    assert "log_likelihood" not in later._groups
    read_later, read_at_once = (inference.groups_of(e.idata_)["log_likelihood"] for e in (later, eager))
    assert read_later.identical(read_at_once)
    assert inference.psis_loo(later._fitted()).elpd_loo == inference.psis_loo(eager._fitted()).elpd_loo
    again = tmp_path / "again.nc"
    load(fit, log_likelihood_on_first_use=True).save(again)
    assert inference.load_group(again, "log_likelihood").identical(inference.load_group(fit, "log_likelihood"))
    changed = load(fit, log_likelihood_on_first_use=True)
    os.utime(fit, ns=(os.stat(fit).st_atime_ns, os.stat(fit).st_mtime_ns + 10**9))
    with pytest.raises(InputError, match=r"fit\.nc'.* changed after it was loaded"):
        changed.idata_
    removed = load(fit, log_likelihood_on_first_use=True)
    fit.unlink()
    with pytest.raises(InputError, match=r"fit\.nc'.* was removed after it was loaded"):
        removed.idata_


def test_a_damaged_log_likelihood_read_on_first_use_leaves_the_same_draws_out(laplace_fits, tmp_path):
    """Draws damaged in the posterior (left out at load) and in the log-likelihood (found on first use): the
    fit read later is the fit read at once, the same draws left out, each damaged variable warned of."""
    groups = _groups(laplace_fits["pcmix"])
    _write_into(groups, next(iter(groups["posterior"].data_vars)), np.nan, draw=2)
    values = groups["log_likelihood"]["items"].values.copy()
    values[0, 7, 0] = np.nan
    groups["log_likelihood"]["items"] = (groups["log_likelihood"]["items"].dims, values)
    bad = inference.save(groups, tmp_path / "bad.nc")
    with pytest.warns(FitWarning) as seen:
        eager = load(bad)
        eager_ll = inference.groups_of(eager.idata_)["log_likelihood"]
    assert len([w for w in seen if "left out" in str(w.message)]) == 2
    with pytest.warns(FitWarning) as seen:
        later = load(bad, log_likelihood_on_first_use=True)
        assert later._groups.posterior.sizes["draw"] == groups["posterior"].sizes["draw"] - 1
        later_ll = inference.groups_of(later.idata_)["log_likelihood"]
    assert len([w for w in seen if "left out" in str(w.message)]) == 2
    assert later_ll.identical(eager_ll)
    assert later._fitted().posterior.equals(eager._fitted().posterior)
    assert later_ll.sizes["draw"] == groups["posterior"].sizes["draw"] - 2
