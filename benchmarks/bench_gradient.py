"""Cost of one log-density gradient of the first model, mu sampled against mu integrated out (per
group by Gauss-Hermite quadrature, and on one grid of nodes shared by all groups).

What NUTS pays per leapfrog step: `value_and_grad` of PyMC's JAX graph of the model's log density,
jitted, in float32 as the package's NUMPyro runs it (`fit._run_numpyro`), on one CPU thread, at
the Sec. 5 sizes (J = 100 clicks a group, K = 30 bins), the models timed in the same process,
alternating.

    python benchmarks/bench_gradient.py --groups 1000 10000
    python benchmarks/bench_gradient.py --groups 10000 --mu integrated grid --heaviest 1000   # one heavy group
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--mu", nargs="+", default=["sampled", "integrated", "grid"],
                        choices=("sampled", "integrated", "grid"), help="the first is the reference")
    parser.add_argument("--heaviest", type=int, default=None,
                        help="clicks of the first group (the others have 100): the grid's nodes follow the heaviest")
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    main()
