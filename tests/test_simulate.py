"""`bayes-wsc simulate MODEL`: the files each fit reads, the truth beside them, and a folder never overwritten.

Fitting the default simulation of every model is `tests/test_readme_blocks.py`; here every other
source (the UCI and digits data sets, the other emissions and studies) goes through the data
container its fit builds, without fitting, and the truth is checked against the data.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayes_wsc import registry
from bayes_wsc.data.tables import read_table
from bayes_wsc.testing import cli


def run(*argv) -> tuple[int, str, str]:
    return cli(argv)  # exit code, stdout, stderr


def table(folder: Path, name: str, ids=()) -> pd.DataFrame:
    return read_table(folder / name, name, text_columns=ids)


def truth(folder: Path) -> dict:
    return json.loads((folder / "truth.json").read_text(encoding="utf-8"))


# ---------------------------------------------------------------------- each model's files and truth
def test_wsc(tmp_path):
    from bayes_wsc.data.grouped import GroupedCounts

    assert run("simulate", "wsc", "--out", tmp_path, "--n-groups", "12", "--group-size", "7", "--n-bins", "4",
               "--seed", "3")[0] == 0
    data = GroupedCounts.from_frames(table(tmp_path, "clicks.csv", ["group"]), table(tmp_path, "groups.csv", ["group"]))
    facts = truth(tmp_path)
    assert (data.n_groups, data.n_bins, int(data.n_items.sum())) == (12, 4, 84)
    assert sorted(facts["rho"]) == sorted(data.bins.labels) and sorted(facts["mu"]) == sorted(data.group_ids)
    assert facts["seed"] == 3 and abs(sum(facts["w0"].values()) - 1) < 1e-12


@pytest.mark.parametrize("extra", [(), ("--dataset", "iris", "--n-constraints", "40"),
                                   ("--dataset", "breast_cancer", "--alpha", "0.9,0.9", "--n-constraints", "20")])
def test_experts(tmp_path, extra):
    from bayes_wsc.data.pairwise import PairwiseConstraints

    args = extra or ("--n-items", "40", "--pairs-per-expert", "50", "--clusters", "2")
    assert run("simulate", "experts", "--out", tmp_path, *args)[0] == 0
    items = table(tmp_path, "items.csv", ["id"])
    constraints = table(tmp_path, "constraints.csv", ["expert", "i", "j"])
    data = PairwiseConstraints.from_frames(items, constraints)
    facts, true = truth(tmp_path), table(tmp_path, "truth.csv", ["id", "cluster"])
    assert list(true["id"]) == list(items["id"]) and data.n_experts == len(facts["omega"])
    cluster = dict(zip(true["id"], true["cluster"]))
    for expert, rows in constraints.groupby("expert"):  # the realized accuracies are those of the files
        same = np.array([cluster[i] == cluster[j] for i, j in zip(rows["i"], rows["j"])])
        link = rows["link"].to_numpy(dtype=float)
        assert np.isclose(link[same].mean(), facts["realized_alpha"][expert])
        assert np.isclose(1 - link[~same].mean(), facts["realized_beta"][expert])
    if extra:
        assert len(constraints) == int(extra[-1]) * data.n_experts and "W" not in facts
    else:
        assert set(true["cluster"]) <= {"0", "1"} and len(facts["W"]) == 4
        assert facts["weight_scale"] == "prior" and (facts["settings"]["prior_sd"], facts["settings"]["intercept_sd"]) \
            == (1.0, 2.0) and "fit's prior at prior_sd=1, intercept_sd=2" in facts["differs_from_the_fit"]


def test_experts_scale_of_the_weights(tmp_path):
    """W from the fit's prior by default (entries of sd prior_sd before centring), at `separation` on request."""
    from bayes_wsc.simulate.experts import simulate_experts_model

    spread = {}
    for scale in ({}, {"prior_sd": 3.0}, {"separation": 3.0}):
        truths = [simulate_experts_model(20, 50, 3, (0.9,), (0.9,), 10, **scale, seed=s)[2] for s in range(20)]
        W = np.concatenate([t.W.ravel() for t in truths])
        spread[tuple(scale.items())] = (W.std() / np.sqrt(2 / 3), {t.weight_scale for t in truths},  # centring: 2/3
                                        np.concatenate([t.b for t in truths]))
    (prior, kinds, b), (wide, _, _), (clear, clear_kinds, clear_b) = spread.values()
    assert abs(prior - 1) < 0.05 and abs(wide - 3) < 0.15 and abs(clear - 3) < 0.15, (prior, wide, clear)
    assert kinds == {"prior"} and clear_kinds == {"separation"} and not clear_b.any()
    assert abs(b.std() / np.sqrt(2 / 3) - 2) < 0.5  # intercept_sd 2, from 60 draws
    assert run("simulate", "experts", "--out", tmp_path, "--n-items", "30", "--pairs-per-expert", "40",
               "--separation", "3")[0] == 0
    facts = truth(tmp_path)
    assert facts["weight_scale"] == "separation" and "sd 3 on the raw features" in facts["differs_from_the_fit"]
    code, _, err = run("simulate", "experts", "--out", tmp_path / "both", "--separation", "3", "--prior-sd", "2")
    assert code == 2 and "not both" in err


@pytest.mark.parametrize("extra", [("--n-items", "60", "--labeled-fraction", "0.25"), ("--study", "intervals")])
def test_pcmix(tmp_path, extra):
    from bayes_wsc.data.labeled import LabeledItems

    assert run("simulate", "pcmix", "--out", tmp_path, *extra)[0] == 0
    items = table(tmp_path, "items.csv", ["id", "y"])
    data = LabeledItems.from_frame(items, label_col="y", id_col="id")
    true = table(tmp_path, "truth.csv", ["id"])
    labeled = true["labeled"].to_numpy(dtype=int) == 1
    assert data.n_labeled == labeled.sum() == (15 if extra[0] == "--n-items" else 350)
    assert (items["y"][labeled].astype(int).to_numpy() == true["y"][labeled].to_numpy(dtype=int)).all()
    facts = truth(tmp_path)
    assert facts["components"] == (["blob 1", "blob 2"] if extra[0] == "--n-items" else ["A", "B", "C"])
    source = true["source"].to_numpy()
    y = true["y"].to_numpy(dtype=int)
    x = items.drop(columns=["id", "y"]).to_numpy(dtype=float)
    for k, name in enumerate(facts["components"]):  # the sources' parameters against the items they drew
        members = source == name
        tolerance = 4 / np.sqrt(members.sum())  # about 4 standard errors
        assert abs(members.mean() - facts["pi"][name]) < tolerance
        assert abs(y[members].mean() - facts["rho"][name]) < tolerance
        assert np.allclose(x[members].mean(axis=0), list(facts["mean"][name].values()), atol=2 * tolerance)
        assert np.allclose(x[members].std(axis=0), list(facts["sd"][name].values()), atol=2 * tolerance)


@pytest.mark.parametrize("extra", [(), ("--emission", "gaussian", "--n-classes", "3"),
                                   ("--emission", "categorical", "--n-bins", "4"),
                                   ("--dataset", "wine", "--group-size", "10")])
def test_proportions(tmp_path, extra):
    from bayes_wsc.data.proportions import LabelProportions

    sizes = () if "--dataset" in extra else ("--n-groups", "6")
    assert run("simulate", "proportions", "--out", tmp_path, *sizes, *extra)[0] == 0
    items = table(tmp_path, "items.csv", ["id", "group"])
    proportions = table(tmp_path, "proportions.csv", ["group"])
    data = LabelProportions.from_frames(items, proportions, id_col="id", categorical="categorical" in extra)
    assert data.counts is not None  # whole counts: `fit proportions` takes the exact-counts likelihood
    true = table(tmp_path, "truth.csv", ["id", "group", "class"])
    shares = pd.crosstab(true["group"], true["class"], normalize="index")
    given = proportions.set_index("group")[shares.columns].loc[shares.index]
    assert np.allclose(shares.to_numpy(), given.to_numpy(dtype=float))
    if "--dataset" in extra:
        assert len(items) == 178 and list(proportions.columns[1:]) == ["class_0", "class_1", "class_2"]
        x = items.drop(columns=["id", "group"]).to_numpy(dtype=float)
        assert x.min() == 0 and x.max() == 1  # Sec. 4.1: every feature scaled to [0, 1]


@pytest.mark.parametrize("extra", [("--n-items", "80", "--n-features", "12"), ("--dataset", "digits"),
                                   ("--study", "model", "--n-items", "300", "--seeds-per-cluster", "20")])
def test_perception(tmp_path, extra):
    from bayes_wsc.data.seeded import SeedSets

    assert run("simulate", "perception", "--out", tmp_path, *extra)[0] == 0
    items = table(tmp_path, "items.csv", ["id"])
    seeds = table(tmp_path, "seeds.csv", ["cluster", "id"])
    data = SeedSets.from_frames(items, seeds, table(tmp_path, "perception.csv", ["cluster"]))
    true = table(tmp_path, "truth.csv", ["id", "cluster", "clusters"])
    members = dict(zip(true["id"], true["clusters"].str.split(";")))
    if "model" in extra:  # coarsened at random: every seed's sets hold its cluster, and maybe one more
        sets = seeds.groupby("id")["cluster"].agg(set)
        assert all(members[i][0] in clusters for i, clusters in sets.items())
    else:
        assert all(cluster in members[i] for cluster, i in zip(seeds["cluster"], seeds["id"]))  # seeds are members
    facts = truth(tmp_path)
    assert data.n_clusters == len(facts["clusters"]) and np.isclose(sum(facts["pi"].values()), 1)
    if "model" in extra:  # pi is the mean of P(z | x) at the truth, so near the clusters' shares
        shares = true["cluster"].value_counts(normalize=True)
        assert all(abs(shares[name] - facts["pi"][name]) < 0.1 for name in facts["clusters"])
        assert "named as the conditional fit's posterior variables" in facts["parameters"]
    else:
        assert "W" not in facts and "no true W or b" in facts["parameters"]


# ---------------------------------------------------------------------- the truth names the fit's parameters
def fit_coords(est, data) -> dict[str, list[list[str]]]:
    """The coords of every estimand of `est`'s model on `data`, dim by dim."""
    model = est.build_model(data)
    return {name: [[str(c) for c in model.coords[dim]] for dim in model.named_vars_to_dims.get(name, ())]
            for name in est.estimands}


def truth_coords(value) -> list[list[str]]:
    """The keys of a truth entry, level by level ({name: value} or {row: {column: value}})."""
    keys = []
    while isinstance(value, dict):
        keys.append(list(value))
        value = next(iter(value.values()))
    return keys


SIMULATED_FITS = {  # model: (simulate options, the data container, the estimator, its exchangeable dim)
    "experts": (("--n-items", "40", "--pairs-per-expert", "50", "--clusters", "2"), "experts", "cluster"),
    "pcmix blobs": (("--n-items", "60"), "pcmix", "component"),
    "pcmix intervals": (("--study", "intervals"), "pcmix", "component"),
    "perception": (("--study", "model", "--n-items", "120", "--seeds-per-cluster", "10"), "perception", None),
}


@pytest.mark.parametrize("case", list(SIMULATED_FITS))
def test_truth_holds_every_parameter_the_fit_estimates(tmp_path, case):
    """Every estimand of the model fitted to `simulate`'s files is in truth.json, with the fit's
    coords (the exchangeable clusters or components by number), and finite."""
    from bayes_wsc.data.labeled import LabeledItems
    from bayes_wsc.data.pairwise import PairwiseConstraints
    from bayes_wsc.data.seeded import SeedSets
    from bayes_wsc.models.experts import NoisyExperts
    from bayes_wsc.models.pcmix import PCMixture
    from bayes_wsc.models.perception import PerceptionClustering

    options, model, exchangeable = SIMULATED_FITS[case]
    assert run("simulate", model, "--out", tmp_path, *options)[0] == 0
    facts = truth(tmp_path)
    if model == "experts":
        data = PairwiseConstraints.from_frames(table(tmp_path, "items.csv", ["id"]),
                                               table(tmp_path, "constraints.csv", ["expert", "i", "j"]))
        est = NoisyExperts(n_clusters=len(facts["b"]))
    elif model == "pcmix":
        data = LabeledItems.from_frame(table(tmp_path, "items.csv", ["id", "y"]), label_col="y", id_col="id")
        est = PCMixture(components=len(facts["components"]))
    else:
        data = SeedSets.from_frames(table(tmp_path, "items.csv", ["id"]),
                                    table(tmp_path, "seeds.csv", ["cluster", "id"]),
                                    table(tmp_path, "perception.csv", ["cluster"]))
        est = PerceptionClustering()
    for name, coords in fit_coords(est, data).items():
        assert name in facts, f"truth.json has no {name}"
        held = truth_coords(facts[name])
        assert [len(c) for c in held] == [len(c) for c in coords], (name, held, coords)
        dims = est.build_model(data).named_vars_to_dims.get(name, ()) if exchangeable else ()
        for dim, truth_keys, keys in zip(dims or [None] * len(coords), held, coords):
            assert dim == exchangeable or truth_keys == keys, (name, dim, truth_keys, keys)
        values = pd.json_normalize(facts[name]).to_numpy(dtype=float) if held else np.array([facts[name]])
        assert np.isfinite(values).all(), name


@pytest.mark.parametrize("model", registry.NAMES)
def test_truth_says_how_the_data_differ_from_the_fits_own_prior(tmp_path, model):
    """Every registered model's `simulate` (its contract case's small options) states in truth.json how its
    data differ from a draw of the fit's own prior, and where data drawn from that prior come from."""
    from contract_cases import CASES

    assert run("simulate", model, "--out", tmp_path, *CASES[model].simulate)[0] == 0
    words = truth(tmp_path).get("differs_from_the_fit")
    assert isinstance(words, str) and "prior" in words and "sbc_case" in words, words


# ---------------------------------------------------------------------- the folder, the seed, the options
def test_same_seed_same_files_and_a_full_folder_refused(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    argv = ("simulate", "experts", "--n-items", "30", "--pairs-per-expert", "40", "--seed", "5")
    assert run(*argv, "--out", first)[0] == run(*argv, "--out", second)[0] == 0
    files = sorted(p.name for p in first.iterdir())
    assert files == ["constraints.csv", "items.csv", "truth.csv", "truth.json"]
    assert all((first / n).read_bytes() == (second / n).read_bytes() for n in files)

    before = {n: (first / n).read_bytes() for n in files}
    code, _, err = run(*argv[:-1], "6", "--out", first)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "already holds items.csv, constraints.csv, truth.csv, truth.json" in err and "--replace" in err
    assert {n: (first / n).read_bytes() for n in files} == before
    (second / "truth.json").unlink()  # one file of the set is enough to refuse
    assert run(*argv, "--out", second)[0] == 2
    assert run(*argv[:-1], "6", "--out", first, "--replace")[0] == 0
    assert (first / "items.csv").read_bytes() != before["items.csv"]
    other = tmp_path / "other"  # a folder holding other files is fine
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    assert run(*argv, "--out", other)[0] == 0 and (other / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("argv, words", [
    (("wsc", "--n-groups", "0"), "--n-groups"),
    (("wsc", "--seed", "-1"), "--seed"),
    (("experts", "--dataset", "wine", "--n-items", "50"), "--n-items is for simulated items"),
    (("experts", "--n-constraints", "10"), "--n-constraints is for --dataset"),
    (("experts", "--dataset", "iris", "--n-constraints", "7"), "must be even"),
    (("experts", "--alpha", "0.9,0.8", "--beta", "0.9"), "--alpha gives 2 experts but --beta 1"),
    (("experts", "--alpha", "0.3"), "[0.5, 1]"),
    (("experts", "--n-items", "10", "--pairs-per-expert", "100"), "10 items have 45"),
    (("experts", "--clusters", "1"), "--clusters must be at least 2"),
    (("pcmix", "--study", "intervals", "--n-items", "100"), "--n-items is for --study blobs"),
    (("pcmix", "--labeled-fraction", "1.5"), "[0, 1]"),
    (("proportions", "--dataset", "wine", "--emission", "gaussian"), "--emission is for simulated items"),
    (("proportions", "--emission", "categorical", "--n-features", "2"), "--n-features is for --emission"),
    (("proportions", "--n-bins", "3"), "--n-bins is for --emission categorical"),
    (("proportions", "--n-classes", "1"), "--n-classes must be at least 2"),
    (("proportions", "--dataset", "iris"), "invalid choice"),
    (("perception", "--n-features", "5"), "--n-features must be at least 12"),
    (("perception", "--dataset", "digits", "--clusters", "3"), "--clusters is for the simulated study"),
    (("perception", "--seeds-per-cluster", "3"), "--seeds-per-cluster is for --dataset digits"),
])
def test_bad_options_are_one_line(tmp_path, argv, words):
    code, _, err = run("simulate", *argv, "--out", tmp_path / "sim")
    assert code == 2 and len(err.strip().splitlines()) == 1 and words in err, err
    assert not (tmp_path / "sim").exists()


def test_no_pymc_on_this_path(tmp_path):
    """Simulation is NumPy: neither PyMC, PyTensor, ArviZ nor JAX is imported."""
    script = (f"import sys; from bayes_wsc.cli import main; from bayes_wsc.registry import NAMES\n"
              f"for m in NAMES:\n"
              f"    assert main(['simulate', m, '--out', {str(tmp_path)!r} + '/' + m]) == 0\n"
              f"print(sorted(m for m in ('pymc', 'pytensor', 'arviz', 'jax') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_a_simulation_too_big_to_hold_is_refused_before_allocating(tmp_path, capsys):
    """100,000 groups of 100,000 clicks ended in a MemoryError traceback; the size is checked first,
    for every model's simulate (only experts capped its own)."""
    from bayes_wsc.cli import main

    for argv in (["wsc", "--n-groups", "100000", "--group-size", "100000"],
                 ["pcmix", "--n-items", "1000000000"], ["proportions", "--n-groups", "100000", "--group-size", "5000"]):
        code = main(["simulate", *argv, "--out", str(tmp_path / "sim")])
        err = capsys.readouterr().err
        assert code == 2 and "more than the 1e+08 a simulation holds" in err and len(err.strip().splitlines()) == 1
        assert not (tmp_path / "sim").exists()
