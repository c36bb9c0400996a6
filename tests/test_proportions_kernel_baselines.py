"""Mean Map and inverse calibration, the kernel baselines of seed 001, Sec. 4 (`baselines/proportions.py`)."""

import numpy as np
import pytest

from bayes_wsc.baselines.proportions import KERNELS, fit_invcal, fit_mean_map
from bayes_wsc.errors import InputError


def scaled(name):
    from sklearn.datasets import load_breast_cancer, load_iris

    bunch = {"breast_cancer": load_breast_cancer, "iris": load_iris}[name]()
    x = bunch.data
    return (x - x.min(axis=0)) / (x.max(axis=0) - x.min(axis=0)), bunch.target


def random_groups(labels, size, seed=0):
    """Items in random groups of `size` and each group's class proportions."""
    order = np.random.default_rng(seed).permutation(labels.size)
    groups = np.empty(labels.size, dtype=np.int64)
    groups[order] = np.arange(labels.size) // size
    counts = np.zeros((groups.max() + 1, labels.max() + 1))
    np.add.at(counts, (groups, labels), 1)
    return groups, counts / counts.sum(axis=1, keepdims=True)


def test_mean_map_on_pure_groups_is_logistic_regression_on_the_labels():
    """With every group of one class the class means are exact, and the Mean Map objective is the
    multinomial logistic likelihood of the true labels with the same penalty as scikit-learn's."""
    from sklearn.linear_model import LogisticRegression

    x, labels = scaled("iris")
    groups = labels * 5 + np.arange(labels.size) % 5  # 5 pure groups per class
    proportions = np.eye(3)[np.arange(15) // 5]
    model = fit_mean_map(x, groups, proportions, C=1.0)
    reference = LogisticRegression(C=1.0, tol=1e-10, max_iter=10_000).fit(x, labels)
    np.testing.assert_allclose(model.predict_proba(x), reference.predict_proba(x), atol=1e-4)


def test_invcal_with_the_linear_kernel_is_an_svr_on_the_group_means():
    from sklearn.svm import SVR

    x, labels = scaled("breast_cancer")
    groups, proportions = random_groups(labels, 8)
    model = fit_invcal(x, groups, proportions, kernel="linear")
    means = np.array([x[groups == g].mean(axis=0) for g in range(proportions.shape[0])])
    sizes = np.bincount(groups)
    ones = proportions[:, 1] * sizes
    reference = SVR(kernel="linear").fit(means, np.log((ones + 0.5) / (sizes - ones + 0.5)))
    np.testing.assert_allclose(model.decision_function(x), reference.predict(x), atol=1e-6)


@pytest.mark.parametrize("kernel", ["linear", "rbf1"])
def test_both_learn_breast_cancer_from_groups_of_eight(kernel):
    """Held-out accuracy well above the majority class's 0.63 (the paper's Fig. 2 has both near 0.7-0.95
    on its data sets at small groups)."""
    x, labels = scaled("breast_cancer")
    test = np.arange(labels.size) % 5 == 0
    groups, proportions = random_groups(labels[~test], 8)
    for fit in (fit_mean_map, fit_invcal):
        model = fit(x[~test], groups, proportions, kernel=kernel)
        assert np.mean(model.predict(x[test]) == labels[test]) > 0.85, (fit.__name__, kernel)


def test_bad_input_names_the_field():
    x, labels = scaled("iris")
    groups, proportions = random_groups(labels, 10)
    with pytest.raises(InputError, match="two classes"):
        fit_invcal(x, groups, proportions)
    with pytest.raises(InputError, match="kernel"):
        fit_mean_map(x, groups, proportions, kernel="sigmoid")
    with pytest.raises(InputError, match="rank"):
        fit_mean_map(x, np.zeros(labels.size, dtype=np.int64), np.full((1, 3), 1 / 3))
    with pytest.raises(InputError, match="item_group"):
        fit_mean_map(x, groups + 100, proportions)
    assert set(KERNELS) == {"linear", "poly2", "poly3", "rbf0.01", "rbf0.1", "rbf1"}
