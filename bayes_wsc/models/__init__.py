"""One file per model: blocks that build a pm.Model, and the estimator around it."""
