"""Argument types and options shared by every model's command (argparse only: start-up stays instant)."""

from __future__ import annotations

import argparse
import math

from bayes_wsc.outputs import REPORT_CONTENTS, output_folder


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


def number(text: str, *, positive: bool = False, infinite: bool = False, name: str | None = None) -> float:
    """The command line's one parser of a real setting: a number >= 0 (> 0 when `positive`), finite unless
    `infinite` allows inf; else one line, naming the setting when `name` is given."""
    bound = "> 0" if positive else ">= 0"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number {'or ' + repr('inf') if infinite else bound}, "
                                         f"got {text!r}") from None
    if math.isnan(value) or (math.isinf(value) and not infinite) or value < 0 or (positive and value == 0):
        if name is not None:
            rule = f"{bound} (or inf)" if infinite else f"a finite number {bound}"
            raise argparse.ArgumentTypeError(f"{name} must be {rule}, got {text!r}")
        raise argparse.ArgumentTypeError(f"expected a {'positive number' if positive else 'number >= 0'}, got {text!r}")
    return value


def positive_float(text: str) -> float:
    return number(text, positive=True)


def probability(text: str) -> float:
    value = positive_float(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}")
    return value


#: how --sep may name the characters that are awkward to type
SEPARATOR_NAMES = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|", "space": " "}


def separator(text: str) -> str:
    """One character that separates the columns of CSV files; 'tab' (or \\t), 'semicolon'... by name."""
    sep = SEPARATOR_NAMES.get(text.lower(), text)
    if len(sep) != 1 or sep in "\"\r\n":
        raise argparse.ArgumentTypeError(
            f"expected one character (or tab, comma, semicolon, pipe, space), got {text!r}")
    return sep


def add_sep_option(parser) -> None:
    """--sep, for every command that reads tables (CSV files; Parquet ignores it)."""
    parser.add_argument("--sep", type=separator, default=None, metavar="CHAR",
                        help="column separator of the CSV files: one character, or tab, semicolon, pipe "
                             "(default: comma; tab for .tsv)")


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
    group.add_argument("--draws", type=positive_int, default=1000,
                       help="NUTS draws per chain; laplace: draws (default 1000)")
    group.add_argument("--tune", type=non_negative_int, default=1000, help="NUTS tuning steps per chain (default 1000)")
    group.add_argument("--chains", type=positive_int, default=4, help="NUTS chains (default 4)")
    group.add_argument("--seed", type=int, default=None,
                       help="random seed of restarts and NUTS (default: the package's fixed seed, 0, so that "
                            "reruns agree)")
    group.add_argument("--backend", choices=("numpyro", "pymc", "nutpie", "blackjax"), default=None,
                       help="NUTS implementation (default: numpyro if installed, measured fastest)")
    group.add_argument("--target-accept", type=probability, default=0.8, help="NUTS target acceptance (default 0.8)")
    group.add_argument("--precision", choices=("float32", "float64"), default=None,
                       help="arithmetic of the numpyro backend (default: the model's measured choice, "
                            "float32 for wsc; other backends run float64)")
    group.add_argument("--report", metavar="DIR", type=output_folder("report folder", REPORT_CONTENTS),
                       help="also write an HTML report to DIR (DIR/report.html)")
    group.add_argument("--no-progress", action="store_true", help="hide progress bars")


def non_negative_float(text: str) -> float:
    return number(text)


#: what the command line parses for a setting, by the kind of its rule (`bayes_wsc.settings.Rule.kind`)
OPTION_TYPES = {"positive": positive_float, "positive_int": positive_int}


def add_setting_options(group, settings_class: type, *names: str) -> None:
    """An option of `bayes-wsc fit` per plain setting of a model (its settings dataclass, `bayes_wsc.settings`):
    those `names`, or every one declared with help text, in the declared order. Each option is the setting's
    name with dashes (--prior-sd, or its declared `option`), with its default, help, metavar, and what its rule reads
    (`OPTION_TYPES`, its choices, or a switch for a True/False setting off by default); `setting_values` reads
    them back. A setting the rule cannot parse from text (WH's "inf", a pair A,B) is written by hand."""
    from bayes_wsc.settings import declared, option_of

    settings = {d.name: d for d in declared(settings_class)}
    for name in names or [n for n, d in settings.items() if d.spec.help is not None]:
        default, spec = settings[name].default, settings[name].spec
        kind = spec.rule.kind if spec.rule is not None else None
        keywords = {"help": spec.help or None}
        if kind == "flag" and default is False:
            keywords["action"] = "store_true"
        elif kind == "choices":
            keywords.update(choices=spec.rule.choices, default=default)
        elif kind in OPTION_TYPES:
            keywords.update(type=OPTION_TYPES[kind], default=default)
        else:
            raise ValueError(f"setting {name!r} of {settings_class.__name__} has no plain option (its rule reads no "
                             "text): add its option by hand")
        if spec.required:
            keywords.update(required=True, default=None)
        if spec.metavar:
            keywords["metavar"] = spec.metavar
        group.add_argument(f"--{option_of(settings_class, name)}", dest=name, **keywords)


def setting_values(args, settings_class: type) -> dict:
    """The settings of a model's settings dataclass that the parsed command line holds, by name (each option's
    dest is its setting's name: `add_setting_options`, or written by hand with that dest)."""
    from bayes_wsc.settings import declared

    return {d.name: getattr(args, d.name) for d in declared(settings_class) if hasattr(args, d.name)}


def add_simulate_options(parser: argparse.ArgumentParser, files) -> None:
    """--out, --seed and --replace of `bayes-wsc simulate MODEL`, which writes `files` into --out."""
    parser.add_argument("--out", required=True, metavar="DIR", type=output_folder("simulation folder", files),
                        help=f"folder to write {', '.join(files)} into (new or empty, unless --replace)")
    parser.add_argument("--seed", type=non_negative_int, default=0, help="random seed of the simulation (default 0)")
    parser.add_argument("--replace", action="store_true",
                        help="replace those files if DIR already holds them (default: refuse)")


def setting(text: str) -> tuple[str, object]:
    """KEY=VALUE of `--set`, the value read as a whole number, a number, true/false, none, or else text."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE with KEY a Python name, got {text!r}")
    return key, setting_value(value.strip())


def setting_value(text: str):
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def add_variant_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("model variant")
    from bayes_wsc.outputs import input_file

    group.add_argument("--model", dest="model_file", default=None, metavar="FILE.py", type=input_file("model file"),
                       help="a model variant file defining build_model(data, **settings) (see models/)")
    group.add_argument("--set", dest="model_settings", type=setting, action="append", default=[],
                       metavar="KEY=VALUE",
                       help="a setting of the variant's build_model, repeatable; VALUE is read as a whole number, "
                            "a number, true/false, none, or else text")


def sampling_settings(args) -> dict:
    """The estimator settings that `add_sampling_options` and `add_variant_options` collect; the seed
    only when given (else the estimator's fixed default)."""
    settings = {"method": args.method, "draws": args.draws, "tune": args.tune, "chains": args.chains,
                "backend": args.backend, "target_accept": args.target_accept, "precision": args.precision,
                "progressbar": not args.no_progress}
    if args.seed is not None:
        settings["seed"] = args.seed
    if hasattr(args, "model_file"):
        settings["model_file"] = args.model_file
        settings["model_settings"] = variant_settings(args.model_settings)
    return settings


def variant_settings(pairs: list[tuple[str, object]]) -> dict:
    from bayes_wsc.errors import InputError

    settings = {}
    for key, value in pairs:
        if key in settings:
            raise InputError(f"--set {key} is given twice")
        settings[key] = value
    return settings


#: rows of the estimands table `print_fit` shows (the first and last halves; a perception fit has
#: features x clusters weights)
SUMMARY_ROWS = 60


def fixed_value_notes(table) -> list[str]:
    """A note naming the rows of a summary with draws whose value is the same in every draw (a quantity the
    model fixes, such as the one weight of a single component): their MCSE and R-hat, computed as ArviZ
    computes them, come out 0 or NaN, which says nothing about convergence."""
    if "sd" not in table or "mcse_mean" not in table:
        return []
    fixed = [str(label) for label in table.index[table["sd"].to_numpy() == 0]]
    if not fixed:
        return []
    named = ", ".join(fixed[:6]) + (f" and {len(fixed) - 6} more" if len(fixed) > 6 else "")
    return [f"{named} take{'s' if len(fixed) == 1 else ''} one value in every draw (fixed by the model, not "
            "estimated): their MCSE and R-hat (0 or NaN) are not defined and say nothing about convergence."]


def print_fit(est, ci: float | None = None, heading: str | None = None) -> None:
    """The status line (`bayes_wsc.status`) first, then `heading` (what the fit is), the estimands table at
    the credible level `ci` (default `DEFAULT_CI`, as in the reports) and the diagnostics in plain words."""
    import pandas as pd

    from bayes_wsc.defaults import DEFAULT_CI
    from bayes_wsc.status import status_lines

    for line in status_lines(est):
        print(line)
    if heading:
        print(heading)
    print()
    full = est.summary(hdi_prob=DEFAULT_CI if ci is None else ci)
    table = full.round(3)
    with pd.option_context("display.width", 120):
        print(table.to_string(max_rows=SUMMARY_ROWS))
    if len(table) > SUMMARY_ROWS:
        print(f"({len(table)} rows, {SUMMARY_ROWS} shown: the report, or est.summary() in Python, has them all)")
    for note in [*fixed_value_notes(full), *est.summary_notes(), *est.log_likelihood_notes()]:
        print(f"Note: {note}")
    messages = est.diagnostics_
    print()
    if messages:
        print("Diagnostics:")
        for message in messages:
            print(f"  - {message}")
    elif getattr(est, "method", None) == "laplace":
        print("Diagnostics: no warnings; the intervals are the Laplace approximation's (see the status above).")
    else:
        print("Diagnostics: no problems found.")
    checks = est.checks_
    if not checks.empty:
        flagged = int(checks["flagged"].sum())
        print(f"Checks: {len(checks)} run at fit time, {flagged or 'none'} flagged "
              f"({', '.join(checks['check'])}); `bayes-wsc check FIT.nc` prints them.")


def fit_save_report(est, data, args) -> None:
    """Fit (warnings go to the printed diagnostics, not Python warnings, but those said before a long run
    starts: `SamplingWarning`), save, print, report."""
    import warnings

    from bayes_wsc.errors import FitWarning, SamplingWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        warnings.simplefilter("always", SamplingWarning)
        est = est.fit(data)  # what fit returns: the estimator, or the fit a chooser (PerceptionAuto) kept
    path = est.save(args.out)
    print_fit(est)
    print(f"\nwrote {path}")
    if args.report:
        from bayes_wsc.errors import InputError

        try:
            report = est.report(args.report)
        except InputError as exc:  # the disk filled up after the fit was saved: say that it was
            raise InputError(f"{exc} (the fit was saved to {str(path)!r}; `bayes-wsc report {path} --out "
                             f"{args.report}` writes its report)") from None
        print(f"wrote {report}")
