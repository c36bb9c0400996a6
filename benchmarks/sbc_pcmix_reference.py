"""The PC mixture's SBC data sets refitted by an independent, hand-written NumPyro model.

`sbc.py --model pcmix` ranks each truth among the package's NUTS draws. When
a quantity fails, the question is whether the package's posterior is wrong
(likelihood, transforms, priors, a sampler that misses part of the mass) or
the ranks are. This script answers it without any of the package's model
code: the same prior draws and simulated data sets (`sbc_case`, same seed),
the joint model at lam = 1 written by hand in NumPyro (its own likelihood,
priors and transforms), 4 chains started from the prior, 500 warm-up and
1000 draws each, target acceptance 0.9. Per simulation it writes the
reference's rank of every sorted quantity next to the package's rank from
the SBC ranks CSV (benchmarks/out/sbc_pcmix[_tag]_ranks.csv, made first by
`sbc.py --model pcmix`), the reference's R-hat and divergences, to
benchmarks/out/sbc_pcmix[_tag]_reference.csv (git-ignored), and at the end the
reference's own uniformity tests and the correlation of the two rankings, to
benchmarks/results/sbc_pcmix[_tag]_reference_summary.csv.

    python benchmarks/sbc_pcmix_reference.py --seed 2018 --sims 100 --resume
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ is no package
from output_paths import OUT, RESULTS, require  # noqa: E402

#: the package's quantities this reference ranks too (all functions of the parameters alone)
QUANTITIES = ("pi_max", "sorted_pi[0]", "sorted_mean[0]", "sorted_mean[1]", "sorted_sd[0]", "sorted_sd[1]",
              "sorted_rho[0]", "sorted_rho[1]")


def sorted_quantities(pi, mean, sd, rho) -> dict[str, np.ndarray]:
    """The ranked quantities from (..., K) arrays, components sorted by their mean."""
    order = np.argsort(mean, axis=-1)

    def take(a):
        return np.take_along_axis(a, order, axis=-1)

    out = {"pi_max": pi.max(axis=-1)}
    for name, values in (("pi", pi), ("mean", mean), ("sd", sd), ("rho", rho)):
        for k in range(values.shape[-1]):
            out[f"sorted_{name}[{k}]"] = take(values)[..., k]
    return {q: out[q] for q in QUANTITIES}


def reference_sampler(sd_floor: float, chains: int, warmup: int, draws: int):
    """A jitted NumPyro NUTS run of the K = 2, one-feature joint model: (x, y with -1 unlabeled) -> draws."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS, init_to_sample

    def model(x, y):
        pi = numpyro.sample("pi", dist.Dirichlet(jnp.full(2, 1.01)))
        mean = numpyro.sample("mean", dist.Normal(0.0, 3.0).expand([2]))
        sd = sd_floor + numpyro.sample("sd_excess", dist.Gamma(2.0, 1.0).expand([2]))
        rho = numpyro.sample("rho", dist.Beta(1.01, 1.01).expand([2]))
        log_x = jnp.log(pi)[None] + dist.Normal(mean, sd).log_prob(x[:, None])
        log_y = jnp.where(y[:, None] == 1, jnp.log(rho)[None], jnp.log1p(-rho)[None])
        log_y = jnp.where(y[:, None] < 0, 0.0, log_y)  # unlabeled: p(x) only
        numpyro.factor("joint", jax.scipy.special.logsumexp(log_x + log_y, axis=1).sum())

    mcmc = MCMC(NUTS(model, init_strategy=init_to_sample, target_accept_prob=0.9), num_warmup=warmup,
                num_samples=draws, num_chains=chains, chain_method="sequential", progress_bar=False,
                jit_model_args=True)

    def run(x, y, seed):
        mcmc.run(jax.random.PRNGKey(seed), jnp.asarray(x), jnp.asarray(y), extra_fields=("diverging",))
        s = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
        divergences = int(np.asarray(mcmc.get_extra_fields()["diverging"]).sum())
        jax.clear_caches()  # every run compiles anew; without this ~30 runs exhaust the memory maps
        return s, divergences

    return run


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=2018, help="the SBC run's seed (its prior draws and data)")
    parser.add_argument("--sims", type=int, default=100)
    parser.add_argument("--tag", default="", help="the SBC run's tag: its ranks are read from sbc_pcmix[_tag]_ranks.csv")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--out", default=str(OUT), help="folder of the SBC ranks and of the reference's rows")
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args(argv)

    from scipy import stats

    from bayes_wsc import inference
    from bayes_wsc.sbc import N_RANK_DRAWS, append_row, chi_square_uniform, prior_draws, rank_of, thin_indices
    from bayes_wsc.simulate.pcmix import sbc_case

    case = sbc_case()  # the defaults of `sbc.py --model pcmix`
    sd_floor = 0.001
    prefix = "sbc_pcmix" + (f"_{args.tag}" if args.tag else "")
    package_csv = Path(args.out) / f"{prefix}_ranks.csv"
    require(package_csv, f"python benchmarks/sbc.py --model pcmix --sims {args.sims} --seed {args.seed}"
                         + (f" --tag {args.tag}" if args.tag else "") + " --resume")
    package = pd.read_csv(package_csv).set_index("sim")
    out_csv = Path(args.out) / f"{prefix}_reference.csv"
    done = set(pd.read_csv(out_csv)["sim"]) if args.resume and out_csv.exists() else set()
    if out_csv.exists() and not args.resume:
        out_csv.unlink()
    run = reference_sampler(sd_floor, args.chains, args.warmup, args.draws)
    draws = prior_draws(case, args.sims, args.seed)
    keep = thin_indices(args.chains * args.draws, N_RANK_DRAWS)
    for sim in range(args.sims):
        if sim in done:
            continue
        t0 = time.perf_counter()
        data = case.simulate(draws[sim], np.random.default_rng([args.seed, sim, 2]))  # as run_sbc simulates
        samples, divergences = run(data.x[:, 0], data.y, sim)
        post = sorted_quantities(samples["pi"], samples["mean"], sd_floor + samples["sd_excess"], samples["rho"])
        truth = sorted_quantities(draws[sim]["pi"], draws[sim]["mean_z"][:, 0],
                                  sd_floor + draws[sim]["sd_excess"][:, 0], draws[sim]["rho"])
        row = {"sim": sim, "seconds": round(time.perf_counter() - t0, 1), "divergences": divergences,
               "rhat_max": round(max(inference.rhat_of_draws(v) for v in post.values()), 4)}
        rank_rng = np.random.default_rng([args.seed, sim, 4])
        for q, values in post.items():
            row[f"reference:{q}"] = rank_of(float(truth[q]), values.reshape(-1)[keep], rank_rng)
            if sim in package.index:
                row[f"package:{q}"] = int(package.loc[sim, f"rank:{q}"])
        append_row(out_csv, row)
        print(f"sim {sim + 1}/{args.sims}: {row['seconds']:.0f} s, R-hat {row['rhat_max']:.3f}, "
              f"{divergences} divergences", flush=True)

    table = pd.read_csv(out_csv).sort_values("sim")
    print(f"\nreference NumPyro refit of {prefix}: {len(table)} simulations, {args.chains} chains x "
          f"({args.warmup} + {args.draws}) from the prior; R-hat > 1.01 in {int((table['rhat_max'] > 1.01).sum())}, "
          f"divergences in {int((table['divergences'] > 0).sum())}")
    rows = []
    for q in QUANTITIES:
        ranks = table[f"reference:{q}"].to_numpy()
        chi2, p = chi_square_uniform(ranks, N_RANK_DRAWS, 20)
        row = {"quantity": q, "reference mean rank / L": ranks.mean() / N_RANK_DRAWS, "reference chi2 p": p}
        if f"package:{q}" in table and table[f"package:{q}"].notna().sum() > 1:
            both = table[[f"reference:{q}", f"package:{q}"]].dropna()
            row["package mean rank / L"] = both[f"package:{q}"].mean() / N_RANK_DRAWS
            row["rank correlation"] = stats.pearsonr(both.iloc[:, 0], both.iloc[:, 1])[0]
        rows.append(row)
    summary = pd.DataFrame(rows)
    print(summary.round(4).to_string(index=False))
    RESULTS.mkdir(exist_ok=True)
    summary.to_csv(RESULTS / f"{prefix}_reference_summary.csv", index=False, float_format="%.4f")
    print("wrote", out_csv, "and", RESULTS / f"{prefix}_reference_summary.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
