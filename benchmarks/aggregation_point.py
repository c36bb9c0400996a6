"""The aggregation check's phi at the joint MAP (what it fits when a fit has no mu) against its phi at the
mode of the globals' marginal density with each mu_i at its conditional mode there (what a nested Laplace
fit now hands it: models.wsc.checks.map_point). Data from the model and with behavior that depends on the
group (tests/test_checks_aggregation.grouped_behavior), and Sec. 5 data.

    python benchmarks/aggregation_point.py
"""

import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_checks_aggregation import grouped_behavior  # noqa: E402

from bayes_wsc.checks.aggregation import aggregation_bias_check  # noqa: E402
from bayes_wsc.models.wsc import WSC  # noqa: E402
from bayes_wsc.models.wsc.checks import map_point  # noqa: E402
from bayes_wsc.simulate import simulate_wsc  # noqa: E402


def compare(name: str, data, wh: float) -> None:
    joint = aggregation_bias_check(data, {"wh": wh}, model=WSC)
    est = WSC(method="laplace", wh=wh, draws=100, seed=0, progressbar=False).fit(data)
    marginal = aggregation_bias_check(data, {"wh": wh}, model=WSC, map_point=map_point(est, data))
    print(f"{name}: joint MAP phi {joint['statistic']:.4f} p {joint['p_value']:.3g} flagged {joint['flagged']} | "
          f"marginal mode phi {marginal['statistic']:.4f} p {marginal['p_value']:.3g} flagged {marginal['flagged']}",
          flush=True)


def main() -> None:
    warnings.simplefilter("ignore")
    for seed in (0, 1):
        compare(f"from the model, seed {seed}, WH 10", grouped_behavior(seed=seed), 10.0)
        compare(f"by group, concentration 30, seed {seed}, WH 10", grouped_behavior(concentration=30.0, seed=seed), 10.0)
        compare(f"by group, concentration 300, seed {seed}, WH 10", grouped_behavior(concentration=300.0, seed=seed),
                10.0)
    for items in (5, 100):
        data, _ = simulate_wsc(n_groups=500, items_per_group=items, n_bins=15, seed=1000)
        compare(f"Sec. 5, I 500, J {items}, WH 10", data, 10.0)
        compare(f"Sec. 5, I 500, J {items}, WH 4", data, 4.0)


if __name__ == "__main__":
    main()
