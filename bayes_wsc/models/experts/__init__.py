"""Clustering from multiple uncertain experts' pairwise links (seed 002).

One folder, a module per role: model, checks, command, simulate, report, baselines.

`from bayes_wsc.models.experts import ...` reads the names of `model.py`, as it did when the model was one file.
"""

from bayes_wsc._lazy import forward

__getattr__ = forward(__name__)
