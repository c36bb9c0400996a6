"""Perception-guided clustering from seed sets (seed 004).

One folder, a module per role: model, checks, command, simulate, report, baselines, data.

`from bayes_wsc.models.perception import ...` reads the names of `model.py`, as it did when the model was one file.
"""

from bayes_wsc._lazy import forward

__getattr__ = forward(__name__)
