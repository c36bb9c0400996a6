"""Seeded generators for every paper's simulation study, one module per model.

Each returns data in the form a user would have (tables or a data container)
together with the true parameters, so that tests and benchmarks can score
recovery.
"""

from bayes_wsc.simulate.experts import ExpertsTruth, load_uci, simulate_experts_model, simulate_uci_experts  # noqa: F401
from bayes_wsc.simulate.pcmix import PCToyTruth, simulate_intervals, simulate_two_blobs, toy_items
from bayes_wsc.simulate.wsc import WSCTruth, counts_to_clicks, emissions_from_rho, sec5_rho, simulate_wsc

__all__ = ["WSCTruth", "counts_to_clicks", "emissions_from_rho", "sec5_rho", "simulate_wsc"]
