"""Checks that more than one model or a variant use; each model's own checks are its folder's `checks.py`
(named in `registry.py`). The machinery that runs them is `criticism.py`."""
