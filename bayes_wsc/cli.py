"""The `bayes-wsc` command: parse, call the API, print one-line errors.

Only argparse is imported at start-up; PyMC, JAX and ArviZ load when a
command needs them, so `bayes-wsc --help` answers at once. Each model's
`fit` options live in `bayes_wsc/models/<model>/command.py`.
"""

from __future__ import annotations

import argparse
import io
import os
import sys

from bayes_wsc.commands import FIT_COMMANDS
from bayes_wsc.commands.common import add_sep_option, non_negative_int, positive_int, probability
from bayes_wsc.contract import offers
from bayes_wsc.defaults import DEFAULT_CI
from bayes_wsc.demo import FILES as DEMO_FILES
from bayes_wsc.outputs import REPORT_CONTENTS, input_file, input_table, output_file, output_folder

EXIT_INPUT = 2
#: commands that read a saved fit into memory and never use Dask: xarray is told it is absent (`_runtime.without_dask`)
IN_MEMORY_COMMANDS = ("summary", "predict", "check", "ppc")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, as for every other input error
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message}\n")


def _fit_module(name: str):
    from bayes_wsc.registry import get

    return get(name).module("commands")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="bayes-wsc", description="Bayesian weakly supervised clustering in PyMC.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    demo = sub.add_parser("demo", help="simulate the study of Wager et al. Sec. 5, fit everything, write a report")
    demo.add_argument("--out", default="bayes-wsc-demo", type=output_folder("demo folder", DEMO_FILES),
                      help="output folder (default: ./bayes-wsc-demo)")
    demo.add_argument("--groups", type=positive_int, default=500, help="number of groups (default 500)")
    demo.add_argument("--items", type=positive_int, default=100, help="clicks per group (default 100)")
    demo.add_argument("--draws", type=positive_int, default=1000, help="NUTS draws per chain (default 1000)")
    demo.add_argument("--tune", type=non_negative_int, default=1000, help="NUTS tuning steps per chain (default 1000)")
    demo.add_argument("--chains", type=positive_int, default=4, help="NUTS chains (default 4)")
    demo.add_argument("--seed", type=int, default=2015, help="seed of the simulation and of NUTS (default 2015)")
    demo.add_argument("--no-progress", action="store_true", help="hide progress bars")

    fit = sub.add_parser("fit", help="fit a model to data files")
    models = fit.add_subparsers(dest="model", required=True, parser_class=_Parser)
    for name in FIT_COMMANDS:
        module = _fit_module(name)
        module.add_parser(models.add_parser(name, help=module.HELP))

    path = sub.add_parser("path", help="fit a model at a grid of a tuning weight and report the trade-off")
    path_models = path.add_subparsers(dest="model", required=True, parser_class=_Parser)
    for name in FIT_COMMANDS:
        module = _fit_module(name)
        if offers(module, "commands", "path"):  # models with a weight to sweep (pcmix: lam)
            module.add_path_parser(path_models.add_parser(name, help=module.PATH_HELP))

    simulate = sub.add_parser("simulate", help="write a simulated data set: the files `fit MODEL` reads, and the truth")
    simulate_models = simulate.add_subparsers(dest="model", required=True, parser_class=_Parser)
    for name in FIT_COMMANDS:
        module = _fit_module(name)
        module.add_simulate_parser(simulate_models.add_parser(name, help=module.SIMULATE_HELP))

    baseline = sub.add_parser("baseline", help="run a paper's own algorithm, the baseline a model is compared with")
    baselines = baseline.add_subparsers(dest="baseline", required=True, parser_class=_Parser)
    for name in FIT_COMMANDS:
        module = _fit_module(name)
        for key, (help_text, add, _) in getattr(module, "BASELINES", {}).items():
            add(baselines.add_parser(key, help=help_text))

    predict = sub.add_parser("predict", help="posterior predictions for new items")
    predict.add_argument("fit", type=input_file("fit file"),
                         help="a fit written by `bayes-wsc fit` (or a baseline's JSON model, such as the LLP.json of "
                              "`bayes-wsc baseline llp`)")
    predict.add_argument("--items", required=True, type=input_table("items file"),
                         help="CSV or Parquet with the model's item columns")
    predict.add_argument("--out", required=True, type=output_file("predictions file"), help="CSV to write")
    add_ci_option(predict, "of prob_low, prob_high")
    for name, (flag, keywords) in _model_predict_options().items():  # declared by the models' command modules
        predict.add_argument(flag, dest=name, default=None, **keywords)
    add_sep_option(predict)

    report = sub.add_parser("report", help="write the HTML report of a fit")
    report.add_argument("fit", type=input_file("fit file"))
    report.add_argument("--out", required=True, type=output_folder("report folder", REPORT_CONTENTS),
                        help="output folder (DIR/report.html)")
    add_ci_option(report, "of every interval in the report")

    summary = sub.add_parser("summary", help="print the estimands and diagnostics of a fit")
    summary.add_argument("fit", type=input_file("fit file"))
    add_ci_option(summary, "of the HDI columns")

    check = sub.add_parser("check", help="run a fit's model checks (posterior predictive, targeted, LOO's Pareto k)")
    check.add_argument("fit", type=input_file("fit file"))
    check.add_argument("--out", type=output_file("checks file"), help="CSV to write, one row per check")
    check.add_argument("--draws", type=positive_int, default=200, help="replicated data sets (default 200)")
    check.add_argument("--seed", type=non_negative_int, default=0, help="seed of the replicates (default 0)")
    check.add_argument("--model", dest="model_file", metavar="FILE.py", type=input_file("model file"),
                       help="a variant fit's own checks (its CHECKS) run from this file, which must be the one the "
                            "fit was made with (its sha256); a fit file alone never runs code")

    ppc = sub.add_parser("ppc", help="replicate data from a fit: its posterior predictive statistics as netCDF")
    ppc.add_argument("fit", type=input_file("fit file"))
    ppc.add_argument("--out", required=True, type=output_file("replicates file"),
                     help="netCDF to write (posterior_predictive and observed_data)")
    ppc.add_argument("--draws", type=positive_int, default=200, help="replicated data sets (default 200)")
    ppc.add_argument("--seed", type=non_negative_int, default=0, help="seed of the replicates (default 0)")
    ppc.add_argument("--plot", metavar="FILE.png", type=output_file("plot file"),
                     help="also draw az.plot_ppc of every statistic (.png, .pdf, .svg)")
    return parser


def add_ci_option(parser, what: str) -> None:
    """--ci, the credible level, on every command that shows intervals; one default for all of them."""
    parser.add_argument("--ci", type=probability, default=DEFAULT_CI, metavar="LEVEL",
                        help=f"credible level {what} (default {DEFAULT_CI:g}, as in every summary and report)")


# ---------------------------------------------------------------------- commands
class _LibraryMessages:
    """While a command runs, the libraries' chatter stays off stderr, where the README promises one
    line for a failure and the package's own words for a success.

    * Python warnings: the package's own (`FitWarning` and any other category defined in
      `bayes_wsc`) are printed, one line each (`bayes-wsc: warning: ...`); any other (PyMC,
      ArviZ, JAX, PyTensor, pandas: FutureWarning, UserWarning, RuntimeWarning...) goes to the
      `py.warnings` logger, as `logging.captureWarnings` sends it.
    * Logging: a handler on the root logger, installed before the libraries load, shows records of
      level ERROR and above in one line; below that, nothing. PyMC (which adds a handler of its
      own and logs its sampler's progress at INFO when the root logger has none) and PyTensor
      (likewise) then leave logging to it.

    A user who asks for Python's warnings (`python -W ...`, `PYTHONWARNINGS=default`) gets them
    all, as Python shows them. Everything is restored when the command ends.
    """

    def __enter__(self):
        import logging
        import warnings

        self.showwarning = warnings.showwarning
        if not sys.warnoptions:
            warnings.showwarning = self._show
        self.handler = None
        root = logging.getLogger()
        if not root.handlers:
            self.handler = logging.StreamHandler()  # sys.stderr when it writes
            self.handler.setLevel(logging.ERROR)
            self.handler.setFormatter(logging.Formatter("bayes-wsc: %(name)s: %(message)s"))
            root.addHandler(self.handler)
        self.levels = {}
        for name, level in (("pymc", logging.ERROR), ("pytensor", logging.ERROR), ("jax", logging.ERROR)):
            logger = logging.getLogger(name)
            self.levels[name] = logger.level
            logger.setLevel(level)  # PyMC and PyTensor loaded before (in a test run) keep handlers of their own
        # a logger outside logging's tree (ArviZ's own, whose "Shape validation failed" a one-chain fit logs)
        # reaches Python's last-resort handler, which shows WARNING: ERROR and above, as for every other
        self.last_resort = logging.lastResort.level if logging.lastResort is not None else None
        if logging.lastResort is not None:
            logging.lastResort.setLevel(logging.ERROR)
        return self

    def __exit__(self, *exc) -> bool:
        import logging
        import warnings

        warnings.showwarning = self.showwarning
        if self.handler is not None:
            logging.getLogger().removeHandler(self.handler)
        for name, level in self.levels.items():
            logging.getLogger(name).setLevel(level)
        if self.last_resort is not None and logging.lastResort is not None:
            logging.lastResort.setLevel(self.last_resort)
        return False

    @staticmethod
    def _show(message, category, filename, lineno, file=None, line=None) -> None:
        if category.__module__.split(".")[0] == "bayes_wsc":
            text = " ".join(str(message).split())
            print(f"bayes-wsc: warning: {text}", file=file or sys.stderr)
            return
        import logging
        import warnings

        logging.getLogger("py.warnings").warning(
            "%s", warnings.formatwarning(message, category, filename, lineno, line).rstrip())


def cmd_fit(args) -> None:
    _fit_module(args.model).run(args)


def cmd_path(args) -> None:
    _fit_module(args.model).run_path(args)


#: the options that size a simulation's tables (their product bounds the cells it holds), and the most
#: cells a simulation may hold: 1e8, 0.8 GB as float64, and several times that as the text it writes
SIZE_OPTIONS = ("n_groups", "group_size", "n_items", "n_features")
MAX_SIMULATED_CELLS = 10**8


def cmd_simulate(args) -> None:
    import math

    from bayes_wsc.errors import InputError
    from bayes_wsc.simulate.files import check_folder

    module = _fit_module(args.model)
    given = {name: getattr(args, name) for name in SIZE_OPTIONS if getattr(args, name, None) is not None}
    if math.prod(given.values()) > MAX_SIMULATED_CELLS:  # before anything is allocated
        sizes = " x ".join(f"--{n.replace('_', '-')} {v}" for n, v in given.items())
        raise InputError(f"simulate {args.model}: {sizes} = {math.prod(given.values()):.3g} cells, more than the "
                         f"{MAX_SIMULATED_CELLS:.0e} a simulation holds in memory; give smaller sizes")
    check_folder(args.out, module.SIMULATE_FILES, replace=args.replace)  # before anything is simulated
    module.run_simulate(args)


def cmd_baseline(args) -> None:
    for name in FIT_COMMANDS:
        baselines = getattr(_fit_module(name), "BASELINES", {})
        if args.baseline in baselines:
            baselines[args.baseline][2](args)
            return


def cmd_predict(args) -> None:
    from bayes_wsc.data.tables import read_table, restore_names
    from bayes_wsc.estimator import load
    from bayes_wsc.outputs import write_csv

    if _is_json(args.fit):  # a baseline's model (bayes-wsc baseline llp)
        model = _baseline_model(args.fit)
        items = read_table(args.items, "items", sep=args.sep, text_columns=model.key_columns())
        out = model.predict(items)
    else:
        est = load(args.fit, log_likelihood_on_first_use=True)
        options = {"ci": args.ci, **_predict_options(args, est)}
        items = read_table(args.items, "items", sep=args.sep, text_columns=est.key_columns())
        out = est.predict(items, **options)
    check_probabilities(out, items)
    write_csv(restore_names(out, items), args.out, "predictions")
    print(f"wrote {len(out)} predictions to {args.out}")
    for note in out.attrs.get("notes", []):
        print(note)


def _model_predict_options() -> dict[str, tuple[str, dict]]:
    """`predict` options of some models only, as their command modules declare them (`PREDICT_OPTIONS`):
    the setting of their `predict` -> (its flag, argparse keywords)."""
    options = {}
    for name in FIT_COMMANDS:
        module = _fit_module(name)
        if offers(module, "commands", "predict_options"):
            options.update({k: v for k, v in module.PREDICT_OPTIONS.items() if k not in options})
    return options


def _baseline_model(path):
    """A baseline's saved model, read by the first command module that knows it (`read_baseline_model`)."""
    from bayes_wsc.errors import InputError

    first = None
    for name in FIT_COMMANDS:
        module = _fit_module(name)
        if offers(module, "commands", "baseline_model"):
            try:
                return module.read_baseline_model(path)
            except InputError as exc:
                first = first or exc
    raise first or InputError(f"{str(path)!r} is JSON, but no model of this version reads a baseline's model")


def _predict_options(args, est) -> dict:
    """The model-specific options given to `predict`, each refused in one line by a model whose `predict`
    does not take it (the estimator's declared `predict_options`)."""
    from bayes_wsc.errors import InputError
    from bayes_wsc.registry import MODELS

    options = {}
    for name, (option, _) in _model_predict_options().items():
        value = getattr(args, name, None)
        if value is None:
            continue
        if name not in est.predict_options:
            takers = [spec.name for spec in MODELS if name in spec.estimator_class().predict_options]
            raise InputError(f"{option} is for {' and '.join(takers)} fits; {args.fit!r} holds a "
                             f"{est.model_name!r} fit")
        options[name] = value
    return options


def _is_json(path) -> bool:
    """Whether a model file is JSON (a baseline's model) rather than a netCDF fit: its first byte."""
    try:
        with open(path, "rb") as handle:
            return handle.read(64).lstrip()[:1] == b"{"
    except OSError:
        return False


def check_probabilities(predictions, items) -> None:
    """The last guard before writing: every probability that predict added is a number in [0, 1].

    Interval bounds (`*_low`, `*_high`) may be empty on purpose (a MAP has no interval); a
    probability itself never is.
    """
    import numpy as np

    from bayes_wsc.errors import InputError

    added = [c for c in predictions.columns if c not in items.columns]
    for column in added:
        name = str(column)
        if not name.startswith(("prob", "cluster_prob")) or name.endswith(("_low", "_high")):
            continue
        values = predictions[column].to_numpy(dtype=float)
        bad = ~((values >= 0) & (values <= 1))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise InputError(f"the prediction {name!r} of items row {row + 1} is {float(values[row])!r}, not a "
                             "probability: the model's arithmetic failed on this row; nothing was written")


def cmd_report(args) -> None:
    from bayes_wsc.estimator import load

    print(f"wrote {load(args.fit, log_likelihood_on_first_use=True).report(args.out, ci=args.ci)}")


def cmd_summary(args) -> None:
    from bayes_wsc.commands.common import print_fit
    from bayes_wsc.estimator import load

    est = load(args.fit, log_likelihood_on_first_use=True)
    attrs = est._fitted().posterior.attrs  # the fit's groups as read: no ArviZ
    print_fit(est, ci=args.ci, heading=f"model: {attrs['model']}  method: {attrs['method']}  "
                                      f"fitted with bayes_wsc {attrs.get('package_version')}")


def cmd_check(args) -> None:
    from bayes_wsc.estimator import load
    from bayes_wsc.outputs import write_csv

    est = load(args.fit, log_likelihood_on_first_use=True)
    if args.model_file is not None:
        est.use_variant_file(args.model_file)
    table = est.run_checks(draws=args.draws, seed=args.seed)
    _print_checks(table)
    if args.out:
        write_csv(table, args.out, "checks file")
        print(f"\nwrote {len(table)} checks to {args.out}")


def _print_checks(table) -> None:
    import pandas as pd

    from bayes_wsc.criticism import ALPHA

    with pd.option_context("display.width", 120, "display.max_columns", 10):
        print(table.drop(columns=["message"]).round(4).to_string(index=False))
    print(f"A row is flagged when its effect exceeds its tolerance AND its p-value is below {ALPHA:g} (a misfit "
          "both large and unlikely to be chance); loo_pareto_k when a Pareto k exceeds its threshold.")
    if {"effect", "tolerance"} <= set(table.columns):
        for row in table[(table["effect"] > table["tolerance"]) & ~table["flagged"].astype(bool)].itertuples():
            print(f"  {row.check}: effect {row.effect:.3g} over tolerance {row.tolerance:.3g}, but p = "
                  f"{row.p_value:.3g}: not flagged, as a discrepancy that large is not unlikely by chance "
                  "under the fit.")
    flagged = table[table["flagged"]]
    print()
    if flagged.empty:
        print("No check is flagged.")
    else:
        print("Flagged:")
        for row in flagged.itertuples():
            print(f"  - {row.check}: {row.message}")


PLOT_SUFFIXES = (".png", ".pdf", ".svg")


def cmd_ppc(args) -> None:
    from pathlib import Path

    from bayes_wsc import criticism, inference
    from bayes_wsc.errors import InputError
    from bayes_wsc.estimator import load

    if args.plot:
        if Path(args.plot).suffix.lower() not in PLOT_SUFFIXES:
            raise InputError(f"--plot {args.plot!r} must end in one of {', '.join(PLOT_SUFFIXES)}")
    est = load(args.fit, log_likelihood_on_first_use=True)
    ppc = criticism.posterior_predictive(est, draws=args.draws, seed=args.seed)  # ArviZ only for --plot
    path = inference.save(ppc, args.out)
    names = ", ".join(ppc.posterior_predictive.data_vars)
    print(f"wrote {ppc.posterior_predictive.sizes['chain'] * ppc.posterior_predictive.sizes['draw']} replicates of "
          f"{names} to {path}")
    if args.plot:
        from bayes_wsc.outputs import write_figure
        from bayes_wsc.report.criticism import plot_ppc
        from bayes_wsc.report.html import PNG_DPI

        print(f"wrote {write_figure(plot_ppc(ppc, seed=args.seed), args.plot, 'plot file', dpi=PNG_DPI)}")


def cmd_demo(args) -> None:
    from bayes_wsc.demo import run_demo

    path = run_demo(args.out, n_groups=args.groups, items_per_group=args.items, draws=args.draws,
                    tune=args.tune, chains=args.chains, seed=args.seed, progressbar=not args.no_progress)
    print(f"\nreport: {path}")


COMMANDS = {"fit": cmd_fit, "path": cmd_path, "predict": cmd_predict, "report": cmd_report, "summary": cmd_summary,
            "demo": cmd_demo, "check": cmd_check, "ppc": cmd_ppc}
COMMANDS["baseline"] = cmd_baseline
COMMANDS["simulate"] = cmd_simulate


def main(argv=None) -> int:
    """Run one command; its exit code. A reader of the output that goes away (`bayes-wsc summary
    FIT.nc | head -1`) ends nothing: the rest of the output is dropped, quietly, as Unix tools do,
    while the command finishes writing its files."""
    stdout, stderr = sys.stdout, sys.stderr
    guards = [_PipeGuard(stream) if stream is not None else None for stream in (stdout, stderr)]
    sys.stdout, sys.stderr = guards  # None (a closed descriptor at start-up) stays None: print() skips it
    try:
        return _main(argv)
    finally:
        for guard in guards:  # what is still buffered (--help exits without flushing) meets the guard too
            if guard is not None:
                guard.flush()
        sys.stdout, sys.stderr = stdout, stderr


class _PipeGuard:
    """A stream whose reader may have gone away: once a write fails with a broken pipe, the stream's
    file descriptor is pointed at /dev/null, so that this and every later write (and Python's own
    flush at exit) succeed silently instead of ending the command in a traceback."""

    def __init__(self, stream):
        self.stream = stream
        self.broken = False

    def write(self, text):
        if not self.broken:
            try:
                return self.stream.write(text)
            except BrokenPipeError:
                self._drop()
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._drop()

    def _drop(self) -> None:
        self.broken = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
            pass  # a stream without a file descriptor (tests): later writes are dropped here

    def __getattr__(self, name):
        return getattr(self.stream, name)


def _main(argv) -> int:
    args = build_parser().parse_args(argv)
    with _LibraryMessages():
        return _run(args)


def _run(args) -> int:
    from bayes_wsc.errors import InputError
    from bayes_wsc.outputs import Paths

    cache = None
    try:
        paths = Paths.of(args)
        paths.check()  # before any work: no output replaces an input, every output can be written
        cache = _temporary_cache_if_needed()
        if args.command in IN_MEMORY_COMMANDS:
            from bayes_wsc._runtime import without_dask

            without_dask()
        with paths.guard():
            COMMANDS[args.command](args)
    except InputError as exc:
        print(f"bayes-wsc: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except OSError as exc:  # a path the user gave that cannot be read or written (a folder, no permission)
        where = f" {exc.filename!r}" if exc.filename else ""
        print(f"bayes-wsc: error: cannot use{where}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("bayes-wsc: interrupted; no output was left half-written", file=sys.stderr)
        return 130
    finally:
        if cache is not None:
            cache.cleanup()
    return 0


class _TemporaryCache:
    """A cache folder for one command, given to the libraries as XDG_CACHE_HOME and removed after."""

    def __init__(self):
        import tempfile

        self.previous = os.environ.get("XDG_CACHE_HOME")
        self.folder = tempfile.mkdtemp(prefix="bayes-wsc-cache-")
        os.environ["XDG_CACHE_HOME"] = self.folder

    def cleanup(self) -> None:
        import shutil

        if self.previous is None:
            os.environ.pop("XDG_CACHE_HOME", None)
        else:
            os.environ["XDG_CACHE_HOME"] = self.previous
        shutil.rmtree(self.folder, ignore_errors=True)


def _temporary_cache_if_needed() -> _TemporaryCache | None:
    """A cache folder that cannot be written (read-only, on a full disk) is not an error of the
    command's: it runs with a temporary cache, said in one note."""
    from bayes_wsc.jax_setup import unwritable_cache

    why = unwritable_cache()
    if why is None:
        return None
    cache = _TemporaryCache()
    print(f"bayes-wsc: note: {why}; this command uses a temporary cache, removed at its end (nothing compiled "
          "is kept for the next command)", file=sys.stderr)
    return cache


if __name__ == "__main__":
    sys.exit(main())
