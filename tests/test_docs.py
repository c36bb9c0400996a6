"""The documentation site (docs/) holds to the code.

Default tier (no Sphinx needed): every public name of `bayes_wsc.__all__` and every module of
`PUBLIC_MODULES` (docs/conf.py) is on the API page's generated listing and has a docstring of its own; every
`bayes_wsc.…` name the README and the pages mention exists; every page is in the site's table of contents.
Slow tier: the site builds with Sphinx, warnings as errors (the command of docs/development.md).
"""

from __future__ import annotations

import importlib
import inspect
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

import bayes_wsc

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: the pages written by hand (the API pages are generated at build time)
PAGES = sorted(p for p in DOCS.rglob("*.md") if not {"_build", "generated"} & set(p.relative_to(DOCS).parts)
               and not p.name.startswith("_"))
#: a dotted name of the package in backticks or in prose: `bayes_wsc.models.wsc.build_model`
DOTTED = re.compile(r"\bbayes_wsc(?:\.[A-Za-z_]\w*)+")


@pytest.fixture(scope="module")
def conf():
    """docs/conf.py's names, read as Sphinx reads them (it imports only bayes_wsc; the environment variable it
    sets for the notebooks is put back)."""
    import os

    environment = dict(os.environ)
    try:
        return runpy.run_path(str(DOCS / "conf.py"))
    finally:
        os.environ.clear()
        os.environ.update(environment)


def resolve(dotted: str):
    """The object a dotted name of the package names: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


def test_every_public_name_has_an_api_entry_and_a_docstring(conf):
    listing = conf["api_listing"]()
    missing = [name for name in bayes_wsc.__all__ if f"   bayes_wsc.{name}\n" not in listing]
    assert not missing, f"docs/conf.py's API listing leaves out {missing}"
    undocumented = [name for name in bayes_wsc.__all__ if not (inspect.getdoc(getattr(bayes_wsc, name)) or "").strip()]
    assert not undocumented, f"public names without a docstring: {undocumented}"
    assert "{include} _api_listing.md" in (DOCS / "api.md").read_text(), "docs/api.md does not include the listing"


def test_every_public_module_is_listed_and_documented(conf):
    listing = conf["api_listing"]()
    for name in conf["PUBLIC_MODULES"]:
        module = importlib.import_module(name)
        assert f"   {name}\n" in listing
        assert (module.__doc__ or "").strip(), f"{name} has no module docstring for its API page"


def test_every_name_the_pages_mention_exists():
    """A module that moves (or a function renamed) shows here, naming the page, not as a broken site."""
    problems = []
    for page in [ROOT / "README.md", *PAGES]:
        for dotted in sorted(set(DOTTED.findall(page.read_text()))):
            try:
                resolve(dotted.rstrip("."))
            except (ImportError, AttributeError) as error:
                problems.append(f"{page.relative_to(ROOT)}: {dotted} ({error})")
    assert not problems, "\n".join(problems)


def test_every_page_is_in_the_table_of_contents():
    """Sphinx warns of a page no toctree holds; the default tier says it without building."""
    toctrees = "\n".join(re.findall(r"```\{toctree\}(.*?)```", "\n".join(p.read_text() for p in PAGES), re.S))
    entries = set()
    for page in PAGES:
        for block in re.findall(r"```\{toctree\}(.*?)```", page.read_text(), re.S):
            base = page.parent.relative_to(DOCS)
            entries |= {str(base / line.strip()) for line in block.splitlines()
                        if line.strip() and not line.strip().startswith(":")}
    assert toctrees
    orphans = [str(p.relative_to(DOCS).with_suffix("")) for p in PAGES
               if p.name != "index.md" or p.parent != DOCS]
    orphans = [name for name in orphans if name not in entries]
    assert not orphans, f"pages in no table of contents: {orphans}"
    notebooks = {f"notebooks/{p.stem}" for p in (ROOT / "notebooks").glob("*.ipynb")}
    assert notebooks <= entries, f"notebooks missing from docs/notebooks.md: {sorted(notebooks - entries)}"


def build_command(out: Path) -> list[str]:
    return [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", str(DOCS), str(out)]


def test_the_build_command_is_the_one_the_pages_state():
    command = "python -m sphinx -W --keep-going -b html docs docs/_build/html"
    for page in (ROOT / "README.md", DOCS / "development.md"):
        assert command in page.read_text(), f"{page.relative_to(ROOT)} does not state {command!r}"


@pytest.mark.slow
def test_the_site_builds_without_warnings(tmp_path):
    """The whole site, notebooks executed (or taken from the cache when their code has not changed)."""
    pytest.importorskip("sphinx")
    proc = subprocess.run(build_command(tmp_path / "html"), capture_output=True, text=True, cwd=ROOT,
                          timeout=3600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "build succeeded" in proc.stdout, proc.stdout[-2000:]  # -W: any warning fails the build
    for page in ("index", "getting-started", "guides/wsc", "api", "cli", "reproducing",
                 "notebooks/wsc_walkthrough"):
        assert (tmp_path / "html" / f"{page}.html").exists(), page
    figures = list((tmp_path / "html" / "_images").glob("*.png"))
    assert len(figures) >= 5, "the executed notebooks left fewer than 5 figures"
    for name in bayes_wsc.__all__:
        assert (tmp_path / "html" / "generated" / f"bayes_wsc.{name}.html").exists(), name
