"""Hungarian relabeling of exchangeable clusters, and the detection of genuinely different modes."""

import numpy as np

from bayes_wsc.relabel import best_permutation, mode_messages, relabel_draws


def memberships_from(draw):
    return draw["probs"]


def test_best_permutation_recovers_a_shuffle():
    rng = np.random.default_rng(0)
    reference = rng.dirichlet(np.ones(4) * 0.3, size=50)
    perm = np.array([2, 0, 3, 1])
    shuffled = reference[:, np.argsort(perm)]  # cluster perm[k] of `shuffled` is cluster k
    assert np.array_equal(best_permutation(reference, shuffled), perm)
    np.testing.assert_allclose(shuffled[:, best_permutation(reference, shuffled)], reference)


def test_relabel_draws_switched_within_and_across_chains():
    rng = np.random.default_rng(1)
    n, k = 40, 3
    reference = np.eye(k)[rng.integers(0, k, n)] * 0.9 + 0.1 / k
    means = np.array([[-2.0, 0.0], [0.0, 2.0], [2.0, 0.0]])  # a (K, d) cluster parameter
    chains, draws = 3, 5
    probs = np.empty((chains, draws, n, k))
    centers = np.empty((chains, draws, k, 2))
    for c in range(chains):
        for d in range(draws):
            p = rng.permutation(k)
            probs[c, d] = reference[:, np.argsort(p)]
            centers[c, d] = means[np.argsort(p)]
    posterior = {"probs": probs, "centers": centers, "unrelated": np.zeros((chains, draws))}
    out, perms, agreement = relabel_draws(posterior, {"probs": 1, "centers": 0}, memberships_from, reference)
    np.testing.assert_allclose(out["centers"], np.broadcast_to(means, centers.shape))
    np.testing.assert_allclose(out["probs"], np.broadcast_to(reference, probs.shape))
    assert perms.shape == (chains, draws, k) and np.all(agreement == 1.0)
    assert out["unrelated"] is posterior["unrelated"]
    assert mode_messages(agreement) == []


def test_a_different_partition_is_reported_not_hidden():
    rng = np.random.default_rng(2)
    n = 60
    reference = np.eye(2)[np.repeat([0, 1], n // 2)]
    other = np.eye(2)[np.tile([0, 1], n // 2)]  # splits the items differently: no permutation helps
    probs = np.stack([np.stack([reference] * 4), np.stack([other] * 4)])
    _, _, agreement = relabel_draws({"probs": probs}, {"probs": 1}, memberships_from, reference, per_draw=False)
    assert agreement[0] == 1.0 and agreement[1] < 0.9
    messages = mode_messages(agreement)
    assert len(messages) == 1 and messages[0].startswith("chain 1") and "different mode" in messages[0]
