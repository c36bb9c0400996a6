"""Simulation-based calibration (Talts, Betancourt, Simpson, Vehtari & Gelman 2018) for any model.

If the fitting is right, the rank of a parameter drawn from the prior among
independent posterior draws given data simulated from it is uniform. Each
simulation here

1. draws every parameter from the model's own prior (the `pm.Model` that the
   estimator builds, sampled with `pm.draw`; a case may supply its own draw
   when part of its generative model is not a PyMC distribution);
2. simulates a data set from that draw (`SBCCase.simulate`: the case's own
   generator, because likelihoods written as `pm.Potential` cannot be drawn);
3. fits it with the estimator, NUTS and all (the user's code path: MAP start,
   transforms, relabeling hook);
4. evaluates the model's Deterministics (estimands such as rho, pi) at the
   true parameters on the simulated data, and ranks every chosen quantity
   among `n_rank_draws` posterior draws thinned evenly from the chains. The
   draws are nearly independent when the effective sample size is at least
   that number; each simulation records its ESS, and those below are flagged.

Uniformity is judged per quantity by a chi-square test on binned ranks and
by the simultaneous 95% envelope of the ECDF difference (Säilynoja, Bürkner
& Vehtari 2022). `SBCResult.write` saves the ranks (CSV), rank histograms and
ECDF-difference plots (PNG) and an HTML report.

A new model plugs in with an `SBCCase`: a template data set (shapes), a
simulator from one prior draw, an estimator factory and the quantities to
rank (`"rho[2]"`, `"pi"`). See `bayes_wsc.models.wsc.simulate.sbc_case`.
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from bayes_wsc.errors import InputError

#: default number of thinned posterior draws per simulation: ranks take L + 1 = 100 values
N_RANK_DRAWS = 99
_QUANTITY = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[([0-9,\s]+)\])?$")


@dataclass
class SBCCase:
    """What SBC needs from a model.

    template : a data container with the shapes to simulate (its values are not used
        except through `simulate`); the prior is drawn from `estimator(0)`'s model built on it.
    simulate : (draw, rng) -> data container, given one prior draw {name: value} holding every
        free and observed random variable of the model.
    estimator : seed -> a fresh, unfitted Estimator set up for NUTS.
    quantities : scalar quantities to rank, by variable name and position: "pi", "rho[0]", "w1[2]".
    draw_prior : optional rng -> {name: value}; by default the model's own prior via `pm.draw`.
    """

    name: str
    template: Any
    simulate: Callable[[Mapping[str, np.ndarray], np.random.Generator], Any]
    estimator: Callable[[int], Any]
    quantities: Sequence[str]
    draw_prior: Callable[[np.random.Generator], dict] | None = None
    description: str = ""


def parse_quantity(text: str) -> tuple[str, tuple[int, ...]]:
    match = _QUANTITY.match(text.strip())
    if not match:
        raise InputError(f"SBC quantity {text!r} is not of the form name or name[i] or name[i,j]")
    index = tuple(int(i) for i in match.group(2).split(",")) if match.group(2) else ()
    return match.group(1), index


def select(values: Mapping[str, np.ndarray], quantity: str, sample_dims: int = 0) -> np.ndarray:
    """The quantity's values from {name: array}; the first `sample_dims` axes are kept."""
    name, index = parse_quantity(quantity)
    if name not in values:
        raise InputError(f"SBC quantity {quantity!r}: no variable {name!r} (have {sorted(values)})")
    array = np.asarray(values[name])
    return array[(slice(None),) * sample_dims + index]


# ---------------------------------------------------------------------- one simulation
def prior_draws(case: SBCCase, n: int, seed: int) -> list[dict[str, np.ndarray]]:
    """`n` draws of every free and observed random variable from the case's prior."""
    if case.draw_prior is not None:
        return [case.draw_prior(np.random.default_rng([seed, i, 1])) for i in range(n)]
    import pymc as pm

    build = case.estimator(0)._recipe()[0]
    model = build(case.template)
    rvs = list(model.free_RVs) + list(model.observed_RVs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        values = pm.draw(rvs, draws=n, random_seed=seed)
    if n == 1:  # pm.draw drops the draws axis for a single draw
        values = [np.asarray(v)[None] for v in values]
    return [{rv.name: np.asarray(v[i]) for rv, v in zip(rvs, values)} for i in range(n)]


def true_deterministics(model, draw: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The model's Deterministics evaluated at the true free variables (on the model's data)."""
    import pymc as pm

    names = [d.name for d in model.deterministics]
    if not names:
        return {}
    free = {rv.name for rv in model.free_RVs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        intervened = pm.do(model, {k: np.asarray(v) for k, v in draw.items() if k in free})
        values = pm.draw([intervened[n] for n in names])
    return {n: np.asarray(v) for n, v in zip(names, values)}


def thin_indices(n_total: int, n_keep: int) -> np.ndarray:
    """`n_keep` evenly spaced positions in 0..n_total-1 (of the chains laid end to end)."""
    if n_total < n_keep:
        raise InputError(f"SBC needs at least {n_keep} posterior draws per simulation, the fit has {n_total}")
    return np.round(np.linspace(0, n_total - 1, n_keep)).astype(np.int64)


def rank_of(truth: float, draws: np.ndarray, rng: np.random.Generator) -> int:
    """Number of draws below the truth, ties broken at random (so discrete or constant
    quantities still give uniform ranks)."""
    below = int(np.sum(draws < truth))
    ties = int(np.sum(draws == truth))
    return below + (int(rng.integers(0, ties + 1)) if ties else 0)


#: how many times a simulation may draw new parameters and data before its data are taken as a bug
MAX_REDRAWS = 20


def simulate_accepted(case: SBCCase, draw: dict, sim: int, seed: int) -> tuple[dict, Any, int]:
    """(draw, data, redraws): the case's data for this prior draw, or, when the data container refuses
    them (`InputError`: a class that no group holds, say), a new prior draw with new data, up to
    `MAX_REDRAWS` times. Parameters and data are redrawn together, so the accepted pairs come from the
    joint distribution conditioned on an event of the data alone: each accepted data set's posterior is
    unchanged, and so is the uniformity of the ranks."""
    for redraws in range(MAX_REDRAWS + 1):
        rng = np.random.default_rng([seed, sim, 2] if redraws == 0 else [seed, sim, 2, redraws])
        try:
            return draw, case.simulate(draw, rng), redraws
        except InputError as refused:
            if redraws == MAX_REDRAWS:
                raise InputError(f"simulation {sim}: {MAX_REDRAWS + 1} draws of the prior gave data the model "
                                 f"cannot take, the last because {refused}") from refused
            new_seed = int(np.random.SeedSequence([seed, sim, redraws, 5]).generate_state(1)[0] % 2**31)
            draw = prior_draws(case, 1, new_seed)[0]
    raise AssertionError("unreachable")


def one_simulation(case: SBCCase, draw: dict, sim: int, seed: int, n_rank_draws: int = N_RANK_DRAWS) -> dict:
    """Simulate, fit and rank for one prior draw; returns one row (ranks, ESS, fit statistics)."""
    from bayes_wsc import inference
    from bayes_wsc.errors import FitWarning

    draw, data, redraws = simulate_accepted(case, draw, sim, seed)
    est = case.estimator(int(np.random.SeedSequence([seed, sim, 3]).generate_state(1)[0] % 2**31))
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", FitWarning)
        est.fit(data)
    seconds = time.perf_counter() - t0
    truth = {**draw, **true_deterministics(est.model_, draw)}
    posterior = est.idata_.posterior
    row = {"sim": sim, "seconds": round(seconds, 2), "n_rank_draws": n_rank_draws, "redraws": redraws,
           "fit_warnings": sum(issubclass(w.category, FitWarning) for w in caught)}
    stats_group = est.idata_.sample_stats if "sample_stats" in inference.group_names(est.idata_) else None
    row["divergences"] = int(np.asarray(stats_group["diverging"]).sum()) if stats_group is not None \
        and "diverging" in stats_group else 0
    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    keep = thin_indices(chains * draws, n_rank_draws)
    rank_rng = np.random.default_rng([seed, sim, 4])
    ess_all, rhat_all = [], []
    for quantity in case.quantities:
        name, _ = parse_quantity(quantity)
        if name not in posterior:
            raise InputError(f"SBC quantity {quantity!r}: the fit has no posterior variable {name!r}")
        samples = select({name: posterior[name].values}, quantity, sample_dims=2)  # (chain, draw)
        true_value = float(select(truth, quantity))
        row[f"rank:{quantity}"] = rank_of(true_value, samples.reshape(-1)[keep], rank_rng)
        ess = inference.ess_of_draws(samples)
        row[f"ess:{quantity}"] = round(ess, 1)
        ess_all.append(ess)
        rhat_all.append(inference.rhat_of_draws(samples))
    row["ess_min"] = round(float(np.nanmin(ess_all)), 1)
    row["rhat_max"] = round(float(np.nanmax(rhat_all)), 4) if chains > 1 else np.nan
    return row


# ---------------------------------------------------------------------- interval coverage
def interval_coverage(case: SBCCase, n_sims: int, *, seed: int = 0, method: str = "laplace", ci: float = 0.9,
                      laplace_draws: int = 1000, progress: Callable[[dict], None] | None = None) -> pd.DataFrame:
    """Whether the central `ci` interval of every quantity covers its true value, on `n_sims` data sets each
    simulated from one draw of the case's prior, fitted by `method` ("laplace", or "nuts" at the case's own
    settings). Averaged over the prior, a posterior that is right covers at exactly `ci`: unlike ranks, this
    needs only a few simulations to see an approximation that is too narrow, and no nearly independent draws.

    One row per simulation and quantity: `covered`, the interval, the truth, and the fit's facts (seconds,
    FitWarning count; for NUTS the largest R-hat of the quantities and `unmixed`, whether the fit's "chains
    have not mixed at all" sentence fired, `diagnostics.unmixed_message` on the fit's diagnosed variables).
    A quantity whose variable the fit does not hold (mu integrated out, say) is left out, not scored."""
    from bayes_wsc import diagnostics, inference
    from bayes_wsc.errors import FitWarning

    if not 0 < ci < 1:
        raise InputError(f"ci must be in (0, 1), got {ci!r}")
    if method not in ("laplace", "nuts"):
        raise InputError(f"method must be 'laplace' or 'nuts' (a MAP has no interval), got {method!r}")
    rows = []
    for sim, draw in enumerate(prior_draws(case, n_sims, seed)):
        draw, data, redraws = simulate_accepted(case, draw, sim, seed)
        est = case.estimator(int(np.random.SeedSequence([seed, sim, 3]).generate_state(1)[0] % 2**31))
        if method == "laplace":
            est.method, est.draws = "laplace", laplace_draws
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FitWarning)
            est.fit(data)
        fit = {"sim": sim, "method": method, "seconds": round(time.perf_counter() - t0, 2), "redraws": redraws,
               "fit_warnings": sum(issubclass(w.category, FitWarning) for w in caught)}
        posterior = est._fitted().posterior
        if method == "nuts":
            fit["unmixed"] = diagnostics.unmixed_message(est._fitted(), est.diagnosed_names()) is not None
        truth = {**draw, **true_deterministics(est.model_, draw)}
        sim_rows = []
        for quantity in case.quantities:
            name, _ = parse_quantity(quantity)
            if name not in posterior:
                continue
            samples = select({name: posterior[name].values}, quantity, sample_dims=2)  # (chain, draw)
            low, high = np.quantile(samples, [(1 - ci) / 2, (1 + ci) / 2])
            true_value = float(select(truth, quantity))
            row = {**fit, "quantity": quantity, "truth": true_value, "low": float(low), "high": float(high),
                   "covered": bool(low <= true_value <= high)}
            if method == "nuts":
                row["rhat"] = inference.rhat_of_draws(samples)
            sim_rows.append(row)
        rows += sim_rows
        if progress is not None:
            progress({**fit, "covered": sum(r["covered"] for r in sim_rows), "quantities": len(sim_rows)})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------- the driver
def run_sbc(
    case: SBCCase,
    n_sims: int,
    *,
    seed: int = 0,
    n_rank_draws: int = N_RANK_DRAWS,
    out_csv: str | Path | None = None,
    resume: bool = False,
    progress: Callable[[dict], None] | None = None,
    shard: tuple[int, int] = (0, 1),
) -> SBCResult:
    """Run `n_sims` simulations of `case`; with `out_csv`, every finished simulation is appended
    at once (an interrupted run keeps its work) and `resume` skips those already there.

    `shard=(i, n)` runs only the simulations numbered i, i + n, i + 2n, ...: n processes with
    the same `out_csv` and `resume` share one run (appends are locked), and a last call without
    a shard writes the complete table.
    """
    index, count = shard
    if not (isinstance(count, int) and count >= 1 and isinstance(index, int) and 0 <= index < count):
        raise InputError(f"shard must be (i, n) with 0 <= i < n, got {shard!r}")
    out_csv = Path(out_csv) if out_csv is not None else None
    rows, done = [], set()
    if out_csv is not None and out_csv.exists():
        if resume:
            previous = pd.read_csv(out_csv)
            rows = previous.to_dict("records")
            done = set(previous["sim"])
        elif count == 1:
            out_csv.unlink()
        else:
            raise InputError(f"{out_csv} exists: a shard only continues a run (pass resume)")
    draws = prior_draws(case, n_sims, seed)
    for sim in range(index, n_sims, count):
        if sim in done:
            continue
        row = one_simulation(case, draws[sim], sim, seed, n_rank_draws)
        rows.append(row)
        if out_csv is not None:
            append_row(out_csv, row)
        if progress is not None:
            progress(row)
    table = pd.DataFrame(rows).sort_values("sim").reset_index(drop=True)
    return SBCResult(table, list(case.quantities), n_rank_draws, case.name, case.description)


def append_row(path: Path, row: dict) -> None:
    """Append one simulation to the ranks CSV, under a lock so that shards can share the file
    (POSIX file locks; where there are none, e.g. on Windows, run one process per file)."""
    try:
        import fcntl
    except ImportError:
        fcntl = None
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", newline="") as handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            handle.seek(0, 2)
            pd.DataFrame([row]).to_csv(handle, header=handle.tell() == 0, index=False)
            handle.flush()
        finally:
            if fcntl is not None:
                fcntl.flock(handle, fcntl.LOCK_UN)


# ---------------------------------------------------------------------- uniformity
def chi_square_uniform(ranks: np.ndarray, n_rank_draws: int, bins: int) -> tuple[float, float]:
    """Pearson chi-square of binned ranks 0..L against the uniform: (statistic, p-value)."""
    if (n_rank_draws + 1) % bins:
        raise InputError(f"{n_rank_draws + 1} rank values do not split into {bins} equal bins")
    counts = np.bincount(np.asarray(ranks, dtype=np.int64) * bins // (n_rank_draws + 1), minlength=bins)
    result = stats.chisquare(counts)
    return float(result.statistic), float(result.pvalue)


def _ecdf_grid(n_rank_draws: int, max_points: int = 50) -> np.ndarray:
    """Rank thresholds j at which the ECDF P(rank < j) is evaluated (at most `max_points`)."""
    values = n_rank_draws + 1
    return np.unique(np.round(np.linspace(0, values, min(values, max_points) + 1)[1:-1]).astype(np.int64))


def ecdf_band(n: int, n_rank_draws: int, level: float = 0.95, n_sim: int = 2000,
              seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Simultaneous band for the ECDF of `n` uniform ranks (Säilynoja et al. 2022, by simulation).

    Returns (z, lower, upper): evaluation points z = j / (L + 1) and the band of the count of
    ranks below j, such that a uniform sample stays inside at every point with probability `level`.
    """
    grid = _ecdf_grid(n_rank_draws)
    z = grid / (n_rank_draws + 1)
    rng = np.random.default_rng(seed)
    sims = rng.integers(0, n_rank_draws + 1, size=(n_sim, n))
    below = (sims[:, :, None] < grid[None, None, :]).sum(axis=1)  # (n_sim, points)
    tail = np.minimum(stats.binom.cdf(below, n, z), stats.binom.sf(below - 1, n, z))
    gamma = float(np.quantile(2 * tail.min(axis=1), 1 - level))
    lower = stats.binom.ppf(gamma / 2, n, z)
    upper = stats.binom.ppf(1 - gamma / 2, n, z)
    return z, lower, upper


@dataclass
class SBCResult:
    """Ranks of every quantity in every simulation, with the tests and the plots."""

    table: pd.DataFrame
    quantities: list[str]
    n_rank_draws: int
    name: str = "model"
    description: str = ""
    _band: tuple = field(default=None, repr=False)

    @classmethod
    def from_csv(cls, path, name: str = "model", description: str = "") -> SBCResult:
        table = pd.read_csv(path).sort_values("sim").reset_index(drop=True)
        quantities = [c.split(":", 1)[1] for c in table.columns if c.startswith("rank:")]
        return cls(table, quantities, int(table["n_rank_draws"].iloc[0]), name, description)

    @property
    def n_sims(self) -> int:
        return len(self.table)

    def ranks(self, quantity: str) -> np.ndarray:
        return self.table[f"rank:{quantity}"].to_numpy(dtype=np.int64)

    def default_bins(self) -> int:
        """About n / 10 simulations per bin expected, as a divisor of L + 1 (at least 2 bins)."""
        values = self.n_rank_draws + 1
        divisors = [b for b in range(2, values + 1) if values % b == 0]
        target = max(2, min(20, self.n_sims // 5))
        return min(divisors, key=lambda b: (abs(b - target), b))

    def band(self):
        if self._band is None:
            self._band = ecdf_band(self.n_sims, self.n_rank_draws)
        return self._band

    def uniformity(self, bins: int | None = None, alpha: float = 0.01) -> pd.DataFrame:
        """Per quantity: chi-square on `bins` bins, its p-value, whether the ECDF stays inside the
        simultaneous 95% band, and whether the chi-square passes at `alpha` / number of
        quantities (Bonferroni, so that a correct model fails with probability about `alpha`)."""
        bins = bins or self.default_bins()
        z, lower, upper = self.band()
        grid = np.round(z * (self.n_rank_draws + 1)).astype(np.int64)
        rows = []
        for q in self.quantities:
            r = self.ranks(q)
            chi2, p = chi_square_uniform(r, self.n_rank_draws, bins)
            below = (r[:, None] < grid[None, :]).sum(axis=0)
            rows.append({"quantity": q, "sims": len(r), "bins": bins, "chi2": chi2, "p_value": p,
                         "ecdf_inside_95": bool(np.all((below >= lower) & (below <= upper))),
                         "mean_rank_fraction": float(np.mean(r) / self.n_rank_draws),
                         "passes": p >= alpha / len(self.quantities)})
        return pd.DataFrame(rows)

    def problems(self) -> list[str]:
        """Simulations whose fit should not be trusted (divergences, few effective draws)."""
        t = self.table
        out = []
        low_ess = int((t["ess_min"] < self.n_rank_draws).sum())
        if low_ess:
            out.append(f"{low_ess} of {len(t)} simulations had an ESS below the {self.n_rank_draws} thinned "
                       "draws for some quantity: their ranks come from correlated draws")
        div = int((t["divergences"] > 0).sum())
        if div:
            out.append(f"{div} of {len(t)} simulations had divergent transitions "
                       f"({int(t['divergences'].sum())} in all)")
        if "rhat_max" in t and (t["rhat_max"] > 1.01).any():
            out.append(f"{int((t['rhat_max'] > 1.01).sum())} of {len(t)} simulations had R-hat above 1.01")
        return out

    # ------------------------------------------------------------------ plots
    def rank_histograms(self, bins: int | None = None, ncols: int = 4):
        from bayes_wsc.report.html import new_figure

        bins = bins or self.default_bins()
        n = len(self.quantities)
        nrows = -(-n // ncols)
        fig, axes = new_figure(nrows, ncols, width=3.0 * ncols, height=2.3 * nrows)
        expected = self.n_sims / bins
        low, high = stats.binom.ppf([0.005, 0.995], self.n_sims, 1 / bins)
        for ax, q in zip(axes.flat, self.quantities):
            counts = np.bincount(self.ranks(q) * bins // (self.n_rank_draws + 1), minlength=bins)
            ax.axhspan(low, high, color="0.85", zorder=0)
            ax.axhline(expected, color="0.4", lw=1)
            ax.bar(np.arange(bins), counts, width=1.0, color="#1f5fa8", edgecolor="white")
            ax.set_title(q, fontsize=9)
            ax.set_xticks([])
        for ax in list(axes.flat)[n:]:
            ax.set_visible(False)
        fig.suptitle(f"{self.name}: rank histograms, {self.n_sims} simulations, {bins} bins "
                     "(grey: 99% band of a uniform bin count)", fontsize=10)
        return fig

    def ecdf_differences(self, ncols: int = 4):
        from bayes_wsc.report.html import new_figure

        z, lower, upper = self.band()
        grid = np.round(z * (self.n_rank_draws + 1)).astype(np.int64)
        n = len(self.quantities)
        nrows = -(-n // ncols)
        fig, axes = new_figure(nrows, ncols, width=3.0 * ncols, height=2.3 * nrows)
        for ax, q in zip(axes.flat, self.quantities):
            below = (self.ranks(q)[:, None] < grid[None, :]).sum(axis=0) / self.n_sims
            ax.fill_between(z, lower / self.n_sims - z, upper / self.n_sims - z, color="0.85", step="mid")
            ax.axhline(0, color="0.4", lw=1)
            ax.step(z, below - z, where="mid", color="#d62728")
            ax.set_title(q, fontsize=9)
            ax.set_xlim(0, 1)
        for ax in list(axes.flat)[n:]:
            ax.set_visible(False)
        fig.suptitle(f"{self.name}: ECDF of rank fractions minus the uniform CDF "
                     "(grey: simultaneous 95% band)", fontsize=10)
        return fig

    # ------------------------------------------------------------------ files
    def write(self, out_dir, prefix: str | None = None, command: str | None = None,
              bins: int | None = None) -> dict[str, Path]:
        """ranks CSV, uniformity CSV, two PNGs and an HTML report in `out_dir`."""
        from bayes_wsc import outputs
        from bayes_wsc.report.html import Section, write_html

        out_dir = Path(out_dir)
        prefix = prefix or f"sbc_{self.name}"
        paths = {"ranks": out_dir / f"{prefix}_ranks.csv", "uniformity": out_dir / f"{prefix}_uniformity.csv",
                 "histograms": out_dir / f"{prefix}_rank_hist.png", "ecdf": out_dir / f"{prefix}_ecdf.png",
                 "report": out_dir / f"{prefix}_report.html"}
        outputs.write_csv(self.table, paths["ranks"], "ranks table")
        table = self.uniformity(bins)
        outputs.write_csv(table, paths["uniformity"], "uniformity table")
        hist, ecdf = self.rank_histograms(bins), self.ecdf_differences()
        outputs.write_figure(hist, paths["histograms"], "figure", dpi=110)
        outputs.write_figure(ecdf, paths["ecdf"], "figure", dpi=110)
        intro = [f"Simulation-based calibration of {self.name}: {self.n_sims} simulations, ranks among "
                 f"{self.n_rank_draws} thinned posterior draws each."]
        if self.description:
            intro.append(self.description)
        if command:
            intro.append(f"Command: {command}")
        shown = table.assign(chi2=table["chi2"].round(2), p_value=table["p_value"].round(4),
                             mean_rank_fraction=table["mean_rank_fraction"].round(3))
        fits = self.table[["seconds", "divergences", "ess_min", "rhat_max"]].describe().round(3)
        sections = [
            Section("Uniformity of ranks", [
                "Chi-square on binned ranks per quantity; 'passes' uses a Bonferroni level of 0.01 over "
                "the quantities. 'ecdf_inside_95' says whether the ECDF stays in the simultaneous 95% band."],
                tables=[shown], warnings=self.problems()),
            Section("Rank histograms", figures=[hist]),
            Section("ECDF differences", figures=[ecdf]),
            Section("Fits", tables=[(fits, "per-simulation fit statistics")]),
        ]
        write_html(paths["report"], f"SBC: {self.name}", intro, sections)
        return paths
