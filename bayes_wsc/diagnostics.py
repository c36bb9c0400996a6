"""Plain-language checks of a fit: each failure is a sentence that says what to do.

The checks read an InferenceData (through `bayes_wsc.inference`) and return
messages; the estimator warns with them and stores them in the fit, and the
report prints them.
"""

from __future__ import annotations

import numpy as np

from bayes_wsc import inference

RHAT_MAX = 1.01
ESS_PER_CHAIN_MIN = 100


def nuts_messages(idata, var_names: list[str], max_tree_depth: int = 10) -> list[str]:
    """R-hat, bulk/tail ESS, divergences and tree-depth saturation on `var_names`."""
    messages = []
    post = idata.posterior
    chains, draws = post.sizes["chain"], post.sizes["draw"]
    stats = idata.sample_stats if "sample_stats" in idata.groups() else None
    if draws < 4:
        return [f"only {draws} draws per chain: too few to judge convergence; use at least 200"]
    conv = inference.convergence(idata, var_names)
    ess_min = ESS_PER_CHAIN_MIN * chains
    for name, c in conv.items():
        if chains > 1 and c["rhat"] > RHAT_MAX:
            messages.append(
                f"R-hat of {name} is {c['rhat']:.3f} (above {RHAT_MAX}): the chains disagree. "
                "Run more tuning and draws, and check whether chains sit in different modes."
            )
        for kind in ("ess_bulk", "ess_tail"):
            if c[kind] < ess_min:
                messages.append(
                    f"{'Bulk' if kind == 'ess_bulk' else 'Tail'} effective sample size of {name} is "
                    f"{c[kind]:.0f} (below {ess_min} for {chains} chains): intervals are imprecise. "
                    "Draw more samples."
                )
    if chains == 1:
        messages.append("a single chain cannot show non-convergence: run at least 2 (4 is better)")
    if stats is not None and "diverging" in stats:
        n_div = int(np.asarray(stats["diverging"]).sum())
        if n_div:
            messages.append(
                f"{n_div} of {chains * draws} transitions diverged: NUTS could not follow the posterior "
                "everywhere, so it may be biased. Raise target_accept (for example 0.95)."
            )
    if stats is not None and "tree_depth" in stats:
        saturated = float(np.mean(np.asarray(stats["tree_depth"]) >= max_tree_depth))
        if saturated > 0.05:
            messages.append(
                f"{saturated:.0%} of draws hit the maximum tree depth: sampling is inefficient; "
                "the posterior is badly scaled or very correlated."
            )
    return messages


def map_messages(info: dict) -> list[str]:
    if info.get("converged", True):
        return []
    return [f"the optimizer stopped before converging ({info.get('optimizer_message', '')}); "
            "the MAP may be inaccurate. Check the data or fit with NUTS."]
