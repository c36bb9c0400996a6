"""Every bad input gets one line naming the problem, exit code 2, no traceback."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from bayes_wsc.cli import main
from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.errors import InputError


@pytest.fixture
def files(tmp_path):
    clicks = pd.DataFrame({"group": ["a", "a", "b", "b", "c"], "bounce": ["y", "n", "n", "n", "y"],
                           "dwell": [1, 2, 2, 1, 1]})
    groups = pd.DataFrame({"group": ["a", "b", "c"], "he": [0.5, -0.2, 1.0]})
    clicks.to_csv(tmp_path / "clicks.csv", index=False)
    groups.to_csv(tmp_path / "groups.csv", index=False)
    return tmp_path, clicks, groups


def cli(argv):
    """Exit code of the command line run in-process (argparse errors raise SystemExit)."""
    try:
        return main(argv)
    except SystemExit as exit_:
        return exit_.code


def run_fit(tmp_path, clicks, groups, *extra):
    clicks_path, groups_path = tmp_path / "c.csv", tmp_path / "g.csv"
    clicks.to_csv(clicks_path, index=False)
    groups.to_csv(groups_path, index=False)
    return cli(["fit", "wsc", "--clicks", str(clicks_path), "--groups", str(groups_path),
                 "--out", str(tmp_path / "fit.nc"), *extra])


CASES = {
    "missing group column": (lambda c, g: (c.drop(columns="group"), g), [], "no column 'group'"),
    "missing he column": (lambda c, g: (c, g.drop(columns="he")), [], "neither an 'he'"),
    "missing named behavior column": (lambda c, g: (c, g), ["--behavior", "bounce,scroll"], "no column 'scroll'"),
    "NaN HE": (lambda c, g: (c, g.assign(he=[0.5, np.nan, 1.0])), [], "'he' has a missing value"),
    "infinite HE": (lambda c, g: (c, g.assign(he=[0.5, np.inf, 1.0])), [], "'he' has a non-finite value"),
    "text HE": (lambda c, g: (c, g.assign(he=["0.5", "high", "1"])), [], "non-numeric value 'high'"),
    "he_prob of 1": (lambda c, g: (c, g.rename(columns={"he": "he_prob"}).assign(he_prob=[0.2, 1.0, 0.5])),
                     [], "'he_prob' has value 1.0"),
    "he_prob of 0": (lambda c, g: (c, g.rename(columns={"he": "he_prob"}).assign(he_prob=[0.0, 0.3, 0.5])),
                     ["--he-prob-col", "he_prob"], "'he_prob' has value 0.0"),
    "item in unknown group": (lambda c, g: (pd.concat([c, c.head(1).assign(group="zz")]), g), [],
                              "group 'zz', which is absent from groups"),
    "duplicate group rows": (lambda c, g: (c, pd.concat([g, g.head(1)])), [], "duplicate row for group 'a'"),
    "negative weight": (lambda c, g: (c.assign(w=[1, 1, -1, 1, 1]), g), ["--weight-col", "w"],
                        "'w' has value -1.0"),
    "NaN weight": (lambda c, g: (c.assign(w=[1, 1, np.nan, 1, 1]), g), ["--weight-col", "w"],
                   "'w' has a missing value"),
    "missing behavior value": (lambda c, g: (c.assign(bounce=["y", None, "n", "n", "y"]), g), [],
                               "behavior column 'bounce' has a missing value"),
    "negative WH": (lambda c, g: (c, g), ["--wh", "-1"], "WH must be >= 0"),
    "WH not a number": (lambda c, g: (c, g), ["--wh", "lots"], "expected a number or 'inf'"),
    "zero concentration": (lambda c, g: (c, g), ["--w-concentration", "0"], "expected a positive number"),
    "flat prior with WH 0": (lambda c, g: (c, g), ["--wh", "0", "--mu-prior", "flat"], "improper posterior"),
    "missing model file": (lambda c, g: (c, g), ["--model", "nowhere.py"], "model file 'nowhere.py' does not exist"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_fit_bad_input(case, files, capsys):
    tmp_path, clicks, groups = files
    mutate, extra, expected = CASES[case]
    bad_clicks, bad_groups = mutate(clicks.copy(), groups.copy())
    assert run_fit(tmp_path, bad_clicks, bad_groups, *extra) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err
    assert len(err.splitlines()) == 1, err
    assert not (tmp_path / "fit.nc").exists()


@pytest.mark.parametrize(
    "write, expected",
    [
        (lambda p: None, "does not exist"),
        (lambda p: p.write_text(""), "is empty"),
        (lambda p: p.write_text("group,he\n"), "has no rows"),
        (lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary"), "is not UTF-8 text"),
    ],
)
def test_unreadable_groups_file(files, capsys, write, expected):
    tmp_path, _, _ = files
    bad = tmp_path / "bad.csv"
    write(bad)
    code = cli(["fit", "wsc", "--clicks", str(tmp_path / "clicks.csv"), "--groups", str(bad),
                 "--out", str(tmp_path / "fit.nc")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and expected in err and str(bad) in err and len(err.splitlines()) == 1


def test_not_csv_or_parquet(files, capsys):
    tmp_path, _, _ = files
    (tmp_path / "clicks.json").write_text("{}")
    code = cli(["fit", "wsc", "--clicks", str(tmp_path / "clicks.json"), "--groups",
                 str(tmp_path / "groups.csv"), "--out", str(tmp_path / "fit.nc")])
    assert code == 2 and "not CSV or Parquet" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["summary", "report", "predict"])
def test_fit_file_that_is_not_a_fit(files, capsys, command):
    tmp_path, _, _ = files
    extra = {"summary": [], "report": ["--out", str(tmp_path / "r")],
             "predict": ["--items", str(tmp_path / "clicks.csv"), "--out", str(tmp_path / "p.csv")]}[command]
    for target, expected in ((tmp_path / "groups.csv", "is not a netCDF fit"),
                             (tmp_path / "missing.nc", "does not exist")):
        code = cli([command, str(target), *extra])
        err = capsys.readouterr().err.strip()
        assert code == 2 and expected in err and len(err.splitlines()) == 1


def test_no_traceback_from_a_real_process(files):
    tmp_path, clicks, groups = files
    proc = subprocess.run([sys.executable, "-m", "bayes_wsc.cli", "fit", "wsc", "--clicks",
                           str(tmp_path / "clicks.csv"), "--groups", str(tmp_path / "nothing.csv"),
                           "--out", str(tmp_path / "fit.nc")], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr
    assert "nothing.csv" in proc.stderr


def test_api_validation_names_the_field():
    counts = np.ones((3, 2))
    with pytest.raises(InputError, match="he has 2 values but there are 3 groups"):
        GroupedCounts.from_counts(counts, he=np.zeros(2))
    with pytest.raises(InputError, match="non-negative"):
        GroupedCounts.from_counts(-counts, he=np.zeros(3))
    with pytest.raises(InputError, match="group id '1' appears more than once"):
        GroupedCounts.from_counts(counts, he=np.zeros(3), group_ids=[1, 1, 2])
    with pytest.raises(InputError, match="no items"):
        GroupedCounts.from_counts(np.zeros((3, 2)), he=np.zeros(3))
    with pytest.raises(InputError, match="max_group_weight"):
        GroupedCounts.from_counts(counts, he=np.zeros(3), max_group_weight=-5)


ESTIMATORS = {
    "WSC": ("bayes_wsc.models.wsc", "WSC", {}, "GroupedCounts"),
    "NoisyExperts": ("bayes_wsc.models.experts", "NoisyExperts", {"n_clusters": 2}, "PairwiseConstraints"),
    "PCMixture": ("bayes_wsc.models.pcmix", "PCMixture", {"components": 2, "lam": 1.0}, "LabeledItems"),
    "ProportionsClassifier": ("bayes_wsc.models.proportions", "ProportionsClassifier", {}, "LabelProportions"),
    "PerceptionClustering": ("bayes_wsc.models.perception", "PerceptionClustering", {}, "SeedSets"),
}


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_api_fit_and_load_of_the_wrong_thing(name, files):
    """fit(None), fit(a DataFrame), fit(another model's data) and load(None) of every model: one line
    naming what was expected and what was given, before any work."""
    import importlib

    from bayes_wsc import load

    module, cls_name, settings, container = ESTIMATORS[name]
    cls = getattr(importlib.import_module(module), cls_name)
    _, clicks, groups = files
    other = GroupedCounts.from_frames(clicks, groups) if name != "WSC" else None
    for given, words in ((None, "got None"), (clicks, "got a pandas DataFrame"), ("clicks.csv", "got a str"),
                         *([(other, "got a bayes_wsc GroupedCounts")] if other is not None else [])):
        with pytest.raises(InputError, match=f"{cls_name}.fit expects {container} .*{words}") as error:
            cls(**settings).fit(given)
        assert "\n" not in str(error.value) and f"{container}.from_" in str(error.value)
    for given, words in ((None, "got None"), (clicks, "got a pandas DataFrame"), (3, "got a int")):
        with pytest.raises(InputError, match=f"expects the path of a fit file .*{words}"):
            cls.load(given)
        with pytest.raises(InputError, match=f"expects the path of a fit file .*{words}"):
            load(given)
