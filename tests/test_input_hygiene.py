"""Issue 17, case by case: tables read as written, values the arithmetic can hold, no silent fallbacks."""

import contextlib
import io
import warnings

import numpy as np
import pandas as pd
import pytest

from bayes_wsc.cli import check_probabilities, main
from bayes_wsc.data.grouped import MAX_GROUP_WEIGHT, GroupedCounts
from bayes_wsc.data.labeled import LabeledItems
from bayes_wsc.data.pairwise import PairwiseConstraints
from bayes_wsc.data.tables import describe_columns, key_text, read_table, require_columns
from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.estimator import check_finite


def cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exit_:
            code = exit_.code
    return code, out.getvalue(), err.getvalue().strip()


# ---------------------------------------------------------------------- reading tables
@pytest.mark.parametrize("header, words", [
    ("group,behavior,behavior", "names a column 'behavior' twice, columns 2 and 3"),
    ("he,he", "names a column 'he' twice"),
    ("group, he,he", "as ' he' and 'he' (the same but for spaces)"),
    ("group,,he", "a column without a name (column 2"),
])
def test_column_names_are_checked_before_pandas_renames_them(tmp_path, header, words):
    path = tmp_path / "t.csv"
    path.write_text(f"{header}\n" + ",".join("1" * (header.count(",") + 1)) + "\n")
    with pytest.raises(InputError, match=words.replace("(", r"\(").replace(")", r"\)")):
        read_table(path, "groups")


def test_names_with_spaces_are_matched_and_given_back(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(" group ,he\na,1\n")
    frame = read_table(path, "groups")
    assert list(frame.columns) == ["group", "he"] and frame.attrs["original_names"] == {"group": " group "}


def test_another_delimiter_is_named_and_sep_reads_it(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("group;he\na;1,5\n")
    with pytest.raises(InputError, match=r"seems to use semicolons \(';'\) between columns, not commas .*--sep semi"):
        read_table(path, "groups")
    assert read_table(path, "groups", sep=";")["he"].tolist() == ["1,5"]
    (tmp_path / "t.tsv").write_text("group\the\na\t1\n")
    assert list(read_table(tmp_path / "t.tsv", "groups").columns) == ["group", "he"]


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-32"])
def test_text_with_a_byte_order_mark(tmp_path, encoding):
    path = tmp_path / "t.csv"
    path.write_bytes("group,he\ncaf\u00e9,1\n".encode(encoding))
    frame = read_table(path, "groups")
    assert list(frame.columns) == ["group", "he"] and frame["group"].tolist() == ["caf\u00e9"]


def test_text_that_is_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes("group,he\na,1\ncaf\u00e9,2\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"is not UTF-8 text \(line 3 has the byte 0xe9\); save it as UTF-8"):
        read_table(path, "groups")
    path.write_bytes("group,he\na,1\n".encode("utf-16-le"))  # no byte-order mark
    with pytest.raises(InputError, match="holds NUL bytes"):
        read_table(path, "groups")


def test_ids_are_text_as_written(tmp_path):
    (tmp_path / "g.csv").write_text("group,he\n001,0.5\n010,1\n")
    frame = read_table(tmp_path / "g.csv", "groups", text_columns=["group"])
    assert frame["group"].tolist() == ["001", "010"] and frame["he"].tolist() == ["0.5", "1"]  # parsed by role later
    pd.DataFrame({"group": [1, 10], "other": [1, 2]}).to_parquet(tmp_path / "g.parquet")
    assert read_table(tmp_path / "g.parquet", "groups", text_columns=["group"])["group"].tolist() == ["1", "10"]
    assert key_text(pd.Series([7.0, np.nan, 12.0])).tolist() == ["7", None, "12"]  # integer ids with a gap
    assert key_text(pd.Series([7.5, 1.0])).tolist() == ["7.5", "1.0"]


def test_column_names_are_quoted_and_a_near_miss_is_named():
    frame = pd.DataFrame({" group": ["a"], "group;he": [1]})
    with pytest.raises(InputError) as err:
        require_columns(frame, ["group"], "groups")
    assert str(err.value) == ("groups has no column 'group' (columns: ' group', 'group;he'; ' group' differs from "
                              "it only by surrounding spaces)")
    assert describe_columns([f"c{i}" for i in range(14)]).endswith("'c11' and 2 more")


# ---------------------------------------------------------------------- values the arithmetic can hold
def test_weights_beyond_what_the_model_holds_name_the_row():
    clicks = pd.DataFrame({"group": ["a", "b", "a"], "b": ["x", "y", "x"], "w": [1.0, 1e300, 1.0]})
    groups = pd.DataFrame({"group": ["a", "b"], "he": [0.0, 1.0]})
    with pytest.raises(InputError, match=r"clicks column 'w' has value 1e\+300 \(row 2\): group 'b' weighs 1e\+300"):
        GroupedCounts.from_frames(clicks, groups, weight_col="w")
    data = GroupedCounts.from_frames(clicks, groups, weight_col="w", max_group_weight=100)  # capped: fine
    assert data.counts.sum() <= 200
    with pytest.raises(InputError, match=r"group '1' holds 1\.2e\+06 weighted items, more than the 1e\+06"):
        GroupedCounts.from_counts(np.array([[0.1, 0.1], [0.6, 0.6]]) * MAX_GROUP_WEIGHT, np.zeros(2))
    GroupedCounts.from_counts(np.full((2, 2), MAX_GROUP_WEIGHT / 2), np.zeros(2))


def test_he_out_of_range_names_column_row_and_value():
    clicks = pd.DataFrame({"group": ["a", "b"], "b": ["x", "y"]})
    with pytest.raises(InputError, match=r"groups column 'he' has value 1e\+300 \(row 2\), not a plausible logit"):
        GroupedCounts.from_frames(clicks, pd.DataFrame({"group": ["a", "b"], "he": [0.0, 1e300]}))
    with pytest.raises(InputError, match=r"'he_prob' has value 1e-300 \(row 1\), a logit of -690.8"):
        GroupedCounts.from_frames(clicks, pd.DataFrame({"group": ["a", "b"], "he_prob": [1e-300, 0.5]}))


def test_huge_features_are_refused_by_name():
    items = pd.DataFrame({"id": list("abcd"), "x1": [1.0, 2.0, 1e300, 3.0], "x2": [0.0, 1.0, 0.0, 1.0]})
    constraints = pd.DataFrame({"expert": ["e"], "i": ["a"], "j": ["b"], "link": [1]})
    with pytest.raises(InputError, match=r"items column 'x1' has value 1e\+300 \(row 3\), too large to standardize"):
        PairwiseConstraints.from_frames(items, constraints)
    with pytest.raises(InputError, match=r"'x1' has value 1e\+300 \(row 3\), beyond the 1e\+100"):
        PairwiseConstraints.from_frames(items, constraints, standardize=False)
    with pytest.raises(InputError, match=r"feature column 'x1' has value 1e\+300 \(row 3\), too large"):
        LabeledItems.from_frame(items.drop(columns="id").assign(y=[0, 1, None, None]))


def test_one_row_is_said_to_be_one_row():
    with pytest.raises(InputError, match="items has one row; a mixture needs at least 2 items"):
        LabeledItems.from_frame(pd.DataFrame({"x1": [1.0], "y": [1]}))


def test_a_fit_with_non_finite_values_is_refused():
    check_finite({"rho": np.array([[[0.5, 0.2]]])})
    with pytest.raises(InputError, match=r"produced 1 non-finite value of 'rho' \(of 2\)"):
        check_finite({"rho": np.array([[[0.5, np.nan]]])})


def test_no_probability_is_written_empty():
    items = pd.DataFrame({"x": [1.0, 2.0]})
    fine = items.assign(prob=[0.1, 0.2], prob_low=[np.nan, np.nan], prob_high=[np.nan, np.nan], cluster=[0, 1])
    check_probabilities(fine, items)  # a MAP's empty intervals are deliberate
    with pytest.raises(InputError, match=r"the prediction 'cluster_prob_1' of items row 2 is nan"):
        check_probabilities(fine.assign(cluster_prob_1=[0.5, np.nan]), items)


# ---------------------------------------------------------------------- end to end
@pytest.fixture(scope="module")
def wsc_fit(tmp_path_factory):
    """Zero-padded group ids in CSV, one group of the groups table without clicks, names with spaces."""
    path = tmp_path_factory.mktemp("hygiene")
    (path / "clicks.csv").write_text(" group ,bounce\n001,y\n001,n\n002,n\n002,n\n001,y\n")
    (path / "groups.csv").write_text("group,he\n001,0.5\n002,-0.5\n003,0.1\n")
    code, out, err = cli(["fit", "wsc", "--clicks", path / "clicks.csv", "--groups", path / "groups.csv",
                          "--out", path / "fit.nc"])
    assert code == 0, err
    return path, out


def test_groups_without_items_are_reported(wsc_fit):
    _, out = wsc_fit
    assert "3 groups (1 without items)" in out
    assert "1 of 3 groups have no items (or only items of weight 0), e.g. '003'" in out
    assert "no problems found" not in out


def test_predict_counts_the_rows_that_matched_a_group(wsc_fit, tmp_path):
    path, _ = wsc_fit
    pd.DataFrame({"group": ["001", "1", "002", "9"], "bounce": ["y", "y", "n", "n"]}).to_parquet(tmp_path / "i.parquet")
    code, out, err = cli(["predict", path / "fit.nc", "--items", tmp_path / "i.parquet", "--out", tmp_path / "p.csv"])
    assert code == 0, err
    assert "2 of 4 rows matched a group of the fit; 2 fell back to the population estimate rho" in out
    from bayes_wsc.estimator import load

    items = pd.read_parquet(tmp_path / "i.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        result = load(path / "fit.nc").predict(items)
    assert result.attrs["group_rows"] == {"matched": 2, "population": 2}
    assert list(result.columns) == ["group", "bounce", "prob", "prob_low", "prob_high"]
    (tmp_path / "padded.csv").write_text("group,  bounce \n001,y\n")
    code, out, err = cli(["predict", path / "fit.nc", "--items", tmp_path / "padded.csv", "--out", tmp_path / "q.csv"])
    assert code == 0, err
    assert (tmp_path / "q.csv").read_text().splitlines()[0] == "group,  bounce ,prob,prob_low,prob_high"
    assert (tmp_path / "q.csv").read_text().splitlines()[1].startswith("001,y,")


def test_predict_never_overwrites_an_input_column(wsc_fit, tmp_path):
    path, _ = wsc_fit
    (tmp_path / "i.csv").write_text("group,bounce,prob\n001,y,0.3\n")
    code, _, err = cli(["predict", path / "fit.nc", "--items", tmp_path / "i.csv", "--out", tmp_path / "p.csv"])
    assert code == 2 and "items already has a column 'prob', which predict would overwrite" in err


def test_every_credible_level_is_checked_by_one_rule():
    """`posterior.check_ci`, which every model's predictions and every report use: a number in (0, 1)."""
    from bayes_wsc.posterior import check_ci

    for good in (0.9, 0.5, np.float64(0.94)):
        check_ci(good)
    for bad in (True, "0.9", 0, 1.0, float("nan"), None):
        with pytest.raises(InputError, match="ci must be a number in"):
            check_ci(bad)
