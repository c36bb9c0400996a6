"""Nested Laplace, and the checks that say when a Laplace approximation's intervals may not cover.

Nested Laplace (as TMB, glmmTMB and R-INLA do it). A model whose *local* parameters (one per
group, coupled to each other only through the globals) can be integrated out exactly, one at a
time, is fitted by Laplace on the globals' *marginal* density instead of the joint one:

    log p(theta | data) = log p(theta) + sum_i log integral p(data_i, u_i | theta) du_i + const,

each 1-D integral by Gauss-Hermite quadrature centred on its integrand's mode
(`group_quadrature`). The Gaussian is centred at the mode of that density (with the Jacobian of
the globals' transforms) and takes its dense Hessian (JAX; 2K + 2 globals for the first model),
the globals are drawn from it on the unconstrained scale, and each local is then drawn from its
exact 1-D conditional given the draw of the globals (`models.wsc.draw_group_qualities`), not
from a Gaussian. Joint Laplace centres one Gaussian at the joint mode of globals and locals,
which in a hierarchical model shrinks the locals and drags the globals with them (the Sec. 5
study: coverage 0.41 of 90% intervals at J = 100, WH = 4; benchmarks/RESULTS.md, "P7, Laplace").

In the package, the first model builds its marginal density with `mu="integrated"` (the model
NUTS samples with `WSC(mu="integrated")`), so a Laplace fit of it is `laplace.run_laplace` on
that model's program (dense Hessian) and the model's `complete_draws` hook, which draws mu_i and
calls `mark_nested` here. A variant that names its locals integrates them when its `build_model`
takes `mu` (models/learned_rater_noise.py).

The checks. A Gaussian on the unconstrained scale is only as good as the density is Gaussian
there. Cheaply, from what the fit already has (`reliability`):

* importance ratios: the log density at `CHECK_DRAWS` of the draws against the Gaussian's; the
  Pareto shape k of their upper tail (Vehtari et al., Pareto smoothed importance sampling) says
  how far the Gaussian's tails are from the density's (k > 0.7: the draws do not represent it),
  when the ratios are uneven enough to leave under half of the draws effective;
* the shift from the mode without Jacobian (the MAP) to the centre, in posterior sd: a density
  skewed on the unconstrained scale moves its mode when the Jacobian is added. Recorded, but not
  part of the warning: on the Sec. 5 study at J = 5 it was 1-23 sd in nearly every replicate (the
  MAP's emissions sit near the simplex's edge when a bin has few clicks), whether or not the
  intervals covered;
* the Hessian's condition number (a near-flat direction);
* a value at a bound of its range at the centre (`map_program.degenerate_values`);
* with locals drawn from their conditionals, the acceptance rate of those draws (low where a
  conditional is far from its Laplace Gaussian: skewed or with heavy tails).

`laplace_warnings` turns them into one plain warning, measured against coverage on the Sec. 5
replicates (benchmarks/RESULTS.md, "Nested Laplace"). Nothing here imports PyMC.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from bayes_wsc import psis

#: how `pareto_k` estimates k (kept with every fit's record, so that records made otherwise are told apart)
PARETO_K_METHOD = "zhang-stephens with the PSIS prior"

#: draws at which the density is evaluated for the importance-ratio check
CHECK_DRAWS = 200
#: Pareto shape above which importance ratios say the Gaussian does not represent the density
PARETO_K_MAX = 0.7
#: ... unless the ratios are nearly even, leaving at least this share of the draws effective: then the
#: Gaussian is close to the density wherever the draws are, and k (fitted to the tail of nearly equal
#: ratios) says little (it ranged 0.2-0.83 over seeds on a Beta(501, 501) posterior)
ESS_SHARE_OK = 0.5
#: the Hessian's condition number above which a direction is nearly flat
CONDITION_MAX = 1e8
#: acceptance rate of the locals' draws below which their conditionals are far from Gaussian
ACCEPTANCE_MIN = 0.5


def mark_nested(info: dict, local: str) -> None:
    """Record in a Laplace fit's `info` (its `fit_info["laplace"]`) that it is nested, and how."""
    info["form"] = "nested"
    info["form_words"] = (f"nested Laplace: a Gaussian at the mode of the globals' marginal density, every {local} "
                          "integrated out by Gauss-Hermite quadrature; each " + local + " drawn from its 1-D "
                          "conditional given each draw of the globals")


def pareto_k(log_ratios: np.ndarray) -> float:
    """The shape k of a generalized Pareto fitted to the largest importance ratios, the M = min(S / 5,
    3 sqrt(S)) of S above the (M+1)-th largest, as PSIS does (Vehtari, Simpson, Gelman, Yao & Gabry),
    by Zhang & Stephens' estimator with PSIS's weak prior pulling k toward 0.5 by 10 pseudo-observations
    (an unregularized maximum-likelihood fit of 40 tail ratios ranged 0.06-0.86 on one near-Gaussian
    posterior). inf when a ratio is not finite."""
    r = np.asarray(log_ratios, dtype=float)
    if not np.isfinite(r).all():
        return float("inf")
    r = np.sort(r - r.max())
    tail = int(min(r.size / 5, 3 * np.sqrt(r.size)))
    if tail < 5:
        return float("nan")
    excess = np.exp(r[-tail:]) - np.exp(r[-tail - 1])
    if excess[-1] <= 0:
        return 0.0
    return psis.gpd_fit(excess)[0]


def importance_check(log_density: np.ndarray, log_gaussian: np.ndarray) -> dict:
    """Pareto k and the relative effective sample size of the importance ratios density / Gaussian."""
    r = np.asarray(log_density, dtype=float) - np.asarray(log_gaussian, dtype=float)
    finite = np.isfinite(r)
    if not finite.any():
        return {"pareto_k": float("inf"), "pareto_k_method": PARETO_K_METHOD, "importance_ess_share": 0.0,
                "check_draws": int(r.size)}
    w = np.exp(np.where(finite, r - r[finite].max(), -np.inf))
    ess = float(w.sum() ** 2 / (w**2).sum()) / r.size
    return {"pareto_k": pareto_k(r), "pareto_k_method": PARETO_K_METHOD, "importance_ess_share": ess,
            "check_draws": int(r.size)}


def reliability(info: dict) -> list[str]:
    """The checks of the module docstring that `info` (a Laplace fit's record) fails, in words."""
    found = []
    k, share = info.get("pareto_k"), info.get("importance_ess_share")
    if k is not None and not (np.isfinite(k) and k <= PARETO_K_MAX) and not (share is not None and share >= ESS_SHARE_OK):
        found.append(f"the density's tails are not the Gaussian's (Pareto k {k:.2f} of the importance ratios, "
                     f"above {PARETO_K_MAX}" + (f"; they leave {share:.0%} of the draws effective)" if share is not None
                                                else ")"))
    condition = info.get("condition_number")
    if condition is not None and condition > CONDITION_MAX:
        found.append(f"some direction is nearly flat (Hessian condition number {condition:.2g})")
    if info.get("at_bound"):
        found.append("at the centre " + "; ".join(info["at_bound"]))
    rate = (info.get("mu_draws") or {}).get("acceptance_rate")
    if rate is not None and rate < ACCEPTANCE_MIN:
        found.append(f"the local parameters' conditionals are far from Gaussian (acceptance rate {rate:.2f} "
                     "of their draws)")
    return found


class Coverage(NamedTuple):
    """A model's Laplace intervals measured to cover less than NUTS's on data from the model (mean coverage
    of 90% intervals of `what`, Laplace and NUTS, same simulations; benchmarks/laplace_coverage_models.py,
    benchmarks/RESULTS.md "Nested Laplace"): the model declares it (`Estimator.laplace_coverage`) and every
    Laplace fit of it says so."""

    laplace: float
    nuts: float
    what: str


def laplace_warnings(info: dict, coverage: Coverage | None = None) -> list[str]:
    """One warning when `reliability` finds anything, saying what and what to do; else none. A Hessian
    that is not positive definite has its own warning (`laplace.run_laplace`), which says more. A model
    that declares a measured `coverage` always gets a second one with its figures."""
    out = []
    if coverage is not None:
        ours, nuts, what = coverage
        out.append(f"Laplace intervals of this model cover less than NUTS's: on data simulated from it, 90% "
                   f"intervals of {what} covered {ours:.2f} of the time against NUTS's {nuts:.2f} (README, Laplace). "
                   "Fit with NUTS (method='nuts') where the intervals matter.")
    if info.get("positive_definite") is False:
        return out
    found = reliability(info)
    if found:
        out.insert(0, "the Laplace approximation may not cover: " + "; ".join(found) + ". Its intervals may be "
                   "too narrow or off centre; fit with NUTS (method='nuts') to check.")
    return out
