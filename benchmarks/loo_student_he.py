"""Can LOO tell a Student-t rater noise from the default Normal one on data from the Student-t process (issue 38)?

Data as in the issue: `simulate_wsc`'s groups (Sec. 5's emissions, mu_i ~ N(0, 1)) with HE_i = mu_i + 0.5 t_2,
Student-t noise with 2 degrees of freedom at simulate's default scale. Fitted by Laplace (nested: each mu_i
integrated out), both at WH = 4 (the noise's scale, 0.5): the default model, and the first model's contract
variant with Student-t rater noise at nu = 2 (`tests/contract_cases.py`, the variant LOO preferred in
`tests/test_variant_log_likelihood.py`). Printed per size and seed: `bayes_wsc.compare`'s elpd difference, its
SE and its `conclusion`.

    nice -n 10 python benchmarks/loo_student_he.py --sizes 200x20,80x40,1000x20 --seeds 3
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the contract case's variant


def student_he_data(n_groups: int, group_size: int, seed: int):
    from bayes_wsc.data.grouped import GroupedCounts
    from bayes_wsc.models.wsc.simulate import simulate_wsc

    data, _ = simulate_wsc(n_groups=n_groups, items_per_group=group_size, n_bins=5, sigma_h=0.0, seed=seed)
    he = np.asarray(data.he) + 0.5 * np.random.default_rng([seed, 38]).standard_t(2.0, n_groups)
    return GroupedCounts.from_counts(data.counts, he, group_ids=list(data.group_ids), bin_labels=list(data.bins.labels))


def main(argv=None) -> None:
    from contract_cases import CASES

    from bayes_wsc import compare
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.wsc import WSC

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200x20,80x40,1000x20", help="groups x clicks per group, comma-separated")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        variant = Path(folder) / "student_he.py"
        variant.write_text(CASES["wsc"].variant_source())
        for size in args.sizes.split(","):
            n_groups, group_size = (int(v) for v in size.split("x"))
            for seed in range(args.seeds):
                data = student_he_data(n_groups, group_size, seed)
                settings = dict(wh=4.0, method="laplace", draws=1000, seed=seed, progressbar=False)
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", FitWarning)
                    fits = {"default": WSC(**settings).fit(data),
                            "student-t": WSC(model_file=str(variant), model_settings={"nu": 2.0}, **settings).fit(data)}
                    table = compare(fits)
                other = table.index[1]
                print(f"{n_groups} x {group_size}, seed {seed}: best {table.index[0]}, elpd "
                      f"{table['elpd_loo'].iloc[0]:.1f} vs {table['elpd_loo'].iloc[1]:.1f}, difference "
                      f"{table.loc[other, 'elpd_diff']:.2f}, SE {table.loc[other, 'dse']:.2f} "
                      f"({time.perf_counter() - t0:.0f} s): {table.loc[other, 'conclusion']}", flush=True)


if __name__ == "__main__":
    main()
