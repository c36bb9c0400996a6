"""Every marginalized likelihood against brute-force enumeration of the discrete latents."""

import itertools

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from scipy.special import expit, logsumexp

from bayes_wsc.data.grouped import GroupedCounts
from bayes_wsc.fit import transformed_start
from bayes_wsc.likelihoods import (
    binary_counts_mixture_logp,
    binary_log_weights,
    component_log_posterior,
    counts_mixture_logp,
)
from bayes_wsc.models.wsc import build_model, pooled_bin_frequencies
from bayes_wsc.transforms import StickBreaking


def items_from_counts(counts):
    """Per-group lists of item bins, expanded from an integer count table."""
    return [np.repeat(np.arange(counts.shape[1]), row) for row in counts.astype(int)]


def brute_force_loglik(counts, class_probs, emissions):
    """log p(X) by summing over every joint assignment of the items' classes, group by group.

    class_probs : (I, C) P(z = c) in each group; emissions : (C, K).
    """
    total = 0.0
    for i, bins in enumerate(items_from_counts(counts)):
        terms = []
        for z in itertools.product(range(class_probs.shape[1]), repeat=len(bins)):
            z = np.array(z, dtype=int)
            terms.append(np.sum(np.log(class_probs[i, z])) + np.sum(np.log(emissions[z, bins])))
        total += logsumexp(terms) if terms else 0.0
    return total


@pytest.fixture
def tiny():
    rng = np.random.default_rng(7)
    counts = np.array([[2, 0, 1], [0, 1, 1], [1, 1, 2], [0, 0, 0]], dtype=float)
    mu = rng.normal(0, 2, size=4)
    w = rng.dirichlet(np.ones(3), size=2)
    return counts, mu, w


def test_binary_closed_form_equals_enumeration(tiny):
    counts, mu, w = tiny
    class_probs = np.stack([expit(-mu), expit(mu)], axis=1)
    expected = brute_force_loglik(counts, class_probs, w)
    got = binary_counts_mixture_logp(pt.as_tensor(counts), pt.as_tensor(mu), pt.as_tensor(w[0]),
                                      pt.as_tensor(w[1])).sum().eval()
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_general_mixture_with_three_classes_equals_enumeration():
    rng = np.random.default_rng(3)
    counts = np.array([[1, 2, 0, 1], [2, 0, 1, 0]], dtype=float)
    class_probs = rng.dirichlet(np.ones(3), size=2)
    emissions = rng.dirichlet(np.ones(4), size=3)
    expected = brute_force_loglik(counts, class_probs, emissions)
    got = counts_mixture_logp(pt.as_tensor(counts), pt.as_tensor(np.log(class_probs)),
                              pt.as_tensor(np.log(emissions))).sum().eval()
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_binary_special_case_agrees_with_general_block_at_extremes():
    counts = np.array([[3.0, 1.0], [0.5, 2.0]])
    mu = np.array([-40.0, 35.0])  # far in the tails: no underflow to log(0)
    w = np.array([[1e-12, 1 - 1e-12], [0.3, 0.7]])
    closed = binary_counts_mixture_logp(pt.as_tensor(counts), pt.as_tensor(mu), pt.as_tensor(w[0]),
                                        pt.as_tensor(w[1])).eval()
    general = counts_mixture_logp(pt.as_tensor(counts), binary_log_weights(pt.as_tensor(mu)),
                                  pt.as_tensor(np.log(w))).eval()
    assert np.all(np.isfinite(closed))
    # a term of -1e-12 is log(1 - 1e-12): its last digits are rounding (PyTensor 3's log1p differs from 2's by 4e-18)
    np.testing.assert_allclose(closed, general, rtol=1e-10, atol=1e-16)


def test_responsibilities_match_bayes_rule(tiny):
    _, mu, w = tiny
    log_post = component_log_posterior(binary_log_weights(pt.as_tensor(mu))[:, None, :],
                                       pt.as_tensor(np.log(w)).T[None]).eval()
    p = expit(mu)[:, None]
    expected = p * w[1] / (p * w[1] + (1 - p) * w[0])
    np.testing.assert_allclose(np.exp(log_post[..., 1]), expected, rtol=1e-12)


@pytest.mark.parametrize("mu_prior", ["hierarchical", "flat"])
def test_model_click_term_equals_enumeration(tiny, mu_prior):
    """The likelihood inside the PyMC model, not just the block, matches enumeration."""
    counts, mu, w = tiny
    data = GroupedCounts.from_counts(counts, he=mu + 0.1)
    model = build_model(data, mu_prior=mu_prior)
    point = transformed_start(model, {"mu": mu, "w0": w[0], "w1": w[1]})
    click_logp = model.compile_logp(vars=[model["clicks"]], jacobian=False)(point)
    offset = np.sum(counts * np.log(pooled_bin_frequencies(counts)))  # the documented constant
    class_probs = np.stack([expit(-mu), expit(mu)], axis=1)
    np.testing.assert_allclose(click_logp + offset, brute_force_loglik(counts, class_probs, w), rtol=1e-10)


def test_model_weighted_counts_scale_the_likelihood(tiny):
    """Item weights and down-weighting enter as multipliers of the per-cell log-likelihood."""
    counts, mu, w = tiny
    scaled = GroupedCounts.from_counts(counts, he=mu, max_group_weight=2.0)
    model = build_model(scaled)
    point = transformed_start(model, {"mu": mu, "w0": w[0], "w1": w[1]})
    got = model.compile_logp(vars=[model["clicks"]], jacobian=False)(point)
    p = expit(mu)[:, None]
    factor = np.minimum(1.0, 2.0 / np.maximum(counts.sum(1), 1e-300))[:, None]
    q = pooled_bin_frequencies(scaled.counts)
    expected = np.sum(counts * factor * np.log(((1 - p) * w[0] + p * w[1]) / q))
    np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_stick_breaking_round_trip_and_jacobian():
    transform = StickBreaking()
    y = pt.vector("y")
    rng = np.random.default_rng(0)
    y0 = rng.normal(size=5)
    w = transform.backward(y).eval({y: y0})
    assert w.shape == (6,) and np.isclose(w.sum(), 1.0) and np.all(w > 0)
    np.testing.assert_allclose(transform.forward(pt.as_tensor(w)).eval(), y0, atol=1e-10)
    # log |det J| of y -> the first K-1 simplex coordinates, by autodiff
    jac = pytensor.gradient.jacobian(transform.backward(y)[:-1], y)
    _, logdet = np.linalg.slogdet(jac.eval({y: y0}))
    np.testing.assert_allclose(transform.log_jac_det(y).eval({y: y0}), logdet, rtol=1e-10)
