"""`netcdf_reader` reads what xarray's h5netcdf engine reads, and hands a file it does not know to that engine.

Each test writes a file as fits are written (`inference.save`), or another way, and compares the reader's
Datasets with the engine's: identical values, dims, coords and attrs, in the same order and with the same
dtypes and attribute types. `tests/test_fit_files.py` compares them on real fits of every model.
"""

from __future__ import annotations

import h5py
import numpy as np
import pytest
import xarray as xr

from bayes_wsc import inference, netcdf_reader


def engine_groups(path) -> dict[str, xr.Dataset]:
    """The file's groups as `xr.open_dataset(engine="h5netcdf")` reads them, in memory."""
    import h5netcdf

    with h5netcdf.File(path, mode="r") as handle:
        names = list(handle.groups)
    out = {}
    for name in names:
        with xr.open_dataset(path, group=name, engine="h5netcdf") as ds:
            out[name] = ds.load()
    return out


def assert_same_groups(read: dict[str, xr.Dataset], expected: dict[str, xr.Dataset]) -> None:
    assert list(read) == list(expected)
    for name, ds in expected.items():
        got = read[name]
        assert got.identical(ds), name
        for order in ("variables", "data_vars", "coords", "dims", "attrs"):
            assert list(getattr(got, order)) == list(getattr(ds, order)), (name, order)
        for var in ds.variables:
            assert got[var].dtype == ds[var].dtype and got[var].dims == ds[var].dims, (name, var)
            assert list(got[var].attrs) == list(ds[var].attrs), (name, var)
        assert [type(v) for v in got.attrs.values()] == [type(v) for v in ds.attrs.values()], name


def a_fit_like_groups() -> inference.Groups:
    """Every kind of value a fit file holds: float draws (one plain-written array of 2^20 values), int and
    bool statistics, text coordinates, a non-dimension coordinate, a dimension without coordinates, a scalar,
    NaN, and attributes of text, integers, floats and a numeric array."""
    rng = np.random.default_rng(0)
    posterior = xr.Dataset(
        {"mu": (("chain", "draw", "group"), rng.normal(size=(2, 8, 3))),
         "big": (("chain", "draw", "cell"), rng.normal(size=(2, 8, 2**16))),
         "w": (("chain", "draw", "bin"), np.where(rng.random((2, 8, 4)) < 0.1, np.nan, rng.random((2, 8, 4)))),
         "free": (("chain", "draw", "free_dim_0"), rng.normal(size=(2, 8, 2)))},
        coords={"chain": [0, 1], "draw": np.arange(8), "group": ["a", "bb", "ccc"], "bin": ["x", "y", "z", "é"],
                "level": ("bin", ["lo", "lo", "hi", "hi"])},
        attrs={"model": "wsc", "settings": '{"wh": 10.0}', "n": np.int64(5), "scale": 0.5,
               "shape": np.array([3, 4])})
    posterior = posterior.drop_vars("free_dim_0", errors="ignore")
    stats = xr.Dataset({"diverging": (("chain", "draw"), rng.random((2, 8)) < 0.2),
                        "tree_depth": (("chain", "draw"), rng.integers(1, 6, (2, 8))),
                        "flag": (("chain", "draw"), rng.integers(0, 2, (2, 8)).astype(np.int8))},
                       coords={"chain": [0, 1], "draw": np.arange(8)})
    mode = xr.Dataset({"loglik": ((), -12.5), "mu": (("group",), [0.1, 0.2, 0.3])},
                      coords={"group": ["a", "bb", "ccc"]})
    return inference.Groups(posterior=posterior, sample_stats=stats, posterior_mode=mode)


def test_the_reader_reads_what_the_engine_reads(tmp_path):
    path = inference.save(a_fit_like_groups(), tmp_path / "fit.nc")
    read = netcdf_reader.read_groups(path)
    assert_same_groups(read, engine_groups(path))
    assert read["sample_stats"]["diverging"].dtype == bool
    assert read["posterior"]["group"].values.tolist() == ["a", "bb", "ccc"]
    assert_same_groups(inference.load(path), engine_groups(path))


def test_the_reader_reads_the_groups_asked_for(tmp_path):
    path = inference.save(a_fit_like_groups(), tmp_path / "fit.nc")
    assert netcdf_reader.group_names(path) == ["posterior", "sample_stats", "posterior_mode"]
    assert list(inference.load(path, leave=("sample_stats",))) == ["posterior", "posterior_mode"]
    assert inference.load_group(path, "sample_stats").identical(engine_groups(path)["sample_stats"])
    assert inference.load_group(path, "log_likelihood") is None
    assert inference.has_group(path, "posterior_mode") and not inference.has_group(path, "log_likelihood")


def _with_fixed_length_text(path):
    with h5py.File(path, "a") as handle:
        handle["posterior"].attrs["note"] = np.bytes_(b"fixed")  # an attribute of fixed-length bytes


def _with_nested_group(path):
    import h5netcdf

    with h5netcdf.File(path, "a") as handle:
        inner = handle["posterior"].create_group("extra")
        inner.dimensions = {"k": 2}
        inner.create_variable("v", ("k",), data=np.arange(2.0))


def _with_compound_values(path):
    import h5netcdf

    with h5netcdf.File(path, "a") as handle:
        group = handle.create_group("extra")
        group.dimensions = {"k": 2}
        group.create_variable("v", ("k",), data=np.array([1 + 2j, 3 - 1j]))


@pytest.mark.parametrize("edit", [_with_fixed_length_text, _with_nested_group, _with_compound_values])
def test_a_file_the_reader_does_not_know_is_read_by_the_engine(tmp_path, edit):
    """A file written or edited another way (an attribute of fixed-length text, a nested group, complex
    values): the reader says it is unusual, and `inference.load` reads it as the engine does."""
    path = inference.save(a_fit_like_groups(), tmp_path / "fit.nc")
    edit(path)
    with pytest.raises(netcdf_reader.Unusual):
        netcdf_reader.read_groups(path)
    assert_same_groups(inference.load(path), engine_groups(path))
