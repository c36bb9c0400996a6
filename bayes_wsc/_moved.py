"""The import paths the models' modules had before each model became one folder (issue 40), kept working.

Until then a model was laid out by part (`bayes_wsc.simulate.perception`, `bayes_wsc.baselines.wsc`,
`bayes_wsc.data.seeded`...); each part now lives in `models/<name>/` under its role's name. A finder on
`sys.meta_path` (installed by `bayes_wsc/__init__.py`, after the ordinary finders, which no longer find
these names) answers an old name with the module at its new path: the same module object, so code,
notebooks and scripts written against the old paths keep running and patching either name patches both.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

_MODELS = ("wsc", "pcmix", "experts", "proportions", "perception")
#: the old folder of a part -> its module's name in a model folder
_ROLES = {"checks": "checks", "commands": "command", "simulate": "simulate", "report": "report",
          "baselines": "baselines"}
#: old dotted name -> the module's name now
MOVED: dict[str, str] = {f"bayes_wsc.{folder}.{model}": f"bayes_wsc.models.{model}.{role}"
                         for model in _MODELS for folder, role in _ROLES.items()}
MOVED["bayes_wsc.data.seeded"] = "bayes_wsc.models.perception.data"


class _OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old name of `MOVED` and loads it as the module at its new path."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        module = importlib.import_module(MOVED[spec.name])
        spec.loader_state = module.__spec__  # the import system sets __spec__ to the old name's; put it back
        return module

    def exec_module(self, module):
        module.__spec__ = module.__spec__.loader_state


def install() -> None:
    """Put the finder on `sys.meta_path` once."""
    if not any(isinstance(finder, _OldPaths) for finder in sys.meta_path):
        sys.meta_path.append(_OldPaths())
