"""The label-proportions likelihoods against brute-force enumeration of every item's class (issue 14).

Each bag likelihood of `bayes_wsc.models.proportions`, with each emission, is evaluated by the
model at a random point and compared with the sum over all class assignments of the items of
tiny groups; the Poisson-multinomial recursion is checked on its own for two and three classes,
and its normal fallback against the exact value (the MAP tests run its gradient through JAX).
"""

import itertools

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln, logsumexp

from bayes_wsc.data.proportions import LabelProportions, count_plan
from bayes_wsc.models.proportions import build_model


def enumerate_counts_logp(log_q, item_group, counts):
    """log P(counts_i) per group by summing over every assignment of classes to the group's items."""
    out = []
    for g in range(counts.shape[0]):
        items = np.flatnonzero(item_group == g)
        total = -np.inf
        for z in itertools.product(range(log_q.shape[1]), repeat=items.size):
            if (np.bincount(z, minlength=log_q.shape[1]) == counts[g]).all():
                total = np.logaddexp(total, log_q[items, z].sum())
        out.append(total)
    return np.array(out)


def random_groups(rng, sizes, n_classes):
    item_group = np.repeat(np.arange(len(sizes)), sizes)
    rng.shuffle(item_group)
    counts = np.array([np.bincount(rng.integers(0, n_classes, s), minlength=n_classes) for s in sizes])
    return item_group, counts


@pytest.mark.parametrize("n_classes", [2, 3])
def test_poisson_multinomial_equals_enumeration(n_classes):
    import pytensor
    import pytensor.tensor as pt

    from bayes_wsc.likelihoods import poisson_multinomial_logp

    rng = np.random.default_rng(n_classes)
    item_group, counts = random_groups(rng, [1, 2, 3, 6, 4, 5], n_classes)
    counts[3] = 0
    counts[3, -1] = 6  # a group entirely of one class
    logits = rng.normal(0, 2, size=(item_group.size, n_classes))
    log_q = logits - logsumexp(logits, axis=1, keepdims=True)
    x = pt.dmatrix("log_q")
    plan = count_plan(item_group, counts)
    assert plan.n_exact == 6 and len(plan.buckets) >= 4  # padded sizes 1, 2, 4, 8 (and extents)
    got = pytensor.function([x], poisson_multinomial_logp(x, plan), mode="FAST_COMPILE")(log_q)
    np.testing.assert_allclose(got, enumerate_counts_logp(log_q, item_group, counts), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_the_count_plan_depends_on_the_group_sizes_alone(n_classes):
    """One compiled program serves every data set whose groups have the same sizes: new counts and new
    members change the plan's values, never its structure or the shapes of its arrays."""
    rng = np.random.default_rng(n_classes)
    sizes = [1, 2, 3, 6, 4, 5, 17, 40]
    plans = [count_plan(*random_groups(rng, sizes, n_classes)) for _ in range(3)]
    one_class = np.zeros((len(sizes), n_classes), dtype=int)
    one_class[:, -1] = sizes  # every item of the last class: the extreme counts
    plans.append(count_plan(np.repeat(np.arange(len(sizes)), sizes), one_class))
    for plan in plans[1:]:
        assert plan.structure() == plans[0].structure()
        assert {k: np.shape(v) for k, v in plan.inputs().items()} == \
            {k: np.shape(v) for k, v in plans[0].inputs().items()}
    first, last = plans[0].inputs(), plans[-1].inputs()
    assert any(not np.array_equal(first[k], last[k]) for k in first if k.endswith(("_order", "_target")))


def test_one_recursion_for_every_layout_of_group_sizes():
    """Groups of any similar sizes run as one recursion (one block: one loop for XLA to compile); sizes so
    different that padding the small groups to the large one's steps would cost much stay apart."""
    from bayes_wsc.data.proportions import MERGE_CELLS, MERGE_WASTE

    rng = np.random.default_rng(5)
    for sizes in ([16] * 35 + [9], list(rng.integers(8, 25, 30)), [1, 2, 3, 6, 4, 5, 17, 40], [128] * 4 + [57]):
        plan = count_plan(*random_groups(rng, sizes, 2))
        assert len(plan.blocks) == 1 and plan.n_exact == len(sizes)
        assert sorted(plan.blocks[0].groups.tolist()) == list(range(len(sizes)))
    plan = count_plan(*random_groups(rng, [2] * 5000 + [200], 2))
    assert len(plan.blocks) == 2  # one block would pad 5000 groups of 2 to the 256 steps of the one of 200
    apart = sum(b.cells for b in plan.blocks)
    assert 256 * sum(b.n_cells for b in plan.blocks) > max(MERGE_WASTE * apart, MERGE_CELLS)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_poisson_multinomial_in_separate_blocks_equals_enumeration(n_classes, monkeypatch):
    """The recursion gives the same values when buckets of different steps run as blocks of their own."""
    import pytensor
    import pytensor.tensor as pt

    from bayes_wsc.data import proportions
    from bayes_wsc.likelihoods import poisson_multinomial_logp

    monkeypatch.setattr(proportions, "MERGE_CELLS", 0)
    monkeypatch.setattr(proportions, "MERGE_WASTE", 1)
    rng = np.random.default_rng(10 + n_classes)
    item_group, counts = random_groups(rng, [1, 2, 3, 6, 4, 5], n_classes)
    logits = rng.normal(0, 2, size=(item_group.size, n_classes))
    log_q = logits - logsumexp(logits, axis=1, keepdims=True)
    plan = count_plan(item_group, counts)
    assert len(plan.blocks) >= 4  # padded sizes 1, 2, 4, 8: buckets of the same steps still share a block
    x = pt.dmatrix("log_q")
    got = pytensor.function([x], poisson_multinomial_logp(x, plan), mode="FAST_COMPILE")(log_q)
    np.testing.assert_allclose(got, enumerate_counts_logp(log_q, item_group, counts), rtol=1e-10, atol=1e-10)


def test_poisson_binomial_and_its_normal_fallback():
    import pytensor
    import pytensor.tensor as pt

    from bayes_wsc.likelihoods import poisson_multinomial_logp

    rng = np.random.default_rng(0)
    sizes = [30, 30, 5]
    item_group = np.repeat(np.arange(3), sizes)
    p = rng.uniform(0.05, 0.95, item_group.size)
    counts = np.array([[s - k, k] for s, k in zip(sizes, (14, 17, 2))])
    log_q = np.log(np.stack([1 - p, p], axis=1))
    exact = count_plan(item_group, counts)
    approx = count_plan(item_group, counts, group_budget=400)  # the two groups of 30 fall back
    assert exact.n_exact == 3 and approx.n_exact == 1 and approx.approx_groups.tolist() == [0, 1]
    x = pt.dmatrix("log_q")
    values = pytensor.function([x], poisson_multinomial_logp(x, exact), mode="FAST_COMPILE")(log_q)
    # the exact value is the Poisson-binomial pmf (scipy has none: convolve the Bernoullis)
    pmf = np.array([1.0])
    for q in p[:30]:
        pmf = np.convolve(pmf, [1 - q, q])
    assert values[0] == pytest.approx(np.log(pmf[14]), rel=1e-10)
    approximated = pytensor.function([x], poisson_multinomial_logp(x, approx), mode="FAST_COMPILE")(log_q)
    assert approximated[2] == pytest.approx(values[2])
    np.testing.assert_allclose(approximated[:2], values[:2], atol=0.03)


# ---------------------------------------------------------------------- the model's bag likelihoods
def model_point(model, rng):
    """A random point of the model: its value variables (for the log density) and its free
    variables and Deterministics on their natural scale."""
    from bayes_wsc.fit import constrained_values

    point = {k: v + rng.normal(0, 0.5, np.shape(v)) for k, v in model.initial_point().items()}
    return point, {k: v[0] for k, v in constrained_values(model, [point]).items()}


def bags_logp(model, point):
    bags = model.replace_rvs_by_values([model["bags"]])[0]
    return float(model.compile_fn(bags, inputs=model.value_vars, point_fn=False, on_unused_input="ignore",
                                  mode="FAST_COMPILE")(*[point[v.name] for v in model.value_vars]))


TINY_COUNTS = {2: [[1, 0], [1, 1], [0, 3], [3, 1]], 3: [[1, 0, 0], [0, 1, 1], [1, 0, 2], [1, 2, 1]]}


def tiny_numeric(rng, n_classes=2):
    """Groups of 1 to 4 items (a pure one, a class absent from some), two features."""
    counts = np.array(TINY_COUNTS[n_classes])
    sizes = counts.sum(axis=1)
    item_group = np.repeat(np.arange(len(sizes)), sizes)
    x = rng.normal(size=(item_group.size, 2))
    return LabelProportions.from_arrays(x, item_group, counts / np.asarray(sizes)[:, None])


def gaussian_log_f(data, values):
    x = data.x
    mean, sd = values["mean_z"], 1e-3 + values["sd_excess"]
    return stats.norm.logpdf(x[:, None, :], mean[None], sd[None]).sum(axis=2)


def log_multinomial_coefficient(counts):
    return gammaln(counts.sum() + 1) - gammaln(counts + 1).sum()


@pytest.mark.parametrize("n_classes", [2, 3])
def test_gaussian_bags_equal_enumeration(n_classes):
    rng = np.random.default_rng(10 + n_classes)
    data = tiny_numeric(rng, n_classes=n_classes)
    for bag in ("independent", "exact-counts"):
        model = build_model(data, emission="gaussian", bag_likelihood=bag)
        point, values = model_point(model, rng)
        log_f = gaussian_log_f(data, values)
        total = 0.0
        for g in range(data.n_groups):
            items = np.flatnonzero(data.item_group == g)
            terms = []
            for z in itertools.product(range(n_classes), repeat=items.size):
                if bag == "independent":
                    with np.errstate(divide="ignore"):
                        terms.append(np.log(data.proportions[g, list(z)]).sum() + log_f[items, z].sum())
                elif (np.bincount(z, minlength=n_classes) == data.counts[g]).all():
                    terms.append(log_f[items, z].sum() - log_multinomial_coefficient(data.counts[g]))
            total += logsumexp(terms)
        assert bags_logp(model, point) == pytest.approx(total, rel=1e-9), bag


def test_noisy_shares_equal_enumeration_given_theta():
    rng = np.random.default_rng(3)
    data = tiny_numeric(rng, n_classes=3)
    model = build_model(data, emission="gaussian", concentration=4.0)
    point, values = model_point(model, rng)
    log_f, theta = gaussian_log_f(data, values), values["theta"]
    total = sum(logsumexp([np.log(theta[g, list(z)]).sum() + log_f[np.flatnonzero(data.item_group == g), z].sum()
                           for z in itertools.product(range(3), repeat=int((data.item_group == g).sum()))])
                for g in range(data.n_groups))
    assert bags_logp(model, point) == pytest.approx(total, rel=1e-9)


def test_logistic_bags():
    rng = np.random.default_rng(4)
    data = tiny_numeric(rng, n_classes=3)
    sizes = data.group_sizes
    for bag, concentration in (("exact-counts", None), ("independent", None), ("independent", 2.5)):
        model = build_model(data, emission="logistic", bag_likelihood=bag, concentration=concentration)
        point, values = model_point(model, rng)
        logits = data.x @ values["W_raw"] + values["b_raw"]
        log_q = logits - logsumexp(logits, axis=1, keepdims=True)
        if bag == "exact-counts":  # P(counts | X): every assignment with those counts
            expected = enumerate_counts_logp(log_q, data.item_group, data.counts).sum()
        else:  # the bag mean: Multinomial(n_i, mean_j q_j), or Dirichlet-multinomial(n_i, c mean_j q_j)
            mean_q = np.array([np.exp(log_q[data.item_group == g]).mean(axis=0) for g in range(data.n_groups)])
            if concentration is None:
                expected = sum(stats.multinomial.logpmf(data.counts[g], sizes[g], mean_q[g])
                               for g in range(data.n_groups))
            else:
                expected = sum(stats.dirichlet_multinomial.logpmf(data.counts[g], concentration * mean_q[g], sizes[g])
                               for g in range(data.n_groups))
        assert bags_logp(model, point) == pytest.approx(expected, rel=1e-9), (bag, concentration)


def test_logistic_on_random_fourier_features_equals_enumeration():
    """feature_map="rff": the softmax reads the fixed basis (cos(x omega + beta) - center) / scale, so the bag
    likelihood is the logistic one's with the basis in place of x, on both bag likelihoods."""
    from bayes_wsc.models.proportions import basis_features, fourier_basis

    rng = np.random.default_rng(6)
    data = tiny_numeric(rng, n_classes=3)
    basis = fourier_basis(data.x, 7)
    phi = basis_features(data.x, basis)
    assert phi.shape == (data.n_items, 7) and np.allclose(phi.mean(axis=0), 0) and np.allclose(phi.std(axis=0), 1)
    for name, value in fourier_basis(data.x, 7).items():  # drawn from a fixed seed: the same data, the same basis
        np.testing.assert_array_equal(value, basis[name])
    for bag in ("exact-counts", "independent"):
        model = build_model(data, emission="logistic", bag_likelihood=bag, feature_map="rff", n_basis=7)
        point, values = model_point(model, rng)
        assert values["W_raw"].shape == (7, 3) and values["W"].shape == (3, 7)
        logits = phi @ values["W_raw"] + values["b_raw"]
        log_q = logits - logsumexp(logits, axis=1, keepdims=True)
        if bag == "exact-counts":
            expected = enumerate_counts_logp(log_q, data.item_group, data.counts).sum()
        else:
            mean_q = np.array([np.exp(log_q[data.item_group == g]).mean(axis=0) for g in range(data.n_groups)])
            expected = sum(stats.multinomial.logpmf(data.counts[g], data.group_sizes[g], mean_q[g])
                           for g in range(data.n_groups))
        assert bags_logp(model, point) == pytest.approx(expected, rel=1e-9), bag


def test_categorical_bags_equal_enumeration():
    rng = np.random.default_rng(5)
    sizes, n_bins = (2, 3, 1, 4), 3
    item_group = np.repeat(np.arange(4), sizes)
    counts = np.array([[1, 1], [2, 1], [0, 1], [1, 3]])
    item_bin = rng.integers(0, n_bins, item_group.size)
    data = LabelProportions.from_bins(item_bin, item_group, counts / np.asarray(sizes)[:, None], n_bins)
    for bag in ("independent", "exact-counts"):
        model = build_model(data, emission="categorical", bag_likelihood=bag)
        point, values = model_point(model, rng)
        log_f = np.log(values["w"]).T[item_bin]
        total = 0.0
        for g in range(4):
            items = np.flatnonzero(item_group == g)
            terms = []
            for z in itertools.product(range(2), repeat=items.size):
                if bag == "independent":
                    with np.errstate(divide="ignore"):
                        terms.append(np.log(data.proportions[g, list(z)]).sum() + log_f[items, z].sum())
                elif (np.bincount(z, minlength=2) == counts[g]).all():
                    terms.append(log_f[items, z].sum() - log_multinomial_coefficient(counts[g]))
            total += logsumexp(terms)
        assert bags_logp(model, point) == pytest.approx(total, rel=1e-9), bag
        eta = data.eta
        rho = eta[None, :] * values["w"].T / (eta[None, :] * values["w"].T).sum(axis=1, keepdims=True)
        np.testing.assert_allclose(values["rho"], rho, rtol=1e-10)
