"""Each model's checks, one module per model (`checks/<model>.py`, named in `registry.py`): its replicated
statistics, its rows and its targeted checks. The machinery that runs them is `criticism.py`."""
