"""Argument types and options shared by every model's command (argparse only: start-up stays instant)."""

from __future__ import annotations

import argparse
import math


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    return 0 if text.strip() == "0" else positive_int(text)


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def probability(text: str) -> float:
    value = positive_float(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}")
    return value


def columns(text: str) -> list[str]:
    columns = [c.strip() for c in text.split(",") if c.strip()]
    if not columns:
        raise argparse.ArgumentTypeError("expected one or more column names separated by commas")
    return columns


def add_sampling_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("fitting")
    group.add_argument("--method", choices=("map", "nuts", "laplace"), default="map",
                       help="posterior mode (fast), full posterior by NUTS, or laplace: a Gaussian at the mode "
                            "on the unconstrained scale, intervals in seconds (default: map)")
    group.add_argument("--draws", type=positive_int, default=1000, help="NUTS draws per chain (laplace: draws)")
    group.add_argument("--tune", type=non_negative_int, default=1000, help="NUTS tuning steps per chain")
    group.add_argument("--chains", type=positive_int, default=4, help="NUTS chains")
    group.add_argument("--seed", type=int, default=None, help="random seed")
    group.add_argument("--backend", choices=("numpyro", "pymc", "nutpie", "blackjax"), default=None,
                       help="NUTS implementation (default: numpyro if installed, measured fastest)")
    group.add_argument("--target-accept", type=probability, default=0.8, help="NUTS target acceptance")
    group.add_argument("--precision", choices=("float32", "float64"), default=None,
                       help="arithmetic of the numpyro backend (default: the model's measured choice, "
                            "float32 for wsc; other backends run float64)")
    group.add_argument("--report", metavar="DIR", help="also write an HTML report to DIR")
    group.add_argument("--no-progress", action="store_true", help="hide progress bars")




def sampling_settings(args) -> dict:
    """The estimator settings that `add_sampling_options` collects."""
    return {"method": args.method, "draws": args.draws, "tune": args.tune, "chains": args.chains,
            "seed": args.seed, "backend": args.backend, "target_accept": args.target_accept,
            "precision": args.precision, "progressbar": not args.no_progress}


def print_fit(est) -> None:
    """The estimands table and the diagnostics in plain words."""
    import pandas as pd

    with pd.option_context("display.max_rows", 80, "display.width", 120):
        print(est.summary().round(3).to_string())
    messages = est.diagnostics_
    print()
    if messages:
        print("Diagnostics:")
        for message in messages:
            print(f"  - {message}")
    else:
        print("Diagnostics: no problems found.")


def fit_save_report(est, data, args) -> None:
    """Fit (warnings go to the printed diagnostics, not Python warnings), save, print, report."""
    import warnings

    from bayes_wsc.errors import FitWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        est.fit(data)
    path = est.save(args.out)
    print_fit(est)
    print(f"\nwrote {path}")
    if args.report:
        print(f"wrote {est.report(args.report)}")
