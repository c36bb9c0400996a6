"""Each group's quality mu_i of the first model integrated out, and drawn back from its conditional.

Given the emissions w0, w1 (and F0's mu_loc, mu_scale, and the rater noise sigma_H), the groups are
independent and each mu_i is one-dimensional:

    log  integral F0(m) N(HE_i | m, sigma_H) prod_k (sig(-m) w0_k + sig(m) w1_k)^n_ik dm.

The integral is taken by Gauss-Hermite quadrature centred on the integrand's mode by a few Newton
steps (capped, since the log integrand flattens away from its mode) and scaled by its curvature
there. The same functions serve PyTensor (the model's graph, which NUTS differentiates on PyMC's
JAX graph: `WSC(mu="integrated")`) and JAX (the pointwise log-likelihood of a fit that sampled mu,
and the draws of mu_i after NUTS): `Ops` holds the few operations that differ. In the model the
nodes' centre and spread are constants for the gradient (`stop_gradient`): the quadrature is
nearly independent of them, and NUTS stays exact for the density it evaluates (a leapfrog step
with any position-dependent force is reversible and keeps volume; the energy is the density's).
"""

from __future__ import annotations

import functools
import math
from typing import Callable, NamedTuple

import numpy as np

#: largest Newton step on mu (logit units)
MAX_STEP = 1.0
HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class Ops(NamedTuple):
    """The operations that PyTensor and JAX spell differently."""

    sigmoid: Callable
    log: Callable
    minimum: Callable
    clip: Callable
    sqrt: Callable
    stack: Callable
    logsumexp: Callable  # (x, axis)
    stop_gradient: Callable


class Integrand(NamedTuple):
    """One draw's integrand for every group. counts (I, K); he (I,); w0, w1 (K,), possibly divided by
    a constant per bin (the model's centring); loc and scale None for a flat F0; sigma None when HE
    is not modelled (WH = 0)."""

    counts: object
    he: object
    w0: object
    w1: object
    loc: object = None
    scale: object = None
    sigma: object = None


def gaussian_curvature(g: Integrand):
    """The curvature of the log integrand's Gaussian terms (F0 and HE): it bounds each Newton step."""
    total = 0.0
    if g.loc is not None:
        total = total - 1 / g.scale**2
    if g.sigma is not None:
        total = total - 1 / g.sigma**2
    return total


def gaussian_start(g: Integrand):
    """Where Newton starts without a draw of mu: the mode of the Gaussian terms (F0 and HE)."""
    if g.sigma is None:
        return g.loc + 0 * g.he
    if g.loc is None:
        return g.he
    a, b = 1 / g.scale**2, 1 / g.sigma**2
    return (a * g.loc + b * g.he) / (a + b)


def log_integrand(ops: Ops, g: Integrand, m, derivatives: bool = False):
    """log of the integrand at m (..., I), and with `derivatives` its first two derivatives in m."""
    p0, p1 = ops.sigmoid(-m), ops.sigmoid(m)
    mix = p0[..., None] * g.w0 + p1[..., None] * g.w1  # (..., I, K)
    value = (g.counts * ops.log(mix)).sum(axis=-1)
    d1 = d2 = 0.0
    if derivatives:
        ratio = (g.w1 - g.w0) / mix
        first, second = (g.counts * ratio).sum(axis=-1), (g.counts * ratio**2).sum(axis=-1)
        slope = p0 * p1
        d1, d2 = slope * first, slope * (p0 - p1) * first - slope**2 * second
    if g.loc is not None:
        z = (m - g.loc) / g.scale
        value = value - 0.5 * z**2 - ops.log(g.scale) - HALF_LOG_2PI
        d1, d2 = d1 - z / g.scale, d2 - 1 / g.scale**2
    if g.sigma is not None:
        r = (g.he - m) / g.sigma
        value = value - 0.5 * r**2 - ops.log(g.sigma) - HALF_LOG_2PI
        d1, d2 = d1 + r / g.sigma, d2 - 1 / g.sigma**2
    return (value, d1, d2) if derivatives else value


def newton_mode(ops: Ops, g: Integrand, start, steps: int):
    """(mode, curvature): `steps` capped Newton steps from `start`, and the log integrand's second
    derivative at the last point stepped from (floored at the Gaussian terms', so never >= 0)."""
    floor = gaussian_curvature(g)
    mode, curvature = start, floor
    for _ in range(steps):
        _, d1, d2 = log_integrand(ops, g, mode, True)
        curvature = ops.minimum(d2, floor)
        mode = mode - ops.clip(d1 / curvature, -MAX_STEP, MAX_STEP)
    return mode, curvature


def integrated_loglik(ops: Ops, g: Integrand, start, *, nodes: int, steps: int):
    """log of the integral over each group's mu (I,), by `nodes`-point Gauss-Hermite quadrature
    centred by `steps` Newton steps from `start`; centre and spread carry no gradient."""
    mode, curvature = newton_mode(ops, g, start, steps)
    mode = ops.stop_gradient(mode)
    width = ops.stop_gradient(math.sqrt(2.0) / ops.sqrt(-curvature))
    x, weights = np.polynomial.hermite.hermgauss(nodes)
    # one (I,) graph per node, stacked: XLA fuses each into one loop over the count table. A gradient
    # at 10,000 groups then costs 4.7-6.3x the sampled model's, against 11.7x with one (nodes, I, K)
    # graph for all nodes (benchmarks/bench_gradient.py, loaded machine)
    terms = ops.stack([log_integrand(ops, g, mode + width * float(xj), False) + (math.log(wj) + float(xj) ** 2)
                       for xj, wj in zip(x, weights)])
    return ops.logsumexp(terms, 0) + ops.log(width)


# ---------------------------------------------------------------------- the two spellings
@functools.cache
def pytensor_ops() -> Ops:
    import pytensor.tensor as pt
    from pymc.math import logsumexp

    return Ops(pt.sigmoid, pt.log, pt.minimum, pt.clip, pt.sqrt, pt.stack,
               lambda x, axis: logsumexp(x, axis=axis, keepdims=False), _stop_gradient_op())


def jax_ops(jax) -> Ops:
    jnp = jax.numpy
    return Ops(jax.nn.sigmoid, jnp.log, jnp.minimum, jnp.clip, jnp.sqrt, jnp.stack,
               lambda x, axis: jax.scipy.special.logsumexp(x, axis=axis), jax.lax.stop_gradient)


@functools.cache
def _stop_gradient_op():
    """An identity whose gradient is 0, in PyTensor and on its JAX backend (`jax.lax.stop_gradient`).
    PyTensor's own `disconnected_grad` is a view that the JAX backend compiles to the identity, so
    JAX would differentiate through the Newton steps."""
    import pytensor.tensor as pt
    from pytensor.graph.basic import Apply
    from pytensor.graph.op import Op
    from pytensor.link.jax.dispatch import jax_funcify

    class StopGradient(Op):
        __props__ = ()
        view_map = {0: [0]}

        def make_node(self, x):
            x = pt.as_tensor_variable(x)
            return Apply(self, [x], [x.type()])

        def perform(self, node, inputs, outputs):
            outputs[0][0] = inputs[0]

        def grad(self, inputs, output_grads):
            return [pt.zeros_like(inputs[0])]

        def infer_shape(self, fgraph, node, shapes):
            return shapes

    @jax_funcify.register(StopGradient)
    def _(op, **kwargs):
        import jax

        return jax.lax.stop_gradient

    return StopGradient()
