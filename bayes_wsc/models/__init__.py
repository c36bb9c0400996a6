"""One folder per model (`models/<name>/`): its model, checks, command, simulator, report, baselines, data."""
