"""NumPy maths that a model and its paper's own algorithms (`baselines/`) share, one module per model.

It sits below both, so that neither the model nor the baselines import the other. A term that several
models share (Dawid and Skene's votes: `dawid_skene.py`) has a module of its own here too.
"""
