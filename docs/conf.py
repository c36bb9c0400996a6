"""Sphinx configuration of the documentation site.

Build it (from the repository's root, after `pip install -e '.[docs]'`), warnings as errors:

    python -m sphinx -W --keep-going -b html docs docs/_build/html

The API reference is generated from names: every public name of `bayes_wsc.__all__`, and the modules in
`PUBLIC_MODULES` below (each registered model's folder, and a few shared modules).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "_ext"))

import bayes_wsc  # noqa: E402

#: the modules users import beyond `bayes_wsc` itself (named in the guides); each gets an API page: every
#: registered model's folder gives its model and the paper's baselines (where it has them)
def _model_modules():
    import importlib.util

    from bayes_wsc import registry

    return [f"bayes_wsc.models.{name}.{role}" for role in ("model", "baselines")
            for name in registry.NAMES
            if importlib.util.find_spec(f"bayes_wsc.models.{name}.{role}") is not None]


PUBLIC_MODULES = [*_model_modules(), "bayes_wsc.simulate", "bayes_wsc.testing", "bayes_wsc.contract", "bayes_wsc.settings",
                  "bayes_wsc.defaults", "bayes_wsc.errors"]

project = "bayes_wsc"
author = "the bayes_wsc authors"
copyright = "2026, the bayes_wsc authors"
from bayes_wsc.version import package_version  # noqa: E402

release = package_version()

version = release

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinxarg.ext",
]

root_doc = "index"
# a fenced block without a language is shell commands or output: shown as written, not coloured as Python
highlight_language = "none"
# `name` in a docstring is code, as the package writes it
default_role = "literal"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "jupyter_execute", "**.ipynb_checkpoints", "_api_listing.md"]
html_theme = "pydata_sphinx_theme"
html_title = "bayes_wsc"
html_static_path = ["_static"]
# a favicon of the site's own (the browser asks for one; without it, a 404 on every page)
html_favicon = "_static/favicon.svg"
# the theme's colour mode when the reader has not chosen one (empty, the theme logs an error on every page)
html_context = {"default_mode": "light"}
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 5,
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {"index": [], "getting-started": [], "reproducing": []}

# MyST: `[text](page.md#heading)` links to headings down to level 3
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]
# reproducing.md includes RESULTS.md's section as it is written there, whose tables sit under level-4 headings
# below the page's title: MyST would warn of the skipped levels
suppress_warnings = ["myst.header"]

# Notebooks: executed at build time, with the small settings the tests use (minutes, not hours, on 2
# cores); `cache` keeps each notebook's outputs under docs/_build/.jupyter_cache and re-executes a notebook
# only when its code changed
nb_execution_mode = os.environ.get("BAYES_WSC_DOCS_EXECUTE", "cache")
nb_execution_timeout = 1800
nb_execution_raise_on_error = True
nb_execution_cache_path = str(DOCS / "_build" / ".jupyter_cache")
nb_execution_show_tb = True
nb_merge_streams = True
os.environ.setdefault("BAYES_WSC_SMALL", "1")

# API reference: autosummary pages, numpydoc sections
autosummary_imported_members = False
autodoc_default_options = {"members": True, "show-inheritance": False, "member-order": "bysource"}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_validation_checks: set[str] = set()
numpydoc_xref_param_type = False


def api_listing() -> str:
    """The autosummary tables of the API page, from `bayes_wsc.__all__` and `PUBLIC_MODULES`."""
    names = "\n".join(f"   bayes_wsc.{name}" for name in bayes_wsc.__all__)
    modules = "\n".join(f"   {name}" for name in PUBLIC_MODULES)
    return ("## Public names (`bayes_wsc.__all__`)\n\n```{eval-rst}\n.. autosummary::\n   :toctree: generated\n"
            f"   :nosignatures:\n\n{names}\n```\n\n## Modules\n\n```{{eval-rst}}\n.. autosummary::\n"
            f"   :toctree: generated\n\n{modules}\n```\n")


# written here, at every build, so that the lists above are the only place the names are kept; api.md
# includes it, and autosummary generates a page per name from it (the file is git-ignored)
API_LISTING = DOCS / "_api_listing.md"
if not API_LISTING.exists() or API_LISTING.read_text() != api_listing():
    API_LISTING.write_text(api_listing())
autosummary_generate = [API_LISTING.name]
