"""Trial variant for issue 42 (`benchmarks/experts_uci.py --variants density`): the noisy-experts model
with a class-conditional density of the features, as the PC mixture (seed 003) has.

    x_i | z_i = k ~ N(mu_k, diag(sd^2))       every item, paired or not; sd shared by the clusters
    z_i ~ Categorical(pi)                     pi ~ Dirichlet(2)
    mu_k ~ N(0, 3^2) per feature (standardized features), sd ~ Gamma(2, 2) per feature

The clusters' softmax is then the mixture's posterior P(z = k | x): linear in x with
W = mu^T / sd^2 and b_k = -sum_d mu_kd^2 / (2 sd_d^2) + log pi_k, which the pair likelihood uses exactly
as the default model uses its free W, b (W and b are kept as Deterministics, so that memberships,
predictions and reports work unchanged). A MAP variant: NUTS draws of mu and pi are not relabelled.

    NoisyExperts(n_clusters=K, model_file="benchmarks/experts_feature_density.py")
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from sklearn.cluster import KMeans

from bayes_wsc.models.experts import add_constraint_likelihood, add_experts, add_memberships, model_coords


def build_model(data, *, n_clusters=2, prior_sd=1.0, intercept_sd=2.0, accuracy_a=2.0, accuracy_b=2.0,
                mean_sd=3.0):
    with pm.Model(coords=model_coords(data, n_clusters)) as model:
        x = pt.as_tensor_variable(np.asarray(data.features, dtype=float))
        mu = pm.Normal("mu", 0.0, mean_sd, dims=("cluster", "feature"))
        sd = pm.Gamma("feature_sd", 2.0, 2.0, dims="feature")
        pi = pm.Dirichlet("pi", np.full(n_clusters, 2.0), dims="cluster")
        precision = 1.0 / sd**2
        W = (mu * precision).T  # (feature, cluster)
        b = -0.5 * (mu**2 * precision).sum(axis=1) + pt.log(pi)
        log_joint = (pt.log(pi) - 0.5 * (((x[:, None, :] - mu[None]) / sd) ** 2).sum(axis=-1)
                     - pt.log(sd).sum() - 0.5 * x.shape[1] * np.log(2 * np.pi))
        pm.Potential("features", pt.logsumexp(log_joint, axis=1).sum())
        pm.Deterministic("W", W - W.mean(axis=1, keepdims=True), dims=("feature", "cluster"))
        pm.Deterministic("b", b - b.mean(), dims="cluster")
        ends = add_memberships(data, W[:, 1:] - W[:, 0][:, None], b[1:] - b[0])
        alpha, beta = add_experts(accuracy_a=accuracy_a, accuracy_b=accuracy_b)
        add_constraint_likelihood(data, ends, alpha, beta)
    return model


def initial_values(data, estimator):
    """k-means' clusters first, then starts at random items (means), each with the default model's
    accuracies of the same restart."""
    x = np.asarray(data.features, dtype=float)
    k = estimator.n_clusters
    rng = np.random.default_rng(estimator.seed)
    base = estimator.initial_values(data)
    starts = []
    for r, start in enumerate(base):
        if r == 0:
            km = KMeans(n_clusters=k, n_init=3, random_state=estimator.seed).fit(x)
            labels, mu = km.labels_, km.cluster_centers_
        else:
            mu = x[rng.choice(x.shape[0], k, replace=False)] + 0.05 * rng.standard_normal((k, x.shape[1]))
            labels = ((x[:, None, :] - mu[None]) ** 2).sum(-1).argmin(axis=1)
        resid = x - mu[labels]
        sd = np.maximum(resid.std(axis=0), 0.05)
        pi = (np.bincount(labels, minlength=k) + 1.0) / (x.shape[0] + k)
        starts.append({"mu": mu, "feature_sd": sd, "pi": pi, "alpha_raw": start["alpha_raw"],
                       "beta_raw": start["beta_raw"]})
    return starts
