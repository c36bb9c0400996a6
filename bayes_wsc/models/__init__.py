"""One folder per model (`models/<name>/`): its data container, model, checks, command, simulator, report and baselines."""
