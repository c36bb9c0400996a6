"""Where a fit starts: the MAP's compiled program for its data and starts, and where NUTS chains begin.

The MAP's program comes from the cache when this model, with these settings, was fitted to data of the
same structure before (`program_for`: the data are inputs that `model_inputs` computes without PyMC,
checked against the model's own whenever a program is built, `_check_model_inputs`), else it is built
and stored; starts are cut to the model's own variables (`_restricted`); and NUTS chains are moved off
a degenerate MAP (`nondegenerate_start`). Apart from the fit's lifecycle, which calls them in order.
"""

from __future__ import annotations

from collections.abc import Sequence


def program_for(est, data, starts: list[dict], fixed: dict, laplace: dict | None = None):
    """The MAP's compiled program, the held values, the program's inputs (data and held values)
    and the coords: the program from the cache, or built and stored.

    Programs are keyed by structure (`map_program.cache_key`), with the data as inputs that
    `model_inputs` computes without PyMC. Only the package's own models are cached: the key holds
    the package's source, but not a variant file's imports (`model_file`) or a subclass's
    `build_model` written elsewhere.
    """
    from bayes_wsc import map_program

    key, known = None, None
    own = all(getattr(type(est), hook).__module__.startswith("bayes_wsc.")
              for hook in ("build_model", "model_inputs"))
    if est.model_file is None and own:
        known = est.model_inputs(data)
    if known is not None:
        coords, values = known
        key = map_program.cache_key(f"{type(est).__module__}.{type(est).__qualname__}", est.settings_for(data),
                                    coords, {**values, **fixed}, sorted({k for s in starts for k in s}), laplace)
        program = map_program.load(key)
        if program is not None:
            fixed = _restricted(fixed, program.held)
            return program, fixed, _restricted(_inputs(coords, values, fixed), program.inputs), coords
    from bayes_wsc.fit import build_map_program, map_starts, model_labels

    free = {rv.name for rv in est.model_.free_RVs}
    fixed = _restricted(fixed, free)
    start = map_starts(_restricted(starts, free), fixed)
    program, inputs = build_map_program(est.model_, start, fixed=fixed, laplace=laplace)
    model_coords = model_labels(est.model_)["coords"]
    if known is None:
        return program, fixed, inputs, model_coords
    _check_model_inputs(type(est).__name__, inputs, _inputs(coords, values, fixed), coords, model_coords)
    if program.reusable:
        map_program.store(key, program)
    return program, fixed, inputs, coords


def _restricted(values, names):
    """A start (a dict, or a list of them) with only the variables in `names`: the model's own."""
    if isinstance(values, dict):
        return {k: v for k, v in values.items() if k in names}
    return [_restricted(v, names) for v in values]


def _inputs(coords: dict, values: dict, fixed: dict) -> dict:
    """What a program may read: the length of each dim (PyMC keeps them as shared variables named
    by the dim), the data and the held values."""
    return {**{dim: len(labels) for dim, labels in coords.items()}, **values, **fixed}


def _check_model_inputs(name: str, inputs: dict, computed: dict, coords: dict, model_coords: dict) -> None:
    """A model's `model_inputs` must compute every input its graph reads, and its coords, exactly:
    a cached program would otherwise run on wrong data. Checked whenever a program is built."""
    import numpy as np

    for key, value in inputs.items():
        if key not in computed:
            raise RuntimeError(f"{name}.model_inputs does not compute {key!r}, which the model reads")
        if not np.array_equal(np.asarray(computed[key]).astype(value.dtype), value):
            raise RuntimeError(f"{name}.model_inputs computes {key!r} otherwise than the model")
    if {k: list(v) for k, v in coords.items()} != {k: list(v) for k, v in model_coords.items()}:
        raise RuntimeError(f"{name}.model_inputs gives other coords than the model's")


def nondegenerate_start(start, draws, chain_starts: str, chains: int, initial: Sequence[dict] = ({},)) -> tuple:
    """Where NUTS starts when the MAP is degenerate (`draws.info["degenerate"]`, see
    `map_program.degenerate_values`): the best restart whose optimum is not, if there is one (every chain
    there, or in `chain_starts="restarts"` the chains cycling over such optima); else the MAP's own
    starts, `initial` (the model's initial values, constrained scale; a variable they leave out at the
    model's initial point; jittered by `fit_nuts`), never the degenerate point, where chains stay stuck.
    A message says which; the start unchanged and no message when the MAP is not degenerate."""
    info = draws.info
    if not info.get("degenerate"):
        return start, []
    flags = info.get("restart_degenerate") or []
    good = [i for i, bad in enumerate(flags) if not bad]
    if not good or not draws.optima:
        initial = [dict(s or {}) for s in initial] or [{}]
        start = [initial[c % len(initial)] for c in range(chains)] if chain_starts == "restarts" else initial[0]
        where = (f"the MAP's {len(initial)} starts" if chain_starts == "restarts" and len(initial) > 1
                 else "the MAP's start")
        return start, [f"NUTS chains start at {where} (the model's initial values, jittered), not at the MAP, which is "
                       f"degenerate{' in every restart' if flags else ''}: chains started there stay stuck at its "
                       "edge. Check R-hat; a prior that keeps the variable from that edge, or a fit with the "
                       "variable held (map_fixed), may help."]
    good.sort(key=lambda i: -info["restart_log_densities"][i])
    if chain_starts == "restarts":
        start = [draws.optima[good[c % len(good)]] for c in range(chains)]
    else:
        start = draws.optima[good[0]]
    return start, [f"NUTS chains start at the optimum of MAP restart {good[0]} instead of the degenerate best "
                   f"one (log density {info['restart_log_densities'][good[0]]:.6g} against "
                   f"{info['log_density']:.6g}), so that they do not begin stuck at its edge."]
