"""Seeded generators for every paper's simulation study (each model's folder's `simulate.py`), the first
models' under short names here.

Each returns data in the form a user would have (tables or a data container)
together with the true parameters, so that tests and benchmarks can score
recovery.
"""

from bayes_wsc.models.experts.simulate import (ExpertsTruth, load_uci, simulate_experts_model,  # noqa: F401
                                              simulate_uci_experts)
from bayes_wsc.models.pcmix.simulate import PCToyTruth, simulate_intervals, simulate_two_blobs, toy_items
from bayes_wsc.models.wsc.simulate import WSCTruth, counts_to_clicks, emissions_from_rho, sec5_rho, simulate_wsc

__all__ = ["WSCTruth", "counts_to_clicks", "emissions_from_rho", "sec5_rho", "simulate_wsc"]
