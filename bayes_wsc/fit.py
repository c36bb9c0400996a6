"""Fitting any `pm.Model` of the package: the posterior mode (MAP) or NUTS.

Both return plain dictionaries of draws keyed by variable name, shaped
(chain, draw, ...), plus sampler statistics; `bayes_wsc.inference` turns
them into InferenceData. Nothing here knows which model it fits.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import time
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pymc as pm
import pytensor
from pytensor.graph.replace import graph_replace
from pymc.initial_point import make_initial_point_expression, make_initial_point_fn
from pymc.util import get_default_varnames

from bayes_wsc import _runtime
from bayes_wsc.backends import NUTS_BACKENDS, PRECISIONS, check_precision_backend, default_backend
from bayes_wsc.draws import Draws
from bayes_wsc.errors import InputError
from bayes_wsc.inference import LOG_LIKELIHOOD_PREFIX
from bayes_wsc import jax_setup
from bayes_wsc.map_program import MapProgram, export_program, run_map
from bayes_wsc.posterior import CHUNK_FLOATS

log = logging.getLogger("bayes_wsc")
_runtime.generated_code_in_memory()  # no file in the temporary folder per generated function

# ---------------------------------------------------------------------- MAP
def build_map_program(model: pm.Model, starts: Sequence[Mapping[str, np.ndarray] | None] = (None,),
                      fixed: Mapping[str, np.ndarray] | None = None, seed: int | None = None, *,
                      laplace: Mapping | None = None) -> tuple[MapProgram, dict[str, np.ndarray]]:
    """The model's MAP as JAX functions of one raveled vector of its value variables and of the
    model's data (see `map_program`): the start transform, the negative log density without
    Jacobian (the mode in the constrained space) with its gradient, and the reported values.
    Returns the program and its inputs for this model: every shared variable of the graph (the
    `pm.Data` of the model and the values that `fixed` holds), by name.

    All are PyMC's JAX graph, differentiated by JAX and compiled by XLA (cached on disk): no C
    compilation, and only the log density, not its symbolic gradient, goes through PyTensor's
    rewrites. The data are inputs, not constants, so the program serves any data of the same
    shapes. `starts` (constrained scale) only decide whether the model's default initial values
    are needed, for a start that leaves a free variable out; defaults that depend on the data make
    the program `reusable=False`. `fixed` holds free variables at values (see `fit_map`).
    `laplace` ({"jacobian": bool, "local": [names]}) adds the functions that `laplace.run_laplace`
    needs (see there).
    """
    from pymc.sampling.jax import get_jaxified_graph

    jax = jax_runtime()
    held = sorted(fixed or {})
    model = held_fixed(model, fixed)
    free = model.free_RVs
    names = [rv.name for rv in free]
    value_vars = [model.rvs_to_values[rv] for rv in free]
    defaults, defaults_use_data = _defaults_if_needed(model, starts, seed)
    outs = get_default_varnames(model.unobserved_value_vars, include_transformed=False)
    forward_inputs, forward_outputs = _forward_graph(model)
    with_jacobian = laplace is not None and laplace["jacobian"]
    densities = [-model.logp(jacobian=False), *([-model.logp(jacobian=True)] if with_jacobian else [])]
    graphs = {"forward": forward_outputs, "logp": [*densities, *outs]}
    data_vars = _data_inputs(list(itertools.chain(*graphs.values())))
    data_names = [v.name for v in data_vars]
    symbols = [v.type(name=v.name) for v in data_vars]
    graphs = {k: graph_replace(g, dict(zip(data_vars, symbols)), strict=False) for k, g in graphs.items()}
    forward_fn = get_jaxified_graph(inputs=[*forward_inputs, *symbols], outputs=graphs["forward"])
    # one graph for the log densities and the reported values: PyTensor's rewrites run once (0.4 s
    # less at 10,000 groups), and JAX drops what each function does not use
    logp_and_values = get_jaxified_graph(inputs=[*value_vars, *symbols], outputs=graphs["logp"])
    inputs = {n: np.asarray(v.get_value(borrow=True)) for n, v in zip(data_names, data_vars)}

    first = {n: np.asarray({**defaults, **(starts[0] or {})}[n], dtype=float) for n in names}
    layout = [(v.name, tuple(np.shape(piece)))
              for v, piece in zip(value_vars, forward_fn(*first.values(), *inputs.values()))]
    sizes = [int(np.prod(shape, dtype=int)) for _, shape in layout]
    offsets = np.cumsum([0, *sizes])

    def data(given):
        return [given[n] for n in data_names]

    def unravel(flat):
        return [flat[o:o + n].reshape(shape) for o, n, (_, shape) in zip(offsets, sizes, layout)]

    def start(values, given):  # constrained values -> the unconstrained vector
        pieces = forward_fn(*[values[n] for n in names], *data(given))
        return jax.numpy.concatenate([jax.numpy.ravel(p) for p in pieces])

    def value(flat, given):
        return logp_and_values(*unravel(flat), *data(given))[0]

    def values(flat, given):
        return dict(zip([o.name for o in outs], logp_and_values(*unravel(flat), *data(given))[len(densities):]))

    x = np.zeros(int(offsets[-1]))
    functions = {"start": start, "value_and_grad": jax.value_and_grad(value), "values": values}
    examples = {"start": (first, inputs), "value_and_grad": (x, inputs), "values": (x, inputs)}
    laplace_spec = None
    if laplace is not None:
        from bayes_wsc.laplace import laplace_functions

        def density(flat, given):
            return logp_and_values(*unravel(flat), *data(given))[len(densities) - 1]

        local = [i for name, o, n in zip(names, offsets, sizes) if name in set(laplace.get("local") or ())
                 for i in range(o, o + n)]
        laplace_spec, extra = laplace_functions(jax, density, values, x, inputs, local, laplace["jacobian"])
        for name, (function, example) in extra.items():
            functions[name], examples[name] = function, example
    program = export_program(
        functions, examples, free=names, held=held, layout=layout,
        inputs={n: [list(np.shape(v)), np.asarray(v).dtype.str] for n, v in inputs.items()},
        defaults={k: np.asarray(v) for k, v in defaults.items()}, dims=model_labels(model)["dims"],
        laplace=laplace_spec, reusable=not defaults_use_data,
    )
    return program, inputs


def _data_inputs(outputs) -> list:
    """The shared variables that `outputs` read (the model's `pm.Data`, the lengths of its dims,
    named by the dim, and held values), which a program takes as inputs; random generators are
    left to PyMC's jaxification, which refuses them."""
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.traversal import graph_inputs
    from pytensor.tensor.random.type import RandomType

    found = {}
    for var in graph_inputs(outputs):
        if isinstance(var, SharedVariable) and not isinstance(var.type, RandomType):
            if var.name in found and found[var.name] is not var:
                raise ValueError(f"the model has two shared variables named {var.name!r}")
            found[var.name] = var
    return [found[n] for n in sorted(found)]


def model_labels(model: pm.Model) -> dict:
    """The model's coords and each variable's dims, as plain lists (what `inference` labels with)."""
    return {"coords": {k: list(v) for k, v in model.coords.items()},
            "dims": {n: list(d) for n, d in model.named_vars_to_dims.items() if d}}


def fit_map(
    model: pm.Model,
    initvals: Mapping[str, np.ndarray] | Sequence[Mapping[str, np.ndarray]] | None = None,
    *,
    maxiter: int = 5000,
    tol: float = 1e-8,
    fixed: Mapping[str, np.ndarray] | None = None,
) -> tuple[Draws, dict]:
    """Posterior mode by L-BFGS in the unconstrained space, without Jacobian terms.

    The search stops when an iteration gains less than `tol` nats of log
    density per free parameter. L-BFGS-B's own test is relative to |log
    density|, which an additive constant of the model would change (the wsc
    model's centring took 56% more iterations under it), so `tol` is turned
    into that relative test at the first start's log density.

    `fixed` holds some free variables at given values (constrained scale) and
    seeks the mode of the others: the conditional mode, for models whose
    joint mode is degenerate (a hierarchical scale at 0). The held values
    are returned with the draws and listed in `info["held_fixed"]`.

    `initvals` is one start (constrained scale) or a list of starts: random
    restarts for models with many local modes, optimized with one compiled
    function; the best log density wins and every restart's value is kept in
    `info["restart_log_densities"]`. Returns draws with chain = draw = 1 and
    the unconstrained point. A non-converged optimizer is reported in
    `info`, not hidden.
    """
    starts = map_starts(initvals, fixed)
    program, inputs = build_map_program(model, starts, fixed)
    draws, x = run_map(program, starts, inputs, maxiter=maxiter, tol=tol, fixed=fixed)
    return draws, program.unravel(x)


def fit_laplace(
    model: pm.Model,
    initvals: Mapping[str, np.ndarray] | Sequence[Mapping[str, np.ndarray]] | None = None,
    *,
    draws: int = 1000,
    seed: int | None = None,
    fixed: Mapping[str, np.ndarray] | None = None,
    local: Sequence[str] = (),
    jacobian: bool = True,
    maxiter: int = 5000,
    tol: float = 1e-8,
) -> tuple[Draws, Draws, list[str]]:
    """The Laplace approximation of any model (see `bayes_wsc.laplace`): the MAP as `fit_map`
    finds it, then a Gaussian at the mode of the unconstrained density, with `jacobian` (the
    default) or, as pymc-extras' `fit_laplace`, at the MAP itself with the Hessian of the log
    density without Jacobian. `local` names free variables coupled to each other only through the
    rest (an arrow Hessian, checked). Returns the draws (one chain), the MAP's draws and warnings."""
    starts = map_starts(initvals, fixed)
    program, inputs = build_map_program(model, starts, fixed, laplace={"jacobian": bool(jacobian),
                                                                       "local": list(local)})
    map_draws, x_map = run_map(program, starts, inputs, maxiter=maxiter, tol=tol, fixed=fixed)
    from bayes_wsc.laplace import run_laplace

    from bayes_wsc.nested_laplace import laplace_warnings

    draws, messages = run_laplace(program, inputs, x_map, draws=draws, seed=seed, maxiter=maxiter, tol=tol,
                                  fixed=fixed)
    return draws, map_draws, messages + laplace_warnings(draws.info)


def _forward_graph(model: pm.Model):
    """(inputs, outputs): each free variable on its constrained scale -> its value variable."""
    free = model.free_RVs
    inputs = [rv.type(name=rv.name) for rv in free]
    outputs = []
    for rv, value in zip(free, inputs):
        transform = model.rvs_to_transforms.get(rv)
        outputs.append(value if transform is None else transform.forward(value, *rv.owner.inputs))
    return inputs, graph_replace(outputs, dict(zip(free, inputs)), strict=False)


def _defaults_if_needed(model: pm.Model, starts, seed) -> tuple[dict, bool]:
    """The model's default initial values (constrained), when some start leaves a free variable out,
    and whether they depend on the model's data; they cost a compiled function (0.3 s), so they are
    skipped when every start gives every one."""
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.traversal import graph_inputs
    from pytensor.tensor.random.type import RandomType

    if all(start is not None and all(rv.name in start for rv in model.free_RVs) for start in starts):
        return {}, False
    expressions = make_initial_point_expression(
        free_rvs=model.free_RVs, rvs_to_transforms=model.rvs_to_transforms,
        initval_strategies=model.rvs_to_initial_values, jitter_rvs=set(), return_transformed=False)
    uses_data = any(isinstance(v, SharedVariable) and not isinstance(v.type, RandomType)
                    for v in graph_inputs(expressions))
    return make_initial_point_fn(model=model, jitter_rvs=set(), return_transformed=False)(seed), uses_data


def transformed_starts(model: pm.Model, starts: Sequence[Mapping[str, np.ndarray] | None],
                       seed: int | None = None) -> list[dict]:
    """Initial points in the unconstrained space, for starts given on the constrained scale (as a
    user thinks of them); a variable a start leaves out takes the model's default initial value.
    One function, compiled once, transforms every start."""
    defaults = _defaults_if_needed(model, starts, seed)[0]
    inputs, outputs = _forward_graph(model)
    forward = pytensor.function(inputs, outputs, mode="FAST_COMPILE", on_unused_input="ignore")
    names = [model.rvs_to_values[rv].name for rv in model.free_RVs]
    points = []
    for start in starts:
        given = {**defaults, **dict(start or {})}
        values = forward(*[np.asarray(given[rv.name], dtype=rv.dtype) for rv in model.free_RVs])
        points.append({n: np.asarray(v) for n, v in zip(names, values)})
    return points


def transformed_start(model: pm.Model, initvals: Mapping[str, np.ndarray] | None, seed: int | None = None):
    """The model's initial point in the unconstrained space, with `initvals` on the constrained scale."""
    return transformed_starts(model, [initvals], seed)[0]


def map_starts(initvals, fixed: Mapping | None = None) -> list:
    """`fit_map`'s starts as a list, without the variables that `fixed` holds."""
    starts = [initvals] if initvals is None or isinstance(initvals, Mapping) else list(initvals)
    if not starts:
        raise InputError("fit_map needs at least one start")
    return [None if s is None else {k: v for k, v in s.items() if k not in (fixed or {})} for s in starts]


def held_fixed(model: pm.Model, fixed: Mapping[str, np.ndarray] | None) -> pm.Model:
    """The model with the variables in `fixed` held at their values (constrained scale)."""
    if not fixed:
        return model
    return pm.do(model, {k: np.asarray(v, dtype=float) for k, v in fixed.items()})


def constrained_values(model: pm.Model, points: Sequence[dict]) -> dict[str, np.ndarray]:
    """Free variables and Deterministics on their natural scale, stacked over `points`."""
    outs = get_default_varnames(model.unobserved_value_vars, include_transformed=False)
    names = [v.name for v in outs]
    fn = model.compile_fn(outs, inputs=model.value_vars, on_unused_input="ignore", point_fn=False,
                          mode="FAST_COMPILE")  # evaluated a few times: no C compilation
    rows = [fn(*[p[v.name] for v in model.value_vars]) for p in points]
    return {n: np.stack([np.asarray(r[i]) for r in rows]) for i, n in enumerate(names)}


# ---------------------------------------------------------------------- NUTS
def jittered_starts(model: pm.Model, initvals, chains: int, seed: int | None, jitter: float) -> list[dict]:
    """One unconstrained start per chain: `initvals` (constrained scale; one point for every chain,
    or a list with one per chain) plus Gaussian jitter.

    Starting every chain near one mode (the MAP) is what keeps the orientation
    of the latent classes, and the labels of exchangeable clusters, the same
    across chains; chains started at different restarts' optima test that
    relabeling can reconcile them.
    """
    centres = [initvals] * chains if initvals is None or isinstance(initvals, Mapping) else list(initvals)
    if len(centres) != chains:
        raise InputError(f"got {len(centres)} initial points for {chains} chains")
    rng = np.random.default_rng(seed)
    return [{k: np.asarray(v) + jitter * rng.standard_normal(np.shape(v)) for k, v in centre.items()}
            for centre in transformed_starts(model, centres, seed)]


def fit_nuts(
    model: pm.Model,
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    seed: int | None = None,
    initvals: Mapping[str, np.ndarray] | Sequence[Mapping[str, np.ndarray]] | None = None,
    backend: str | None = None,
    target_accept: float = 0.8,
    var_names: Sequence[str] | None = None,
    progressbar: bool = True,
    jitter: float = 0.05,
    precision: str = "float64",
    dense_mass: bool = False,
    defer_log_likelihood: bool = False,
) -> Draws:
    """NUTS on the model's log density through the chosen backend.

    `initvals` is one point for all chains (jittered) or one point per
    chain. `var_names` limits what is kept per draw (default: every free
    variable and Deterministic on its natural scale). `precision="float32"`
    runs NumPyro's sampler on a float32 copy of the graph: half the cost per
    gradient on this CPU, for a log density rounded to about 1e-7 of its size
    (so keep the model's log density small, as the wsc model does by centring).
    `dense_mass` adapts a full mass matrix (NumPyro only): for a model of few, correlated
    dimensions; its cost grows with the square of the dimension. With `defer_log_likelihood` (NumPyro
    only) the pointwise log-likelihood (the Deterministics named `LOG_LIKELIHOOD_PREFIX`...) is left to
    `Draws.deferred`, which computes it for every draw, or for some draws of each chain: at 10,000
    groups with mu integrated out it costs 30-50 s for 4000 draws, a fifth of the run.
    """
    backend = backend or default_backend()
    if backend not in NUTS_BACKENDS:
        raise InputError(f"backend must be one of {NUTS_BACKENDS}, got {backend!r}")
    if precision not in PRECISIONS:
        raise InputError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    check_precision_backend(precision, backend)
    for name, value in (("draws", draws), ("tune", tune), ("chains", chains)):
        if not isinstance(value, (int, np.integer)) or value < (0 if name == "tune" else 1):
            raise InputError(f"{name} must be a positive integer, got {value!r}")
    seed = int(np.random.SeedSequence(seed).generate_state(1)[0] % (2**31)) if seed is None else int(seed)
    starts = jittered_starts(model, initvals, chains, seed, jitter)
    t0 = time.perf_counter()
    if backend == "numpyro":
        result = _sample_numpyro(model, starts, draws, tune, seed, target_accept, var_names, progressbar,
                                 precision, dense_mass, defer_log_likelihood)
    else:
        result = _sample_pymc(model, starts, draws, tune, seed, target_accept, var_names, progressbar, backend)
    result.info.update({"backend": backend, "precision": precision, "dense_mass": dense_mass and backend == "numpyro",
                        "draws": draws, "tune": tune,
                        "chains": chains, "seed": seed, "target_accept": target_accept,
                        "seconds": time.perf_counter() - t0})
    return result


def jax_runtime(devices: int = 4):
    """`jax_setup.jax_runtime` after PyMC's JAX module, which sets 100 host devices on import
    (undone there) and so must come first."""
    import pymc.sampling.jax  # noqa: F401

    return jax_setup.jax_runtime(devices)


def _sample_numpyro(model, starts, draws, tune, seed, target_accept, var_names, progressbar, precision,
                    dense_mass=False, defer_log_likelihood=False) -> Draws:
    jax = jax_runtime(len(starts))
    with _jax_x64(jax, precision == "float64"), warnings.catch_warnings():
        # PyTensor's JAX code asks for float64 constants; under float32 JAX gives float32 and says so
        warnings.filterwarnings("ignore", message="Explicitly requested dtype float64", category=UserWarning)
        return _run_numpyro(jax, model, starts, draws, tune, seed, target_accept, var_names, progressbar, dense_mass,
                            defer_log_likelihood)


@contextlib.contextmanager
def _jax_x64(jax, enabled: bool):
    """JAX's 64-bit mode set for the whole process, then restored. The thread-local
    `jax.enable_x64(False)` does not reach the thread that runs NumPyro's progress-bar
    callbacks, which then answer with int64 where int32 was traced, and XLA aborts."""
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", enabled)
    try:
        yield
    finally:
        jax.config.update("jax_enable_x64", before)


def _run_numpyro(jax, model, starts, draws, tune, seed, target_accept, var_names, progressbar,
                 dense_mass=False, defer_log_likelihood=False) -> Draws:
    chains = len(starts)
    from numpyro.infer import MCMC, NUTS
    from pymc.sampling.jax import get_jaxified_graph

    value_vars = model.value_vars
    potential = get_jaxified_graph(inputs=value_vars, outputs=[-model.logp()])
    chain_method = "parallel" if jax.local_device_count() >= chains else "sequential"
    mcmc = MCMC(
        NUTS(potential_fn=lambda xs: potential(*xs)[0], target_accept_prob=target_accept, dense_mass=dense_mass),
        num_warmup=tune, num_samples=draws, num_chains=chains, chain_method=chain_method,
        progress_bar=progressbar,
    )
    init = [np.stack([np.asarray(s[v.name], dtype=float) for s in starts]) for v in value_vars]
    if chains == 1:
        init = [x[0] for x in init]
    mcmc.run(jax.random.PRNGKey(seed), init_params=init,
             extra_fields=("num_steps", "diverging", "energy", "potential_energy", "accept_prob",
                           "adapt_state.step_size"))
    samples = mcmc.get_samples(group_by_chain=True)
    outs = _kept_outputs(model, var_names)
    later = [o for o in outs if defer_log_likelihood and o.name.startswith(LOG_LIKELIHOOD_PREFIX)]
    outs = [o for o in outs if o not in later]
    values = _values_per_draw(jax, get_jaxified_graph(inputs=value_vars, outputs=outs), samples, model)
    posterior = {o.name: np.asarray(v, dtype=o.dtype) for o, v in zip(outs, values)}
    deferred = None
    if later:
        samples = [np.asarray(s) for s in samples]

        def deferred(draws=None):
            """The deferred outputs at every draw, or at these draw indices of each chain."""
            chosen = samples if draws is None else [s[:, np.asarray(draws)] for s in samples]
            computed = _values_per_draw(jax, get_jaxified_graph(inputs=value_vars, outputs=later), chosen, model)
            return {o.name: np.asarray(v, dtype=o.dtype) for o, v in zip(later, computed)}
    extra = mcmc.get_extra_fields(group_by_chain=True)
    stats = {
        "diverging": np.asarray(extra["diverging"], dtype=bool),
        "n_steps": np.asarray(extra["num_steps"], dtype=np.int64),
        "tree_depth": np.floor(np.log2(np.maximum(np.asarray(extra["num_steps"]), 1))).astype(np.int64) + 1,
        "energy": np.asarray(extra["energy"], dtype=float),
        "lp": -np.asarray(extra["potential_energy"], dtype=float),
        "acceptance_rate": np.asarray(extra["accept_prob"], dtype=float),
        "step_size": np.asarray(extra["adapt_state.step_size"], dtype=float),
    }
    # NumPyro wraps each run's chains in a new function object, and JAX caches compiled code by
    # function identity (pyro-ppl/numpyro#2172), so every fit's programs stay in memory although
    # they can never be reused: ~600 memory maps per fit, and after ~100 fits in one process the
    # per-process limit (65,530 on Linux) is gone and XLA aborts. Clearing JAX's in-memory caches
    # frees them; other jitted functions recompile once, from the on-disk cache where enabled.
    jax.clear_caches()
    return Draws(posterior, stats, {"chain_method": chain_method}, deferred=deferred)


def _values_per_draw(jax, values_fn, samples, model) -> list[np.ndarray]:
    """`values_fn` (free variables and Deterministics from the value variables) on every draw,
    shaped (chain, draw, ...), in float64 whatever precision sampled: the pointwise
    log-likelihood of a float32 fit keeps its digits. Evaluated a block of draws at a time,
    so that a Deterministic whose intermediates have the size of the data (the wsc
    per-group likelihood is I x K per draw) needs a bounded amount of memory."""
    chains, draws = np.shape(samples[0])[:2]
    flat = [np.asarray(s, dtype=float).reshape(chains * draws, *np.shape(s)[2:]) for s in samples]
    data_size = max([int(np.prod(np.shape(d.get_value()))) for d in model.data_vars] + [1])
    block = int(min(chains * draws, max(1, CHUNK_FLOATS // data_size)))
    with _jax_x64(jax, True):
        fn = jax.jit(jax.vmap(values_fn))
        pieces = []
        for start in range(0, chains * draws, block):
            chunk = [f[start:start + block] for f in flat]
            short = block - chunk[0].shape[0]
            if short:  # the last block padded to the same shape: no second compilation
                chunk = [np.concatenate([c, np.repeat(c[-1:], short, axis=0)]) for c in chunk]
            pieces.append([np.asarray(v)[:block - short] for v in fn(*chunk)])
    return [np.concatenate([p[i] for p in pieces]).reshape(chains, draws, *pieces[0][i].shape[1:])
            for i in range(len(pieces[0]))]


def _kept_outputs(model, var_names):
    outs = get_default_varnames(model.unobserved_value_vars, include_transformed=False)
    if var_names is not None:
        missing = set(var_names) - {o.name for o in outs}
        if missing:
            raise InputError(f"the model has no variables {sorted(missing)}")
        outs = [o for o in outs if o.name in var_names]
    return outs


def _sample_pymc(model, starts, draws, tune, seed, target_accept, var_names, progressbar, backend) -> Draws:
    """PyMC's own NUTS, nutpie or BlackJAX through `pm.sample`, started from `starts`."""
    names = [o.name for o in _kept_outputs(model, var_names)]
    initvals = [constrained_point(model, s) for s in starts]  # pm.sample takes the constrained scale
    kwargs = dict(draws=draws, tune=tune, chains=len(starts), random_seed=seed, progressbar=progressbar,
                  initvals=initvals, model=model, var_names=names, target_accept=target_accept,
                  compute_convergence_checks=False)
    if backend == "pymc":
        idata = pm.sample(cores=min(len(starts), jax_setup.usable_cpus()), init="adapt_diag", **kwargs)
    else:
        if backend == "blackjax":
            import pymc.sampling.jax  # noqa: F401 - sets 100 host devices on import; undone next line

            jax_setup.set_host_devices(len(starts))
        idata = pm.sample(nuts_sampler=backend, **kwargs)
    posterior = {n: idata.posterior[n].values for n in names}
    stats = {k: idata.sample_stats[k].values for k in idata.sample_stats.data_vars}
    return Draws(posterior, stats, {})


def constrained_point(model: pm.Model, point: dict) -> dict:
    """Free variables of one unconstrained point, on their natural scale."""
    values = constrained_values(model, [point])
    return {rv.name: values[rv.name][0] for rv in model.free_RVs}
