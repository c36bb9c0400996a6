"""The reference: a hand-written NumPyro model of the same posterior as `bayes_wsc.models.wsc`.

Same priors (mu_loc ~ N(0, 2), mu_scale ~ HalfNormal(2), mu ~ N(mu_loc, mu_scale),
HE ~ N(mu, 1/sqrt(WH)), w0, w1 ~ Dirichlet(c)), same count-table likelihood,
NumPyro's defaults everywhere else (float32, init_to_uniform, its own
stick-breaking transform). It is what a careful user would write by hand.
"""

from __future__ import annotations

import time

import numpy as np


def run(counts: np.ndarray, he: np.ndarray, *, wh: float = 10.0, concentration: float = 1.0,
        draws: int = 1000, tune: int = 1000, chains: int = 2, seed: int = 0) -> dict:
    """Sample and return rho draws (chain, draw, K) with the wall time of the whole run."""
    import numpyro

    numpyro.set_host_device_count(chains)  # chains in parallel on the CPU cores, as a careful user would
    import jax
    import jax.numpy as jnp
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS

    t0 = time.perf_counter()
    counts_j = jnp.asarray(counts, dtype=jnp.float32)
    he_j = jnp.asarray(he, dtype=jnp.float32)
    totals = counts_j.sum(axis=1)
    n_groups, n_bins = counts.shape

    def model():
        mu_loc = numpyro.sample("mu_loc", dist.Normal(0.0, 2.0))
        mu_scale = numpyro.sample("mu_scale", dist.HalfNormal(2.0))
        with numpyro.plate("group", n_groups):
            mu = numpyro.sample("mu", dist.Normal(mu_loc, mu_scale))
            numpyro.sample("he", dist.Normal(mu, 1.0 / np.sqrt(wh)), obs=he_j)
        w0 = numpyro.sample("w0", dist.Dirichlet(jnp.full(n_bins, concentration)))
        w1 = numpyro.sample("w1", dist.Dirichlet(jnp.full(n_bins, concentration)))
        cell = jnp.logaddexp(jax.nn.log_sigmoid(mu)[:, None] + jnp.log(w1),
                             jax.nn.log_sigmoid(-mu)[:, None] + jnp.log(w0))
        numpyro.factor("clicks", jnp.sum(counts_j * cell))
        pi = jnp.sum(totals * jax.nn.sigmoid(mu)) / jnp.sum(totals)
        numpyro.deterministic("rho", pi * w1 / (pi * w1 + (1 - pi) * w0))

    chain_method = "parallel" if jax.local_device_count() >= chains else "sequential"
    mcmc = MCMC(NUTS(model), num_warmup=tune, num_samples=draws, num_chains=chains,
                chain_method=chain_method, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), extra_fields=("num_steps",))
    rho = np.asarray(mcmc.get_samples(group_by_chain=True)["rho"])
    steps = np.asarray(mcmc.get_extra_fields()["num_steps"]).mean()
    return {"rho": rho, "seconds": time.perf_counter() - t0, "mean_steps": float(steps)}
