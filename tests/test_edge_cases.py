"""Awkward cases: an interrupted save leaves no broken file, the first model and the mixtures fit edge-case
data (extreme HE, unused bins, a yes-saying expert, empty clusters), chains from different restarts are
relabeled to one labeling, and repeated fits release their compiled code. (Save -> load -> predict of
every model is in test_contract.py.)"""

import os
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import normalized_mutual_info_score

from bayes_wsc import inference
from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.data.labeled import LabeledItems
from bayes_wsc.data.pairwise import PairwiseConstraints
from bayes_wsc.errors import FitWarning
from bayes_wsc.models.experts import NoisyExperts
from bayes_wsc.models.pcmix import PCMixture
from bayes_wsc.models.wsc import WSC
from bayes_wsc.simulate import counts_to_clicks, simulate_wsc
from bayes_wsc.simulate.experts import simulate_experts_model
from bayes_wsc.simulate.pcmix import simulate_intervals


def quietly(est, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return est.fit(data)


def wsc_case():
    data, _ = simulate_wsc(n_groups=40, items_per_group=20, n_bins=5, seed=2)
    clicks, _ = counts_to_clicks(data)
    return quietly(WSC(method="map"), data), clicks


def test_an_interrupted_save_keeps_the_old_file_and_leaves_no_partial_one(tmp_path, monkeypatch):
    est, _ = wsc_case()
    target = tmp_path / "fit.nc"
    target.write_bytes(b"the previous fit")

    def interrupted(groups, path):
        with open(path, "wb") as handle:
            handle.write(b"half a netCDF")
        raise KeyboardInterrupt

    monkeypatch.setattr(inference, "_write_groups", interrupted)
    with pytest.raises(KeyboardInterrupt):
        est.save(target)
    assert target.read_bytes() == b"the previous fit"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.nc"]


# ---------------------------------------------------------------------- edge cases, first model
def wsc_table(case: str):
    rng = np.random.default_rng(7)
    n_groups, n_bins = 30, 4
    counts = rng.poisson(6.0, size=(n_groups, n_bins)).astype(float) + 1
    he = rng.normal(0, 1, n_groups)
    if case == "extreme_he":
        he[:5], he[5:10] = 20.0, -20.0
    elif case == "unused_bin":
        counts[:, 2] = 0
    elif case == "one_item_groups":
        counts = np.eye(n_bins)[rng.integers(0, n_bins, n_groups)]
    elif case == "single_bin":
        counts = counts[:, :1]
    return GroupedCounts.from_counts(counts, he)


@pytest.mark.parametrize("case", ["extreme_he", "unused_bin", "one_item_groups", "single_bin"])
def test_wsc_edge_cases_fit_and_predict(case):
    data = wsc_table(case)
    est = quietly(WSC(method="map"), data)
    rho = est.idata_.posterior["rho"].values.ravel()
    assert rho.shape == (data.n_bins,) and np.all(np.isfinite(rho)) and np.all((rho >= 0) & (rho <= 1))
    assert np.isfinite(inference.get_attrs(est.idata_)["fit_info"]["map"]["log_density"])
    if case == "single_bin":  # one bin: every item looks alike, so P(happy | bin) is the mean happy share
        assert rho[0] == pytest.approx(float(est.idata_.posterior["pi"].values.ravel()[0]), abs=1e-6)
    table = inference.summary(est.idata_, var_names=["rho"])
    assert len(table) == data.n_bins


# ---------------------------------------------------------------------- edge cases, mixtures
def test_an_expert_who_only_says_must_link():
    """Beside three honest experts, a yes-sayer is read as one who cannot tell different pairs
    apart (specificity at its floor 0.5) and does not spoil the clustering. (Its omega stays high:
    omega grows without bound as alpha -> 1 whatever beta is, as eq. 8's weight does.)"""
    items, constraints, truth = simulate_experts_model(n_items=60, n_features=3, n_clusters=2,
                                                       alpha=(0.9, 0.8, 0.8, 0.9), beta=(0.9, 0.8, 0.8, 0.9),
                                                       pairs_per_expert=150, separation=3.0, seed=5)
    constraints.loc[constraints["expert"] == constraints["expert"].iloc[-1], "link"] = 1
    est = quietly(NoisyExperts(n_clusters=2, restarts=3, seed=1), PairwiseConstraints.from_frames(items, constraints))
    post = est.idata_.posterior
    alpha, beta = post["alpha"].values.ravel(), post["beta"].values.ravel()
    assert np.all((alpha >= 0.5) & (alpha <= 1)) and np.all((beta >= 0.5) & (beta <= 1))
    assert alpha[-1] > 0.95 and beta[-1] < 0.6 and beta[-1] == beta.min()
    assert normalized_mutual_info_score(truth.labels, est.predict(items)["cluster"]) > 0.7


def test_clusters_that_end_up_empty():
    items, constraints, _ = simulate_experts_model(n_items=60, n_features=3, n_clusters=2, alpha=(0.9, 0.8),
                                                   beta=(0.9, 0.8), pairs_per_expert=150, separation=3.0, seed=6)
    experts = quietly(NoisyExperts(n_clusters=4, restarts=3, seed=1), PairwiseConstraints.from_frames(items, constraints))
    pred = experts.predict(items)
    np.testing.assert_allclose(pred[[f"prob_{k}" for k in range(4)]].sum(axis=1), 1.0, atol=1e-8)
    table, _ = simulate_intervals(n_a=40, n_b=25, n_c=20, seed=4)
    mixture = quietly(PCMixture(components=5, lam=1.0, restarts=3, seed=1), LabeledItems.from_frame(table, label_col="y"))
    pi = mixture.idata_.posterior["pi"].values.ravel()
    assert pi.size == 5 and np.all(np.isfinite(pi)) and pi.sum() == pytest.approx(1.0)
    assert np.all(np.isfinite(mixture.predict(table.drop(columns="y"))["prob"]))


# ---------------------------------------------------------------------- label switching
@pytest.mark.slow
def test_chains_from_different_restarts_are_relabeled_to_one_labeling():
    """Four chains, each at the optimum of its own MAP restart (their cluster labels permuted at
    random): after relabeling, R-hat on what is reported is below 1.01."""
    items, constraints, _ = simulate_experts_model(n_items=80, n_features=3, n_clusters=3, alpha=(0.9, 0.8),
                                                   beta=(0.9, 0.8), pairs_per_expert=300, separation=3.0, seed=8)
    data = PairwiseConstraints.from_frames(items, constraints)
    est = NoisyExperts(n_clusters=3, restarts=4, seed=2, method="nuts", chains=4, draws=500, tune=500,
                       chain_starts="restarts", progressbar=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FitWarning)
        est.fit(data)
    optima = inference.get_attrs(est.idata_)["fit_info"]["map"]["restart_log_densities"]
    assert len(optima) == 4
    assert inference.get_attrs(est.idata_)["fit_info"]["nuts"]["relabelled_draws"] >= 500  # a chain was permuted
    assert not [w for w in caught if "partition" in str(w.message)], [str(w.message) for w in caught]
    conv = inference.convergence(est.idata_, ["alpha", "beta", "omega", "W", "b"])
    assert max(c["rhat"] for c in conv.values()) < 1.01, conv


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="counts memory maps through Linux's /proc")
def test_repeated_nuts_fits_release_their_compiled_code():
    """~600 memory maps per NUTS fit used to stay behind: after ~100 fits in one process XLA aborted
    ("LLVM ERROR: Unable to allocate section memory") during the coverage study."""
    data, _ = simulate_wsc(n_groups=10, items_per_group=10, n_bins=3, seed=7)

    def maps_after_fit(seed):
        quietly(WSC(method="nuts", draws=30, tune=30, chains=2, seed=seed, progressbar=False), data)
        return Path("/proc/self/maps").read_text().count("\n")

    first = maps_after_fit(0)
    assert max(maps_after_fit(seed) for seed in (1, 2)) - first < 100


@pytest.mark.skipif(bool(os.environ.get("JAX_COMPILATION_CACHE_DIR")), reason="the user chose the cache")
def test_jax_disk_cache_keeps_every_program_within_a_bound():
    """JAX skips programs that compile in under 1 s (the MAP's at 10,000 groups: 0.8 s per fit and
    process) and never evicts by default, while each data set compiles a new program."""
    from bayes_wsc.fit import jax_runtime

    jax = jax_runtime()
    assert jax.config.jax_persistent_cache_min_compile_time_secs == 0
    assert jax.config.jax_compilation_cache_max_size == 2**30
