"""The ecological-inference variant (models/ecological_inference.py): its likelihood, its recovery, its
per-group estimates and its own check (bayes_wsc/checks/composition.py).

Its MAP and a short NUTS run, predict and the shared estimands are covered with every other variant by
tests/test_variants.py; its NUTS against PyEI on CCES 2016 by benchmarks/ei_vs_pyei.py.
"""

import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.special import expit, logit
from scipy.stats import binom

from bayes_wsc import criticism
from bayes_wsc.checks.composition import VIF_MAX, collinearity_check, variance_inflation
from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.cli import main
from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.estimator import load, load_variant
from bayes_wsc.models.wsc import WSC

VARIANT = Path(__file__).resolve().parents[1] / "models" / "ecological_inference.py"


def simulate_ei(bin_logit, *, n_groups=300, items=200, tau=0.3, seed=0, compositions=None):
    """Groups with Dirichlet(1) bin compositions (or the given ones) whose class-1 counts are drawn from
    the variant itself: each item of bin k in group i is class 1 with probability sigmoid(a_k + u_i)."""
    rng = np.random.default_rng(seed)
    a = np.asarray(bin_logit, float)
    if compositions is None:
        compositions = rng.dirichlet(np.ones(a.size), size=n_groups)
    counts = np.stack([rng.multinomial(items, c) for c in compositions])
    u = tau * rng.standard_normal(len(counts))
    u -= u.mean()
    class1 = rng.binomial(counts, expit(a[None, :] + u[:, None]))
    y = class1.sum(axis=1)
    he = logit(np.clip(y / items, 0.5 / items, 1 - 0.5 / items))
    data = GroupedCounts.from_counts(counts, he, group_ids=[f"g{i}" for i in range(len(counts))])
    return data, y, class1, u


def quiet_fit(data, **settings):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return WSC(model_file=str(VARIANT), progressbar=False, **settings).fit(data)


def test_group_term_is_the_binomial():
    """With whole counts the Potential equals scipy's binomial pmf of each group's class-1 count, its
    probability the composition-weighted mean of sigmoid(a_k + u_i + s_k z_ik)."""
    data, y, _, _ = simulate_ei([-1.0, 0.2, 1.5], n_groups=6, items=30, seed=1)
    model = load_variant(VARIANT).build_model(data)
    a, tau = np.array([-0.4, 0.3, 1.1]), 0.7
    e = np.array([0.5, -1.0, 0.2, 0.9, -0.3, -0.3])  # sums to zero, as the variant's shifts do
    import pytensor.tensor as pt

    z = np.array([[0.3, -0.2, 0.0, 0.1, -0.4, 0.2], [-0.5, 0.5, 0.1, -0.1, 0.3, -0.3], [0.0] * 6])  # (bin, group)
    scale = np.array([0.4, 1.2, 0.7])

    def zero_sum(name, value):
        rv = model[name]
        return model.rvs_to_transforms[rv].forward(pt.as_tensor_variable(value), *rv.owner.inputs).eval()

    point = {"a": a, "tau_log__": np.log(tau), "e_zerosum__": zero_sum("e", e), "cell_scale_log__": np.log(scale),
             "z_zerosum__": zero_sum("z", z)}
    value = model.compile_logp(vars=[model["group_counts"]], jacobian=False)(point)
    np.testing.assert_allclose(expit(data.he) * data.group_totals, y, atol=1e-9)  # the variant reads y from HE
    cell = a[None, :] + tau * e[:, None] + (scale[:, None] * z).T
    cell_logit = model.replace_rvs_by_values([model["cell_logit"]])[0]
    computed = model.compile_fn(cell_logit, inputs=model.value_vars, on_unused_input="ignore")(point)
    np.testing.assert_allclose(computed, cell, rtol=1e-10)
    p = (data.counts * expit(cell)).sum(axis=1) / data.group_totals
    np.testing.assert_allclose(value, binom.logpmf(y, data.group_totals, p).sum(), rtol=1e-10)


def test_map_recovers_rho_and_reports_consistent_estimands():
    truth_logit = np.array([-2.0, -0.8, 0.4, 1.7])
    data, _, class1, _ = simulate_ei(truth_logit, seed=2)
    post = quiet_fit(data, method="map").idata_.posterior
    rho = post["rho"].values[0, 0]
    pooled_truth = class1.sum(axis=0) / data.counts.sum(axis=0)  # each bin's class-1 share among the items
    assert np.abs(rho - pooled_truth).max() < 0.05
    pi, w0, w1 = (post[n].values[0, 0] for n in ("pi", "w0", "w1"))
    np.testing.assert_allclose(w0.sum(), 1.0, rtol=1e-9)
    np.testing.assert_allclose(w1.sum(), 1.0, rtol=1e-9)
    np.testing.assert_allclose(pi * w1 / (pi * w1 + (1 - pi) * w0), rho, rtol=1e-9)
    share = expit(post["mu"].values[0, 0])  # each group's modelled class-1 share
    np.testing.assert_allclose(pi, (share * data.group_totals).sum() / data.group_totals.sum(), rtol=1e-9)
    np.testing.assert_allclose(np.abs(post["group_logit"].values[0, 0].sum()), 0.0, atol=1e-8)


@pytest.mark.slow
def test_per_group_estimates_follow_each_groups_shift():
    """class_probability gives each group's sigmoid(cell_logit) = sigmoid(a_k + u_i + s_k z_ik), with
    intervals after NUTS, and the groups' shared shifts follow the true ones."""
    data, _, _, u = simulate_ei([-1.0, 1.0], n_groups=40, items=300, tau=0.8, seed=4)
    est = quiet_fit(data, method="nuts", draws=150, tune=150, chains=2)
    post = est.idata_.posterior
    table = est.class_probability()
    expected = expit(post["cell_logit"].values)
    np.testing.assert_allclose(table["mean"].values, expected.reshape(-1, 40, 2).mean(axis=0), rtol=1e-9)
    assert (table["low"].values < table["mean"].values).all() and (table["mean"].values < table["high"].values).all()
    assert np.corrcoef(post["group_logit"].values.mean(axis=(0, 1)), u)[0, 1] > 0.9
    assert table["mean"].values[:, 0].std() > 0.05  # the groups differ, by their own shift
    row = est.checks_.set_index("check").loc["group_intervals"]  # a fit with draws says its intervals may not cover
    assert bool(row["flagged"]) and "covered 0.89 / 0.64 / 0.53" in row["message"]
    np.testing.assert_allclose(row["effect"], post["cell_scale"].values.mean(axis=(0, 1)).max())


@pytest.mark.parametrize("bad", ["wh", "mu_prior"])
def test_ignored_settings_do_not_break_the_variant(bad):
    """The variant reads HE as exact: the default model's settings are accepted and ignored."""
    data, _, _, _ = simulate_ei([-0.5, 0.7], n_groups=20, items=20, seed=3)
    settings = {"wh": 10.0} if bad == "wh" else {"mu_prior": "flat"}
    model = load_variant(VARIANT).build_model(data, **settings)
    assert {"rho", "pi", "w0", "w1", "mu", "group_logit", "bin_logit"} <= set(model.named_vars)


# ---------------------------------------------------------------------- its own check
def test_variance_inflation_is_one_over_one_minus_r_squared():
    """VIF_k against the regression of bin k's share on the other bins' shares (no intercept, weighted
    by the groups' items), solved by least squares."""
    rng = np.random.default_rng(5)
    counts = rng.multinomial(100, [0.5, 0.3, 0.2], size=30) + rng.integers(0, 50, size=(30, 3))
    shares, weight = counts / counts.sum(1, keepdims=True), np.sqrt(counts.sum(1))
    for k in range(3):
        others = np.delete(shares, k, axis=1) * weight[:, None]
        target = shares[:, k] * weight
        fitted = others @ np.linalg.lstsq(others, target, rcond=None)[0]
        r2 = 1 - np.sum((target - fitted) ** 2) / np.sum(target ** 2)
        np.testing.assert_allclose(variance_inflation(counts)[k], 1 / (1 - r2), rtol=1e-8)


def test_collinearity_check_fires_on_collinear_compositions_only():
    """Groups that all hold the bins in nearly the same proportions are flagged; groups whose
    compositions range widely are not; the row carries its effect and tolerance."""
    rng = np.random.default_rng(6)
    alike = np.clip(0.35 + 0.03 * rng.standard_normal(50), 0.05, 0.95)
    collinear = collinearity_check(np.round(np.stack([alike, 1 - alike], axis=1) * 400), ["no", "yes"])
    spread = rng.uniform(0.05, 0.95, 50)
    separable = collinearity_check(np.round(np.stack([spread, 1 - spread], axis=1) * 400), ["no", "yes"])
    assert collinear.flagged and collinear.effect > VIF_MAX and collinear.tolerance == VIF_MAX
    assert "too collinear" in collinear.message
    assert not separable.flagged and 1 <= separable.effect < VIF_MAX
    one = collinearity_check(np.ones((5, 1)), ["only"])
    assert not one.flagged and np.isnan(one.effect)
    identical = collinearity_check(np.tile([30.0, 70.0], (10, 1)), ["no", "yes"])  # exactly collinear
    assert identical.flagged and np.isinf(identical.effect)


def test_the_variants_checks_are_its_own(tmp_path):
    """A fit of the variant runs its declared CHECKS, not the first model's (which replicate the bins
    given the class), and no warning about WH, which it ignores; on collinear groups its check flags."""
    rng = np.random.default_rng(7)
    alike = np.clip(0.4 + 0.02 * rng.standard_normal(60), 0.05, 0.95)
    data, _, _, _ = simulate_ei([-1.0, 0.5], items=300, seed=8, compositions=np.stack([alike, 1 - alike], axis=1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = WSC(model_file=str(VARIANT), method="map", wh=0.5, progressbar=False).fit(data)
    assert list(est.checks_["check"]) == ["composition_collinearity"]  # a MAP fit has no per-group intervals
    assert bool(est.checks_["flagged"].iloc[0])
    said = [str(w.message) for w in caught if issubclass(w.category, FitWarning)]
    assert any("too collinear" in m for m in said)
    assert not any("WH=" in m or "orientation" in m for m in said), said
    assert [r.check for r in criticism.run(est, data)] == ["composition_collinearity"]
    est.save(tmp_path / "fit.nc")  # a loaded fit runs the checks its variant file declares from a file named
    loaded = load(tmp_path / "fit.nc")
    with pytest.raises(InputError, match="--model FILE.py"):  # never from the path the fit names
        criticism.run(loaded)
    other = tmp_path / "ecological_inference.py"
    other.write_text(VARIANT.read_text() + "\n# edited\n")
    with pytest.raises(InputError, match="not the file this fit was made with"):
        loaded.use_variant_file(other)
    loaded.use_variant_file(VARIANT)
    assert [r.check for r in criticism.run(loaded)] == ["composition_collinearity"]
    assert main(["check", str(tmp_path / "fit.nc"), "--draws", "10"]) == 2
    assert main(["check", str(tmp_path / "fit.nc"), "--draws", "10", "--model", str(other)]) == 2
    assert main(["check", str(tmp_path / "fit.nc"), "--draws", "10", "--model", str(VARIANT)]) == 0
    default = WSC(method="map", progressbar=False)  # the first model keeps its own checks
    assert default.variant_checks() is None
