"""The `bayes-wsc` command: parse, call the API, print one-line errors.

Only argparse is imported at start-up; PyMC, JAX and ArviZ load when a
command needs them, so `bayes-wsc --help` answers at once.
"""

from __future__ import annotations

import argparse
import math
import sys

EXIT_INPUT = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, as for every other input error
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message}\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    value = _positive_int(text) if text.strip() != "0" else 0
    return value


def _wh(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number or 'inf', got {text!r}") from None
    if math.isnan(value) or value < 0:
        raise argparse.ArgumentTypeError(f"WH must be >= 0 (or inf), got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _probability(text: str) -> float:
    value = _positive_float(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}")
    return value


def _columns(text: str) -> list[str]:
    columns = [c.strip() for c in text.split(",") if c.strip()]
    if not columns:
        raise argparse.ArgumentTypeError("expected one or more column names separated by commas")
    return columns


def _add_sampling_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("fitting")
    group.add_argument("--method", choices=("map", "nuts"), default="map",
                       help="posterior mode (fast) or full posterior by NUTS (default: map)")
    group.add_argument("--draws", type=_positive_int, default=1000, help="NUTS draws per chain")
    group.add_argument("--tune", type=_non_negative_int, default=1000, help="NUTS tuning steps per chain")
    group.add_argument("--chains", type=_positive_int, default=4, help="NUTS chains")
    group.add_argument("--seed", type=int, default=None, help="random seed")
    group.add_argument("--backend", choices=("numpyro", "pymc", "nutpie", "blackjax"), default=None,
                       help="NUTS implementation (default: numpyro if installed, measured fastest)")
    group.add_argument("--target-accept", type=_probability, default=0.8, help="NUTS target acceptance")
    group.add_argument("--report", metavar="DIR", help="also write an HTML report to DIR")
    group.add_argument("--no-progress", action="store_true", help="hide progress bars")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="bayes-wsc", description="Bayesian weakly supervised clustering in PyMC.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    demo = sub.add_parser("demo", help="simulate the study of Wager et al. Sec. 5, fit everything, write a report")
    demo.add_argument("--out", default="bayes-wsc-demo", help="output folder (default: ./bayes-wsc-demo)")
    demo.add_argument("--groups", type=_positive_int, default=500, help="number of groups (default 500)")
    demo.add_argument("--items", type=_positive_int, default=100, help="clicks per group (default 100)")
    demo.add_argument("--draws", type=_positive_int, default=1000)
    demo.add_argument("--tune", type=_non_negative_int, default=1000)
    demo.add_argument("--chains", type=_positive_int, default=4)
    demo.add_argument("--seed", type=int, default=2015)
    demo.add_argument("--no-progress", action="store_true", help="hide progress bars")

    fit = sub.add_parser("fit", help="fit a model to data files")
    models = fit.add_subparsers(dest="model", required=True, parser_class=_Parser)
    wsc = models.add_parser("wsc", help="noisy group averages (Wager et al.): clicks + per-group HE")
    data = wsc.add_argument_group("data")
    data.add_argument("--clicks", required=True, help="CSV or Parquet, one row per item (click)")
    data.add_argument("--groups", required=True, help="CSV or Parquet, one row per group with he or he_prob")
    data.add_argument("--out", required=True, help="where to write the fit (netCDF)")
    data.add_argument("--group-col", default="group")
    data.add_argument("--behavior", type=_columns, default=None,
                      help="behavior columns, crossed into bins (default: all but group and weight)")
    data.add_argument("--weight-col", default=None, help="per-item weights")
    he = data.add_mutually_exclusive_group()
    he.add_argument("--he-col", default=None, help="HE on the logit scale (default column: he)")
    he.add_argument("--he-prob-col", default=None, help="HE as a probability in (0, 1)")
    data.add_argument("--max-group-weight", type=_positive_float, default=None, metavar="M",
                      help="down-weight each group to at most M items (Sec. 6.2)")
    model = wsc.add_argument_group("model")
    model.add_argument("--wh", type=_wh, default=10.0, help="weight of HE, 1/sigma_H^2; 'inf' fixes mu = HE")
    model.add_argument("--mu-prior", choices=("hierarchical", "flat"), default="hierarchical")
    model.add_argument("--w-concentration", type=_positive_float, default=1.0, help="Dirichlet c of w0, w1")
    model.add_argument("--model", dest="model_file", default=None, metavar="FILE.py",
                       help="a model variant file defining build_model(data, **settings)")
    _add_sampling_options(wsc)

    predict = sub.add_parser("predict", help="posterior class probabilities for new items")
    predict.add_argument("fit", help="a fit written by `bayes-wsc fit`")
    predict.add_argument("--items", required=True, help="CSV or Parquet with the behavior columns")
    predict.add_argument("--out", required=True, help="CSV to write")
    predict.add_argument("--ci", type=_probability, default=0.94, help="credible interval mass (default 0.94)")

    report = sub.add_parser("report", help="write the HTML report of a fit")
    report.add_argument("fit")
    report.add_argument("--out", required=True, help="output folder")

    summary = sub.add_parser("summary", help="print the estimands and diagnostics of a fit")
    summary.add_argument("fit")
    summary.add_argument("--ci", type=_probability, default=0.94)
    return parser


# ---------------------------------------------------------------------- commands
def _quiet_libraries() -> None:
    import logging
    import warnings

    logging.getLogger("pymc").setLevel(logging.WARNING)
    logging.getLogger("jax").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=RuntimeWarning, module="arviz")


def _print_fit(est) -> None:
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


def cmd_fit(args) -> None:
    from bayes_wsc.data.grouped import GroupedCounts
    from bayes_wsc.data.tables import read_table

    clicks = read_table(args.clicks, "clicks")
    groups = read_table(args.groups, "groups")
    data = GroupedCounts.from_frames(
        clicks, groups, group_col=args.group_col, behavior=args.behavior, weight_col=args.weight_col,
        he_col=args.he_col, he_prob_col=args.he_prob_col, max_group_weight=args.max_group_weight,
    )
    print(f"{data.n_groups} groups, {int(data.n_items.sum())} items, {data.n_bins} behavior bins", flush=True)
    from bayes_wsc.models.wsc import WSC  # PyMC loads only once the data are known to be good

    est = WSC(wh=args.wh, mu_prior=args.mu_prior, w_concentration=args.w_concentration,
              method=args.method, draws=args.draws, tune=args.tune, chains=args.chains, seed=args.seed,
              backend=args.backend, target_accept=args.target_accept, model_file=args.model_file,
              progressbar=not args.no_progress)
    _fit_quietly(est, data)
    path = est.save(args.out)
    _print_fit(est)
    print(f"\nwrote {path}")
    if args.report:
        print(f"wrote {est.report(args.report)}")


def _fit_quietly(est, data) -> None:
    """Fit; the estimator's warnings are printed with the summary, not as Python warnings."""
    import warnings

    from bayes_wsc.errors import FitWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        est.fit(data)


def cmd_predict(args) -> None:
    from bayes_wsc.data.tables import read_table
    from bayes_wsc.estimator import load

    est = load(args.fit)
    items = read_table(args.items, "items")
    out = est.predict(items, ci=args.ci)
    _write_csv(out, args.out)
    print(f"wrote {len(out)} predictions to {args.out}")


def _write_csv(frame, path) -> None:
    import os
    import tempfile
    from pathlib import Path

    from bayes_wsc.errors import InputError

    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w") as handle:
            frame.to_csv(handle, index=False)
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"cannot write {str(path)!r}: {exc.strerror}") from None


def cmd_report(args) -> None:
    from bayes_wsc.estimator import load

    est = load(args.fit)
    print(f"wrote {est.report(args.out)}")


def cmd_summary(args) -> None:
    from bayes_wsc.estimator import load

    est = load(args.fit)
    attrs = est.idata_.posterior.attrs
    print(f"model: {attrs['model']}  method: {attrs['method']}  fitted with bayes_wsc {attrs.get('package_version')}")
    _print_fit(est)


def cmd_demo(args) -> None:
    from bayes_wsc.demo import run_demo

    path = run_demo(args.out, n_groups=args.groups, items_per_group=args.items, draws=args.draws,
                    tune=args.tune, chains=args.chains, seed=args.seed, progressbar=not args.no_progress)
    print(f"\nreport: {path}")


COMMANDS = {"fit": cmd_fit, "predict": cmd_predict, "report": cmd_report, "summary": cmd_summary,
            "demo": cmd_demo}


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    _quiet_libraries()
    from bayes_wsc.errors import InputError

    try:
        COMMANDS[args.command](args)
    except InputError as exc:
        print(f"bayes-wsc: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("bayes-wsc: interrupted; no output was left half-written", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
