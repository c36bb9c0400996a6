"""The Laplace approximation: a Gaussian at the posterior mode, on the unconstrained scale.

What it is. With x the model's free variables on the unconstrained scale (logs of scales,
logits, stick-breaking coordinates) and log p(x) their log posterior density *including* the
log Jacobian of the transforms, the approximation is

    x ~ Normal(x*, H^-1),   x* = argmax log p(x),   H = -Hessian of log p at x*.

Draws of x are pushed through the transforms and the model's Deterministics (`MapProgram.values`),
so every reported variable, pointwise log-likelihoods included, gets draws, stored as an
ordinary posterior of one chain.

Why with the Jacobian. log p(x) with the Jacobian is the density of x itself, so the Gaussian
approximates the distribution that the draws represent; without it, the Gaussian is fitted to a
function that is not a density of x, and pushing its draws through the transforms misplaces
them (for a Beta(a, b) posterior on the logit scale the centre moves from the mode, (a - 1) /
(a + b - 2), to the mean, a / (a + b), which is where the Gaussian in the logit belongs).
pymc-extras' `fit_laplace` centres at the mode without Jacobian and uses that function's
Hessian; `fit.fit_laplace(jacobian=False)` does the same and is tested against it. The centre
x* is found by L-BFGS started from the package's MAP (the mode without Jacobian), so the MAP is
still reported in `fit_info["map"]`, and `fit_info["laplace"]` says where the Gaussian is centred.
The search runs in two stages (`find_centre`): first the transformed variables alone, the rest held
at the MAP, then all of them. The two modes differ only by the Jacobians, and a MAP may sit at a
bound where a Jacobian is near -infinity (a Dirichlet(1, ..., 1, a) row's mode is a vertex when a
class has no votes against it); searched jointly from there, the unbounded variables drift while the
bounded ones cross flat ground, and the combined model's class weights fell into a mode with two
digits' classes swapped (a lower log density than the two-stage search reaches, test accuracy 0.72
against 0.90; benchmarks/RESULTS.md, issue 41).

Block structure. A model may name *local* variables (the wsc model's group qualities mu_i), each
coupled to the other locals only through the global ones, so that the Hessian is an arrow:

    H = [[D, B], [B', C]]   D diagonal (locals), B locals x globals, C globals x globals.

It is formed from 1 + G Hessian-vector products (G globals), never as a dense matrix, and
sampled through the Schur complement S = C - B' D^-1 B: globals ~ N(x*_G, S^-1), then each local
given the globals, N(x*_L - D^-1 B (x_G - x*_G), D^-1). One more product, with a random local
vector, checks that the local block really is diagonal. Models without locals get the dense
Hessian.

Where it is poor. The Gaussian is symmetric and light-tailed on the unconstrained scale: it
misses skewness where the data say little (a group of a few clicks, a bin with few clicks:
Sec. 5's J = 5), puts too little mass near a bound when the mode is close to it (a weight near
0 or 1, a scale near 0), and sees one mode only (label-switched or genuinely different
clusterings are absent, and held variables, `map_fixed`, stay at their values). A Hessian that
is not positive definite (a saddle or a flat direction) is reported with a warning, and its
non-positive curvatures are replaced by their absolute values, floored at 1e-8 of the largest:
the draws then spread widely along those directions, which is the honest reading of a flat
posterior, not an interval to trust.

Nothing here imports PyMC.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping

import numpy as np
from threadpoolctl import threadpool_limits

from bayes_wsc.diagnostics import laplace_messages
from bayes_wsc.draws import Draws
from bayes_wsc.inference import LOG_LIKELIHOOD_PREFIX
from bayes_wsc.map_program import MapProgram, degenerate_values, minimize
from bayes_wsc.nested_laplace import CHECK_DRAWS, importance_check

#: floats of data times draws held at once when the draws are pushed through the model
DRAW_CHUNK_FLOATS = 16_000_000
#: the local block counts as diagonal when the probe's off-diagonal part is below this (relative)
DIAGONAL_TOLERANCE = 1e-8
#: curvatures below this share of the largest are replaced (a Hessian that is not positive definite)
EIGEN_FLOOR = 1e-8


def laplace_functions(jax, density, values, x, inputs: Mapping, local: list[int], jacobian: bool):
    """The functions a program needs for `run_laplace`, from the JAX `density` (negative log
    density of the flat vector) and `values`: (spec stored with the program, {name: (function,
    example arguments)}). `local` lists the positions of the local variables in the vector."""
    jnp = jax.numpy
    n = int(np.size(x))
    size = sum(int(np.size(v)) for v in inputs.values()) + n
    chunk = int(np.clip(DRAW_CHUNK_FLOATS // max(size, 1), 1, 256))
    pointwise = [k for k in jax.eval_shape(values, x, inputs) if k.startswith(LOG_LIKELIHOOD_PREFIX)]

    def reported(flat, given):
        return {k: v for k, v in values(flat, given).items() if k not in pointwise}

    def recorded(flat, given):
        out = values(flat, given)
        return {k: out[k] for k in pointwise}

    functions = {
        "laplace_value_and_grad": (jax.value_and_grad(density), (x, inputs)),
        # the density at a few draws, against the Gaussian's (`nested_laplace.importance_check`)
        "laplace_log_density": (jax.vmap(density, in_axes=(0, None)), (np.zeros((chunk, n)), inputs)),
        # the pointwise log-likelihood apart: a fit may leave it for first use (`run_laplace`)
        "draw_values": (jax.vmap(reported, in_axes=(0, None)), (np.zeros((chunk, n)), inputs)),
    }
    if pointwise:
        functions["draw_log_likelihood"] = (jax.vmap(recorded, in_axes=(0, None)), (np.zeros((chunk, n)), inputs))
    spec = {"jacobian": bool(jacobian), "chunk": chunk, "structure": "arrow" if local else "dense"}
    if local:
        local_index = np.asarray(local)
        global_index = np.setdiff1d(np.arange(n), local_index)
        probe = np.random.default_rng(0).standard_normal(local_index.size)
        directions = np.zeros((global_index.size + 2, n))
        directions[0, local_index] = 1.0
        directions[np.arange(1, global_index.size + 1), global_index] = 1.0
        directions[-1, local_index] = probe
        spec.update(n_local=int(local_index.size), n_global=int(global_index.size))

        def arrow(flat, given):
            gradient = jax.grad(density)

            def hvp(v):
                return jax.jvp(lambda y: gradient(y, given), (flat,), (v,))[1]

            products = jax.lax.map(hvp, jnp.asarray(directions), batch_size=8)  # a few at a time: bounded memory
            diagonal = products[0, local_index]
            coupling = products[1:-1][:, local_index].T  # (locals, globals)
            block = products[1:-1][:, global_index]
            off_diagonal = products[-1, local_index] - diagonal * probe
            scale = jnp.max(jnp.abs(diagonal * probe)) + 1e-300
            return diagonal, coupling, block, jnp.max(jnp.abs(off_diagonal)) / scale

        functions["laplace_arrow"] = (arrow, (x, inputs))
        spec["positions"] = {"local": local_index.tolist()}
    else:
        functions["laplace_hessian"] = (jax.hessian(density), (x, inputs))
    return spec, functions


def run_laplace(program: MapProgram, inputs: Mapping[str, np.ndarray], x_map: np.ndarray, *, draws: int = 1000,
                seed: int | None = None, maxiter: int = 5000, tol: float = 1e-8,
                fixed: Mapping[str, np.ndarray] | None = None,
                defer_log_likelihood: bool = False) -> tuple[Draws, list[str]]:
    """Draws of the Laplace approximation (see the module docstring) of a program built with
    `laplace=...`, started at `x_map` (the MAP's unconstrained vector). Returns the draws (one
    chain) and warnings in plain words. With `defer_log_likelihood`, the pointwise log-likelihood
    of the draws is left to `Draws.deferred` (at 10,000 groups it costs as much as the rest of
    the push through the model)."""
    if program.laplace is None:
        raise ValueError("this MAP program was built without the Laplace functions")
    t0 = time.perf_counter()
    spec = program.laplace
    given = program.device_inputs(inputs)
    messages = []
    result, first_stage = find_centre(lambda x: program.laplace_value_and_grad(x, given), program.layout,
                                      np.asarray(x_map, dtype=float), jacobian=spec["jacobian"], maxiter=maxiter,
                                      tol=tol)
    centre = np.asarray(result.x)
    if not result.success:
        messages.append(f"the search for the centre of the Laplace approximation stopped before converging "
                        f"({result.reason}); the intervals may be off. Check the fit with NUTS.")
    rng = np.random.default_rng(seed)
    info = {"centre": "mode of the log density with Jacobian (unconstrained scale)" if spec["jacobian"]
            else "mode of the log density without Jacobian (unconstrained scale)",
            "centre_iterations": int(result.nit), "centre_converged": bool(result.success),
            "centre_first_stage_iterations": first_stage,
            "centre_relative_gradient": float(result.relative_gradient),
            "log_density_at_centre": float(-result.fun), "structure": spec["structure"], "draws": int(draws),
            "seed": seed,
            # a model that integrated its locals out says so after the draws (`nested_laplace.mark_nested`)
            "form": "joint" if spec["structure"] == "arrow" else "all free variables",
            "form_words": "joint Laplace: one Gaussian over the globals and the local parameters, at their joint mode"
            if spec["structure"] == "arrow" else "one Gaussian over every free variable, at their mode"}
    # small BLAS calls: threads only contend (a 59 x 10,000 Schur complement took 0.8 s with them, 0.02 s without)
    with threadpool_limits(1, user_api="blas"):
        if spec["structure"] == "arrow":
            deviations, curvature = _arrow_draws(program, centre, given, spec, draws, rng, info)
        else:
            hessian = np.asarray(program.laplace_hessian(centre, given))
            deviations, curvature = _dense_draws(0.5 * (hessian + hessian.T), draws, rng)
    half_square = curvature.pop("half_square")
    info.update(curvature)
    info.update(_checks(program, given, centre, np.asarray(x_map, dtype=float), np.asarray(result.jac), deviations,
                        half_square, -float(result.fun)))
    messages += laplace_messages(info)
    if not curvature["positive_definite"]:
        messages.append(
            f"the Hessian at the centre of the Laplace approximation is not positive definite (smallest "
            f"curvature {curvature['min_curvature']:.3g}): the posterior is flat or saddle-shaped in some "
            "direction there. Its curvatures were replaced by their absolute values (floored), so the draws "
            "spread widely along those directions; do not trust these intervals, fit with NUTS.")
    xs = centre[None] + deviations
    posterior = _pushed_through(program.draw_values, program.laplace["chunk"], given, xs)
    deferred = None
    if "draw_log_likelihood" in program.exported:
        deferred = functools.partial(_pushed_through, program.draw_log_likelihood, program.laplace["chunk"], given, xs)
        if not defer_log_likelihood:
            posterior.update(deferred())
            deferred = None
    fixed = dict(fixed or {})
    for name, value in fixed.items():
        posterior[name] = np.broadcast_to(np.asarray(value, dtype=float), (1, draws, *np.shape(value))).copy()
    if fixed:
        info["held_fixed"] = {k: np.asarray(v).tolist() for k, v in fixed.items()}
    info["seconds"] = time.perf_counter() - t0
    return Draws(posterior, {}, info, deferred=deferred), messages


def find_centre(value_and_grad, layout, x_map: np.ndarray, *, jacobian: bool = True, maxiter: int = 5000,
                tol: float = 1e-8):
    """The Laplace centre by L-BFGS from the MAP `x_map` (minimizing `value_and_grad`, the negative log
    density with Jacobian), in two stages where the layout has both transformed variables (value names
    ending in "__": logs, logits, stick-breaking coordinates) and untransformed ones: first the transformed
    alone, the others held at the MAP, then all from there (the module docstring says why). Returns the
    optimizer's result of the last stage and the first stage's iterations (0 when there was none)."""
    transformed = np.concatenate([np.full(int(np.prod(shape, dtype=int)), name.endswith("__"))
                                  for name, shape in layout]) if layout else np.zeros(0, bool)
    start = np.array(x_map, dtype=float)
    iterations = 0
    if jacobian and transformed.size == start.size and transformed.any() and not transformed.all():
        def restricted(z):
            x = start.copy()
            x[transformed] = z
            value, gradient = value_and_grad(x)
            return value, np.asarray(gradient, dtype=float)[transformed]

        first = minimize(restricted, start[transformed], maxiter=maxiter, tol=tol)
        if np.isfinite(first.fun):
            start[transformed] = first.x
        iterations = int(first.nit)
    return minimize(value_and_grad, start, maxiter=maxiter, tol=tol), iterations


def _dense_draws(hessian: np.ndarray, draws: int, rng) -> tuple[np.ndarray, dict]:
    """Deviations from the centre, N(0, H^-1), from the eigendecomposition of H (its non-positive
    curvatures replaced, see the module docstring)."""
    curvatures, vectors = np.linalg.eigh(hessian)
    fixed_up, report = _positive(curvatures)
    z = rng.standard_normal((draws, curvatures.size))
    report["half_square"] = 0.5 * (z**2).sum(axis=1)  # -log of the Gaussian's density at each draw, + const
    return (z / np.sqrt(fixed_up)) @ vectors.T, report


def _arrow_draws(program, centre, given, spec, draws, rng, info) -> tuple[np.ndarray, dict]:
    """Deviations from the centre for an arrow Hessian (see the module docstring), without forming
    anything locals x locals."""
    diagonal, coupling, block, off_diagonal = (np.asarray(a) for a in program.laplace_arrow(centre, given))
    info["local_block_off_diagonal"] = float(off_diagonal)
    if not off_diagonal < DIAGONAL_TOLERANCE:
        raise ValueError(f"the local variables' Hessian block is not diagonal (relative off-diagonal part "
                         f"{float(off_diagonal):.3g}): the model's local variables are coupled to each other")
    local = np.asarray(spec["positions"]["local"])
    glob = np.setdiff1d(np.arange(centre.size), local)
    diagonal_ok, report_local = _positive(diagonal)
    scaled = coupling / diagonal_ok[:, None]  # D^-1 B
    schur = block - coupling.T @ scaled
    curvatures, vectors = np.linalg.eigh(0.5 * (schur + schur.T))
    curvatures_ok, report_global = _positive(curvatures)
    z_global = rng.standard_normal((draws, glob.size))
    global_dev = (z_global / np.sqrt(curvatures_ok)) @ vectors.T
    local_dev = rng.standard_normal((draws, local.size))
    half_square = 0.5 * ((z_global**2).sum(axis=1) + (local_dev**2).sum(axis=1))
    local_dev /= np.sqrt(diagonal_ok)
    local_dev -= global_dev @ scaled.T
    deviations = np.empty((draws, centre.size))
    deviations[:, glob], deviations[:, local] = global_dev, local_dev
    report = {"positive_definite": report_local["positive_definite"] and report_global["positive_definite"],
              "min_curvature": min(report_local["min_curvature"], report_global["min_curvature"]),
              "condition_number": report_global["condition_number"], "half_square": half_square}
    return deviations, report


def _positive(curvatures: np.ndarray) -> tuple[np.ndarray, dict]:
    """Curvatures made positive for sampling (absolute values, floored), and whether they were."""
    curvatures = np.asarray(curvatures, dtype=float)
    floor = EIGEN_FLOOR * max(float(np.max(np.abs(curvatures), initial=0.0)), 1e-300)
    largest = float(np.max(np.abs(curvatures), initial=0.0))
    report = {"positive_definite": bool(np.all(curvatures > floor)),
              "min_curvature": float(np.min(curvatures, initial=np.inf)),
              "condition_number": largest / max(float(np.min(np.abs(curvatures), initial=np.inf)), 1e-300)}
    return np.maximum(np.abs(curvatures), floor), report


def _checks(program, given, centre, x_map, gradient, deviations, half_square, log_density_centre) -> dict:
    """What `nested_laplace.reliability` reads: the importance ratios of the density against the Gaussian
    at the first `CHECK_DRAWS` draws, the centre's shift from the MAP in posterior sd, values at a bound."""
    report = {}
    sd = deviations.std(axis=0)
    moved = np.abs(centre - x_map) / np.where(sd > 0, sd, np.inf)
    report["mode_shift_sd"] = float(np.max(moved, initial=0.0))
    report["at_bound"] = degenerate_values(program.layout, centre, x_map, gradient)
    if "laplace_log_density" in program.exported:
        n = min(CHECK_DRAWS, deviations.shape[0])
        xs = centre[None] + deviations[:n]
        log_density = -_pushed_through(lambda x, g: {"v": program.laplace_log_density(x, g)},
                                       program.laplace["chunk"], given, xs)["v"][0]
        # both relative to the centre, where the Gaussian's log density is its maximum
        report.update(importance_check(log_density - log_density_centre, -half_square[:n]))
    return report


def _pushed_through(function, chunk: int, given, xs: np.ndarray) -> dict[str, np.ndarray]:
    """`function` (the program's `draw_values` or `draw_log_likelihood`) at each row of `xs`, shaped
    (1, draws, ...), in chunks of the size the program was exported for."""
    draws = xs.shape[0]
    padded = np.concatenate([xs, np.repeat(xs[-1:], -draws % chunk, axis=0)])
    parts = [function(padded[i:i + chunk], given) for i in range(0, padded.shape[0], chunk)]
    return {name: np.concatenate([np.asarray(p[name]) for p in parts])[:draws][None] for name in parts[0]}
