"""Typed inputs: every cell is read as the user wrote it, parsed by its column's role, or refused.

Each test is one of the silent wrong answers that reading through pandas' type guessing gave
(a feature dropped for one bad cell, levels '1' and '01' merged, classes named 'None' or 'NA'
read as unlabeled, True taken as a number); each now gives the right answer or one line.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayes_wsc.cli import main as cli
from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.data.labeled import LabeledItems
from bayes_wsc.data.pairwise import PairwiseConstraints
from bayes_wsc.data.proportions import LabelProportions
from bayes_wsc.data.seeded import SeedSets
from bayes_wsc.data.tables import read_table
from bayes_wsc.errors import InputError
from strategies import PARQUET_NOT_NUMBERS as PARQUET_KINDS
from strategies import parquet_column

BAD_FEATURE_CELLS = ["n.a.", "abc", "1,5", "--", "True", "NA", "None"]


def _write(path, text: str):
    path.write_text(text)
    return path


def _feature_rows(n=8, extra=""):
    rng = np.random.default_rng(0)
    return [f"i{k},{rng.normal():.3f},{rng.normal():.3f}{extra}" for k in range(n)]


@pytest.mark.parametrize("cell", BAD_FEATURE_CELLS)
def test_one_bad_cell_never_drops_a_feature(tmp_path, cell):
    """A feature column taken by default, with one cell that is not a number: an error naming the
    column, the row and the cell as written, in every model that reads features."""
    rows = _feature_rows()
    rows[2] = rows[2].rsplit(",", 1)[0] + "," + (f'"{cell}"' if "," in cell else cell)
    items = read_table(_write(tmp_path / "items.csv", "id,x1,x2\n" + "\n".join(rows) + "\n"), "items")
    expected = f"column 'x2' has a non-numeric value {cell!r} (row 3)"
    readers = {
        "perception": lambda: SeedSets.from_frames(
            items, pd.DataFrame({"cluster": ["A", "B"], "id": ["i0", "i1"]}),
            pd.DataFrame({"cluster": ["A", "B"], "p": [1.0, 0.0]})),
        "experts": lambda: PairwiseConstraints.from_frames(
            items, pd.DataFrame({"expert": ["e"], "i": ["i0"], "j": ["i1"], "link": [1]})),
        "pcmix": lambda: LabeledItems.from_frame(items.assign(y=["0", "1"] + [None] * 6), id_col="id"),
        "proportions": lambda: LabelProportions.from_frames(
            items.assign(group=["g0"] * 4 + ["g1"] * 4), pd.DataFrame({"group": ["g0", "g1"], "a": [0.25, 0.75],
                                                                       "b": [0.75, 0.25]}), id_col="id"),
    }
    for model, read in readers.items():
        with pytest.raises(InputError) as err:
            read()
        message = str(err.value)
        assert expected in message and "--features" in message and "\n" not in message, (model, message)


def test_a_text_column_in_a_dataframe_is_refused_by_name():
    """The Python API too: a column of mixed numbers and text is not left out of the features."""
    frame = pd.DataFrame({"id": ["a", "b", "c"], "x1": [1.0, 2.0, 0.5], "x2": [1.0, "abc", 3.0]})
    with pytest.raises(InputError, match=r"'x2' has a non-numeric value 'abc' \(row 2\)"):
        PairwiseConstraints.from_frames(frame, pd.DataFrame({"expert": ["e"], "i": ["a"], "j": ["b"], "link": [1]}))


def test_levels_that_look_like_numbers_stay_apart(tmp_path):
    """Behavior levels '1' and '01' are two bins, in the first model and in categorical proportions."""
    clicks = read_table(_write(tmp_path / "clicks.csv", "group,b\n" + "\n".join(
        f"g{k % 3},{level}" for k, level in enumerate(["1", "01", "2"] * 6)) + "\n"), "clicks")
    groups = pd.DataFrame({"group": ["g0", "g1", "g2"], "he": [0.5, -0.5, 0.0]})
    data = GroupedCounts.from_frames(clicks, groups)
    assert data.bins.labels == ["1", "01", "2"] and data.counts.sum(axis=0).tolist() == [6, 6, 6]
    items = clicks.assign(id=[f"i{k}" for k in range(len(clicks))])
    shares = pd.DataFrame({"group": ["g0", "g1", "g2"], "a": [0.5, 0.5, 0.5], "c": [0.5, 0.5, 0.5]})
    bins = LabelProportions.from_frames(items, shares, id_col="id", categorical=True).bins
    assert bins.labels == ["1", "01", "2"]


def test_predict_keeps_a_level_that_looks_like_another(tmp_path, capsys):
    """A fit of the first model on levels 1, 01 and 2: predict gives '01' its own probability and writes
    every input cell back as it was written."""
    rng = np.random.default_rng(1)
    rows, he = [], []
    for g in range(30):
        share = 1 / (1 + np.exp(-rng.normal(0, 1.5)))
        z = rng.random(40) < share
        level = np.where(z, rng.choice(["1", "01", "2"], 40, p=[0.7, 0.1, 0.2]),
                         rng.choice(["1", "01", "2"], 40, p=[0.1, 0.7, 0.2]))
        rows += [f"g{g},{lv}" for lv in level]
        he.append(f"g{g},{np.log(share / (1 - share)) + rng.normal(0, 0.3):.3f}")
    _write(tmp_path / "clicks.csv", "group,b\n" + "\n".join(rows) + "\n")
    _write(tmp_path / "groups.csv", "group,he\n" + "\n".join(he) + "\n")
    assert cli(["fit", "wsc", "--clicks", str(tmp_path / "clicks.csv"), "--groups", str(tmp_path / "groups.csv"),
                "--out", str(tmp_path / "fit.nc")]) == 0
    _write(tmp_path / "new.csv", "b,note\n1,x\n01,NA\n2,\n")
    assert cli(["predict", str(tmp_path / "fit.nc"), "--items", str(tmp_path / "new.csv"),
                "--out", str(tmp_path / "pred.csv")]) == 0
    capsys.readouterr()
    out = pd.read_csv(tmp_path / "pred.csv", dtype=str, keep_default_na=False)
    assert out["b"].tolist() == ["1", "01", "2"] and out["note"].tolist() == ["x", "NA", ""]
    prob = out["prob"].astype(float)
    assert prob[0] > 0.7 and prob[1] < 0.3, prob.tolist()


def test_class_names_are_text_as_written(tmp_path):
    """Classes named None, NA or null are classes; '001' stays '001'; '01' and '1' are two classes;
    only an empty cell is unlabeled."""
    rows = _feature_rows(12)
    labels = ["None", "Mild", "Severe", "NA", "null", "", "None", "Mild", "Severe", "", "", ""]
    text = "id,x1,x2,y\n" + "\n".join(f"{r},{y}" for r, y in zip(rows, labels)) + "\n"
    items = read_table(_write(tmp_path / "items.csv", text), "items")
    with pytest.raises(InputError, match=r"has value 'NA' \(row 4\), which is not one of the classes"):
        LabeledItems.from_frame(items, id_col="id", classes=["None", "Mild", "Severe"])
    data = LabeledItems.from_frame(items, id_col="id", classes=["None", "Mild", "Severe", "NA", "null"])
    assert data.n_labeled == 8 and data.classes == ("None", "Mild", "Severe", "NA", "null")
    for labels, classes in ((["001", "002"], ("001", "002")), (["01", "1"], ("01", "1"))):
        text = "x1,x2,y\n" + "\n".join(f"{k},{k % 3},{labels[k % 2]}" for k in range(6)) + "\n"
        data = LabeledItems.from_frame(read_table(_write(tmp_path / "l.csv", text), "items"))
        assert data.classes == classes and data.n_labeled == 6


def test_pcmix_labels_are_text_as_written(tmp_path, capsys):
    """A label ' 1' is its own class, not '1' (as behavior levels '3' and '3 ' stay apart); a cell of spaces
    is not unlabeled but an error naming its row; every non-empty cell is a label."""
    rows = _feature_rows(12)
    labels = ["1", " 1", "0", "1", "0", " 1", "", "0", "1", "0", "", "1"]
    text = "id,x1,x2,y\n" + "\n".join(f"{r},{y}" for r, y in zip(rows, labels)) + "\n"
    path = _write(tmp_path / "items.csv", text)
    data = LabeledItems.from_frame(read_table(path, "items"), id_col="id")
    assert data.classes == ("0", "1", " 1")
    assert data.n_labeled == sum(1 for y in labels if y != "")
    assert list(np.asarray(data.classes)[data.y[data.y >= 0]]) == [y for y in labels if y != ""]
    labels[4] = "   "
    text = "id,x1,x2,y\n" + "\n".join(f"{r},{y}" for r, y in zip(rows, labels)) + "\n"
    with pytest.raises(InputError, match=r"a cell of only spaces '   ' \(row 5\)"):
        LabeledItems.from_frame(read_table(_write(tmp_path / "blank.csv", text), "items"), id_col="id")
    frame = pd.DataFrame({"x1": np.arange(4.0), "x2": [0.0, 1.0, 0.0, 2.0], "y": ["a", "b", "\t", "a"]})
    with pytest.raises(InputError, match=r"\(row 3\)"):
        LabeledItems.from_frame(frame)


def test_a_short_or_long_row_is_an_error_naming_it(tmp_path):
    for row in ("i3,0.5", "i3,0.5,1,7"):
        text = "id,x1,y\ni1,0.1,a\ni2,0.2,\n" + row + "\ni4,0.3,b\n"
        with pytest.raises(InputError, match=r"items.csv' row 3 has \d cells, but the header names 3 columns"):
            read_table(_write(tmp_path / "items.csv", text), "items")


@pytest.mark.parametrize("he", ["True", "False", "yes"])
def test_true_and_false_are_not_numbers(tmp_path, he):
    groups = read_table(_write(tmp_path / "g.csv", f"group,he\ng0,{he}\ng1,0.5\n"), "groups")
    clicks = pd.DataFrame({"group": ["g0", "g1"], "b": ["x", "y"]})
    with pytest.raises(InputError, match=f"'he' has a non-numeric value '{he}' \\(row 1\\)"):
        GroupedCounts.from_frames(clicks, groups)
    with pytest.raises(InputError, match="'he' holds True/False, not numbers"):
        GroupedCounts.from_frames(clicks, pd.DataFrame({"group": ["g0", "g1"], "he": [True, False]}))


def test_proportions_predict_refuses_features_beyond_its_arithmetic():
    items = pd.DataFrame({"group": ["g0"] * 3 + ["g1"] * 3, "x": [0.1, 0.5, 0.9, 1.2, 1.9, 2.4]})
    data = LabelProportions.from_frames(items, pd.DataFrame({"group": ["g0", "g1"], "a": [0.6, 0.2], "b": [0.4, 0.8]}))
    assert np.isfinite(data.features_of(pd.DataFrame({"x": [3.0]}))).all()
    with pytest.raises(InputError, match="'x' has value 1e\\+120 \\(row 1\\).*standard deviations"):
        data.features_of(pd.DataFrame({"x": [1e120]}))


def test_nul_characters_are_refused_in_files_and_frames(tmp_path):
    with pytest.raises(InputError, match=r"column 'group' has a NUL character \(row 2\)"):
        read_table(_write(tmp_path / "g.csv", "group,he\ng0,1\ng\x001,0\n"), "groups")
    clicks = pd.DataFrame({"group": ["g0", "g\x001"], "b": ["x", "y"]})
    with pytest.raises(InputError, match="NUL character"):
        GroupedCounts.from_frames(clicks, pd.DataFrame({"group": ["g0", "g\x001"], "he": [0.5, 0.1]}))
    with pytest.raises(InputError, match="NUL character"):
        GroupedCounts.from_frames(pd.DataFrame({"group": ["g0", "g1"], "b": ["x", "y\x00"]}),
                                  pd.DataFrame({"group": ["g0", "g1"], "he": [0.5, 0.1]}))


def test_many_behavior_columns_cross_without_a_limit():
    """More than 64 behavior columns (numpy's ravel_multi_index stops there): counted as one column would be."""
    wide = pd.DataFrame({f"c{k}": ["a"] * 4 for k in range(70)})
    wide["group"], wide["c3"] = ["g0", "g0", "g1", "g1"], ["x", "y", "x", "x"]
    data = GroupedCounts.from_frames(wide, pd.DataFrame({"group": ["g0", "g1"], "he": [0.5, -0.5]}))
    assert data.counts.tolist() == [[1, 1], [2, 0]] and data.bins.labels[1].startswith("c0=a, c1=a, c2=a, c3=y")


def test_a_row_that_is_not_utf8_is_named(tmp_path):
    (tmp_path / "t.csv").write_bytes(b"a,b\n1,2\n3,\xe9\n")
    with pytest.raises(InputError, match=r"is not UTF-8 text \(line 3 has the byte 0xe9\)"):
        read_table(tmp_path / "t.csv", "table")


#: Parquet columns of types that are not numbers (`strategies.PARQUET_NOT_NUMBERS`), and the words that refuse each
PARQUET_NOT_NUMBERS = {
    "timestamp": "holds dates and times", "timestamp_tz": "holds dates and times", "date": "non-numeric value",
    "duration": "holds durations", "boolean": "holds True/False", "dictionary": "holds categories",
    "list": "non-numeric value", "struct": "non-numeric value", "binary": "non-numeric value",
    "time": "non-numeric value",
}


@pytest.mark.parametrize("kind", PARQUET_KINDS)
def test_a_parquet_column_that_is_not_numbers_is_no_feature(tmp_path, capsys, kind):
    """A Parquet datetime (or duration, category, nested...) column taken as a feature by default: one line
    naming it, never its nanoseconds since 1970 as a number. Decimals are numbers and are read as such."""
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 12
    rng = np.random.default_rng(1)
    table = pa.table({"id": [f"i{i}" for i in range(n)], "group": [f"g{i % 3}" for i in range(n)],
                      "x1": rng.normal(size=n), "odd": parquet_column(kind, n),
                      "x2": pa.array([decimal.Decimal(f"{v:.3f}") for v in rng.normal(size=n)])})
    pq.write_table(table, tmp_path / "items.parquet")
    pd.DataFrame({"group": ["g0", "g1", "g2"], "a": [0.2, 0.5, 0.8], "b": [0.8, 0.5, 0.2]}).to_csv(tmp_path / "groups.csv", index=False)
    code = cli(["fit", "proportions", "--items", str(tmp_path / "items.parquet"), "--proportions",
                str(tmp_path / "groups.csv"), "--id-col", "id", "--out", str(tmp_path / "fit.nc")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "'odd'" in err, err
    assert PARQUET_NOT_NUMBERS[kind] in err, err
    frame = read_table(tmp_path / "items.parquet", "items")
    from bayes_wsc.data.tables import read_features

    assert np.isfinite(read_features(frame, ["x1", "x2"], "items")).all()  # a decimal column is numbers


def test_fractional_indices_and_text_arrays_are_refused_in_every_from_arrays():
    """`from_arrays(x, [0.5, 0, 1, 1], P)` put the first item in group 0; indices are whole numbers, or one
    line naming the first that is not, in every container built from arrays. Text where numbers belong and
    True/False count tables are refused too (they were a TypeError, or taken as 1 and 0)."""
    x = np.random.default_rng(0).normal(size=(4, 2))
    shares = np.array([[0.5, 0.5], [0.2, 0.8]])
    with pytest.raises(InputError, match=r"groups must be whole-number indices, got 0.5 at position 0"):
        LabelProportions.from_arrays(x, [0.5, 0, 1, 1], shares)
    with pytest.raises(InputError, match=r"got 1.5 at position 3"):
        LabelProportions.from_bins([0, 1, 0, 1], [0, 0, 1, 1.5], shares, 2)
    with pytest.raises(InputError, match=r"got nan at position 1"):
        LabelProportions.from_arrays(x, [0, np.nan, 1, 1], shares)
    assert LabelProportions.from_arrays(x, [0.0, 0.0, 1.0, 1.0], shares).item_group.tolist() == [0, 0, 1, 1]
    with pytest.raises(InputError, match=r"features must be numbers, got 'a'"):
        LabelProportions.from_arrays(np.array([["a", "b"]] * 4, dtype=object), [0, 0, 1, 1], shares)
    with pytest.raises(InputError, match=r"features must be numbers, got 'a'"):
        LabeledItems.from_arrays(np.array(["a", "b", "c", "d"], dtype=object), [0, 1, None, 1])
    with pytest.raises(InputError, match=r"counts hold True/False"):
        GroupedCounts.from_counts(np.array([[True, False], [True, True]]), [0.0, 1.0])
    with pytest.raises(InputError, match=r"label codes must be whole-number indices"):
        LabeledItems(x, [0, 1, 0.5, 1], ("x1", "x2"), ("a", "b"), np.zeros(2), np.ones(2), np.arange(4))


#: levels that write another bin's name when joined naively ("a=x, b=y, b=z" twice), and ones with quotes
COLLIDING_LEVELS = {"a": ["x", "x, b=y", 'q"', " s"], "b": ["y, b=z", "z", "=", ""]}


def test_crossed_bin_labels_are_unique_for_adversarial_levels():
    """Levels x / "x, b=y" of a crossed with "y, b=z" / z of b made two bins named a=x, b=y, b=z, and the
    estimand table listed 3 rows for 4 bins; a level with the label's separators is quoted."""
    import itertools

    from bayes_wsc.data.grouped import BehaviorBins

    for a, b in itertools.product(itertools.combinations(COLLIDING_LEVELS["a"], 2),
                                  itertools.combinations(COLLIDING_LEVELS["b"], 2)):
        bins = BehaviorBins(("a", "b"), (a, b))
        assert len(set(bins.labels)) == bins.n_bins == 4, bins.labels
    bins = BehaviorBins(("a", "b, a"), (("x", "x, b, a=y"), ("y", "a=y")))
    assert len(set(bins.labels)) == 4, bins.labels
    plain = BehaviorBins(("a", "b"), (("x", "w"), ("1", "2")))
    assert plain.labels == ["a=x, b=1", "a=x, b=2", "a=w, b=1", "a=w, b=2"]


def test_a_fit_of_colliding_levels_reports_every_bin():
    from bayes_wsc.models.wsc import WSC

    rng = np.random.default_rng(4)
    n = 400
    clicks = pd.DataFrame({"group": rng.choice([f"g{i}" for i in range(8)], n),
                           "a": rng.choice(["x", "x, b=y"], n), "b": rng.choice(["y, b=z", "z"], n)})
    groups = pd.DataFrame({"group": [f"g{i}" for i in range(8)], "he": np.linspace(-1.5, 1.5, 8)})
    data = GroupedCounts.from_frames(clicks, groups)
    assert data.n_bins == 4 and len(set(data.coords["bin"])) == 4
    import warnings

    from bayes_wsc.errors import FitWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        table = WSC(progressbar=False, checks=False).fit(data).summary(var_names=["rho"])
    assert len(table) == 4
