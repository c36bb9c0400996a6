"""Parquet click logs streamed through Dask give the same count table as in memory."""

import numpy as np
import pandas as pd
import pytest

from bayes_wsc.cli import main
from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.data.stream import grouped_counts_from_parquet
from bayes_wsc.errors import InputError


@pytest.fixture
def parquet_logs(tmp_path):
    rng = np.random.default_rng(0)
    n = 3000
    clicks = pd.DataFrame({
        "site": rng.choice([f"s{i}" for i in range(12)], n),
        "speed": rng.choice(["slow", "fast"], n),
        "depth": rng.integers(0, 3, n),
        "w": rng.uniform(0.5, 2.0, n),
    })
    groups = pd.DataFrame({"site": [f"s{i}" for i in range(12)], "he": rng.normal(size=12)})
    folder = tmp_path / "clicks"
    folder.mkdir()
    for part, chunk in enumerate(np.array_split(np.arange(n), 5)):
        clicks.iloc[chunk].to_parquet(folder / f"part-{part}.parquet", row_group_size=200)
    return folder, clicks, groups


def test_streamed_table_equals_in_memory(parquet_logs):
    folder, clicks, groups = parquet_logs
    options = dict(group_col="site", behavior=["speed", "depth"], weight_col="w", max_group_weight=200.0)
    streamed = grouped_counts_from_parquet(folder, groups, **options)
    memory = GroupedCounts.from_frames(clicks, groups, **options)
    assert streamed.bins == memory.bins
    np.testing.assert_allclose(streamed.counts, memory.counts)
    np.testing.assert_array_equal(streamed.n_items, memory.n_items)
    np.testing.assert_allclose(streamed.group_scale, memory.group_scale)
    assert streamed.settings["weight_col"] == "w"
    globbed = grouped_counts_from_parquet(str(folder / "part-*.parquet"), groups, group_col="site",
                                          behavior=["speed", "depth"])
    assert globbed.n_items.sum() == len(clicks)


def test_a_folder_reads_its_parts_only(parquet_logs):
    """Spark's `_temporary/` attempt, a hidden `.part-0.parquet` and `_SUCCESS`-style files are not parts
    (skipped, as pyarrow, Dask and Spark skip them); the words name the parts read and those skipped."""
    from bayes_wsc.data.stream import parts_read

    folder, clicks, groups = parquet_logs
    (folder / "_temporary" / "0").mkdir(parents=True)
    clicks.to_parquet(folder / "_temporary" / "0" / "part-1.parquet")
    clicks.to_parquet(folder / ".part-0.parquet")
    clicks.to_parquet(folder / "_metadata_copy.parquet")
    streamed = grouped_counts_from_parquet(folder, groups, group_col="site", behavior=["speed", "depth"])
    assert streamed.n_items.sum() == len(clicks)
    words = parts_read(folder)
    assert words.startswith(f"read 5 Parquet files of {str(folder)!r}: part-0.parquet, part-1.parquet")
    assert "skipped 3 whose name starts with '_' or '.'" in words and "_temporary/0/part-1.parquet" in words


def test_scheduler_with_text_clicks_is_refused(parquet_logs, tmp_path, capsys):
    folder, clicks, groups = parquet_logs
    clicks.to_csv(tmp_path / "clicks.csv", index=False)
    groups.to_csv(tmp_path / "groups.csv", index=False)
    code = main(["fit", "wsc", "--clicks", str(tmp_path / "clicks.csv"), "--groups", str(tmp_path / "groups.csv"),
                 "--group-col", "site", "--scheduler", "tcp://127.0.0.1:1", "--out", str(tmp_path / "fit.nc")])
    err = capsys.readouterr().err
    assert code == 2 and "--scheduler" in err and len(err.strip().splitlines()) == 1, err


def test_stream_errors_name_the_problem(parquet_logs, tmp_path):
    folder, clicks, groups = parquet_logs
    with pytest.raises(InputError, match="holds no Parquet files"):
        grouped_counts_from_parquet(tmp_path / "nothing*.parquet", groups, group_col="site")
    bad = tmp_path / "bad"
    bad.mkdir()
    clicks.assign(w=-clicks.w).to_parquet(bad / "a.parquet")
    with pytest.raises(InputError, match="'w' has value"):
        grouped_counts_from_parquet(bad, groups, group_col="site", weight_col="w")
    clicks.assign(speed=clicks.speed.where(clicks.index != 7)).to_parquet(bad / "a.parquet")
    with pytest.raises(InputError, match="'speed' has missing values"):
        grouped_counts_from_parquet(bad, groups, group_col="site", weight_col="w")
    with pytest.raises(InputError, match="no column 'colour'"):
        grouped_counts_from_parquet(folder, groups, group_col="site", behavior=["colour"])


def test_cli_fits_a_folder_of_parquet(parquet_logs, tmp_path, capsys):
    folder, _, groups = parquet_logs
    groups.to_csv(tmp_path / "groups.csv", index=False)
    code = main(["fit", "wsc", "--clicks", str(folder), "--groups", str(tmp_path / "groups.csv"),
                 "--group-col", "site", "--weight-col", "w", "--out", str(tmp_path / "fit.nc")])
    assert code == 0 and "12 groups, 3000 items, 6 behavior bins" in capsys.readouterr().out


def _corrupt_page(path):
    """Overwrite a few bytes of the first data page: the footer still reads, the data do not."""
    blob = bytearray(path.read_bytes())
    blob[60:90] = b"\xff" * 30
    path.write_bytes(bytes(blob))


@pytest.mark.parametrize("spoil, words", [
    (lambda part: part.write_bytes(b"not parquet at all" * 10), "could not be read as Parquet"),
    (lambda part: part.write_bytes(part.read_bytes()[:-40]), "could not be read as Parquet"),
    (_corrupt_page, "could not be read"),
    (lambda part: pd.read_parquet(part).rename(columns={"speed": "pace"}).to_parquet(part), "has no column 'speed'"),
    (lambda part: pd.read_parquet(part).drop(columns="w").to_parquet(part), "has no column 'w'"),
    (lambda part: pd.read_parquet(part).assign(speed=1).to_parquet(part), "'speed' is integer in part"),
    (lambda part: pd.read_parquet(part).assign(w="heavy").to_parquet(part), "'w' is text in part"),
], ids=["garbage", "truncated", "corrupt page", "other columns", "no weight", "other type", "text weight"])
def test_a_bad_part_is_named_in_one_line(parquet_logs, tmp_path, capsys, spoil, words):
    """A corrupt part, or one with other columns, of a streamed folder: one line naming the part,
    from the API and from the command line (exit 2)."""
    folder, _, groups = parquet_logs
    part = folder / "part-3.parquet"
    spoil(part)
    with pytest.raises(InputError, match=words) as error:
        grouped_counts_from_parquet(folder, groups, group_col="site", behavior=["speed", "depth"], weight_col="w")
    assert "part-3.parquet" in str(error.value) and "\n" not in str(error.value)
    groups.to_csv(tmp_path / "groups.csv", index=False)
    code = main(["fit", "wsc", "--clicks", str(folder), "--groups", str(tmp_path / "groups.csv"), "--group-col", "site",
                 "--behavior", "speed,depth", "--weight-col", "w", "--out", str(tmp_path / "fit.nc")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "part-3.parquet" in err, err
    assert not (tmp_path / "fit.nc").exists()


def test_inferred_behavior_refuses_a_part_with_more_columns(parquet_logs):
    """Behavior columns inferred from the first part: a later part with another column is named, not
    silently left out; naming the behavior columns uses only those."""
    folder, clicks, groups = parquet_logs
    part = folder / "part-2.parquet"
    pd.read_parquet(part).assign(colour="red").to_parquet(part)
    with pytest.raises(InputError, match="part-2.parquet' has a column 'colour'"):
        grouped_counts_from_parquet(folder, groups, group_col="site", weight_col="w")
    data = grouped_counts_from_parquet(folder, groups, group_col="site", behavior=["speed", "depth"], weight_col="w")
    assert data.n_items.sum() == len(clicks)
