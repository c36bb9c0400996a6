"""Reading a fit file's groups in a tenth of a second: the netCDF-4 layout that xarray's h5netcdf engine writes,
read with h5py and decoded by xarray (`xr.decode_cf`), for the read-only commands.

`xr.open_dataset(engine="h5netcdf")` spends most of a fit file's reading on h5netcdf's metadata, not its data:
each variable's dimensions, chunks, filters and padding for its `encoding`, each through several HDF5 lookups
(1,900 of them for a NUTS fit of 42 variables: 0.2-0.3 s of `summary` or `predict`, against 0.03-0.05 s of
reading the values). This reader takes what the Datasets need: the values, the dimension names (each
variable's `_Netcdf4Coordinates`, the ids of its dimensions, named by the group's dimension scales) and the
attributes as h5netcdf presents them; CF decoding (`_FillValue`, `coordinates`, boolean variables) is xarray's.
A layout it does not know (a nested group, a dimension declared in a parent group, an attribute, value or
data type outside that layout) is `Unusual`, and `inference.load` then reads the file with xarray's engine:
the Datasets are the same either way (`tests/test_fit_files.py` holds them identical, with the same order of
variables, coordinates and dimensions and the same dtypes, for fits of every model). What this reader leaves
out is the `encoding` xarray records of the file (chunk sizes, compression), which no command reads and
`inference.save` sets itself.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import xarray as xr

#: the attributes by which netCDF-4 keeps its dimensions in HDF5, which h5netcdf hides (`h5netcdf.attrs`)
HIDDEN = frozenset({"REFERENCE_LIST", "CLASS", "DIMENSION_LIST", "NAME", "_Netcdf4Dimid", "_Netcdf4Coordinates",
                    "_nc3_strict", "_NCProperties"})
#: how a dimension scale without a coordinate variable starts its NAME (netCDF-4's own words)
DIMENSION_ONLY = b"This is a netCDF dimension but not a netCDF variable"


class Unusual(Exception):
    """A file, group, variable or attribute this reader does not read: xarray's engine reads the file."""


def read_groups(path, wanted: Callable[[str], bool] = lambda name: True) -> dict[str, xr.Dataset]:
    """The file's top-level groups that `wanted` names, in the file's order, as Datasets in memory."""
    import h5py

    with h5py.File(path, "r") as handle:
        return {name: _dataset(handle[name]) for name in handle if wanted(name)}


def group_names(path) -> list[str]:
    """The file's top-level groups, in the file's order."""
    import h5py

    with h5py.File(path, "r") as handle:
        return list(handle)


def _dataset(group) -> xr.Dataset:
    import h5py

    if not isinstance(group, h5py.Group):
        raise Unusual(f"{group.name} is not a group")
    members = list(group.items())
    dims = {}
    for name, member in members:
        if not isinstance(member, h5py.Dataset):
            raise Unusual(f"{member.name} is a nested group")
        if member.attrs.get("CLASS") == b"DIMENSION_SCALE":
            dims[int(member.attrs["_Netcdf4Dimid"])] = name
    variables = {}
    for name, member in members:
        attrs = member.attrs
        if attrs.get("CLASS") == b"DIMENSION_SCALE" and bytes(attrs.get("NAME", b"")).startswith(DIMENSION_ONLY):
            continue
        ids = [] if member.ndim == 0 else attrs.get("_Netcdf4Coordinates")
        if ids is None or len(ids) != member.ndim or any(int(i) not in dims for i in ids):
            raise Unusual(f"{member.name}: dimensions not named in its group")
        values, encoding = _values(member)
        variables[name] = xr.Variable([dims[int(i)] for i in ids], values,
                                      {key: _attribute(attrs[key]) for key in attrs if key not in HIDDEN}, encoding)
    raw = xr.Dataset(variables, attrs={key: _attribute(group.attrs[key]) for key in group.attrs if key not in HIDDEN})
    return xr.decode_cf(raw)


def _values(member) -> tuple[np.ndarray, dict]:
    """A variable's values and the `encoding` entry CF decoding reads (its stored dtype), as xarray's engine
    gives them: variable-length text as an object array of str."""
    import h5py

    text = h5py.check_string_dtype(member.dtype)
    if text is not None:
        if text.length is not None or text.encoding != "utf-8":
            raise Unusual(f"{member.name}: fixed-length or non-UTF-8 text")
        return member.asstr()[()], {"dtype": str}
    if member.dtype.kind not in "biuf" or member.dtype.metadata:
        raise Unusual(f"{member.name}: data type {member.dtype}")
    return member[()], {"dtype": member.dtype}


def _attribute(value):
    """An attribute as h5netcdf presents it: text as str, a one-element array as its element."""
    if isinstance(value, str):
        return value
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf" and value.ndim == 1 and value.size:
        return value[0] if value.size == 1 else value
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return value
    raise Unusual(f"an attribute of type {type(value).__name__}")
