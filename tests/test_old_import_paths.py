"""The import paths users had before each model became one folder (issue 40) still work.

`from bayes_wsc.models.wsc import WSC` reads the folder's `model.py`; the parts laid out by part before
(`bayes_wsc.simulate.perception`, `bayes_wsc.baselines.wsc`, `bayes_wsc.data.seeded`...) resolve to the
same module objects at their new paths (`bayes_wsc/_moved.py`), which keep their own names and specs.
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from bayes_wsc import _moved, registry


@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_an_old_path_is_the_module_at_its_new_path(old):
    new = _moved.MOVED[old]
    module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__name__ == new and module.__spec__.name == new
    parent, _, leaf = old.rpartition(".")
    assert getattr(importlib.import_module(parent), leaf) is module


def test_every_old_path_names_a_module_of_a_registered_model():
    for old, new in _moved.MOVED.items():
        assert old != new and new.split(".")[2] in registry.NAMES, (old, new)
    assert "bayes_wsc.data.seeded" in _moved.MOVED


@pytest.mark.parametrize("spec", registry.MODELS, ids=lambda spec: spec.name)
def test_a_model_folder_answers_with_its_model_files_names(spec):
    package = importlib.import_module(f"bayes_wsc.models.{spec.name}")
    module, _, cls = spec.estimator.partition(":")
    assert getattr(package, cls) is registry.resolve(spec.estimator)
    assert module == f"bayes_wsc.models.{spec.name}.model"
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        package.no_such_name


def test_old_paths_in_a_fresh_interpreter():
    """`from bayes_wsc.baselines import perception` and the like, as a user's script writes them, with nothing
    imported before (the finder is installed by `import bayes_wsc`, which any of them imports first)."""
    code = ("from bayes_wsc.baselines import perception as bp\n"
            "from bayes_wsc.data.seeded import SeedSets\n"
            "from bayes_wsc.simulate.experts import simulate_uci_experts\n"
            "from bayes_wsc.models.wsc import WSC, build_model\n"
            "import bayes_wsc.commands.wsc as command\n"
            "import sys\n"
            "assert bp.__name__ == 'bayes_wsc.models.perception.baselines'\n"
            "assert SeedSets.__module__ == 'bayes_wsc.models.perception.data'\n"
            "assert command is sys.modules['bayes_wsc.models.wsc.command']\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_importing_a_folders_command_loads_no_model():
    code = ("import sys\n"
            "import bayes_wsc.models.wsc.command\n"
            "assert 'bayes_wsc.models.wsc.model' not in sys.modules\n"
            "assert 'bayes_wsc.estimator' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
