"""Writes the small fit file of the stack it runs on, which tests/test_fit_files_across_stacks.py reads on the
other stack: `fit-pymc<major>.nc` (a NUTS fit of the first model's example data) and `fit-pymc<major>.json`
(what that stack computed from it: the summary table, the predictions of the example's first groups and
PSIS-LOO). Run it once with each stack's Python, from the repository's root:

    .venv/bin/python tests/data/write_stack_fit.py          # Python 3.11: PyMC 5, ArviZ 0.2x
    .venv-3.12/bin/python tests/data/write_stack_fit.py     # Python 3.12: PyMC 6, ArviZ 1
"""

from __future__ import annotations

import json
import sys
import warnings
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent


def computed(est) -> dict:
    """The figures a stack computes from a fit: summary, predictions with intervals, LOO."""
    from bayes_wsc import inference

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        elpd = inference.elpd_values(est.loo())
    table = est.summary()
    return {"summary": {row: [float(v) for v in values] for row, values in zip(table.index, table.to_numpy())},
            "summary_columns": list(table.columns),
            "class_probability": {name: values.values.tolist() for name, values in
                                  est.class_probability(list(est.idata_.posterior["group"].values[:3])).items()},
            "loo": {"elpd": elpd.elpd, "se": elpd.se, "p": elpd.p}}


def main() -> None:
    from bayes_wsc import registry
    from bayes_wsc.errors import FitWarning

    stem = HERE / f"fit-pymc{version('pymc').split('.')[0]}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)  # short chains: low ESS, said so in the fit
        est = registry.get("wsc").estimator_class()(method="nuts", draws=60, tune=60, chains=2, seed=3,
                                                    progressbar=False).fit(registry.get("wsc").example(seed=0))
    est.save(stem.with_suffix(".nc"))
    stack = {name: version(name) for name in ("pymc", "pytensor", "arviz", "jax")}
    stack["python"] = ".".join(map(str, sys.version_info[:3]))
    stem.with_suffix(".json").write_text(json.dumps({"stack": stack, **computed(est)}, indent=1) + "\n")
    print(stem.with_suffix(".nc"), stack)


if __name__ == "__main__":
    main()
