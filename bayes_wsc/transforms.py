"""A stick-breaking simplex transform for Dirichlet parameters.

PyMC's default simplex transform maps a K-simplex to K-1 coordinates whose
last component is minus the sum of the others, so every coordinate is
correlated with every other one. A diagonal mass matrix cannot undo that and
NUTS needs deep trees. Under stick-breaking, a multinomial likelihood with a
Dirichlet prior factorizes into independent binomial-beta pieces, one per
stick, so the posterior is close to independent in these coordinates (the
same transform NumPyro and Stan use).

    z_k = sigmoid(y_k - log(K - 1 - k)),   w_k = z_k * prod_{j<k} (1 - z_j),
    w_K = prod_j (1 - z_j).

The offset makes y = 0 the centre of the simplex.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.logprob.transforms import Transform


def _offset(value):
    """log(K - 1 - k) for stick k, shaped like `value` (no symbolic arange, so JAX can trace it)."""
    return pt.log(pt.cumsum(pt.ones_like(value), axis=-1)[..., ::-1])


class StickBreaking(Transform):
    """Simplex <-> R^(K-1) by stick-breaking; use as `pm.Dirichlet(..., default_transform=StickBreaking())`."""

    name = "stickbreaking"

    def forward(self, value, *inputs):
        value = pt.as_tensor(value)
        head = value[..., :-1]
        remaining = 1.0 - pt.cumsum(head, axis=-1)
        # logit(z_k) = log(w_k) - log(stick left after piece k)
        logit_z = pt.log(head) - pt.log(pt.maximum(remaining, np.finfo(float).tiny))
        return logit_z + _offset(logit_z)

    def _log_sticks(self, value):
        x = value - _offset(value)
        return -pt.softplus(-x), -pt.softplus(x)  # log z, log(1 - z)

    def backward(self, value, *inputs):
        value = pt.as_tensor(value)
        log_z, log_1mz = self._log_sticks(value)
        log_rest = pt.cumsum(log_1mz, axis=-1)
        log_rest_before = pt.concatenate([pt.zeros_like(log_rest[..., :1]), log_rest[..., :-1]], axis=-1)
        log_w = pt.concatenate([log_z + log_rest_before, log_rest[..., -1:]], axis=-1)
        return pt.exp(log_w)

    def log_jac_det(self, value, *inputs):
        value = pt.as_tensor(value)
        log_z, log_1mz = self._log_sticks(value)
        log_rest = pt.cumsum(log_1mz, axis=-1)
        log_rest_before = pt.concatenate([pt.zeros_like(log_rest[..., :1]), log_rest[..., :-1]], axis=-1)
        # |J| = prod_k z_k (1 - z_k) * (length of stick left before k)
        return pt.sum(log_z + log_1mz + log_rest_before, axis=-1)
