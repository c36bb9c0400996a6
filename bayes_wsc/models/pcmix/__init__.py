"""The prediction-constrained supervised mixture (seed 003).

One folder, a module per role: model, checks, command, simulate, report, baselines.

`from bayes_wsc.models.pcmix import ...` reads the names of `model.py`, as it did when the model was one file.
"""

from bayes_wsc._lazy import forward

__getattr__ = forward(__name__)
