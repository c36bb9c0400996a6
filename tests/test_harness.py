"""The whole command line under awkward files: one table row per entry point, hypothesis making the files.

Every case must end in one of two ways, and never in a traceback:

* exit 0 and a valid output (a fit that loads with finite values, predictions with one
  probability per row, a report page...), or
* exit 2 with one line on stderr, and no output written;

and no input file may change (checked by hash, before and after). Mutations that keep the
data the same (a byte-order mark, UTF-16, CRLF, quoting, padded names, another delimiter given
with --sep, Parquet instead of CSV) must give the same result as the clean files.

Adding an entry point is one row in `ENTRY_POINTS` (`test_every_entry_point_has_a_row` fails
until it has one). A registered model's rows are made for it: `fit <name>` and `predict` from its
entry in `contract_cases.COMMAND_LINES` (its tables are `Table`s there), `simulate <name>` from its
contract case's `simulate` options. A row needs:

* ``name``: the words that pick the command ("fit wsc", "predict", "check");
* ``argv``: the command line, with ``{table}`` for each input table, ``{fit:MODEL}`` for a fit
  of that model (made once from the clean files by the row "fit MODEL"), and ``{out}`` (and
  ``{out2}``...) for each output;
* ``tables``: each input table's clean contents as a `Table` (a small DataFrame, its id
  columns and the numeric columns that values may be corrupted in);
* ``outputs``: each output placeholder and the name it gets: a file name ("fit.nc") or a
  folder name ending in "/" ("report/");
* ``check``: what a correct output is: `FIT`, `PREDICTIONS`, `REPORT`, `PRINTED`, or your own
  function ``check(paths, stdout, tables)`` that asserts on the outputs (``paths["out"]``...) and
  returns a value that the clean run's must equal when a mutation only changes the file's form;
* ``skip`` (optional): mutations that only the reader sees (`READING`), when another row already
  puts the same kind of table through the same reader;
* ``examples`` (optional): hypothesis cases per kind of mutation (default 1; 0 for a row without
  inputs). Every kind of mutation runs on every row; a case that fits costs about a second.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import os
import shutil
import stat
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contract_cases import (CASES, COMMAND_LINES, FEATURES, LABELED, NEW_ITEMS, PERCEPTION, SEED, SEEDS, SHARES,
                            STICKS, Table)

from bayes_wsc import registry
from bayes_wsc.cli import build_parser, main


# ---------------------------------------------------------------------- the rows
@dataclass(frozen=True)
class Entry:
    name: str
    argv: tuple[str, ...]
    tables: dict[str, Table] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    check: Callable | None = None
    examples: int = 1  # hypothesis cases per mutation (0: the row has no input to mutate)
    skip: tuple[str, ...] = ()  # mutations another row already puts through the same reader


def fit_check(paths, stdout, tables):
    """A fit that loads, with finite values; ids of the input kept as text among its coordinates."""
    from bayes_wsc import inference
    from bayes_wsc.estimator import load

    est = load(paths["out"])
    for name, values in est.idata_.posterior.data_vars.items():
        assert np.isfinite(values.values).all(), name
    posterior = est.idata_.posterior
    for name in [d for d in posterior.dims if d in posterior.coords]:  # one label per bin, group, cluster...
        labels = posterior[name].values
        assert len(set(map(str, labels))) == labels.size, (name, list(labels)[:8])
    coords = {str(v) for ds in inference.groups_of(est.idata_).values()
              for c in ds.coords.values() if c.dtype.kind in "OUT" for v in np.ravel(c.values)}
    for table in tables.values():
        for column in table.ids:
            if column in table.frame.columns and column not in ("expert", "label", "j"):
                assert set(table.frame[column].astype(str)) & coords, (column, sorted(coords)[:5])
        for column in table.levels:  # every level as written ('1' and '01' two levels), none merged
            assert set(table.frame[column].astype(str)) <= coords, (column, sorted(coords)[:5])
    return {n: v.values for n, v in est.idata_.posterior.data_vars.items()}


def predictions_check(paths, stdout, tables):
    """One row per input row, every input column kept, probabilities in [0, 1] and never empty."""
    out = pd.read_csv(paths["out"], keep_default_na=False, dtype=str)
    (items,) = [t.frame for t in tables.values()]
    assert len(out) == len(items)
    assert [c.strip() for c in out.columns[:items.shape[1]]] == [str(c).strip() for c in items.columns]
    for column in out.columns[items.shape[1]:]:
        if column.startswith(("prob", "cluster_prob")) and not column.endswith(("_low", "_high")):
            values = out[column].astype(float)
            assert ((values >= 0) & (values <= 1)).all(), column
    for column in next(iter(tables.values())).ids:
        assert list(out.iloc[:, list(items.columns).index(column)]) == list(items[column].astype(str))
    written = list(csv.reader(io.StringIO(items.to_csv(index=False, lineterminator="\n"))))[1:]
    assert out.iloc[:, :items.shape[1]].values.tolist() == written, "an input cell was not written back as read"
    # a MAP fit's interval cells are empty on purpose (no interval without draws); a column of class
    # names (the proportions model's `class`) is compared by its codes in order of appearance
    added = out.iloc[:, items.shape[1]:].replace("", "nan")
    for column in added.columns:
        if pd.to_numeric(added[column], errors="coerce").isna().all() and added[column].ne("nan").any():
            added[column] = pd.factorize(added[column])[0]
    return added.astype(float).to_numpy()



def lpe_check(paths, stdout, tables):
    """baseline lpe: every items row and column kept, ids as text, memberships in [0, 1], every item in a cluster."""
    out = pd.read_csv(paths["out"], keep_default_na=False, dtype=str)
    items = tables["items"].frame
    assert len(out) == len(items) and list(out["id"]) == list(items["id"].astype(str))
    assert [c.strip() for c in out.columns[:items.shape[1]]] == [str(c).strip() for c in items.columns]
    weights = out[[c for c in out.columns if c.startswith("membership_")]].astype(float).to_numpy()
    assert ((weights >= 0) & (weights <= 1)).all()
    assert (out["clusters"] != "").all() and set(out["cluster"]) <= set(tables["perception"].frame["cluster"])
    return out[[c for c in out.columns if c.startswith(("membership_", "embedding_"))]].astype(float).to_numpy()


def llp_check(paths, stdout, tables):
    """An LLP model that loads and labels every item of the training table."""
    from bayes_wsc.baselines.proportions import LLPModel

    model = LLPModel.load(paths["out"])
    items = tables["items"].frame
    assert set(model.predict(items)["class"]) <= set(tables["proportions"].frame.columns[1:])
    return model.labels


def report_check(paths, stdout, tables):
    page = (Path(paths["out"]) / "report.html").read_text(encoding="utf-8")
    assert page.rstrip().endswith("</html>")
    return None


def printed_check(paths, stdout, tables):
    assert "Diagnostics" in stdout
    return stdout


def checks_check(paths, stdout, tables):
    """One row per check, every column, the flagged ones also printed."""
    table = pd.read_csv(paths["out"])
    assert list(table.columns) == ["check", "statistic", "reference", "p_value", "flagged", "message", "effect",
                                   "tolerance"]
    assert len(table) >= 1 and "flagged" in stdout
    return table[["statistic", "reference", "p_value"]].to_numpy(dtype=float)


def ppc_check(paths, stdout, tables):
    """Replicated statistics that ArviZ reads, beside the observed ones."""
    import arviz as az

    ppc = az.from_netcdf(paths["out"])
    assert set(ppc.posterior_predictive.data_vars) == set(ppc.observed_data.data_vars)
    return np.concatenate([v.values.ravel() for v in ppc.posterior_predictive.data_vars.values()])


def path_check(paths, stdout, tables):
    folder = Path(paths["out"])
    table = pd.read_csv(folder / "path.csv")
    assert len(table) == 2 and (folder / "report.html").exists()
    return table[["lam", "objective"]].to_numpy()


def simulate_check(paths, stdout, tables):
    """Every file the command declares, and nothing else; a truth file naming the model; the data as hashes
    (a simulation is a function of its seed)."""
    import json

    folder = Path(paths["out"])
    model = json.loads((folder / "truth.json").read_text(encoding="utf-8"))["model"]
    names = declared_type(next(e for e in ENTRY_POINTS if e.name == f"simulate {model}"), "out").contents
    assert sorted(p.name for p in folder.iterdir()) == sorted(names), sorted(p.name for p in folder.iterdir())
    for name in names:
        if name.endswith(".csv"):
            assert len(pd.read_csv(folder / name)) > 0, name
    assert "fit it with" in stdout
    return digest(folder)


#: mutations that only `read_table` sees: one row per reader of the same tables is enough
READING = ("encoding", "not utf-8", "newlines", "quoted", "delimiter", "names equal but for spaces", "repeated name",
           "nameless column", "empty", "garbage", "parquet", "nul byte", "huge name", "ragged row")
FIT, PREDICTIONS, REPORT, PRINTED = fit_check, predictions_check, report_check, printed_check


def model_rows(command: str) -> list[Entry]:
    """Every registered model's `fit <name>` rows (`command` "fit") or `predict` row ("predict"), from its
    `contract_cases.COMMAND_LINES` entry: a new model adds none here."""
    rows = []
    for name in [n for n in registry.NAMES if n in COMMAND_LINES]:
        line = COMMAND_LINES[name]
        if command == "fit":
            rows += [Entry(f"fit {name}", ("fit", name, *run.options, "--out", "{out}"), run.tables, {"out": "fit.nc"},
                           FIT, skip=() if run.reading else READING) for run in line.fits]
        else:
            rows.append(Entry("predict", ("predict", f"{{fit:{name}}}", "--items", "{items}", "--out", "{out}"),
                              {"items": line.predict}, {"out": "pred.csv"}, PREDICTIONS,
                              skip=() if line.predict_reading else READING))
    return rows


ENTRY_POINTS = [
    *model_rows("fit"),
    Entry("path pcmix", ("path", "pcmix", "--items", "{items}", "--components", "2", "--lams", "1,4", "--restarts", "2",
                         *SEED, "--out", "{out}"),
          {"items": LABELED}, {"out": "path/"}, path_check, skip=READING),
    Entry("baseline lpe", ("baseline", "lpe", "--items", "{items}", "--seeds", "{seeds}", "--perception",
                           "{perception}", "--restarts", "2", *SEED, "--out", "{out}"),
          {"items": FEATURES, "seeds": SEEDS, "perception": PERCEPTION}, {"out": "lpe.csv"}, lpe_check,
          skip=READING),
    Entry("baseline llp", ("baseline", "llp", "--items", "{items}", "--proportions", "{proportions}", "--k", "2",
                           "--out", "{out}"),
          {"items": STICKS, "proportions": SHARES}, {"out": "llp.json"}, llp_check, skip=READING),
    *model_rows("predict"),
    Entry("predict", ("predict", "{fit:llp}", "--items", "{items}", "--out", "{out}"),
          {"items": NEW_ITEMS}, {"out": "pred.csv"}, PREDICTIONS, skip=(*READING, "fit file")),
    Entry("report", ("report", "{fit:wsc}", "--out", "{out}"), {}, {"out": "report/"}, REPORT),
    Entry("report", ("report", "{fit:experts}", "--out", "{out}"), {}, {"out": "report/"}, REPORT),
    Entry("report", ("report", "{fit:pcmix}", "--out", "{out}"), {}, {"out": "report/"}, REPORT),
    Entry("report", ("report", "{fit:perception}", "--out", "{out}"), {}, {"out": "report/"}, REPORT),
    Entry("summary", ("summary", "{fit:wsc}"), {}, {}, PRINTED),
    Entry("summary", ("summary", "{fit:experts}"), {}, {}, PRINTED),
    Entry("check", ("check", "{fit:experts}", "--draws", "20", "--out", "{out}"), {}, {"out": "checks.csv"},
          checks_check),
    Entry("ppc", ("ppc", "{fit:pcmix}", "--draws", "20", "--out", "{out}"), {}, {"out": "ppc.nc"}, ppc_check),
    # simulations have no input: their clean run, and their output folder
    # the demo has no input; a successful run is minutes of NUTS, so only its output folder is tested
    Entry("demo", ("demo", "--out", "{out}"), {}, {"out": "demo/"}, None, examples=0),
    # every registered model's simulation, at its contract case's small options
    *(Entry(f"simulate {name}", ("simulate", name, *CASES[name].simulate, "--out", "{out}"), {}, {"out": "sim/"},
            simulate_check) for name in registry.NAMES),
]
ROW_IDS = [f"{e.name} {'+'.join(e.tables) or next((a for a in e.argv if a.startswith('{fit')), '')}".strip()
           for e in ENTRY_POINTS]


# ---------------------------------------------------------------------- how files are written
@dataclass
class Layout:
    """How one table is written: the contents and the format choices a mutation made."""

    frame: pd.DataFrame
    sep: str = ","
    encoding: str = "utf-8"
    newline: str = "\n"
    quoting: int = csv.QUOTE_MINIMAL
    header: Callable[[list[str]], list[str]] | None = None  # edits the header names
    suffix: str = ".csv"
    raw: bytes | None = None  # the file's bytes, replacing all of the above
    special: str | None = None  # "named pipe" or "link to /dev/zero": no regular file at all
    not_numbers: tuple[str, str] | None = None  # (column, Parquet type): that column of the Parquet file
    parts: bool = False  # a folder of Parquet parts, beside leftovers that are not parts

    def write(self, path: Path) -> Path:
        path = path.with_suffix(self.suffix)
        if self.special == "named pipe":
            os.mkfifo(path)
        elif self.special:
            path.symlink_to("/dev/zero")
        elif self.parts:  # Spark's layout: parts, its _temporary attempt, a hidden copy and _SUCCESS
            path = path.with_suffix("")
            (path / "_temporary" / "0").mkdir(parents=True)
            half = len(self.frame) // 2
            self.frame.iloc[:half].to_parquet(path / "part-0.parquet")
            self.frame.iloc[half:].to_parquet(path / "part-1.parquet")
            self.frame.to_parquet(path / "_temporary" / "0" / "part-1.parquet")
            self.frame.to_parquet(path / ".part-0.parquet")
            (path / "_SUCCESS").write_bytes(b"")
        elif self.not_numbers is not None:
            import pyarrow as pa
            import pyarrow.parquet as pq
            from strategies import parquet_column

            column, kind = self.not_numbers
            table = pa.Table.from_pandas(self.frame, preserve_index=False)
            position = table.schema.get_field_index(column)
            table = table.set_column(position, column, parquet_column(kind, len(self.frame)))
            pq.write_table(table, path)
        elif self.raw is not None:
            path.write_bytes(self.raw)
        elif self.suffix == ".parquet":
            self.frame.to_parquet(path)
        else:
            text = self.frame.to_csv(index=False, sep=self.sep, quoting=self.quoting, lineterminator=self.newline)
            if self.header is not None:
                head, _, rest = text.partition(self.newline)
                names = next(csv.reader([head], delimiter=self.sep))
                buffer = io.StringIO()
                csv.writer(buffer, delimiter=self.sep, lineterminator="", quoting=self.quoting).writerow(
                    self.header(names))
                text = buffer.getvalue() + self.newline + rest
            path.write_bytes(text.encode(self.encoding))
        return path


@dataclass
class Case:
    """What a mutation did, and what it must give: "same" (the clean result), "ok" (exit 0 and a
    valid output), "error" (exit 2, the message holding one of `words`) or "either"."""

    label: str
    expect: str = "either"
    words: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    fit_bytes: dict[str, bytes] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # further inputs by name ("{file:NAME}" in `extra`)
    long_names: bool = False  # every output's name as long as the file system holds, or one byte longer


# ---------------------------------------------------------------------- the mutations
BAD_CELLS = ("nan", "", "inf", "-inf", "1e300", "-1e300", "1e308", "abc", "NA", " ", "n.a.", "1,5", "--", "True", "None")
#: numbers a bad cell may hold: the command may take them or refuse them (too large); every other bad cell is an error
BAD_NUMBERS = ("1e300", "-1e300", "1e308")
#: words other programs write for a missing value: as ids they are names like any other
MARKER_WORDS = ("NA", "None", "null", "N/A", "nan", "NULL")


#: every mutation of a table, and how many hypothesis cases each gets per row (default 1)
TABLE_MUTATIONS = ("encoding", "not utf-8", "newlines", "quoted", "delimiter", "padded names",
                   "names equal but for spaces", "repeated name", "nameless column", "empty", "header only", "one row",
                   "bad cell", "padded ids", "mixed ids", "marker ids", "parquet", "garbage", "nul byte", "huge name",
                   "ragged row", "wide file", "numeric levels", "special file", "parquet types", "leftover parts",
                   "colliding levels", "blank label")
EXAMPLES = {"bad cell": 3, "mixed ids": 2, "delimiter": 2, "encoding": 2, "garbage": 2, "one row": 2,
            "parquet types": 2}
#: the tables a mutation applies to (by default, any)
NEEDS = {"leftover parts": lambda t: t.source, "colliding levels": lambda t: t.levels,
         "blank label": lambda t: t.labels, "parquet types": lambda t: t.numbers}
#: variant files a fit must refuse before it runs (`--model`), and the words that refuse each
VARIANTS = {
    "CHECKS of the wrong kind": ("def build_model(data, **settings):\n    raise RuntimeError('never built')\n\n"
                                 "CHECKS = 'x'\n", "CHECKS must be a tuple of functions"),
    "no likelihood": ("import pymc as pm\n\n\ndef build_model(data, **settings):\n    with pm.Model() as model:\n"
                      "        pm.Normal('z', 0.0, 1.0)\n    return model\n", "observes nothing"),
}


def fit_models(entry: Entry) -> list[str]:
    return [a[5:-1] for a in entry.argv if a.startswith("{fit:")]


def mutations(entry: Entry) -> list[str]:
    kinds = (["fit file"] if fit_models(entry) else []) + (list(TABLE_MUTATIONS) if entry.tables else [])
    if not any(t.levels for t in entry.tables.values()):
        kinds = [k for k in kinds if k != "numeric levels"]
    kinds = [k for k in kinds if k not in NEEDS or any(NEEDS[k](t) for t in entry.tables.values())]
    if entry.outputs and (entry.tables or fit_models(entry)):
        kinds.append("long output name")
    if entry.name.startswith("fit "):
        kinds.append("variant file")
    return [k for k in kinds if k not in entry.skip]


@st.composite
def mutated(draw, entry: Entry, fits: dict[str, Path], kind: str):
    """A `Case` and the `Layout` of every table of `entry`: one mutation of one table (or of all)."""
    layouts = {name: Layout(t.frame.copy()) for name, t in entry.tables.items()}
    fit_names = fit_models(entry)
    eligible = sorted(n for n in layouts if kind not in NEEDS or NEEDS[kind](entry.tables[n]))
    name = draw(st.sampled_from(eligible)) if eligible else None
    layout = layouts.get(name)
    table = entry.tables.get(name)
    if kind == "bad cell" and not table.numbers:
        kind = "mixed ids"
    if kind == "numeric levels" and not table.levels:
        kind = "marker ids"
    if kind in ("padded ids", "mixed ids", "marker ids", "nul byte") and not table.ids:
        kind = "bad cell" if table.numbers else "quoted"
    case = Case(kind)
    if kind == "fit file":
        blob = fits[fit_names[0]].read_bytes()
        how = draw(st.sampled_from(["truncated", "empty", "text"]))
        case.fit_bytes[fit_names[0]] = {"truncated": blob[: len(blob) // 3], "empty": b"",
                                         "text": b"group,he\na,1\n"}[how]
        case.label, case.expect, case.words = f"fit file {how}", "error", ("is not a netCDF fit",)
    elif kind == "encoding":
        layout.encoding = draw(st.sampled_from(["utf-8-sig", "utf-16"]))
        case.label, case.expect = f"{layout.encoding} text", "same"
    elif kind == "not utf-8":
        layout.encoding = "latin-1"
        layout.header = lambda names: [*names[:-1], names[-1] + "\u00e9"]
        case.expect, case.words = "error", ("not UTF-8",)
    elif kind == "newlines":
        layout.newline = draw(st.sampled_from(["\r\n", "\r"]))
        case.expect = "same"
    elif kind == "quoted":
        layout.quoting = csv.QUOTE_ALL
    elif kind == "delimiter":
        sep = draw(st.sampled_from([";", "\t", "|"]))
        given = draw(st.booleans())
        for other in layouts.values():  # --sep is for every CSV file of the command
            other.sep = sep
        case.label = f"delimiter {sep!r}{' with --sep' if given else ''}"
        if given:
            case.extra, case.expect = ("--sep", sep), "same"
        else:
            case.expect, case.words = "error", ("seems to use",)
    elif kind == "padded names":
        pads = draw(st.lists(st.sampled_from(["", " ", "  "]), min_size=4, max_size=4))
        layout.header = lambda names: [pads[i % 2] + n + pads[2 + i % 2] for i, n in enumerate(names)]
        case.expect = "same"
    elif kind == "names equal but for spaces":
        layout.frame = layout.frame.assign(**{"__copy": layout.frame.iloc[:, 0]})
        layout.header = lambda names: [*names[:-1], f" {names[0]}"]
        case.expect, case.words = "error", ("the same but for spaces",)
    elif kind == "repeated name":
        layout.header = lambda names: [*names[:-1], names[0]]
        case.expect, case.words = "error", ("twice",)
    elif kind == "nameless column":
        layout.header = lambda names: [*names[:-1], ""]
        case.expect, case.words = "error", ("without a name",)
    elif kind == "empty":
        layout.raw = draw(st.sampled_from([b"", b"\n\n", b"\xef\xbb\xbf"]))
        case.expect, case.words = "error", ("is empty",)
    elif kind == "header only":
        layout.frame = layout.frame.iloc[:0]
        case.expect, case.words = "error", ("has no rows",)
    elif kind == "one row":
        layout.frame = layout.frame.iloc[:1]
    elif kind == "bad cell":
        column = draw(st.sampled_from(table.numbers))
        row = draw(st.integers(0, len(layout.frame) - 1))
        value = draw(st.sampled_from(BAD_CELLS))
        frame = layout.frame.astype({column: object})
        frame.loc[frame.index[row], column] = value
        layout.frame = frame
        case.label = f"{column} row {row + 1} = {value!r}"
        if value not in BAD_NUMBERS:  # never dropped, never read as something else: an error naming the column
            case.expect, case.words = "error", (repr(column),)
    elif kind == "padded ids":
        width = draw(st.integers(3, 5))
        mapping = {}
        for other in (entry.tables[n] for n in layouts):
            for column in other.ids:
                if column in ("expert", "label"):
                    continue
                for value in other.frame[column]:
                    mapping.setdefault(str(value), str(len(mapping) + 1).zfill(width))
        for other_name, other in layouts.items():
            for column in entry.tables[other_name].ids:
                if column not in ("expert", "label"):
                    other.frame = other.frame.assign(**{column: other.frame[column].astype(str).map(mapping)})
        case.label = f"ids zero-padded to {width} digits"
        case.expect = "ok"  # kept as written: a fit's coordinates and predict's output show them
    elif kind == "mixed ids":
        column = draw(st.sampled_from(table.ids))
        row = draw(st.integers(0, len(layout.frame) - 1))
        value = draw(st.sampled_from([7, 7.0, "7.0", True, "", " g0", "g0 "]))
        frame = layout.frame.astype({column: object})
        frame.loc[frame.index[row], column] = value
        layout.frame = frame
        case.label = f"id {column} row {row + 1} = {value!r}"
    elif kind == "marker ids":
        column = draw(st.sampled_from([c for c in table.ids if c != "expert"] or list(table.ids)))
        old = str(layout.frame[column].iloc[0])
        word = draw(st.sampled_from(MARKER_WORDS))
        for other_name, other in layouts.items():  # the same id renamed in every table that holds it
            for name_ in entry.tables[other_name].ids:
                other.frame = other.frame.assign(**{name_: other.frame[name_].astype(str).replace({old: word})})
        case.label, case.expect = f"id {old!r} of {column} renamed {word!r}", "ok"
    elif kind == "nul byte":
        column = draw(st.sampled_from(table.ids))
        frame = layout.frame.astype({column: object})
        frame.loc[frame.index[0], column] = f"{frame[column].iloc[0]}\x00x"
        layout.frame = frame
        case.label, case.expect, case.words = f"NUL in {column}", "error", ("NUL",)
    elif kind == "huge name":
        width = draw(st.sampled_from([1_001, 131_073, 300_000]))
        layout.header = lambda names: [*names[:-1], "x" * width]
        case.label, case.expect, case.words = f"a name of {width} characters", "error", ("characters",)
    elif kind == "ragged row":
        text = layout.frame.to_csv(index=False, lineterminator="\n").rstrip("\n").split("\n")
        row = draw(st.integers(1, len(text) - 1))
        short = draw(st.booleans())
        text[row] = text[row].rsplit(",", 1)[0] if short else text[row] + ",extra"
        layout.raw = ("\n".join(text) + "\n").encode()
        case.label, case.expect, case.words = f"row {row} {'short' if short else 'long'}", "error", (f"row {row} ",)
    elif kind == "numeric levels":
        column = draw(st.sampled_from(table.levels))
        spellings = ["1", "01", "001", "1.0", "2", "02"]
        levels = list(dict.fromkeys(layout.frame[column].astype(str)))
        layout.frame = layout.frame.assign(**{column: layout.frame[column].astype(str).map(
            dict(zip(levels, spellings)))})
        case.label, case.expect = f"levels of {column} written {spellings[:len(levels)]}", "ok"
    elif kind == "wide file":
        width = draw(st.sampled_from([65, 130]))
        layout.frame = layout.frame.assign(**{f"w{k}": "a" for k in range(width)})
        case.label = f"{width} more columns"
    elif kind == "parquet":
        layout.suffix = ".parquet"
        case.expect = "same"
    elif kind == "garbage":
        layout.raw = draw(st.binary(min_size=1, max_size=200))
        case.expect = "either"
    elif kind == "special file":
        layout.special = draw(st.sampled_from(["named pipe", "link to /dev/zero"]))
        case.label, case.expect, case.words = f"a {layout.special}", "error", ("not a regular file",)
    elif kind == "parquet types":
        from strategies import PARQUET_NOT_NUMBERS

        column = draw(st.sampled_from(table.numbers))
        layout.suffix, layout.not_numbers = ".parquet", (column, draw(st.sampled_from(PARQUET_NOT_NUMBERS)))
        case.label, case.expect, case.words = f"{column} as Parquet {layout.not_numbers[1]}", "error", (repr(column),)
    elif kind == "leftover parts":
        layout.parts = True
        case.label, case.expect = "a folder of parts beside _temporary/, hidden and _SUCCESS files", "same"
    elif kind == "colliding levels":
        column = table.levels[0]
        levels = list(dict.fromkeys(layout.frame[column].astype(str)))
        row = np.arange(len(layout.frame))
        layout.frame = layout.frame.assign(**{
            column: layout.frame[column].astype(str).map(dict(zip(levels, ["x", "x, b=y", 'x"', " x"]))),
            "b": np.where(row % 3 == 0, "y, b=z", "z")})
        case.label, case.expect = f"levels of {column} and b that write one bin label twice", "ok"
    elif kind == "blank label":
        column = table.labels[0]
        labelled = np.flatnonzero(layout.frame[column].notna().to_numpy())
        row = int(labelled[draw(st.integers(0, labelled.size - 1))])
        value = draw(st.sampled_from(["   ", "\t", " 1", "1 "]))
        frame = layout.frame.astype({column: object})
        frame.loc[frame.index[row], column] = value
        layout.frame = frame
        case.label = f"label {value!r} in row {row + 1}"
        if not value.strip():
            case.expect, case.words = "error", (f"(row {row + 1})",)
        else:  # a class of its own, as written
            case.expect = "ok"
    elif kind == "long output name":
        case.long_names, case.expect = True, "error"
        case.words = ("the temporary file written first", "longer than the")
    elif kind == "variant file":
        which = draw(st.sampled_from(sorted(VARIANTS)))
        case.files["variant.py"], words = VARIANTS[which]
        case.label, case.extra, case.expect, case.words = which, ("--model", "{file:variant.py}"), "error", (words,)
    if kind == "quoted":
        case.expect = "same"
    case.label = f"{name or ''}: {case.label}"
    return case, layouts


# ---------------------------------------------------------------------- running a case
def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of the command line run in this process; Python warnings
    count as stderr lines, as they would be in a process of its own."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code
    shown = [f"{w.category.__name__}: {w.message}" for w in seen
             if not issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning, FutureWarning))]
    return code, out.getvalue(), err.getvalue() + "".join(f"{line}\n" for line in shown)


def build_argv(entry: Entry, inputs: Path, outputs: Path, files: dict[str, Path], fits: dict[str, Path],
               extra=()) -> tuple[list[str], dict[str, str]]:
    paths = {key: str(outputs / name.rstrip("/")) for key, name in entry.outputs.items()}
    argv = []
    for arg in entry.argv:
        if arg.startswith("{fit:"):
            argv.append(str(fits[arg[5:-1]]))
        elif arg.startswith("{") and arg[1:-1] in files:
            argv.append(str(files[arg[1:-1]]))
        elif arg.startswith("{") and arg[1:-1] in paths:
            argv.append(paths[arg[1:-1]])
        else:
            argv.append(arg)
    return argv + list(extra), paths


def nothing_written(paths: dict[str, str]) -> bool:
    for path in map(Path, paths.values()):
        try:
            if path.is_file() or (path.is_dir() and any(path.iterdir())):
                return False
        except OSError:  # a name longer than the file system holds: nothing is there
            continue
    return True


def run_case(entry: Entry, layouts: dict[str, Layout], case: Case, fits: dict[str, Path], workdir: Path):
    """Write the files, run, check the contract; returns (exit code, the check's value or None)."""
    inputs, outputs = workdir / "in", workdir / "out"
    inputs.mkdir()
    outputs.mkdir()
    files = {name: layout.write(inputs / name) for name, layout in layouts.items()}
    used_fits = {}
    for model, fit in fits.items():
        used_fits[model] = inputs / f"fit_{model}.nc"
        used_fits[model].write_bytes(case.fit_bytes.get(model, fit.read_bytes()))
    for file_name, text in case.files.items():
        (inputs / file_name).write_text(text)
    extra = [str(inputs / a[6:-1]) if a.startswith("{file:") else a for a in case.extra]
    argv, paths = build_argv(entry, inputs, outputs, files, used_fits, extra)
    if case.long_names:  # a file's name as long as the file system holds (its temporary name is longer)
        for key, path in list(paths.items()):
            name = Path(path).name
            long = (name + "x" * 256)[:256] if entry.outputs[key].endswith("/") else \
                "x" * (255 - len(name)) + name
            argv = [str(Path(path).with_name(long)) if a == path else a for a in argv]
            paths[key] = str(Path(path).with_name(long))
    before = digest(inputs)
    code, stdout, stderr = run_cli(argv)
    assert digest(inputs) == before, f"{case.label}: an input file changed"
    assert "Traceback" not in stderr, f"{case.label}: {stderr}"
    assert code in (0, 2), f"{case.label}: exit {code}: {stderr}"
    value = None
    if code == 2:
        lines = stderr.strip().splitlines()
        assert len(lines) == 1, f"{case.label}: {stderr}"
        assert nothing_written(paths), f"{case.label}: exit 2 but an output was written"
        assert case.expect in ("error", "either"), f"{case.label}: expected success, got: {stderr.strip()}"
        if case.words:
            assert any(w in stderr for w in case.words), f"{case.label}: {stderr.strip()}"
    else:
        assert case.expect != "error", f"{case.label}: expected an error, got exit 0"
        frames = {n: Table(layouts[n].frame, t.ids, t.numbers) for n, t in entry.tables.items()}
        value = entry.check(paths, stdout, frames) if entry.check else None
        for path in paths.values():
            assert not list(Path(path).parent.glob(".*.tmp")), "a temporary file was left behind"
    return code, value


# ---------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    """The clean result of every row, and the fits that predict, report and summary read (made by
    the rows 'fit MODEL' from the clean files)."""
    root = tmp_path_factory.mktemp("harness")
    fits, clean = {}, {}
    order = sorted(range(len(ENTRY_POINTS)), key=lambda i: not ENTRY_POINTS[i].name.startswith(("fit ", "baseline ")))
    for i in order:
        entry = ENTRY_POINTS[i]
        if entry.examples == 0:
            continue
        workdir = Path(tempfile.mkdtemp(dir=root))
        layouts = {name: Layout(t.frame.copy()) for name, t in entry.tables.items()}
        code, value = run_case(entry, layouts, Case("clean", expect="ok"), fits, workdir)
        assert code == 0, entry.name
        clean[i] = value
        model = entry.argv[1] if entry.name.startswith(("fit ", "baseline ")) else None
        if model and model not in fits:  # a baseline's model file is read by predict as a fit is
            fits[model] = root / f"fit_{model}.nc"
            shutil.copy(workdir / "out" / entry.outputs["out"], fits[model])
    return root, fits, clean


def same_value(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(np.allclose(a[k], b[k], rtol=1e-6, atol=1e-9) for k in a)
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and np.allclose(a, b, rtol=1e-6, atol=1e-9, equal_nan=True)
    return a == b


# ---------------------------------------------------------------------- the tests
MUTATION_CASES = [pytest.param(i, kind, id=f"{ROW_IDS[i]}: {kind}") for i, e in enumerate(ENTRY_POINTS)
                  if e.examples for kind in mutations(e)]


@pytest.mark.parametrize("index, kind", MUTATION_CASES)
def test_malformed_files(harness, index, kind):
    """Hypothesis-made files of one kind through one entry point: the contract of the module docstring."""
    check_mutations(harness, index, kind, ENTRY_POINTS[index].examples * EXAMPLES.get(kind, 1), derandomize=True)


@pytest.mark.slow
@pytest.mark.parametrize("index", [i for i, e in enumerate(ENTRY_POINTS) if e.examples],
                         ids=[r for r, e in zip(ROW_IDS, ENTRY_POINTS) if e.examples])
def test_malformed_files_at_random(harness, index):
    """The same, many random cases of every kind per entry point."""
    check_mutations(harness, index, None, 40 * ENTRY_POINTS[index].examples, derandomize=False)


def check_mutations(harness, index: int, kind: str | None, examples: int, derandomize: bool):
    entry = ENTRY_POINTS[index]
    root, fits, clean = harness
    needed = {m: fits[m] for m in fit_models(entry)}
    kinds = st.just(kind) if kind else st.sampled_from(mutations(entry))

    @settings(max_examples=examples, deadline=None, derandomize=derandomize, database=None,
              suppress_health_check=list(HealthCheck))
    @given(kinds.flatmap(lambda k: mutated(entry, needed, k)))
    def case_holds(drawn):
        case, layouts = drawn
        workdir = Path(tempfile.mkdtemp(dir=root))
        try:
            started = time.perf_counter()
            code, value = run_case(entry, layouts, case, needed, workdir)
            if os.environ.get("HARNESS_VERBOSE"):
                print(f"\n  {ROW_IDS[index]} | {case.label} | expect {case.expect} | exit {code} | "
                      f"{time.perf_counter() - started:.2f} s", end="")
            if case.expect == "same":
                assert code == 0 and same_value(value, clean[index]), f"{case.label}: not the clean result"
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    case_holds()


ALIASES = ("same path", "hard link", "symbolic link")


def declared_type(entry: Entry, output: str):
    """The argparse type that declares an output of `entry` (see `bayes_wsc.outputs`)."""
    parser = build_parser()
    for word in entry.argv:
        subs = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
        if not subs or word not in subs[0].choices:
            break
        parser = subs[0].choices[word]
    option = entry.argv[entry.argv.index("{" + output + "}") - 1]
    (action,) = [a for a in parser._actions if option in a.option_strings]
    return action.type


def alias_cases():
    for index, entry in enumerate(ENTRY_POINTS):
        inputs = list(entry.tables) + [a[1:-1] for a in entry.argv if a.startswith("{fit:")]
        for output in entry.outputs:
            for source in inputs:
                for how in ALIASES:
                    yield pytest.param(index, output, source, how, id=f"{ROW_IDS[index]}: {output}={source} {how}")


@pytest.mark.parametrize("index, output, source, how", list(alias_cases()))
def test_outputs_never_replace_inputs(harness, tmp_path, index, output, source, how):
    """An output that is an input (the same path, a hard link or a symbolic link to it; for a folder
    output, the input under a name the command writes there) is refused before any work."""
    entry = ENTRY_POINTS[index]
    _, fits, _ = harness
    inputs, outputs = tmp_path / "in", tmp_path / "out"
    inputs.mkdir()
    outputs.mkdir()
    files = {name: Layout(t.frame).write(inputs / name) for name, t in entry.tables.items()}
    used_fits = {}
    for model, fit in fits.items():
        used_fits[model] = inputs / f"fit_{model}.nc"
        shutil.copy(fit, used_fits[model])
    argv, paths = build_argv(entry, inputs, outputs, files, used_fits)
    target = files.get(source) or used_fits[source[4:]]
    position = argv.index(paths[output])
    folder = entry.outputs[output].endswith("/")
    if folder:  # the input, or a link to it, sits in the output folder under a name the command writes there
        name = declared_type(entry, output).contents[0].replace("*", "1")
        place = outputs / "folder" / name
        place.parent.mkdir()
        argv[position] = str(place.parent)
    else:
        place = outputs / "alias"
        argv[position] = str(place)
    if how == "same path":
        if folder:
            shutil.move(target, place)
            argv = [str(place) if a == str(target) else a for a in argv]
            target = place
        else:
            argv[position] = str(target)
    elif how == "hard link":
        place.hardlink_to(target)
    else:
        place.symlink_to(target)
    before = digest(inputs) | digest(outputs)
    code, _, stderr = run_cli(argv)
    assert code == 2 and len(stderr.strip().splitlines()) == 1, stderr
    assert "which it would replace" in stderr, stderr
    assert digest(inputs) | digest(outputs) == before


@pytest.mark.parametrize("index", [i for i, e in enumerate(ENTRY_POINTS) if e.outputs], ids=[
    ROW_IDS[i] for i, e in enumerate(ENTRY_POINTS) if e.outputs])
def test_unwritable_outputs_fail_before_any_work(harness, tmp_path, index, monkeypatch):
    """An output folder that is a file, an output file that is a folder, a folder that cannot be
    created: one line naming the user's path, before any file is read."""
    entry = ENTRY_POINTS[index]
    _, fits, _ = harness
    files = {name: Layout(t.frame).write(tmp_path / name) for name, t in entry.tables.items()}
    argv, paths = build_argv(entry, tmp_path, tmp_path, files, fits)
    output, path = next(iter(paths.items()))
    folder = entry.outputs[output].endswith("/")
    Path(path).mkdir() if not folder else Path(path).write_text("in the way")
    import bayes_wsc.data.tables as tables

    monkeypatch.setattr(tables, "read_table", lambda *a, **k: pytest.fail("read an input before checking outputs"))
    code, _, stderr = run_cli(argv)
    assert code == 2 and len(stderr.strip().splitlines()) == 1 and repr(path) in stderr, stderr
    # under a file: a folder cannot be made there
    (tmp_path / "blocker").write_text("a file")
    argv[argv.index(path)] = str(tmp_path / "blocker" / "deeper" / Path(path).name)
    code, _, stderr = run_cli(argv)
    assert code == 2 and "blocker" in stderr and "is a file, not a folder" in stderr, stderr


@pytest.mark.parametrize("index", [i for i, e in enumerate(ENTRY_POINTS) if e.outputs], ids=[
    ROW_IDS[i] for i, e in enumerate(ENTRY_POINTS) if e.outputs])
def test_outputs_onto_a_pipe_are_refused(harness, tmp_path, index):
    """An output path that is a named pipe (as /dev/null or /dev/stdout would be a device): one line, exit 2,
    before any work, and the pipe is still a pipe."""
    entry = ENTRY_POINTS[index]
    _, fits, _ = harness
    files = {name: Layout(t.frame).write(tmp_path / name) for name, t in entry.tables.items()}
    argv, paths = build_argv(entry, tmp_path, tmp_path, files, fits)
    output, path = next(iter(paths.items()))
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    if entry.outputs[output].endswith("/"):  # a folder output: the pipe where the command writes its file
        name = declared_type(entry, output).contents[0].replace("*", "1")
        Path(path).mkdir()
        pipe.rename(Path(path) / name)
        pipe = Path(path) / name
    else:
        argv[argv.index(path)] = str(pipe)
    code, _, stderr = run_cli(argv)
    assert code == 2 and len(stderr.strip().splitlines()) == 1, stderr
    assert stat.S_ISFIFO(os.stat(pipe).st_mode)


def test_every_entry_point_has_a_row():
    """A command added to the parser without a row here is not yet tested: add one (see the docstring)."""
    parser = build_parser()

    def commands(parser, prefix=()):
        subs = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
        if not subs:
            yield " ".join(prefix)
            return
        for name, sub in subs[0].choices.items():
            yield from commands(sub, (*prefix, name))

    missing = sorted(set(commands(parser)) - {e.name for e in ENTRY_POINTS})
    assert not missing, f"entry points without a row in ENTRY_POINTS: {missing}"


def test_every_model_has_its_rows():
    """Each registered model's fit and predict rows come from its entry in `contract_cases.COMMAND_LINES`."""
    missing = sorted(set(registry.NAMES) - set(COMMAND_LINES))
    assert not missing, f"tests/contract_cases.py: COMMAND_LINES has no entry for {missing}"
    assert set(COMMAND_LINES) <= set(registry.NAMES), sorted(set(COMMAND_LINES) - set(registry.NAMES))


def test_every_output_option_is_declared():
    """--out and --report of every command go through bayes_wsc.outputs (checked before the work)."""
    parser = build_parser()

    def walk(parser, prefix=()):
        for action in parser._actions:
            if action.__class__.__name__ == "_SubParsersAction":
                for name, sub in action.choices.items():
                    yield from walk(sub, (*prefix, name))
            elif action.dest in ("out", "report"):
                yield " ".join(prefix), action

    for command, action in walk(parser):
        assert getattr(action.type, "role", None) == "output", f"{command} {action.option_strings}: not declared"
