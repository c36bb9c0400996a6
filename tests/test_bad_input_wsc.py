"""The bad-input matrix of the WSC entry points (issue 6), beyond tests/test_bad_input.py.

API: GroupedCounts.from_frames / from_counts, WSC(...).fit settings, predict,
class_probability, load. CLI: fit wsc, predict, report, summary. Each bad input
is one line naming the problem (an InputError from the API; exit code 2 from
the CLI, no traceback), and nothing is written.
"""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from bayes_wsc import inference
from bayes_wsc.cli import main
from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.estimator import load
from bayes_wsc.models.wsc import WSC


def cli(argv):
    try:
        return main(argv)
    except SystemExit as exit_:
        return exit_.code


def expect_cli_error(capsys, argv, expected, *, no_file=None):
    code = cli([str(a) for a in argv])
    err = capsys.readouterr().err.strip()
    assert code == 2, (code, err)
    assert any(e in err for e in ((expected,) if isinstance(expected, str) else expected)), err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    if no_file is not None:
        assert not no_file.exists()
    return err


@pytest.fixture(scope="module")
def tables():
    rng = np.random.default_rng(0)
    n = 60
    clicks = pd.DataFrame({"group": rng.choice(["a", "b", "c", "d"], n), "bounce": rng.choice(["y", "n"], n),
                           "dwell": rng.integers(1, 4, n), "w": rng.uniform(0.5, 2, n)})
    groups = pd.DataFrame({"group": ["a", "b", "c", "d"], "he": [0.5, -0.2, 1.0, -1.0]})
    return clicks, groups


@pytest.fixture(scope="module")
def fitted(tmp_path_factory, tables):
    """A small MAP fit saved to disk, and the files it came from."""
    path = tmp_path_factory.mktemp("matrix")
    clicks, groups = tables
    clicks.to_csv(path / "clicks.csv", index=False)
    groups.to_csv(path / "groups.csv", index=False)
    data = GroupedCounts.from_frames(clicks, groups, weight_col="w")
    est = WSC(method="map").fit(data)
    est.save(path / "fit.nc")
    return path, est


# ---------------------------------------------------------------------- CLI: fit wsc
def write(path, frame):
    if path.suffix == ".parquet":
        frame.to_parquet(path)
    else:
        frame.to_csv(path, index=False)
    return path


FILE_CASES = {
    "missing file": (lambda p: None, "does not exist"),
    "empty file": (lambda p: p.write_text(""), "is empty"),
    "header only": (lambda p: p.write_text("group,bounce\n"), "has no rows"),
    "binary garbage": (lambda p: p.write_bytes(bytes(range(256)) * 4), ("could not be read", "is not UTF-8 text")),
    # clicks may be a folder of Parquet files (data.stream), groups may not
    "a directory": (lambda p: p.mkdir(), ("is a directory", "holds no Parquet files")),
}


@pytest.mark.parametrize("which", ["clicks", "groups"])
@pytest.mark.parametrize("case", list(FILE_CASES))
def test_fit_unusable_files(fitted, capsys, tmp_path, which, case):
    path, _ = fitted
    make, expected = FILE_CASES[case]
    bad = tmp_path / f"bad_{which}.csv"
    make(bad)
    files = {"clicks": path / "clicks.csv", "groups": path / "groups.csv", which: bad}
    err = expect_cli_error(capsys, ["fit", "wsc", "--clicks", files["clicks"], "--groups", files["groups"],
                                    "--out", tmp_path / "fit.nc"], expected, no_file=tmp_path / "fit.nc")
    assert str(bad) in err


@pytest.mark.parametrize("name, content, expected", [
    ("clicks.parquet", b"group,bounce\na,y\n", "could not be read"),   # text with a Parquet suffix
    ("clicks.nc", b"CDF\x01", "not CSV or Parquet"),
    ("clicks.txt", b"group,bounce\na,y\n", "not CSV or Parquet"),
    ("clicks", b"group,bounce\na,y\n", "not CSV or Parquet"),
])
def test_fit_files_that_are_not_csv_or_parquet(fitted, capsys, tmp_path, name, content, expected):
    path, _ = fitted
    (tmp_path / name).write_bytes(content)
    expect_cli_error(capsys, ["fit", "wsc", "--clicks", tmp_path / name, "--groups", path / "groups.csv",
                              "--out", tmp_path / "fit.nc"], expected, no_file=tmp_path / "fit.nc")


DATA_CASES = {
    # name: (clicks mutation, groups mutation, extra options, expected text)
    "group column named but absent": (None, None, ["--group-col", "site"], "no column 'site'"),
    "weight column absent": (None, None, ["--weight-col", "weight"], "no column 'weight'"),
    "he column named but absent": (None, None, ["--he-col", "score"], "no column 'score'"),
    "he_prob column named but absent": (None, None, ["--he-prob-col", "p"], "no column 'p'"),
    "behavior is the group column": (None, None, ["--behavior", "bounce,group"], "also the group"),
    "behavior is the weight column": (None, None, ["--behavior", "bounce,w", "--weight-col", "w"],
                                      "also the group, weight"),
    "text weight": (lambda c: c.assign(w=["heavy"] + [1.0] * (len(c) - 1)), None, ["--weight-col", "w"],
                    "non-numeric value 'heavy'"),
    "infinite weight": (lambda c: c.assign(w=[np.inf] + [1.0] * (len(c) - 1)), None, ["--weight-col", "w"],
                        "non-finite value inf"),
    "all weights zero": (lambda c: c.assign(w=0.0), None, ["--weight-col", "w"], "no items"),
    "missing click group id": (lambda c: c.assign(group=[None] + list(c.group[1:])), None, [], "missing id"),
    "missing group id in groups": (None, lambda g: g.assign(group=["a", None, "c", "d"]), [], "missing id"),
    "he beyond any logit": (None, lambda g: g.assign(he=[0.5, 250.0, 1.0, 0.0]), [], "not a plausible logit"),
    "negative infinite he": (None, lambda g: g.assign(he=[0.5, -np.inf, 1.0, 0.0]), [], "non-finite value"),
    "he_prob above 1": (None, lambda g: g.drop(columns="he").assign(he_prob=[0.5, 1.5, 0.2, 0.3]), [],
                        "'he_prob' has value 1.5"),
    "he_prob as text": (None, lambda g: g.drop(columns="he").assign(he_prob=["0.5", "?", "0.2", "0.3"]), [],
                        "non-numeric value '?'"),
}


@pytest.mark.parametrize("case", list(DATA_CASES))
def test_fit_bad_data(tables, capsys, tmp_path, case):
    clicks, groups = tables
    mutate_clicks, mutate_groups, extra, expected = DATA_CASES[case]
    c = write(tmp_path / "c.csv", (mutate_clicks or (lambda x: x))(clicks.copy()))
    g = write(tmp_path / "g.csv", (mutate_groups or (lambda x: x))(groups.copy()))
    expect_cli_error(capsys, ["fit", "wsc", "--clicks", c, "--groups", g, "--out", tmp_path / "fit.nc", *extra],
                     expected, no_file=tmp_path / "fit.nc")


SETTING_CASES = {
    "--draws 0": (["--draws", "0"], "expected a positive whole number"),
    "--draws -3": (["--draws", "-3"], "expected a positive whole number"),
    "--draws 1.5": (["--draws", "1.5"], "expected a whole number"),
    "--tune -1": (["--tune", "-1"], "expected a positive whole number"),
    "--chains 0": (["--chains", "0"], "expected a positive whole number"),
    "--target-accept 1": (["--target-accept", "1"], "expected a number in (0, 1)"),
    "--target-accept 0": (["--target-accept", "0"], "expected a positive number"),
    "--target-accept nan": (["--target-accept", "nan"], "expected a positive number"),
    "--wh nan": (["--wh", "nan"], "WH must be >= 0"),
    "--w-concentration inf": (["--w-concentration", "inf"], "expected a positive number"),
    "--w-concentration -1": (["--w-concentration", "-1"], "expected a positive number"),
    "--max-group-weight 0": (["--max-group-weight", "0"], "expected a positive number"),
    "--max-group-weight nan": (["--max-group-weight", "nan"], "expected a positive number"),
    "--max-group-weight lots": (["--max-group-weight", "lots"], "expected a number"),
    "--mu-prior student": (["--mu-prior", "student"], "invalid choice"),
    "--method vi": (["--method", "vi"], "invalid choice"),
    "--backend stan": (["--backend", "stan"], "invalid choice"),
    "--seed x": (["--seed", "x"], "invalid int value"),
    "--seed -1": (["--seed", "-1"], "seed must be None or a whole number >= 0"),
    "he column and he_prob column": (["--he-col", "he", "--he-prob-col", "p"], "not allowed with"),
    "unknown option": (["--chainz", "2"], "unrecognized arguments"),
}


@pytest.mark.parametrize("case", list(SETTING_CASES))
def test_fit_settings_out_of_range(fitted, capsys, tmp_path, case):
    path, _ = fitted
    extra, expected = SETTING_CASES[case]
    expect_cli_error(capsys, ["fit", "wsc", "--clicks", path / "clicks.csv", "--groups", path / "groups.csv",
                              "--out", tmp_path / "fit.nc", *extra], expected, no_file=tmp_path / "fit.nc")


VARIANTS = {
    "not Python": ("group,he\n1 a,2\n", "failed to load: SyntaxError"),
    "raises on import": ("raise RuntimeError('no GPU here')\n", "failed to load: RuntimeError: no GPU here"),
    "no build_model": ("X = 1\n", "defines no build_model"),
    "build_model raises": ("def build_model(data, **settings):\n    return {}['missing']\n",
                           "build_model failed: KeyError"),
    # a variant is not the program: sys.exit() there is a failure of the file, never a quiet exit 0
    "exits on import": ("import sys\nsys.exit(0)\n", "failed to load: it called sys.exit(0)"),
    "build_model exits": ("import sys\ndef build_model(data, **settings):\n    sys.exit()\n",
                          "build_model failed: it called sys.exit(None)"),
    "initial_values exits": ("import sys\nfrom bayes_wsc.models.wsc import build_model\n"
                             "def initial_values(data):\n    raise SystemExit('stop')\n",
                             "initial_values failed: it called sys.exit('stop')"),
}


@pytest.mark.parametrize("case", list(VARIANTS))
def test_fit_bad_model_variant_file(fitted, capsys, tmp_path, case):
    path, _ = fitted
    source, expected = VARIANTS[case]
    (tmp_path / "variant.py").write_text(source)
    expect_cli_error(capsys, ["fit", "wsc", "--clicks", path / "clicks.csv", "--groups", path / "groups.csv",
                              "--model", tmp_path / "variant.py", "--out", tmp_path / "fit.nc"], expected,
                     no_file=tmp_path / "fit.nc")


@pytest.mark.parametrize("name", ["clicks.csv", "variant.txt", "variant"])
def test_fit_model_file_that_is_not_python(fitted, capsys, tmp_path, name):
    """--model given a data file (or any file not ending in .py): one line naming it, before any fit."""
    path, _ = fitted
    (tmp_path / name).write_text((path / "clicks.csv").read_text())
    err = expect_cli_error(capsys, ["fit", "wsc", "--clicks", path / "clicks.csv", "--groups", path / "groups.csv",
                                    "--model", tmp_path / name, "--out", tmp_path / "fit.nc"],
                           "is not a Python file", no_file=tmp_path / "fit.nc")
    assert name in err
    with pytest.raises(InputError, match="is not a Python file"):
        WSC(model_file=tmp_path / name).fit(GroupedCounts.from_frames(*map(pd.read_csv, (path / "clicks.csv",
                                                                                          path / "groups.csv"))))


def test_saving_onto_a_directory_or_under_a_file(fitted, tmp_path):
    """What `fit --out` and `save` do with a path that cannot hold a file (the CLI prints this line)."""
    _, est = fitted
    (tmp_path / "out.nc").mkdir()
    with pytest.raises(InputError, match="cannot write the fit file .*out.nc.*Is a directory"):
        est.save(tmp_path / "out.nc")
    (tmp_path / "plain").write_text("a file")
    with pytest.raises(InputError, match="cannot write the fit file"):
        est.save(tmp_path / "plain" / "fit.nc")
    assert not list(tmp_path.glob(".*.tmp"))


# ---------------------------------------------------------------------- CLI: predict, report, summary
def not_a_fit(tmp_path):
    """Files that `load` must refuse, each with the words of its message."""
    cases = {}
    cases["missing"] = (tmp_path / "missing.nc", "does not exist")
    (tmp_path / "empty.nc").write_bytes(b"")
    cases["empty"] = (tmp_path / "empty.nc", "is not a netCDF fit")
    (tmp_path / "table.csv").write_text("group,he\na,1\n")
    cases["a CSV"] = (tmp_path / "table.csv", "is not a netCDF fit")
    xr.Dataset({"x": ("i", [1.0, 2.0])}).to_netcdf(tmp_path / "other.nc", engine="h5netcdf")
    cases["another netCDF"] = (tmp_path / "other.nc", "is not a bayes_wsc fit")
    return cases


@pytest.mark.parametrize("command", ["predict", "report", "summary"])
def test_commands_refuse_files_that_are_not_fits(fitted, capsys, tmp_path, command):
    path, _ = fitted
    blob = (path / "fit.nc").read_bytes()
    (tmp_path / "truncated.nc").write_bytes(blob[: len(blob) // 2])
    cases = {**not_a_fit(tmp_path), "truncated": (tmp_path / "truncated.nc", "is not a netCDF fit")}
    for target, expected in cases.values():
        extra = {"predict": ["--items", path / "clicks.csv", "--out", tmp_path / "p.csv"],
                 "report": ["--out", tmp_path / "r"], "summary": []}[command]
        expect_cli_error(capsys, [command, target, *extra], expected)
    assert not (tmp_path / "p.csv").exists() and not (tmp_path / "r").exists()


@pytest.mark.parametrize("items, expected", [
    (pd.DataFrame({"group": ["a"], "dwell": [1]}), "no column 'bounce'"),
    (pd.DataFrame({"group": ["a"], "bounce": ["maybe"], "dwell": [1]}), "has level 'maybe'"),
    (pd.DataFrame({"group": ["a"], "bounce": [None], "dwell": [1]}), "'bounce' has a missing value"),
    (pd.DataFrame({"group": ["a"], "bounce": ["y"], "dwell": [7]}), "'dwell' has level '7'"),
])
def test_predict_bad_items(fitted, capsys, tmp_path, items, expected):
    path, _ = fitted
    items.to_csv(tmp_path / "items.csv", index=False)
    expect_cli_error(capsys, ["predict", path / "fit.nc", "--items", tmp_path / "items.csv",
                              "--out", tmp_path / "p.csv"], expected, no_file=tmp_path / "p.csv")


@pytest.mark.parametrize("ci, expected", [("0", "expected a positive number"), ("1", "expected a number in (0, 1)"),
                                          ("1.5", "expected a number in (0, 1)"), ("x", "expected a number")])
def test_predict_ci_out_of_range(fitted, capsys, tmp_path, ci, expected):
    path, _ = fitted
    expect_cli_error(capsys, ["predict", path / "fit.nc", "--items", path / "clicks.csv", "--out",
                              tmp_path / "p.csv", "--ci", ci], expected, no_file=tmp_path / "p.csv")


def test_predict_and_report_unwritable_outputs(fitted, capsys, tmp_path):
    path, _ = fitted
    (tmp_path / "p.csv").mkdir()
    expect_cli_error(capsys, ["predict", path / "fit.nc", "--items", path / "clicks.csv", "--out",
                              tmp_path / "p.csv"], "cannot write")
    (tmp_path / "report").write_text("a file where the report folder should go")
    expect_cli_error(capsys, ["report", path / "fit.nc", "--out", tmp_path / "report"],
                     "cannot write the report folder")
    assert not list(tmp_path.glob(".*.tmp"))


def test_predict_empty_items_file(fitted, capsys, tmp_path):
    path, _ = fitted
    (tmp_path / "items.csv").write_text("group,bounce,dwell\n")
    expect_cli_error(capsys, ["predict", path / "fit.nc", "--items", tmp_path / "items.csv", "--out",
                              tmp_path / "p.csv"], "has no rows", no_file=tmp_path / "p.csv")


# ---------------------------------------------------------------------- API
@pytest.mark.parametrize("setting, value", [
    ("draws", 0), ("draws", -1), ("draws", 1.5), ("draws", "100"), ("draws", True), ("tune", -1),
    ("chains", 0), ("chains", None), ("target_accept", 0), ("target_accept", 1), ("target_accept", "0.9"),
    ("target_accept", float("nan")), ("wh", -1.0), ("wh", float("nan")), ("wh", "lots"), ("wh", None),
    ("w_concentration", 0), ("w_concentration", float("inf")), ("w_concentration", "1"),
    ("w_concentration", True), ("mu_prior", "student"), ("method", "vi"), ("backend", "stan"), ("seed", -1),
    ("seed", "x"), ("seed", 1.5), ("model_file", 5), ("model_settings", {"nu": 3}), ("model_settings", [1]),
])
def test_api_settings_out_of_range_fail_before_fitting(tables, setting, value):
    clicks, groups = tables
    data = GroupedCounts.from_frames(clicks, groups)
    est = WSC(**{"method": "nuts", setting: value})
    with pytest.raises(InputError, match=setting if setting != "w_concentration" else "w_concentration") as err:
        est.fit(data)
    assert "\n" not in str(err.value)
    assert not hasattr(est, "idata_")


def test_api_frames_of_the_wrong_kind(tables):
    clicks, groups = tables
    with pytest.raises(InputError, match="clicks must be a pandas DataFrame, got dict"):
        GroupedCounts.from_frames(clicks.to_dict(), groups)
    with pytest.raises(InputError, match="groups must be a pandas DataFrame, got list"):
        GroupedCounts.from_frames(clicks, [1, 2])
    twice = pd.concat([clicks, clicks[["bounce"]]], axis=1)
    with pytest.raises(InputError, match="more than one column named 'bounce'"):
        GroupedCounts.from_frames(twice, groups)
    with pytest.raises(InputError, match="counts must be numbers"):
        GroupedCounts.from_counts([["1", "x"]], [0.0])
    with pytest.raises(InputError, match="there are 1 group ids but 2 groups"):
        GroupedCounts.from_counts(np.ones((2, 2)), [0.0, 0.0], group_ids=["a"])
    with pytest.raises(InputError, match="bin label 'x' appears more than once"):
        GroupedCounts.from_counts(np.ones((2, 2)), [0.0, 0.0], bin_labels=["x", "x"])
    with pytest.raises(InputError, match="max_group_weight"):
        GroupedCounts.from_counts(np.ones((2, 2)), [0.0, 0.0], max_group_weight="5")


def test_mixed_and_datetime_behavior_levels_are_counted():
    """Levels are matched as text, so 1 and 1.0 in one object column, or dates, count correctly."""
    groups = pd.DataFrame({"group": ["a"], "he": [0.0]})
    mixed = pd.DataFrame({"group": ["a"] * 3, "b": pd.Series([1, 1.0, "x"], dtype=object)})
    data = GroupedCounts.from_frames(mixed, groups)
    assert data.bins.levels == (("1", "1.0", "x"),) and data.counts.tolist() == [[1.0, 1.0, 1.0]]
    dates = pd.DataFrame({"group": ["a"] * 3, "day": pd.to_datetime(["2020-01-02", "2020-01-01", "2020-01-02"])})
    data = GroupedCounts.from_frames(dates, groups)
    assert data.bins.levels == (("2020-01-01", "2020-01-02"),) and data.counts.tolist() == [[1.0, 2.0]]


def test_api_predict_and_class_probability_bad_arguments(fitted):
    _, est = fitted
    items = pd.DataFrame({"group": ["a"], "bounce": ["y"], "dwell": [1]})
    for ci in (0, 1, float("nan"), "0.9", None):
        with pytest.raises(InputError, match="ci must be"):
            est.predict(items, ci=ci)
        with pytest.raises(InputError, match="ci must be"):
            est.class_probability(["a"], ci=ci)
    with pytest.raises(InputError, match="items must be a pandas DataFrame"):
        est.predict(items.to_dict("list"))
    with pytest.raises(InputError, match="unknown group 'zz'"):
        est.class_probability(["zz"])
    empty = est.predict(items.iloc[:0])
    assert len(empty) == 0 and {"prob", "prob_low", "prob_high"} <= set(empty.columns)


def test_api_load_refuses_what_is_not_a_fit(tmp_path):
    for target, expected in not_a_fit(tmp_path).values():
        with pytest.raises(InputError, match=expected):
            load(target)


# ---------------------------------------------------------------------- fits from other versions
def rewrite_attrs(src, dst, change):
    idata = inference.load(src)
    attrs = {k: v for k, v in idata.posterior.attrs.items()}
    change(attrs)
    for group in inference.group_names(idata):
        idata[group].attrs.clear()
        idata[group].attrs.update(attrs)
    inference.save(idata, dst)


def test_fit_from_a_newer_version_with_an_unknown_setting_loads_with_a_warning(fitted, tmp_path, capsys):
    path, est = fitted

    def add_setting(attrs):
        settings = json.loads(attrs["settings"])
        settings["tail_prior"] = "student_t"
        attrs["settings"], attrs["package_version"] = json.dumps(settings), "9.0.0"

    rewrite_attrs(path / "fit.nc", tmp_path / "newer.nc", add_setting)
    with pytest.warns(FitWarning, match=r"written by bayes_wsc 9\.0\.0\) has settings .*'tail_prior'"):
        back = load(tmp_path / "newer.nc")
    items = pd.DataFrame({"group": ["a", "zz"], "bounce": ["y", "n"], "dwell": [1, 3]})
    pd.testing.assert_frame_equal(back.predict(items), est.predict(items))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        assert cli(["summary", str(tmp_path / "newer.nc")]) == 0


@pytest.mark.parametrize("drop, expected", [("behavior_levels", "attribute 'behavior_levels'"),
                                            ("settings", "attribute 'settings'")])
def test_fit_missing_a_required_attribute_says_what(fitted, tmp_path, capsys, drop, expected):
    path, _ = fitted

    def remove(attrs):
        attrs.pop(drop)
        attrs["package_version"] = "9.0.0"

    rewrite_attrs(path / "fit.nc", tmp_path / "stripped.nc", remove)
    with pytest.raises(InputError, match=rf"written by bayes_wsc 9\.0\.0\) lacks {expected}"):
        load(tmp_path / "stripped.nc")
    for command, extra in (("summary", []), ("report", ["--out", tmp_path / "r"]),
                           ("predict", ["--items", path / "clicks.csv", "--out", tmp_path / "p.csv"])):
        expect_cli_error(capsys, [command, tmp_path / "stripped.nc", *extra], expected)


def test_fit_missing_a_required_variable_says_what(fitted, tmp_path):
    path, _ = fitted
    idata = inference.load(path / "fit.nc")
    del idata.posterior["w1"]
    inference.save(idata, tmp_path / "no_w1.nc")
    with pytest.raises(InputError, match="lacks posterior variable 'w1'"):
        load(tmp_path / "no_w1.nc")


def test_fit_of_a_model_this_version_does_not_know(fitted, tmp_path):
    path, _ = fitted
    rewrite_attrs(path / "fit.nc", tmp_path / "future.nc", lambda attrs: attrs.update(model="quantum"))
    with pytest.raises(InputError, match="holds a model 'quantum' that this version does not know"):
        load(tmp_path / "future.nc")


def _weighted_frames(weight: float):
    rng = np.random.default_rng(3)
    clicks = pd.DataFrame({"group": rng.choice(["a", "b", "c", "d"], 200), "x": rng.choice(["p", "q"], 200),
                           "w": weight})
    return clicks, pd.DataFrame({"group": ["a", "b", "c", "d"], "he": [-1.0, -0.3, 0.4, 1.2]})


@pytest.mark.parametrize("how", ["weights", "max_group_weight", "normalized"])
def test_data_that_weigh_almost_nothing_are_said_to(how):
    """Clicks that weigh 1e-300 each, a cap of 1e-300 per group, or weights that sum to one half: the data
    cannot move the posterior from the prior, which the fit says before it starts (a fit of such data gives
    the prior's rho everywhere)."""
    clicks, groups = _weighted_frames({"weights": 1e-300, "max_group_weight": 1.0, "normalized": 1 / 400}[how])
    cap = 1e-300 if how == "max_group_weight" else None
    data = GroupedCounts.from_frames(clicks, groups, weight_col="w", max_group_weight=cap)
    said = WSC().data_messages(data)
    assert any("less than one click" in m and "mostly the prior" in m for m in said), said
    heavy = GroupedCounts.from_frames(clicks.assign(w=1.0), groups, weight_col="w")
    assert not any("less than one click" in m for m in WSC().data_messages(heavy))


def test_a_weight_below_what_floats_hold_is_refused():
    """Weights of 1e-320 (below the smallest normal float) made the fit end in non-finite values after it
    ran; they are refused when the data are built, naming the group."""
    clicks, groups = _weighted_frames(1e-320)
    with pytest.raises(InputError, match="below the smallest the arithmetic holds") as error:
        GroupedCounts.from_frames(clicks, groups, weight_col="w")
    assert "group 'a'" in str(error.value)


def test_api_mistakes_are_one_line_input_errors(tmp_path):
    """What raised TypeError, ValueError or KeyError, or passed without a word, in the API: InputError, one
    line naming the argument."""
    from bayes_wsc.simulate import counts_to_clicks, simulate_wsc

    data, _ = simulate_wsc(n_groups=20, items_per_group=30, n_bins=3, seed=0)
    clicks, groups = counts_to_clicks(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        est = WSC(progressbar=False).fit(data)
    cases = {
        "a column of clicks is named by text, got \\['group'\\]":
            lambda: GroupedCounts.from_frames(clicks, groups, group_col=["group"]),
        "var_names holds 'nope', which is not a variable": lambda: est.summary(var_names=["nope"]),
        "save expects the path of a fit file .* got None": lambda: est.save(None),
        "save expects the path of a fit file .* got a int \\(123\\)": lambda: est.save(123),
        "report expects the path of a report folder .* got None": lambda: est.report(None),
        "seed must be a whole number >= 0, got 'x'": lambda: est.posterior_predictive(seed="x"),
        "draws must be a whole number >= 1, got 0": lambda: est.run_checks(draws=0),
    }
    for words, call in cases.items():
        with pytest.raises(InputError, match=words) as error:
            call()
        assert "\n" not in str(error.value)
    assert list(est.summary(var_names=["rho"]).index) == list(est.summary(var_names="rho").index)
