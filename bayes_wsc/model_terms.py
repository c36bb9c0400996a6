"""Which of a fitted model's terms are the default model's, decided from the fitted model itself.

The package uses its default models' formulas in two places: each model's checks replicate data
from them (`checks/<model>.replicate`), and the first model integrates each group's mu_i out of
its pointwise log-likelihood for LOO (`models.wsc.integrated_group_loglik`). Both are right for a
fit only where the fitted model's terms are the default's. A variant file may replace any term (a
Student-t rater noise, another emission, its own link model), so for a variant this is decided
from what the fitted model computed, never from a file or variable name:

* each model's checks module computes the default model's pointwise log-likelihood in NumPy from
  the fit's reported variables (`default_log_likelihood(est, data, params)`), and it is compared
  with what the fitted model recorded (`likelihoods.record_pointwise`) at a few of the fit's draws.
  Equal: the variant's likelihood is the default's (it may still change priors, parameterization
  or which parameters are shared); different: the variant has a term of its own; not computable
  (the variant lacks a reported variable, or records no log-likelihood): unverified.
* a model may split its likelihood into terms and look further (`likelihood_terms(est, data,
  params, recorded, model)`: the first model's clicks, HE and group-quality prior), evaluating the
  built model's own graphs at the draws (`evaluate`, `draw`).

The answer is a dict {term: "default" | "own" | "unverified"} kept in the fit's attrs as
`likelihood_terms`. The package's own models (no variant file) are the default by construction.
"""

from __future__ import annotations

import numpy as np

from bayes_wsc.inference import LOG_LIKELIHOOD_PREFIX

DEFAULT, OWN, UNVERIFIED = "default", "own", "unverified"
#: draws at which a variant's recorded log-likelihood is compared with the default formula
COMPARED_DRAWS = 4
#: recorded and default values agree to this (both are float64 evaluations of the same numbers)
RTOL, ATOL = 1e-6, 1e-6


def same(recorded, computed) -> str:
    """DEFAULT when two arrays of log-likelihood values agree, else OWN (UNVERIFIED for None)."""
    if computed is None or recorded is None:
        return UNVERIFIED
    recorded, computed = np.asarray(recorded, dtype=float), np.asarray(computed, dtype=float)
    if recorded.shape != computed.shape:
        return OWN
    return DEFAULT if np.allclose(recorded, computed, rtol=RTOL, atol=ATOL) else OWN


def compared_draws(posterior: dict, names) -> dict[str, np.ndarray]:
    """The posterior variables `names` (those present) at up to `COMPARED_DRAWS` draws evenly spread
    over all chains: {name: (S, ...)}."""
    first = np.asarray(next(iter(posterior.values())))
    total = first.shape[0] * first.shape[1]
    index = np.unique(np.linspace(0, total - 1, min(COMPARED_DRAWS, total)).round().astype(int))
    out = {}
    for name in names:
        if name in posterior:
            values = np.asarray(posterior[name])
            out[name] = values.reshape(total, *values.shape[2:])[index]
    return out


def likelihood_terms(est, posterior: dict, data, model=None) -> dict[str, str]:
    """{term: "default" | "own" | "unverified"} for a fit of `est` whose draws are `posterior`
    ((chain, draw, ...) arrays, the recorded log-likelihood under its prefixed names) and whose
    built model is `model` (None when it was not built)."""
    from bayes_wsc import registry

    module = registry.get(est.model_name).module("checks")  # the model's checks module, as `criticism.module_of`
    recorded = {k[len(LOG_LIKELIHOOD_PREFIX):]: v for k, v in compared_draws(posterior, posterior).items()
                if k.startswith(LOG_LIKELIHOOD_PREFIX)}
    params = compared_draws(posterior, [k for k in posterior if not k.startswith(LOG_LIKELIHOOD_PREFIX)])
    if hasattr(module, "likelihood_terms"):
        return module.likelihood_terms(est, data, params, recorded, model)
    if len(recorded) != 1:
        return {"likelihood": UNVERIFIED}
    try:
        computed = module.default_log_likelihood(est, data, params)
    except (KeyError, ValueError, IndexError):  # a variant without the variables the formula reads
        computed = None
    return {"likelihood": same(next(iter(recorded.values())), computed)}


def replaced(terms: dict | None) -> list[str]:
    """The terms of `likelihood_terms` that are not known to be the default's."""
    return [t for t, v in (terms or {}).items() if v != DEFAULT]


# ---------------------------------------------------------------------- a built model at the draws
def _constrained_inputs(model):
    """A fresh input per free variable (constrained scale) and the replacements that put them in
    place of the free variables and of their value variables in any graph of the model."""
    from pytensor.graph.replace import clone_replace

    free = list(model.free_RVs)
    inputs = [rv.type(name=rv.name) for rv in free]
    rv_map = dict(zip(free, inputs))
    value_map = {}
    for rv, given in zip(free, inputs):
        transform = model.rvs_to_transforms.get(rv)
        value = model.rvs_to_values[rv]
        parameters = clone_replace(list(rv.owner.inputs), replace=rv_map)
        value_map[value] = given if transform is None else transform.forward(given, *parameters)
    # one replacement of both (a second pass would miss the clones the first one made)
    return free, inputs, {**value_map, **rv_map}


def evaluate(model, outputs, points: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Graphs of the built `model` (in its random or its value variables) at draws of its free
    variables on their constrained scale: `points` {name: (S, ...)}; returns each output as (S, ...)."""
    import pytensor
    from pytensor.graph.replace import clone_replace

    free, inputs, replace = _constrained_inputs(model)
    graphs = clone_replace(list(outputs), replace=replace)
    fn = pytensor.function(inputs, graphs, mode="FAST_COMPILE", on_unused_input="ignore")
    n = np.shape(points[free[0].name])[0]
    rows = [fn(*[np.asarray(points[rv.name][s], dtype=rv.dtype) for rv in free]) for s in range(n)]
    return [np.stack([np.asarray(r[i]) for r in rows]) for i in range(len(graphs))]


def draw(model, name: str, points: dict[str, np.ndarray], seed: int) -> np.ndarray:
    """Draws of the built model's random variable `name` (an observed term, say) given each draw of
    its free variables in `points` {name: (S, ...)}: one replicate per draw, (S, ...)."""
    from pymc.pytensorf import compile as compile_pymc
    from pytensor.graph.replace import clone_replace

    free, inputs, replace = _constrained_inputs(model)
    graph = clone_replace([model[name]], replace=replace)
    fn = compile_pymc(inputs, graph[0], random_seed=seed, mode="FAST_COMPILE", on_unused_input="ignore")
    n = np.shape(points[free[0].name])[0]
    return np.stack([np.asarray(fn(*[np.asarray(points[rv.name][s], dtype=rv.dtype) for rv in free]))
                     for s in range(n)])


def jax_function(model, outputs):
    """(names, fn): graphs of the built `model` as a JAX function of its free variables on their
    constrained scale, fn(*values in the order of `names`) -> list of outputs (float64)."""
    from bayes_wsc.jax_setup import jax_runtime

    jax_runtime()
    from pymc.sampling.jax import get_jaxified_graph
    from pytensor.graph.replace import clone_replace

    free, inputs, replace = _constrained_inputs(model)
    graphs = clone_replace(list(outputs), replace=replace)
    return [rv.name for rv in free], get_jaxified_graph(inputs=inputs, outputs=graphs)
