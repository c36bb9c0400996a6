"""A MAP fit as compiled JAX functions, the optimizer that runs them, and their disk cache.

`fit.build_map_program` turns a `pm.Model` into a `MapProgram`: the start
transform (constrained values to one unconstrained vector), the negative log
density with its gradient, and the reported values (free variables and
Deterministics on their natural scale), and for `method="laplace"` the
functions of `bayes_wsc.laplace`. Every value the model's graph reads from
the data (its `pm.Data`, the lengths of its dims, the values `map_fixed`
holds) is an *input* of these functions, not a constant in them. Handing
PyMC's graph to JAX costs more than the optimization itself at the paper's
scale (PyTensor's rewrites: 1.1-1.3 s at 10,000 groups), and importing PyMC
and ArviZ costs 4-5 s more. So an estimator keeps each program on disk
(`jax.export`), keyed by the structure it is built from: the estimator, its
settings, the sizes of the coordinates and the shapes and dtypes of the
inputs, the held variables' names, the start's variable names, the Laplace
functions asked for, the package's source and the versions of PyMC,
PyTensor and JAX. Fitting that model to any data of those shapes, from the
command line or in-process, then runs on JAX alone: the estimator computes
the inputs in NumPy (`Estimator.model_inputs`), and the optimizer runs from
the start every time; only the compilation is reused. Because data are
inputs, XLA's own disk cache, which holds compiled programs, is reused
across data sets too.

A value a model used as a constant instead of an input would be reused
silently on other data, so building a program checks that the estimator's
`model_inputs` computes exactly what the model holds, and
tests/test_program_inputs.py runs a program cached for one data set on
another that differs in every input, against a fresh build.

Nothing here imports PyMC.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bayes_wsc.draws import Draws
from bayes_wsc.errors import InputError
from bayes_wsc.jax_setup import cache_root

log = logging.getLogger("bayes_wsc")

#: the programs folder is trimmed to this size, least recently used first
CACHE_BYTES = 2**30
_FILES = ("start", "value_and_grad", "values")


@dataclass
class MapProgram:
    """A model's MAP, compiled: functions of one flat vector of its unconstrained values and of
    the model's data.

    `start(values, inputs)` maps constrained values of every free variable (a dict) to the
    vector; `value_and_grad(x, inputs)` is the negative log density without Jacobian terms and its
    gradient; `values(x, inputs)` gives every free variable and Deterministic on its natural
    scale. `inputs` are the model's data and held values by name (the attribute `inputs` holds
    each one's shape and dtype), so one program serves every data set of the same shapes. They
    run from their `jax.export` artifacts, whether just built (`export_program`) or read from the
    cache, so a cached program computes exactly what the built one did. `layout` lists the
    vector's pieces (value variable, shape); `defaults` fills a start that leaves a free variable
    out; `dims` names each variable's dimensions (the labels themselves come from the data).
    `laplace` describes the extra functions of a program built for `laplace.run_laplace`, if any.
    """

    exported: dict[str, bytes] = field(repr=False)
    free: list[str]
    #: free variables of the model that the program holds at given values (`fit_map(fixed=...)`)
    held: list[str]
    layout: list[tuple[str, tuple[int, ...]]]
    #: input name -> [shape, dtype string]
    inputs: dict[str, list]
    defaults: dict[str, np.ndarray]
    dims: dict[str, list[str]]
    laplace: dict | None = None
    #: False when the defaults depend on the data: then the program must not be cached
    reusable: bool = True
    #: "built" in this process, or "cache" when read from disk
    origin: str = "built"

    def __post_init__(self):
        jax = _jax()
        for name, blob in self.exported.items():
            setattr(self, name, jax.jit(jax.export.deserialize(bytearray(blob)).call))

    def complete(self, start: Mapping | None) -> dict[str, np.ndarray]:
        """A start with every free variable, as float arrays; missing ones from `defaults`."""
        given = dict(start or {})
        missing = [n for n in self.free if n not in given and n not in self.defaults]
        if missing:
            raise InputError(f"the MAP start gives no value for {missing}")
        return {n: np.asarray(given[n] if n in given else self.defaults[n], dtype=float) for n in self.free}

    def device_inputs(self, inputs: Mapping[str, np.ndarray]) -> dict:
        """`inputs` checked against the program's (names, shapes) and put on the device once, in the
        program's dtypes, so that the optimizer's many calls do not copy them again."""
        jax = _jax()
        if set(inputs) != set(self.inputs):
            raise ValueError(f"the program takes inputs {sorted(self.inputs)}, got {sorted(inputs)}")
        out = {}
        for name, (shape, dtype) in self.inputs.items():
            value = np.asarray(inputs[name])
            if value.shape != tuple(shape):
                raise ValueError(f"input {name!r} has shape {value.shape}, the program {tuple(shape)}")
            out[name] = jax.device_put(value.astype(np.dtype(dtype), copy=False))
        return out

    def unravel(self, x: np.ndarray) -> dict[str, np.ndarray]:
        """The flat vector as a point: value variable name -> array."""
        point, offset = {}, 0
        for name, shape in self.layout:
            size = int(np.prod(shape, dtype=int))
            point[name] = np.asarray(x[offset:offset + size]).reshape(shape)
            offset += size
        return point


# ---------------------------------------------------------------------- optimizer
def minimize(value_and_grad: Callable, x0: np.ndarray, *, maxiter: int = 5000, tol: float = 1e-8):
    """L-BFGS-B on a JAX value-and-gradient function of one vector (scipy's result).

    `tol` is in nats per free parameter: L-BFGS-B's ftol is relative to |value|, which an
    additive constant of the model would change, so it is turned into that relative test at x0.
    """
    from scipy.optimize import minimize as scipy_minimize
    from threadpoolctl import threadpool_limits

    def fun(x):
        value, gradient = value_and_grad(x)
        return float(value), np.asarray(gradient, dtype=float)

    x0 = np.asarray(x0, dtype=float)
    f0, g0 = fun(x0)
    ftol = tol * x0.size / max(abs(f0), 1.0)
    # L-BFGS works on long vectors with tiny BLAS calls: threads only contend (5x slower at 10^4 groups)
    with threadpool_limits(1, user_api="blas"):
        result = scipy_minimize(fun, x0, jac=True, method="L-BFGS-B",
                                options={"maxiter": maxiter, "ftol": ftol, "gtol": 1e-7, "maxcor": 20})
    result.update(optimum_check(result, x0, f0, g0, tol))
    return result


def optimum_check(result, x0: np.ndarray, f0: float, g0: np.ndarray, tol: float) -> dict:
    """What tells a true optimum from a stop that only looks like one (`diagnostics.map_messages`):
    how far the search moved from its start (`start_gain`: nats of log density gained, `moved`:
    the largest change of an unconstrained coordinate), the relative gradient at the point it reports
    (`relative_gradient`: max_i |g_i| max(|x_i|, 1) / max(|f|, 1), Dennis & Schnabel's scale-free
    measure) and the gradient against the one at the start (`gradient_reduction`), and the
    optimizer's message with any empty reason given in words (`reason`)."""
    x = np.asarray(result.x, dtype=float)
    g = np.asarray(result.jac, dtype=float)
    f = float(result.fun)
    finite = np.isfinite(f) and np.isfinite(g).all()
    relative = float(np.max(np.abs(g) * np.maximum(np.abs(x), 1.0), initial=0.0) / max(abs(f), 1.0)) \
        if finite else float("inf")
    start = float(np.max(np.abs(g0), initial=0.0))
    return {"start_gain": float(f0 - f) if finite else float("nan"),
            "moved": float(np.max(np.abs(x - x0), initial=0.0)),
            "relative_gradient": relative,
            "gradient_reduction": float(np.max(np.abs(g), initial=0.0) / start) if finite and start > 0 else 0.0,
            "tolerance_nats": float(tol * x.size),
            "reason": optimizer_reason(str(result.message))}


#: L-BFGS-B's messages whose reason is empty, in words
_ABNORMAL = ("the line search found no step that raises the log density enough (L-BFGS-B's abnormal "
             "termination in the line search): the gradient disagrees with the values there, from rounding "
             "where the density is very sharp or very flat, or from a kink or discontinuity")


def optimizer_reason(message: str) -> str:
    """The optimizer's message, with a reason in words where L-BFGS-B gives none ("ABNORMAL: ")."""
    head, _, reason = message.partition(":")
    if reason.strip():
        return message
    if head.strip() == "ABNORMAL":
        return _ABNORMAL
    return f"{head.strip() or 'no message'} (the optimizer gave no reason)"


#: a positive variable (log transform) counts as collapsed when the search took it this many times below
#: its start (the model's initial value, by default the prior's typical value): 1e4
COLLAPSE_FACTOR = 1e4
#: ... and when the density still rises as it falls, by at least this many nats per e-fold: a scale whose
#: children pile up on their location (a funnel) gains about one nat per e-fold and child without bound,
#: while a non-negative weight whose mode is 0 (a sparse solution, models/perception_nonnegative.py)
#: has a slope that vanishes with it (measured: below 1e-5 there)
UNBOUNDED_SLOPE = 0.1
#: a variable on an interval (logodds or interval transform) counts as at its bound within this share of it
BOUND_SHARE = 1e-8


def degenerate_values(layout, x: np.ndarray, x0: np.ndarray, gradient: np.ndarray) -> list[str]:
    """The free variables of the point `x` (unconstrained) that sit where a mode is degenerate, in words:
    a scale collapsed towards 0 (a log-transformed value more than log(COLLAPSE_FACTOR) below the start
    `x0` while the density, whose negative has `gradient` there, still rises as it falls: it grows without
    bound, as a hierarchical or shrinkage scale's does) or a bounded value at its bound (a logit beyond
    logit(BOUND_SHARE)). Read from the transforms' names alone, so it holds for every model and variant
    without naming their variables."""
    found, offset = [], 0
    edge = -np.log(BOUND_SHARE)
    for name, shape in layout:
        size = int(np.prod(shape, dtype=int))
        piece, start = np.asarray(x[offset:offset + size]), np.asarray(x0[offset:offset + size])
        slope = np.asarray(gradient[offset:offset + size])
        offset += size
        base, _, transform = name.removesuffix("__").rpartition("_")
        if transform == "log":
            low = (piece < start - np.log(COLLAPSE_FACTOR)) & (slope > UNBOUNDED_SLOPE)
            if low.any():
                i = int(np.argmin(np.where(low, piece - start, np.inf)))
                found.append(f"{base} fell to {np.exp(piece[i]):.2g} from {np.exp(start[i]):.2g} at the start "
                             f"({int(low.sum())} of {size} value{'s' if size > 1 else ''}), and the density "
                             "still rises as it falls: a scale collapsing towards 0")
        elif transform in ("logodds", "interval"):
            far = np.abs(piece) > edge
            if far.any():
                found.append(f"{base} sits at a bound of its range ({int(far.sum())} of {size} "
                             f"value{'s' if size > 1 else ''} within {BOUND_SHARE:.0e} of it)")
    return found


def run_map(program: MapProgram, starts: Sequence[Mapping | None], inputs: Mapping[str, np.ndarray], *,
            maxiter: int = 5000, tol: float = 1e-8,
            fixed: Mapping[str, np.ndarray] | None = None) -> tuple[Draws, np.ndarray]:
    """L-BFGS from each start on the program with these `inputs` (data and held values); the best
    log density wins. Returns the draws and the best unconstrained vector. See `fit.fit_map`."""
    if not starts:
        raise InputError("fit_map needs at least one start")
    fixed = dict(fixed or {})
    given = program.device_inputs(inputs)
    xs = [np.asarray(program.start(program.complete(s), given), dtype=float) for s in starts]
    t0 = time.perf_counter()
    results = [minimize(lambda x: program.value_and_grad(x, given), x, maxiter=maxiter, tol=tol) for x in xs]
    best = min(range(len(results)), key=lambda i: results[i].fun if np.isfinite(results[i].fun) else np.inf)
    result = results[best]
    # every restart's optimum through one compiled function, stacked
    rows = [program.values(r.x, given) for r in results]
    values = {n: np.stack([np.asarray(row[n]) for row in rows]) for n in rows[0]}
    posterior = {k: v[best:best + 1] for k, v in values.items()}
    degenerate = [degenerate_values(program.layout, np.asarray(r.x), x0, np.asarray(r.jac))
                  for r, x0 in zip(results, xs)]
    info = {
        "converged": bool(result.success),
        "optimizer_message": result.reason,
        "iterations": int(result.nit),
        **{k: result[k] for k in ("start_gain", "moved", "relative_gradient", "gradient_reduction",
                                  "tolerance_nats")},
        "degenerate": degenerate[best],
        "log_density": float(-result.fun),
        "seconds": time.perf_counter() - t0,
        "compiled_program": program.origin,
    }
    optima = []
    if len(results) > 1:
        info.update(restarts=len(results), best_restart=best,
                    restart_log_densities=[float(-r.fun) for r in results],
                    restart_degenerate=[bool(d) for d in degenerate])
        optima = [{**{n: values[n][i] for n in program.free}, **fixed} for i in range(len(results))]
    if fixed:
        posterior.update({k: np.asarray(v, dtype=float)[None] for k, v in fixed.items()})
        info["held_fixed"] = {k: np.asarray(v).tolist() for k, v in fixed.items()}
    draws = Draws({k: v[None] for k, v in posterior.items()}, {"lp": np.array([[-result.fun]])}, info, optima)
    return draws, np.asarray(result.x)


def _jax():
    from bayes_wsc.jax_setup import jax_runtime

    return jax_runtime()


def export_program(functions: Mapping[str, Callable], examples: Mapping[str, tuple], **labels) -> MapProgram:
    """A `MapProgram` from JAX-traceable functions (at least `start`, `value_and_grad` and
    `values`), each exported (traced and lowered once) at the shapes and dtypes of its example
    arguments."""
    jax = _jax()
    exported = {}
    for name, function in functions.items():
        spec = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype),
                                      examples[name])
        exported[name] = bytes(jax.export.export(jax.jit(function))(*spec).serialize())
    return MapProgram(exported, **labels)


# ---------------------------------------------------------------------- export and cache
def cache_key(estimator: str, settings: Mapping, coords: Mapping[str, Sequence], inputs: Mapping[str, np.ndarray],
              start_names: Sequence[str], laplace: Mapping | None = None) -> str:
    """A digest of the structure a MAP program is built from (see the module docstring): the
    estimator, its settings, the size of every coordinate, the name, shape and dtype of every
    input (data and held values, whose values are not part of it), the start's variable names,
    the Laplace functions asked for, the package's source and the library versions."""
    from importlib.metadata import version

    digest = hashlib.sha256()
    shapes = {n: [list(np.shape(v)), np.asarray(v).dtype.str] for n, v in inputs.items()}
    for part in (estimator, json.dumps(settings, sort_keys=True, default=str),
                 json.dumps({k: len(v) for k, v in coords.items()}, sort_keys=True),
                 json.dumps(shapes, sort_keys=True), json.dumps(sorted(start_names)),
                 json.dumps(laplace, sort_keys=True, default=str),
                 *(version(p) for p in ("pymc", "pytensor", "jax", "jaxlib"))):
        digest.update(part.encode())
        digest.update(b"\0")
    digest.update(_package_source_digest())
    return digest.hexdigest()[:32]


@functools.cache
def _package_source_digest() -> bytes:
    """Every module of the package, so that an edited model or likelihood never reuses a program.
    Read once per process: the code that runs is the code that was imported."""
    digest = hashlib.sha256()
    root = Path(__file__).parent
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.digest()


def cache_dir() -> Path:
    return Path(cache_root()) / "map_programs"


#: programs read from the cache in this process, by folder (most recently used last; at most LOADED_KEEP): a fit
#: that runs one program several times (restarts, a polish, held-out refits) reads and loads it once. Loading
#: one (reading its exports, `jax.jit` of each, XLA's executables from its disk cache) took 0.15-0.2 s at 10,000
#: items, paid 6-7 times by one `fit perception` before (benchmarks/RESULTS.md, issue 39)
_LOADED: dict[Path, MapProgram] = {}
LOADED_KEEP = 8


def load(key: str) -> MapProgram | None:
    """The cached program for `key`, or None; an unreadable entry is removed and reported as a miss. A program
    this process loaded before is given again while its folder exists (`_LOADED`)."""
    folder = cache_dir() / key
    if not folder.is_dir():
        _LOADED.pop(folder, None)
        return None
    if folder in _LOADED:
        _LOADED[folder] = program = _LOADED.pop(folder)  # the most recently used last
        os.utime(folder)
        return program
    try:
        meta = json.loads((folder / "meta.json").read_text())
        exported = {name: (folder / f"{name}.bin").read_bytes() for name in meta["functions"]}
        with np.load(folder / "defaults.npz", allow_pickle=False) as arrays:
            defaults = {name: arrays[name] for name in arrays.files}
        program = _from_exported(exported, meta, defaults)
    except Exception as exc:  # noqa: BLE001 - a broken cache entry must not break a fit
        log.info("MAP program cache: %s unreadable (%s); rebuilding it", folder, exc)
        shutil.rmtree(folder, ignore_errors=True)
        return None
    os.utime(folder)  # recently used: kept longest when the folder is trimmed
    _LOADED[folder] = program
    while len(_LOADED) > LOADED_KEEP:
        _LOADED.pop(next(iter(_LOADED)))
    return program


def store(key: str, program: MapProgram) -> None:
    """Write the program under `key` (atomically: a folder renamed into place), then trim the cache.
    Failing to write only costs the next fit its compilation, so it is logged, not raised."""
    root = cache_dir()
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=root))
        for name, blob in program.exported.items():
            (tmp / f"{name}.bin").write_bytes(blob)
        meta = {"functions": list(program.exported), "free": program.free, "held": program.held,
                "layout": [[n, list(s)] for n, s in program.layout], "inputs": program.inputs,
                "dims": program.dims, "laplace": program.laplace}
        (tmp / "meta.json").write_text(json.dumps(meta, default=_json_scalar))
        np.savez(tmp / "defaults.npz", **program.defaults)
        try:
            tmp.rename(root / key)
        except OSError:  # another process stored the same program first
            shutil.rmtree(tmp, ignore_errors=True)
        _trim(root, CACHE_BYTES)
    except OSError as exc:
        log.info("MAP program cache: cannot write to %s (%s)", root, exc)


def _json_scalar(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot store {type(value).__name__} in a MAP program's labels")


def _trim(root: Path, limit: int) -> None:
    folders = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    sizes = {p: sum(f.stat().st_size for f in p.iterdir()) for p in folders}
    total = sum(sizes.values())
    for folder in sorted(folders, key=lambda p: p.stat().st_mtime):
        if total <= limit:
            break
        shutil.rmtree(folder, ignore_errors=True)
        total -= sizes[folder]


def _from_exported(exported: Mapping[str, bytes], meta: dict, defaults: dict) -> MapProgram:
    if set(exported) < set(_FILES):
        raise ValueError(f"the entry lacks {sorted(set(_FILES) - set(exported))}")
    return MapProgram(
        dict(exported), free=list(meta["free"]), held=list(meta["held"]),
        layout=[(n, tuple(s)) for n, s in meta["layout"]], inputs=dict(meta["inputs"]), defaults=defaults,
        dims={k: list(v) for k, v in meta["dims"].items()}, laplace=meta["laplace"], origin="cache",
    )
