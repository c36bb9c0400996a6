"""Resident memory of a perception fit's NUTS run while it samples (issue 38: the seeded mixture's NUTS grew to 7.9 GB).

    bayes-wsc simulate perception --out DIR --seed 71
    python benchmarks/nuts_memory.py DIR --chains 4                 # JAX's host devices as the package sets them
    python benchmarks/nuts_memory.py DIR --chains 4 --devices 8     # more XLA host devices than chains
    python benchmarks/nuts_memory.py DIR --chains 4 --sequential    # NumPyro's chains one after another

Fits the seeded mixture (or --formulation conditional) by MAP without checks, then runs the package's NUTS
(`fit.fit_nuts`, NumPyro) from that mode, sampling the process's resident memory every 0.5 s; prints the
memory every 5 s and stops the process after --seconds of sampling or above --limit-gb, whichever is first.
"""

from __future__ import annotations

import argparse
import os
import threading
import time

import numpy as np
import pandas as pd
import psutil


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", help="a folder that `bayes-wsc simulate perception` wrote")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--devices", type=int, default=None, help="XLA host devices (default: the package's choice)")
    parser.add_argument("--sequential", action="store_true", help="NumPyro's chain_method 'sequential'")
    parser.add_argument("--formulation", choices=("mixture", "conditional"), default="mixture")
    parser.add_argument("--seconds", type=float, default=60.0, help="stop this long after NUTS starts")
    parser.add_argument("--limit-gb", type=float, default=4.0)
    args = parser.parse_args()

    process, started, log = psutil.Process(), time.time(), []
    nuts_started = []

    def report(final: bool = False) -> None:
        print("resident GB at seconds:", " ".join(f"{t:.0f}:{r:.2f}" for t, r in log[::10]), flush=True)
        if nuts_started:
            after = [(t, r) for t, r in log if t >= nuts_started[0] + 20]  # past NUTS's compilation
            if len(after) > 2:
                rate = (after[-1][1] - after[0][1]) / max(after[-1][0] - after[0][0], 1e-9) * 1000
                print(f"growth from 20 s after NUTS started: {rate:.1f} MB/s over {after[-1][0] - after[0][0]:.0f} s",
                      flush=True)

    def watch() -> None:
        while True:
            rss = process.memory_info().rss
            log.append((time.time() - started, rss / 1e9))
            late = nuts_started and time.time() - started > nuts_started[0] + args.seconds
            if rss > args.limit_gb * 1e9 or late:
                report()
                os._exit(0 if late else 3)
            time.sleep(0.5)

    threading.Thread(target=watch, daemon=True).start()
    if args.devices:
        from bayes_wsc import jax_setup

        chosen = jax_setup.set_host_devices
        jax_setup.set_host_devices = lambda n: chosen(args.devices)
    from bayes_wsc import fit
    from bayes_wsc.models.perception import model
    from bayes_wsc.models.perception.data import SeedSets

    f = args.folder
    data = SeedSets.from_frames(pd.read_csv(f"{f}/items.csv"), pd.read_csv(f"{f}/seeds.csv"),
                                pd.read_csv(f"{f}/perception.csv"))
    cls = model.PerceptionMixture if args.formulation == "mixture" else model.PerceptionClustering
    est = cls(method="map", checks=False).fit(data)
    point = {n: np.asarray(est.idata_.posterior[n].values[0, 0]) for n in est.start_names()}
    if args.sequential:
        run = fit._run_numpyro

        class OneDevice:  # NumPyro runs chains one after another when there are fewer devices than chains
            def __init__(self, jax):
                self.jax = jax

            def __getattr__(self, name):
                return getattr(self.jax, name)

            def local_device_count(self):
                return 1

        fit._run_numpyro = lambda jax, *a, **k: run(OneDevice(jax), *a, **k)
    nuts_model = est.build_model(data)
    starts = {rv.name: point[rv.name] for rv in nuts_model.free_RVs if rv.name in point}
    import jax

    print(f"XLA host devices {jax.local_device_count()}, chains {args.chains}, "
          f"{'sequential' if args.sequential else 'parallel'}", flush=True)
    nuts_started.append(time.time() - started)
    draws = fit.fit_nuts(nuts_model, draws=args.draws, tune=args.tune, chains=args.chains, seed=1, initvals=starts,
                         progressbar=False)
    stats = draws.stats
    print(f"NUTS done in {time.time() - started - nuts_started[0]:.0f} s; mean leapfrog steps per draw "
          f"{stats['n_steps'].mean():.0f}, divergences {int(stats['diverging'].sum())}", flush=True)
    report()


if __name__ == "__main__":
    main()
