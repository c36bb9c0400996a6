"""Which Bayesian formulation for feature-level supervision? Candidates measured on the simulated study.

    python benchmarks/perception_formulations.py                 # 5 simulated data sets + digits, MAP
    python benchmarks/perception_formulations.py --datasets 2 --no-digits

Every candidate sums out the item's cluster z_i; a seed's sum runs over the sets it is in, every
other item's over all K clusters. X is standardized, P holds the perception vectors (K, q).

(a)  prototype model in a learned embedding (the Bayesian reading of LPE): e_i = x_i W + b,
     W, b >= 0 (half-normal), e_i | z_i = k ~ Normal(p_k, sigma^2 I), z_i ~ Categorical(pi).
     A density on the embedding, not on X.
(a+) the same with W, b unconstrained (normal priors).
(b)  perception-constrained mixture, a proper density of X: x_i | z_i = k ~ Normal(A p_k + c, diag(s^2)).
(c)  the conditional of (a) alone, a proper likelihood of the seed sets given X:
     P(z_i = k | x_i) = softmax_k(-||x_i W + b - p_k||^2 / (2 sigma^2)), sigma = 1, W ~ Normal(0, s^2),
     b ~ Normal(0, 1); only the seeds enter, P(i in its sets | x_i) = sum over its sets. Variants:
     cw (s = 3 / sqrt(d) instead of 1 / sqrt(d): the package's model), cw5, cw10 (5, 10 / sqrt(d)),
     cs (sigma learned), cn (W >= 0, half-normal, as LPE), ch (s = tau / sqrt(d), tau ~ HalfNormal(3)),
     d10, dh (a manifold prior: W's prior precision grows along the directions in which the
     embedding varies between k-nearest neighbours, X^T L X, by a factor rho = 10 or learned).

Scored on the items that are not seeds: mean F-score per user cluster of the most probable
cluster (hard) and of the overlap rule (every cluster with probability >= 0.3, and the most
probable), Brier score of the membership probabilities, the share of items in the largest
cluster and, for (a), sigma (a collapse shows as sigma -> 0 with one cluster taking the items).
LPE + k-means is scored beside them. Writes the rows per data set and candidate to
benchmarks/out/perception_formulations.csv (git-ignored) and their means per kind of data to
benchmarks/results/perception_formulations_summary.csv.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import logsumexp

from bayes_wsc.baselines import perception as bp
from bayes_wsc.simulate.perception import digits_example, simulate_study

#: the conditional (seeds-only) candidates
C_FAMILY = ("c", "cs", "cw", "cn", "ch", "d1", "d10", "d100", "dh", "cw1", "cw5", "cw10", "cn5", "cn10")
sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ is no package
from output_paths import OUT, RESULTS  # noqa: E402

OVERLAP = 0.3
LOG_2PI = np.log(2 * np.pi)


def allowed_mask(data) -> np.ndarray:
    """0 where item i may be in cluster k (its seed sets, or every set for an unseeded item), -1e30 elsewhere."""
    return np.where(data.seeded[:, None], np.where(data.seed_mask, 0.0, -1e30), 0.0)


def manifold_axes(data, neighbours: int = 10):
    """Eigenvectors and eigenvalues (mean 1) of X^T L X, L the Laplacian of the items' symmetric
    k-nearest-neighbour graph: directions of W along which the embedding varies between neighbours."""
    from scipy.sparse import csgraph
    from sklearn.neighbors import kneighbors_graph

    graph = kneighbors_graph(data.features, neighbours, include_self=False)
    graph = graph.maximum(graph.T)
    lap = csgraph.laplacian(graph)
    M = data.features.T @ (lap @ data.features)
    mu, vecs = np.linalg.eigh(M)
    mu = np.maximum(mu, 0.0)
    return vecs, mu / mu.mean()


def build(candidate: str, data):
    import pymc as pm
    import pytensor.tensor as pt
    from pymc.math import logsumexp as pt_logsumexp

    n, d = data.features.shape
    q, k = data.n_perception, data.n_clusters
    coords = {"feature": data.feature_names, "pf": list(data.perception_names), "cluster": list(data.clusters)}
    X, P, allowed = data.features, data.perception, allowed_mask(data)
    w_sd = (1.0 if candidate in ("a", "a+", "c", "cs") else float(candidate[2:] or 3.0)
            if candidate[:2] in ("cw", "cn") else 3.0) / np.sqrt(d)
    with pm.Model(coords=coords) as model:
        if candidate in C_FAMILY or candidate in ("a", "a+"):
            if candidate == "a":
                W = pm.HalfNormal("W", w_sd, dims=("feature", "pf"))
                b = pm.HalfNormal("b", 1.0, dims="pf")
            elif candidate.startswith("cn"):
                W = pm.HalfNormal("W", w_sd, dims=("feature", "pf"))
                b = pm.Normal("b", 0.0, 1.0, dims="pf")
            elif candidate == "ch":
                tau = pm.HalfNormal("tau", 3.0)
                W = pm.Deterministic("W", tau / np.sqrt(d) * pm.Normal("W_raw", 0.0, 1.0, dims=("feature", "pf")),
                                     dims=("feature", "pf"))
                b = pm.Normal("b", 0.0, 1.0, dims="pf")
            elif candidate.startswith("d"):
                vecs, mu = manifold_axes(data)
                rho = pm.HalfNormal("rho", 30.0) if candidate == "dh" else float(candidate[1:])
                scale = w_sd / pt.sqrt(1.0 + rho * mu)
                W = pm.Deterministic("W", pt.dot(vecs, scale[:, None] * pm.Normal("W_raw", 0.0, 1.0,
                                     dims=("feature", "pf"))), dims=("feature", "pf"))
                b = pm.Normal("b", 0.0, 1.0, dims="pf")
            else:
                W = pm.Normal("W", 0.0, w_sd, dims=("feature", "pf"))
                b = pm.Normal("b", 0.0, 1.0, dims="pf")
            e = pt.dot(X, W) + b
            sq = pt.sum((e[:, None, :] - P[None]) ** 2, axis=-1)  # (n, K)
            if candidate in C_FAMILY:
                logits = -0.5 * sq / (pm.HalfNormal("sigma", 1.0) ** 2 if candidate == "cs" else 1.0)
                logp = logits - pt_logsumexp(logits, axis=1, keepdims=True)
                seeded = np.flatnonzero(data.seeded)
                pm.Potential("lik", pt_logsumexp(logp[seeded] + allowed[seeded], axis=1).sum())
            else:
                sigma = pm.HalfNormal("sigma", 1.0)
                pi = pm.Dirichlet("pi", np.ones(k), dims="cluster")
                comp = -0.5 * sq / sigma**2 - q * pt.log(sigma) - 0.5 * q * LOG_2PI
                pm.Potential("lik", pt_logsumexp(pt.log(pi) + comp + allowed, axis=1).sum())
        elif candidate == "b":
            A = pm.Normal("A", 0.0, 1.0, dims=("feature", "pf"))
            c = pm.Normal("c", 0.0, 1.0, dims="feature")
            s = pm.HalfNormal("s", 1.0, dims="feature")
            pi = pm.Dirichlet("pi", np.ones(k), dims="cluster")
            mu = pt.dot(P, A.T) + c  # (K, d)
            comp = -0.5 * pt.sum(((X[:, None, :] - mu[None]) / s) ** 2 + 2 * pt.log(s) + LOG_2PI, axis=-1)
            pm.Potential("lik", pt_logsumexp(pt.log(pi) + comp + allowed, axis=1).sum())
    return model


def starts(candidate: str, data, lpe_result, rng, restarts: int) -> list[dict]:
    """A start from LPE's map (rescaled to standardized features) or the seed means, then random ones."""
    d, q, k = data.n_features, data.n_perception, data.n_clusters
    out = []
    if candidate in C_FAMILY or candidate in ("a", "a+"):
        W = lpe_result.W / lpe_result.span[:, None]
        b = np.maximum(lpe_result.b - (lpe_result.low / lpe_result.span) @ lpe_result.W, 1e-3)
        first = {"W": np.maximum(W, 1e-4), "b": b}
        if candidate == "ch":
            first = {"W_raw": first["W"] * np.sqrt(d), "tau": 1.0, "b": b}
        if candidate.startswith("d"):
            first = {"W_raw": np.zeros((d, q)), "b": b}
            if candidate == "dh":
                first["rho"] = 10.0
        if candidate == "cs":
            first.update(sigma=1.0)
        elif candidate not in ("c", "cw"):
            first.update(sigma=0.5, pi=np.full(k, 1.0 / k))
        out.append(first)
        for _ in range(restarts - 1):
            start = {"W": np.abs(rng.normal(0, 1 / np.sqrt(d), (d, q))), "b": rng.uniform(0, 1, q)}
            if candidate == "ch":
                start = {"W_raw": rng.normal(0, 1, (d, q)), "tau": 1.0, "b": start["b"]}
            if candidate.startswith("d"):
                start = {"W_raw": rng.normal(0, 1, (d, q)), "b": start["b"]}
                if candidate == "dh":
                    start["rho"] = 10.0
            if candidate == "cs":
                start.update(sigma=1.0)
            elif candidate not in ("c", "cw"):
                start.update(sigma=1.0, pi=np.full(k, 1.0 / k))
            out.append(start)
    else:
        mask = data.seed_mask.astype(float)
        means = (mask.T @ data.features) / mask.sum(axis=0)[:, None]  # (K, d)
        A, *_ = np.linalg.lstsq(np.column_stack([data.perception, np.ones(k)]), means, rcond=None)
        out.append({"A": A[:-1].T, "c": A[-1], "s": np.ones(d), "pi": np.full(k, 1.0 / k)})
        for _ in range(restarts - 1):
            out.append({"A": rng.normal(0, 1, (d, q)), "c": rng.normal(0, 0.1, d), "s": np.ones(d),
                        "pi": np.full(k, 1.0 / k)})
    return out


def memberships(candidate: str, data, point: dict) -> np.ndarray:
    X, P = data.features, data.perception
    if candidate == "b":
        mu = P @ point["A"].T + point["c"]
        s = point["s"]
        joint = np.log(point["pi"]) - 0.5 * (((X[:, None, :] - mu[None]) / s) ** 2 + 2 * np.log(s)).sum(-1)
    else:
        e = X @ point["W"] + point["b"]
        sq = ((e[:, None, :] - P[None]) ** 2).sum(-1)
        if candidate in C_FAMILY and candidate != "cs":
            joint = -0.5 * sq
        elif candidate == "cs":
            joint = -0.5 * sq / point["sigma"] ** 2
        else:
            joint = np.log(point["pi"]) - 0.5 * sq / point["sigma"] ** 2
    return np.exp(joint - logsumexp(joint, axis=1, keepdims=True))


def score(name, dataset, data, truth, probs, seconds, extra=None) -> dict:
    rows = data.unseeded_items
    hard = bp.one_hot(probs.argmax(axis=1), data.n_clusters)
    return {"dataset": dataset, "method": name,
            "f_hard": float(bp.f_scores(hard, truth, rows).mean()),
            "f_overlap": float(bp.f_scores(bp.threshold_clusters(probs, OVERLAP), truth, rows).mean()),
            **{f"f_{t}": float(bp.f_scores(bp.threshold_clusters(probs, t), truth, rows).mean())
               for t in (0.2, 0.25, 0.4, 0.5)},
            "brier": bp.brier_score(probs, truth, rows),
            "largest_share": float(hard[rows].mean(axis=0).max()),
            "seconds": seconds, **(extra or {})}


def run(dataset: str, study, candidates, restarts: int) -> list[dict]:
    from bayes_wsc.fit import fit_map

    data, truth = study.data(), study.membership
    t0 = time.perf_counter()
    lpe_result = bp.lpe(data)
    lpe_seconds = time.perf_counter() - t0
    labels = bp.embedding_kmeans(lpe_result, data)
    out = [score("LPE + k-means", dataset, data, truth, bp.one_hot(labels, data.n_clusters).astype(float),
                 lpe_seconds)]
    lpe_m = bp.perception_memberships(lpe_result.F, data.perception)
    row = score("LPE thresholded", dataset, data, truth, bp.threshold_clusters(lpe_m, OVERLAP).astype(float),
                lpe_seconds)
    out.append(row)
    km = bp.kmeans_clusters(data.features, data)
    out.append(score("k-means on X", dataset, data, truth, bp.one_hot(km, data.n_clusters).astype(float), 0.0))
    rng = np.random.default_rng(0)
    for candidate in candidates:
        t0 = time.perf_counter()
        model = build(candidate, data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            draws, _ = fit_map(model, starts(candidate, data, lpe_result, rng, restarts))
        point = {name: np.asarray(v[0, 0]) for name, v in draws.posterior.items()}
        probs = memberships(candidate, data, point)
        extra = {"log_density": draws.info["log_density"]}
        if "sigma" in point:
            extra["sigma"] = float(point["sigma"])
        out.append(score(f"({candidate})", dataset, data, truth, probs, time.perf_counter() - t0, extra))
        print(out[-1], flush=True)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=5)
    parser.add_argument("--no-digits", action="store_true")
    parser.add_argument("--restarts", type=int, default=4)
    parser.add_argument("--candidates", default="a,a+,b,c,cw,cw5,cw10,cs,cn,ch,d10,dh")
    parser.add_argument("--out", default=str(OUT / "perception_formulations.csv"))
    args = parser.parse_args(argv)
    candidates = args.candidates.split(",")
    rows = []
    for s in range(args.datasets):
        rows += run(f"sim{s}", simulate_study(seed=s), candidates, args.restarts)
    if not args.no_digits:
        rows += run("digits", digits_example(seed=0), candidates, args.restarts)
    table = pd.DataFrame(rows)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    summary = table.assign(kind=np.where(table["dataset"] == "digits", "digits", "simulated")).groupby(
        ["kind", "method"])[["f_hard", "f_overlap", "brier", "largest_share", "seconds"]].mean()
    if Path(args.out) == OUT / "perception_formulations.csv":
        RESULTS.mkdir(exist_ok=True)
        summary.to_csv(RESULTS / "perception_formulations_summary.csv", float_format="%.4f")
    with pd.option_context("display.width", 140):
        print(summary.round(3).to_string())


if __name__ == "__main__":
    main()
