"""Start-up and first fits (issue 5, P6): `bayes-wsc --help`, and every model's CLI fit cold and warm.

    python benchmarks/bench_startup.py

Cold means a fresh environment's state: empty PyTensor compile directory and
empty JAX compilation cache (both pointed at a new temporary folder through
PYTENSOR_FLAGS and XDG_CACHE_HOME); warm is the same command run again with
those caches filled. Each command is a fresh process timed from outside, at
the model's default settings, on data of its paper's size:

  wsc      Sec. 5 of seed 000: 500 groups x 100 clicks, 15 bins (CSV)
  experts  breast_cancer (569 x 30), 1000 constraints from 5 experts, K = 2
  pcmix    the Sec. 3.2 toy of seed 003 (350 items), K = 2, lam = 4
  proportions  breast_cancer (569 x 30) in random groups of 16 with their class counts (Sec. 4 of seed 001)
  perception  the digits example of seed 004 (1797 x 64, 3 concepts, 5 seeds each)
  any other registered model: `bayes-wsc simulate MODEL --seed 1` at its default size, fitted by the
      command that simulate prints (combined: 200 items with votes, pairs, bags and groups; crowd: 200
      items x 5 sources); `predict` reads the simulated table its contract case names (`predict_file`)

MAP (the default method) and NUTS (default chains, tune and draws). The
reference for `--help` is `python -c pass` in the same run. Writes
the table, one row per command, to benchmarks/results/startup.csv and prints it.

    python benchmarks/bench_startup.py --read-only --rounds 2

Read-only commands (issues 26, 38): in every round each model is fitted anew (MAP,
Laplace and NUTS, a new seed, so a new fit file; NUTS keeps the default 4 x 1000
draws but `--nuts-tune` shortens tuning, which the commands never see), then
`summary`, `predict` (the fit's own training items), `check`, `ppc` and
`report` of that file each run in a fresh process, with warm caches (the
state a user is in after fitting). Each is timed from outside as a ratio to
`python -c "import numpy, pandas"` and to `bayes-wsc --help`, both timed in
the same round, and against the targets (`TARGETS`: summary and predict within 2 s,
check within 5 s, on a quiet machine). Writes the rows of every round to
benchmarks/out/readonly.csv (git-ignored).

    git archive 5c18b3b bayes_wsc | tar -x -C /tmp/before
    python benchmarks/bench_startup.py --read-only --rounds 1 --baseline /tmp/before

also times every read-only command with the package in /tmp/before first on
PYTHONPATH (another version of the code on the same fit files): each version
twice, alternating, the faster run kept (the first run of a version may
build its MAP programs, which are keyed by the package's source).

    python benchmarks/bench_startup.py --read-only --rounds 1 --fits DIR --baseline /tmp/before

times the commands on fit files made beforehand instead of fitting anew:
DIR/MODEL/METHOD.nc (METHOD map, laplace or nuts; a missing one is skipped),
`predict` reading DIR/MODEL/<the model's contract case's predict_file>, the
layout `bayes-wsc simulate MODEL --out DIR/MODEL` leaves. The commands then
run with the caller's caches, those the fits were made with. Several DIRs may
be given; each row names its DIR.

    nice -n 15 python benchmarks/bench_startup.py --make-fits DIR --nuts-tune 200

makes those fit files, for a quiet-machine timing later: DIR/MODEL/ holds
`bayes-wsc simulate MODEL --seed 1`'s data at its default size and its fits,
DIR/paper/MODEL/ the paper-size data above (its `predict` items copied under
the contract case's `predict_file` name) and its fits; each METHOD.nc (map,
laplace, nuts; MAP and Laplace of every model first, then NUTS) made with the
caller's caches. A fit file already there is kept (the run resumes). Time them with

    python benchmarks/bench_startup.py --read-only --rounds 1 --warm-runs 1 --fits DIR DIR/paper

Before timing, the package (and the baseline's) is byte-compiled, as `pip install` leaves it
(`byte_compile`). `--warm-runs 1` runs each command once, untimed, before timing it: the first
model's `check` builds a MAP program for its aggregation check when the cache
has none for the installed package's source, as after a user's first check.
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/ is no package
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # each model's contract case
from output_paths import OUT, RESULTS  # noqa: E402

import bayes_wsc  # noqa: E402
from bayes_wsc import registry  # noqa: E402

CLI = str(Path(sys.executable).with_name("bayes-wsc"))


def simulated_inputs(folder: Path, model: str, out: Path | None = None) -> tuple[list[str], str]:
    """A registered model's data from `bayes-wsc simulate MODEL` at its default size, written to `out` (default
    folder/sim_MODEL): the arguments of the fit command that simulate prints (without its --out) and the path
    of the table `predict` reads."""
    from contract_cases import CASES

    out = folder / f"sim_{model}" if out is None else out
    done = subprocess.run([CLI, "simulate", model, "--out", str(out), "--seed", "1"], capture_output=True, text=True,
                          check=True)
    lines = done.stdout.splitlines()
    argv = shlex.split(lines[lines.index("fit it with:") + 1])[1:]  # without "bayes-wsc"
    at = argv.index("--out")
    return argv[:at] + argv[at + 2:], str(out / CASES[model].predict_file)


def write_inputs(folder: Path, models: list[str]) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Each model's input files: the arguments of its fit command, and the items file `predict` reads."""
    from sklearn.datasets import load_breast_cancer

    from bayes_wsc.simulate import counts_to_clicks, simulate_wsc
    from bayes_wsc.simulate.experts import simulate_uci_experts
    from bayes_wsc.simulate.pcmix import simulate_intervals

    data, _ = simulate_wsc(n_groups=500, items_per_group=100, n_bins=15, sigma_h=0.5, seed=1)
    clicks, groups = counts_to_clicks(data)
    clicks.to_csv(folder / "clicks.csv", index=False)
    groups.to_csv(folder / "groups.csv", index=False)

    cancer = load_breast_cancer(as_frame=True)
    items = cancer.data.copy()
    items.columns = [c.replace(" ", "_") for c in items.columns]
    items.insert(0, "id", [f"p{i}" for i in range(len(items))])
    items.to_csv(folder / "cancer.csv", index=False)
    constraints, _ = simulate_uci_experts(cancer.target.to_numpy(), 1000, item_ids=items["id"], seed=1)
    constraints.to_csv(folder / "constraints.csv", index=False)

    toy, _ = simulate_intervals(seed=1)
    toy.to_csv(folder / "toy.csv", index=False)

    import numpy as np

    from bayes_wsc.simulate.proportions import class_counts, random_groups

    group = random_groups(len(items), 16, np.random.default_rng(1))
    items.assign(group=[f"charge{g}" for g in group]).to_csv(folder / "charges.csv", index=False)
    counts = class_counts(cancer.target.to_numpy(), group, 2)
    pd.DataFrame({"group": [f"charge{g}" for g in range(len(counts))], "malignant": counts[:, 0],
                  "benign": counts[:, 1]}).to_csv(folder / "counts.csv", index=False)

    from bayes_wsc.simulate.perception import digits_example

    digits = digits_example(seed=0)
    digits.items.to_csv(folder / "digits.csv", index=False)
    digits.seeds.to_csv(folder / "seeds.csv", index=False)
    digits.perception.to_csv(folder / "perception.csv", index=False)
    commands = {
        "wsc": ["fit", "wsc", "--clicks", str(folder / "clicks.csv"), "--groups", str(folder / "groups.csv")],
        "experts": ["fit", "experts", "--items", str(folder / "cancer.csv"), "--constraints",
                    str(folder / "constraints.csv"), "--clusters", "2"],
        "pcmix": ["fit", "pcmix", "--items", str(folder / "toy.csv"), "--label-col", "y", "--components", "2",
                  "--lam", "4"],
        "proportions": ["fit", "proportions", "--items", str(folder / "charges.csv"), "--proportions",
                        str(folder / "counts.csv"), "--counts", "--id-col", "id"],
        "perception": ["fit", "perception", "--items", str(folder / "digits.csv"), "--seeds", str(folder / "seeds.csv"),
                       "--perception", str(folder / "perception.csv")],
    }
    predict_items = {model: str(folder / name) for model, name in PREDICT_ITEMS.items()}
    for model in models:
        if model not in commands:
            commands[model], predict_items[model] = simulated_inputs(folder, model)
    return commands, predict_items


#: the items file each paper-size model's `predict` reads in the read-only benchmark: its training items
PREDICT_ITEMS = {"wsc": "clicks.csv", "experts": "cancer.csv", "pcmix": "toy.csv", "proportions": "charges.csv",
                 "perception": "digits.csv"}
READ_ONLY = ("summary", "predict", "check", "ppc", "report")
#: seconds a read-only command should take on a quiet machine (issue 38); ppc and report have none
TARGETS = {"summary": 2.0, "predict": 2.0, "check": 5.0}


def byte_compile(packages: list[Path]) -> None:
    """Write the bytecode of each package's modules, as `pip install` does: the commands are timed as a user
    runs them, not compiling the package from source at every start, which an editable install under
    PYTHONDONTWRITEBYTECODE=1 would do (0.1-0.4 s of CPU a command, measured on the experts' NUTS summary)."""
    import compileall

    for package in packages:
        if not compileall.compile_dir(str(package), quiet=1):
            raise SystemExit(f"could not byte-compile {package}")


def make_fits(args, root: Path) -> None:
    """Write every model x method fit file of the read-only benchmark into `root` (see the module's text)."""
    import shutil

    from contract_cases import CASES

    models = args.models.split(",")
    paper = [m for m in models if m in PREDICT_ITEMS]
    inputs = root / "paper" / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    commands, _ = write_inputs(inputs, paper) if paper else ({}, {})
    sets = []  # (model, folder, fit arguments without --out)
    for model in paper:
        folder = root / "paper" / model
        folder.mkdir(exist_ok=True)
        shutil.copyfile(inputs / PREDICT_ITEMS[model], folder / CASES[model].predict_file)
        sets.append((model, folder, commands[model]))
    for model in models:
        folder = root / model
        if (folder / "truth.json").exists():  # simulated before (the run resumes): the same seed's command
            with tempfile.TemporaryDirectory() as again:
                argv, _ = simulated_inputs(Path(again), model)
                argv = [arg.replace(str(Path(again) / f"sim_{model}"), str(folder)) for arg in argv]
        else:
            argv, _ = simulated_inputs(root, model, folder)
        sets.append((model, folder, argv))
    env = dict(os.environ)  # the caller's caches, which `--fits` times the commands with
    for method in args.methods.split(","):
        for model, folder, argv in sets:
            fit = folder / f"{method}.nc"
            if fit.exists():
                print(f"{fit}: there, kept", flush=True)
                continue
            extra = ["--tune", str(args.nuts_tune)] if method == "nuts" else []
            partial = folder / f"{method}.partial.nc"
            t0 = time.perf_counter()
            done = subprocess.run([CLI, *argv, "--method", method, *extra, "--seed", "1", "--out", str(partial),
                                   "--no-progress"], env=env, capture_output=True, text=True)
            seconds = time.perf_counter() - t0
            if done.returncode != 0:
                print(f"{fit}: fit failed ({done.returncode}) after {seconds:.0f} s: {done.stderr.strip()[-300:]}",
                      flush=True)
                continue
            partial.rename(fit)
            status = [line for line in done.stdout.splitlines() if line.lower().startswith("status")][:1]
            print(f"{fit}: fit {seconds:.0f} s ({status[0] if status else 'no output'})", flush=True)


def read_only_commands(fit: Path, items: str, out: Path) -> dict[str, list[str]]:
    return {"summary": ["summary", str(fit)],
            "predict": ["predict", str(fit), "--items", items, "--out", str(out / "pred.csv")],
            "check": ["check", str(fit)],
            "ppc": ["ppc", str(fit), "--out", str(out / "ppc.nc")],
            "report": ["report", str(fit), "--out", str(out / "report")]}


def read_only(args, tmp: Path, commands: dict[str, list[str]], items: dict[str, str], env: dict) -> list[dict]:
    """Rounds of: references, then per model and method a new fit and each read-only command."""
    rows = []
    references = {"import numpy, pandas": [sys.executable, "-c", "import numpy, pandas"],
                  "bayes-wsc --help": [CLI, "--help"]}
    for round_ in range(1, args.rounds + 1):
        base = {}
        for name, command in references.items():
            runs = sorted(timed(command, env) for _ in range(args.help_runs))
            base[name] = runs[len(runs) // 2]
            rows.append({"round": round_, "model": "-", "method": "-", "command": name, "seconds": base[name]})
            print(f"round {round_}: {name}: median {base[name]:.2f} s", flush=True)
        for model in args.models.split(","):
            for method in args.methods.split(","):
                if args.fits:
                    for folder in args.fits:
                        fit = Path(folder) / model / f"{method}.nc"
                        if fit.exists():
                            rows += time_commands(args, round_, model, method, fit, folder, items[folder][model],
                                                  tmp, env, base)
                        else:
                            print(f"round {round_}: no {fit}: skipped", flush=True)
                    continue
                else:
                    fit = tmp / f"{model}_{method}_{round_}.nc"
                    extra = ["--tune", str(args.nuts_tune)] if method == "nuts" else []
                    seconds = timed([CLI, *commands[model], "--method", method, *extra, "--seed", str(round_),
                                     "--out", str(fit), "--no-progress"], env)
                    print(f"round {round_}: fit {model} --method {method}: {seconds:.1f} s", flush=True)
                rows += time_commands(args, round_, model, method, fit, "new fits", items[model], tmp, env, base)
    return rows


def time_commands(args, round_, model, method, fit, data, items, tmp, env, base) -> list[dict]:
    """Rows of each read-only command on one fit file (and of the baseline's, with --baseline)."""
    rows = []
    out = Path(tempfile.mkdtemp(prefix=f"out_{model}_{method}_{round_}_", dir=tmp))
    for name, argv in read_only_commands(fit, items, out).items():
        if name not in args.commands.split(","):
            continue
        other = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [args.baseline, env.get("PYTHONPATH")]))}
        for _ in range(args.warm_runs):
            for version in ([other, env] if args.baseline else [env]):
                timed([CLI, *argv], version)
        if args.baseline:
            runs = [(timed([CLI, *argv], other), timed([CLI, *argv], env)) for _ in range(2)]
            before, seconds = (min(r[i] for r in runs) for i in (0, 1))
            rows.append({"round": round_, "data": data, "model": model, "method": method, "command": name,
                         "version": "baseline", "seconds": before, **{f"vs {k}": before / v for k, v in base.items()}})
        else:
            seconds = timed([CLI, *argv], env)
        target = TARGETS.get(name, float("nan"))
        rows.append({"round": round_, "data": data, "model": model, "method": method, "command": name,
                     "version": "this", "seconds": seconds, "target": target,
                     "within target": seconds <= target if name in TARGETS else None,
                     **{f"vs {k}": seconds / v for k, v in base.items()}})
        print(f"round {round_}: {name} {model} {method} ({data}): {seconds:.2f} s "
              f"({seconds / base['import numpy, pandas']:.1f}x numpy+pandas"
              f"{f'; baseline {before:.2f} s' if args.baseline else ''})", flush=True)
    return rows


#: what `timed` measures: "wall" (elapsed seconds) or "cpu" (set by --clock)
CLOCK = {"name": "wall"}


def timed(command: list[str], env: dict) -> float:
    """Seconds of one run of `command`: elapsed, or with --clock cpu the CPU seconds (user + system) of the
    command's process and its children, which the waiting on a machine shared with other jobs does not
    inflate (the command is single-threaded but for BLAS and HDF5, so on a quiet machine the two are close)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if CLOCK["name"] == "cpu":
        seconds = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return seconds


def main(argv=None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(registry.NAMES), help="default: every registered model")
    parser.add_argument("--methods", default=None, help="default: map,nuts; with --read-only map,laplace,nuts")
    parser.add_argument("--help-runs", type=int, default=5)
    parser.add_argument("--out", default=None, help="CSV to write (default: benchmarks/results/startup.csv, or "
                                                     "benchmarks/out/readonly.csv with --read-only)")
    parser.add_argument("--read-only", action="store_true",
                        help="time summary, predict, check, ppc and report of new fit files instead")
    parser.add_argument("--rounds", type=int, default=2, help="--read-only: rounds, each on new fit files")
    parser.add_argument("--commands", default=",".join(READ_ONLY), help="--read-only: the commands to time")
    parser.add_argument("--baseline", metavar="DIR", default=None,
                        help="--read-only: also time each command with the bayes_wsc package in DIR (see above)")
    parser.add_argument("--fits", metavar="DIR", nargs="+", default=None,
                        help="--read-only: time the commands on DIR/MODEL/METHOD.nc instead of new fits (see above)")
    parser.add_argument("--warm-runs", type=int, default=0,
                        help="--read-only: untimed runs of each command (each version) before it is timed")
    parser.add_argument("--make-fits", metavar="DIR", default=None,
                        help="write the fit files that --fits DIR DIR/paper reads, then stop (see above)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="--read-only: time commands and references by elapsed or CPU seconds (see timed)")
    parser.add_argument("--nuts-tune", type=int, default=200,
                        help="--read-only: NUTS tuning steps of the fits (their draws stay the default 4 x 1000)")
    args = parser.parse_args(argv)
    CLOCK["name"] = args.clock
    args.methods = args.methods or ("map,laplace,nuts" if args.read_only or args.make_fits else "map,nuts")
    if args.make_fits:
        make_fits(args, Path(args.make_fits))
        return pd.DataFrame()
    args.out = args.out or str(OUT / "readonly.csv" if args.read_only else RESULTS / "startup.csv")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if args.fits:
            from contract_cases import CASES

            commands = {}
            items = {folder: {model: str(Path(folder) / model / CASES[model].predict_file)
                              for model in args.models.split(",")} for folder in args.fits}
        else:
            commands, items = write_inputs(tmp, args.models.split(","))
        env = {**os.environ, "XDG_CACHE_HOME": str(tmp / "cache"),
               "PYTENSOR_FLAGS": f"compiledir={tmp / 'pytensor'}"}
        if args.fits:  # the caches the fits were made with (the MAP programs they built), as a user has them
            env = dict(os.environ)
        if args.read_only:
            baseline = [Path(args.baseline) / "bayes_wsc"] if args.baseline else []
            byte_compile([Path(bayes_wsc.__file__).parent, *baseline])
            table = pd.DataFrame(read_only(args, tmp, commands, items, env))
            out = Path(args.out)
            out.parent.mkdir(parents=True, exist_ok=True)
            table.to_csv(out, index=False)
            print(table.round(2).to_string(index=False))
            timed_rows = table[table["command"].isin(list(TARGETS)) & (table["version"] == "this")]
            slowest = timed_rows.groupby(["command", "method"])["seconds"].max().unstack()
            print("\nslowest over models and rounds (s); targets", TARGETS)
            print(slowest.round(2).to_string())
            print(f"\n{out}")
            return table
        for name, command in (("python -c pass", [sys.executable, "-c", "pass"]), ("bayes-wsc --help", [CLI, "--help"])):
            runs = sorted(timed(command, env) for _ in range(args.help_runs))
            rows.append({"what": name, "cache": "-", "seconds": runs[len(runs) // 2]})
            print(f"{name}: median {rows[-1]['seconds']:.2f} s", flush=True)
        for model in args.models.split(","):
            for method in args.methods.split(","):
                for cache in ("cold", "warm"):
                    if cache == "cold":
                        for sub in ("cache", "pytensor"):
                            subprocess.run(["rm", "-rf", str(tmp / sub)], check=True)
                    out = tmp / f"{model}_{method}.nc"
                    seconds = timed([CLI, *commands[model], "--method", method, "--out", str(out), "--no-progress"],
                                    env)
                    rows.append({"what": f"fit {model} --method {method}", "cache": cache, "seconds": seconds})
                    print(f"fit {model} --method {method} ({cache}): {seconds:.1f} s", flush=True)
    table = pd.DataFrame(rows)
    base = table.loc[table["what"] == "python -c pass", "seconds"].iloc[0]
    table["vs python -c pass"] = table["seconds"] / base
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out, index=False)
    print(table.round(2).to_string(index=False))
    print(f"\n{out}")
    return table


if __name__ == "__main__":
    main()
