"""Hypothesis strategies for messy user tables, shared by every data container's property tests.

A validator given any table must either return valid data or raise
`InputError`; `valid_or_input_error` checks exactly that. A new container's
test draws frames with `messy_frame` (choosing which columns exist and what
kinds of values they hold) and passes its own `check` of a valid result.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import strategies as st

from bayes_wsc.errors import InputError

#: the kinds of value a column may hold; "mixed" draws each cell from any kind
KINDS = ("int", "float", "text", "bool", "mixed", "clean_id", "clean_level", "clean_float")

FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, 1e-320, 5e-324, 1e300, -1e300, math.nan, math.inf,
                     -math.inf]),
)
TEXT = st.one_of(st.text(max_size=4), st.sampled_from(["", " ", "nan", "NA", "1", "1.0", "inf", "a", "b"]))
CELL = st.one_of(st.none(), st.integers(-5, 5), FLOATS, TEXT, st.booleans())


def column_values(kind: str, n: int):
    """A strategy of `n` values of one kind (a list, so that the dtype is pandas' own choice)."""
    element = {
        "int": st.integers(-3, 6),
        "float": FLOATS,
        "text": TEXT,
        "bool": st.booleans(),
        "mixed": CELL,
        "clean_id": st.sampled_from(["g0", "g1", "g2", "g3"]),
        "clean_level": st.sampled_from(["x", "y", "z"]),
        "clean_float": st.floats(-5, 5, allow_nan=False),
    }[kind]
    return st.lists(element, min_size=n, max_size=n)


@st.composite
def messy_frame(draw, columns, min_rows: int = 0, max_rows: int = 12, kinds: dict | None = None):
    """A DataFrame with (a random subset of) `columns`, each of a random kind (or of `kinds[column]`,
    a list of allowed kinds), and sometimes a duplicated or missing column."""
    n = draw(st.integers(min_rows, max_rows))
    data = {}
    for column in columns:
        if draw(st.integers(0, 9)) == 0:  # drop the column one time in ten
            continue
        allowed = (kinds or {}).get(column, KINDS)
        data[column] = draw(column_values(draw(st.sampled_from(list(allowed))), n))
    frame = pd.DataFrame(data, index=range(n)) if data else pd.DataFrame(index=range(n))
    if len(frame.columns) and draw(st.integers(0, 19)) == 0:  # a duplicated column name, as Parquet allows
        frame = pd.concat([frame, frame.iloc[:, :1]], axis=1)
    return frame


def valid_or_input_error(call, check):
    """Run `call()`: an `InputError` is a pass; any other exception fails; a result must pass `check`.

    Returns the result, or None after an InputError (whose message must be one line).
    """
    try:
        result = call()
    except InputError as exc:
        message = str(exc)
        assert message and "\n" not in message, f"InputError message is not one line: {message!r}"
        return None
    check(result)
    return result


def total_weight(frame: pd.DataFrame, weight_col: str | None) -> float:
    """What the counts must add up to: one per row, or the sum of the weights."""
    if weight_col is None:
        return float(len(frame))
    return float(np.sum(pd.to_numeric(frame[weight_col]).to_numpy(dtype=float)))


MUTATIONS = ("cell", "cell", "cell", "drop_column", "repeat_column", "repeat_row", "no_rows", "as_text")


@st.composite
def corrupted(draw, frame: pd.DataFrame, max_mutations: int = 2):
    """`frame` with 0..max_mutations random corruptions: a messy cell, a dropped or repeated
    column, a repeated row, no rows at all, or a column turned to text. About a third of the
    draws are left clean, so that valid inputs are exercised as much as bad ones."""
    frame = frame.copy()
    for _ in range(draw(st.integers(0, max_mutations))):
        if not len(frame.columns):
            break
        kind = draw(st.sampled_from(MUTATIONS))
        position = draw(st.integers(0, len(frame.columns) - 1))  # by position: names may repeat
        if kind == "cell" and len(frame):
            row = draw(st.integers(0, len(frame) - 1))
            values = frame.iloc[:, position].astype(object).to_list()
            values[row] = draw(CELL)
            frame.isetitem(position, pd.Series(values, index=frame.index).infer_objects())
        elif kind == "drop_column":
            frame = frame.iloc[:, [i for i in range(len(frame.columns)) if i != position]]
        elif kind == "repeat_column":
            frame = pd.concat([frame, frame.iloc[:, [position]]], axis=1)
        elif kind == "repeat_row" and len(frame):
            frame = pd.concat([frame, frame.iloc[[draw(st.integers(0, len(frame) - 1))]]], ignore_index=True)
        elif kind == "no_rows":
            frame = frame.iloc[:0]
        elif kind == "as_text":
            frame.isetitem(position, frame.iloc[:, position].astype(str))
    return frame


# ---------------------------------------------------------------------- the classes of issue 37
#: Parquet types that are not numbers, which a numeric column read as features, weights or shares refuses
PARQUET_NOT_NUMBERS = ("timestamp", "timestamp_tz", "date", "duration", "boolean", "dictionary", "list", "struct",
                       "binary", "time")


def parquet_column(kind: str, n: int):
    """A pyarrow array of `n` values of a Parquet type that is not a number (`PARQUET_NOT_NUMBERS`)."""
    import datetime

    import pyarrow as pa

    day = [datetime.datetime(2020, 1, 1) + datetime.timedelta(days=i) for i in range(n)]
    return {
        "timestamp": lambda: pa.array(day), "timestamp_tz": lambda: pa.array(day, pa.timestamp("ns", tz="UTC")),
        "date": lambda: pa.array([d.date() for d in day]), "duration": lambda: pa.array([d - day[0] for d in day]),
        "boolean": lambda: pa.array([i % 2 == 0 for i in range(n)]),
        "dictionary": lambda: pa.array([f"c{i % 3}" for i in range(n)]).dictionary_encode(),
        "list": lambda: pa.array([[float(i)] for i in range(n)]), "struct": lambda: pa.array([{"x": i} for i in range(n)]),
        "binary": lambda: pa.array([str(i).encode() for i in range(n)]), "time": lambda: pa.array([d.time() for d in day]),
    }[kind]()


#: characters a crossed bin's label is written with, and others around them
LEVEL_CHARACTERS = st.sampled_from(list('xyb,= "'))


def colliding_levels(max_levels: int = 3):
    """Distinct level names built from the characters of a crossed bin's label (", ", "=", quotes, spaces):
    the names that wrote two bins alike ("x" and "x, b=y" crossed with "y, b=z" and "z")."""
    return st.lists(st.text(LEVEL_CHARACTERS, min_size=1, max_size=6), min_size=1, max_size=max_levels, unique=True)


#: indices as a user may give them to `from_arrays`: whole numbers in any dtype, fractions, NaN, text, booleans
INDEX = st.one_of(st.integers(0, 3), st.sampled_from([0.0, 1.0, 2.0]), st.sampled_from([0.5, 1.5, 2.25]),
                  st.just(math.nan), st.sampled_from(["0", "1", "a"]), st.booleans())


def group_indices(n: int):
    """`n` group indices of mixed kinds (`INDEX`)."""
    return st.lists(INDEX, min_size=n, max_size=n)


#: weights near zero, in the normal range and below it, and ordinary ones
WEIGHTS = st.sampled_from([1.0, 0.5, 1e-3, 1e-100, 1e-300, 1e-310, 1e-320, 5e-324, 0.0])
