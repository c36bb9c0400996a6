"""NumPy maths that a model and its paper's own algorithms (`baselines/`) share, one module per model.

It sits below both, so that neither the model nor the baselines import the other.
"""
