"""Cost of one log-density gradient of the first model, mu sampled against mu integrated out (per
group by Gauss-Hermite quadrature, and on one grid of nodes shared by all groups).

What NUTS pays per leapfrog step: `value_and_grad` of PyMC's JAX graph of the model's log density,
jitted, in float32 as the package's NUMPyro runs it (`fit._run_numpyro`), on one CPU thread, at
the Sec. 5 sizes (J = 100 clicks a group, K = 30 bins), the models timed in the same process,
alternating.

    python benchmarks/bench_gradient.py --groups 1000 10000
    python benchmarks/bench_gradient.py --groups 10000 --mu integrated grid --heaviest 1000   # one heavy group
    python benchmarks/bench_gradient.py --groups 10000 --values-draws 4000   # and the values after sampling
    python benchmarks/bench_gradient.py --groups 10000 --mu grid --nuts --repeats 1   # and NUTS's steps

`--nuts` also runs NumPyro's NUTS on each model as the package does (4 chains in parallel on 4 host
devices, 1000 tuning steps and 1000 draws, float32, dense mass where mu is integrated out) from the
start, and reports its seconds and leapfrog steps, tuning included (the fit's record has only the
draws'), so that the cost per step inside NUTS can be set beside the isolated gradient.
`--values-draws N` also times what every NUTS fit computes after sampling: each draw's free variables,
Deterministics and per-group log-likelihood, in float64, for N draws (`fit._values_per_draw`, as
`fit._run_numpyro` calls it; here N copies of the start, one device).
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def gradient_seconds(model, repeats: int) -> float:
    """Median seconds of one jitted value_and_grad of the model's negative log density, float32."""
    from pymc.sampling.jax import get_jaxified_graph

    from bayes_wsc.fit import jax_runtime, transformed_start

    jax = jax_runtime(1)
    jax.config.update("jax_enable_x64", False)
    potential = get_jaxified_graph(inputs=model.value_vars, outputs=[-model.logp()])
    start = transformed_start(model, None)
    x = [np.asarray(start[v.name], dtype=np.float32) for v in model.value_vars]
    fn = jax.jit(jax.value_and_grad(lambda xs: potential(*xs)[0]))
    jax.block_until_ready(fn(x))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(x))
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def values_seconds(model, n_draws: int) -> float:
    """Seconds of `fit._values_per_draw` on `n_draws` draws (4 chains) of the model's start."""
    from pymc.sampling.jax import get_jaxified_graph

    from bayes_wsc.fit import _kept_outputs, _values_per_draw, jax_runtime, transformed_start

    jax = jax_runtime(1)
    start = transformed_start(model, None)
    samples = [np.broadcast_to(np.asarray(start[v.name], np.float32), (4, n_draws // 4, *np.shape(start[v.name])))
               for v in model.value_vars]
    values_fn = get_jaxified_graph(inputs=model.value_vars, outputs=_kept_outputs(model, None))
    t0 = time.perf_counter()
    _values_per_draw(jax, values_fn, samples, model)
    return time.perf_counter() - t0


def nuts_steps(model, dense_mass: bool, chains: int = 4, steps: int = 1000) -> dict:
    """Wall seconds and leapfrog steps of NumPyro's NUTS, tuning and draws apart, `chains` in parallel."""
    from numpyro.infer import MCMC, NUTS
    from pymc.sampling.jax import get_jaxified_graph

    from bayes_wsc.fit import jax_runtime, transformed_start

    jax = jax_runtime(chains)
    jax.config.update("jax_enable_x64", False)
    potential = get_jaxified_graph(inputs=model.value_vars, outputs=[-model.logp()])
    start = transformed_start(model, None)
    init = [np.stack([np.asarray(start[v.name], np.float32)] * chains) for v in model.value_vars]
    mcmc = MCMC(NUTS(potential_fn=lambda xs: potential(*xs)[0], dense_mass=dense_mass), num_warmup=steps,
                num_samples=steps, num_chains=chains, progress_bar=False,
                chain_method="parallel" if jax.local_device_count() >= chains else "sequential")
    t0 = time.perf_counter()
    mcmc.warmup(jax.random.PRNGKey(0), init_params=init, extra_fields=("num_steps",), collect_warmup=True)
    tuning = int(np.sum(mcmc.get_extra_fields()["num_steps"]))
    t1 = time.perf_counter()
    mcmc.run(mcmc.post_warmup_state.rng_key, extra_fields=("num_steps",))
    drawing = int(np.sum(mcmc.get_extra_fields()["num_steps"]))
    t2 = time.perf_counter()
    return {"tuning_seconds": t1 - t0, "tuning_steps": tuning, "draw_seconds": t2 - t1, "draw_steps": drawing,
            "ms_per_step": (t2 - t0) / (tuning + drawing) * 1e3}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--mu", nargs="+", default=["sampled", "integrated", "grid"],
                        choices=("sampled", "integrated", "grid"), help="the first is the reference")
    parser.add_argument("--values-draws", type=int, default=0, help="also time the float64 values after sampling")
    parser.add_argument("--nuts", action="store_true", help="also run NUTS, 4 chains x (1000 + 1000)")
    parser.add_argument("--heaviest", type=int, default=None,
                        help="clicks of the first group (the others have 100): the grid's nodes follow the heaviest")
    args = parser.parse_args(argv)
    if args.nuts:  # JAX's host devices are fixed when it starts: one per chain
        from bayes_wsc.fit import jax_runtime

        jax_runtime(4)
    import warnings

    from bayes_wsc.models.wsc import build_model, data_grid
    from bayes_wsc.simulate import simulate_wsc

    for groups in args.groups:
        sizes = np.full(groups, 100)
        sizes[0] = args.heaviest or 100
        data, _ = simulate_wsc(n_groups=groups, items_per_group=sizes, n_bins=30, seed=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            models = {mu: build_model(data, mu=mu) for mu in args.mu}
            seconds = {mu: [] for mu in models}
            for _ in range(2):  # alternating rounds
                for mu, model in models.items():
                    seconds[mu].append(gradient_seconds(model, args.repeats))
        reference = min(seconds[args.mu[0]])
        for mu, model in models.items():
            nodes = f", {data_grid(data, 10.0, 'hierarchical').size} nodes" if mu == "grid" else ""
            print(f"I = {groups}: value_and_grad {min(seconds[mu]) * 1e3:.2f} ms with mu {mu} ({len(model.value_vars)} "
                  f"value variables{nodes}): {min(seconds[mu]) / reference:.2f}x mu {args.mu[0]}", flush=True)
        for mu, model in models.items() if args.nuts else ():
            found = nuts_steps(model, dense_mass=mu != "sampled")
            print(f"I = {groups}: NUTS, mu {mu}: tuning {found['tuning_seconds']:.1f} s, {found['tuning_steps']} steps; "
                  f"draws {found['draw_seconds']:.1f} s, {found['draw_steps']} steps; {found['ms_per_step']:.2f} ms "
                  "of wall time per step (4 chains, tuning and its compilation included)", flush=True)
        for mu, model in models.items() if args.values_draws else ():
            print(f"I = {groups}: the values of {args.values_draws} draws after sampling, mu {mu}: "
                  f"{values_seconds(model, args.values_draws):.1f} s", flush=True)


if __name__ == "__main__":
    main()
