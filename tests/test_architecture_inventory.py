"""ARCHITECTURE.md's "Modules" tables and the package agree: every module they name exists, and every
module of `bayes_wsc/` is named.

A table row names its module in its first cell: a file (`estimator.py`), a folder (`datasets/`, which
names its `__init__.py`), or a per-model path with `<model>` (`models/<model>/checks.py`), which stands
for that module of every registered model (`registry.NAMES`) that has it, and must name at least one;
the modules every model must have are checked against the registry by
`test_every_registered_model_has_each_part`.
"""

from __future__ import annotations

import re
from pathlib import Path

from bayes_wsc import registry

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "bayes_wsc"
ROW = re.compile(r"^\| `([^`]+)` \|")


def named_modules() -> dict[str, list[str]]:
    """The first cell of each row of the tables under "## Modules" -> the package files it names."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    section = text.split("\n## Modules\n", 1)[1].split("\n## ", 1)[0]
    named = {}
    for line in section.splitlines():
        found = ROW.match(line)
        if not found:
            continue
        cell = found.group(1)
        paths = [cell.replace("<model>", name) for name in registry.NAMES] if "<model>" in cell else [cell]
        paths = [p + "__init__.py" if p.endswith("/") else p for p in paths]
        named[cell] = [p for p in paths if (PACKAGE / p).is_file()] if "<model>" in cell else paths
    return named


def package_modules() -> set[str]:
    return {p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")}


def test_the_tables_name_modules():
    named = named_modules()
    assert len(named) > 40 and "estimator.py" in named and "registry.py" in named


def test_every_named_module_exists():
    missing = [f"{cell} ({path})" for cell, paths in named_modules().items() for path in paths
               if not (PACKAGE / path).is_file()]
    missing += [f"{cell} (no registered model has it)" for cell, paths in named_modules().items() if not paths]
    assert not missing, f"ARCHITECTURE.md names modules that do not exist: {missing}"


def test_every_module_is_named():
    named = {path for paths in named_modules().values() for path in paths}
    # a package's one-line __init__.py is named by its folder's modules (data/__init__.py by data/*.py)
    folders = {path.rsplit("/", 1)[0] for path in named if "/" in path}
    unnamed = sorted(m for m in package_modules() - named
                     if not (m.endswith("/__init__.py") and m.rsplit("/", 1)[0] in folders
                             and len((PACKAGE / m).read_text().strip().splitlines()) <= 1))
    assert not unnamed, f"modules of bayes_wsc/ that ARCHITECTURE.md's Modules tables do not name: {unnamed}"


def test_every_registered_model_has_each_part():
    """The per-model rows hold for every model in the registry: its files are where the rows say."""
    for spec in registry.MODELS:
        for module in (spec.estimator.partition(":")[0], spec.data.partition(":")[0], spec.commands, spec.checks,
                       spec.report, spec.simulate, f"bayes_wsc.models.{spec.name}"):
            path = PACKAGE.parent / module.replace(".", "/")
            assert path.with_suffix(".py").is_file() or (path / "__init__.py").is_file(), \
                f"{spec.name}: {module} has no file"
