"""The README's Quick start holds the two commands, and CI runs the same test command."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def quick_start_commands():
    text = (ROOT / "README.md").read_text()
    section = text.split("## Quick start", 1)[1]
    block = re.search(r"```[a-z]*\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.strip()]


def test_quick_start_has_two_commands_demo_then_tests():
    commands = quick_start_commands()
    assert len(commands) == 2
    assert "bayes-wsc demo" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command():
    """CI's first command is the README's test command verbatim; every other Python runs the same command,
    its interpreter and venv named for it."""
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
                if line.strip() and not line.startswith(("#", "set ", "cd "))]
    command = quick_start_commands()[1]
    assert ci_lines[0] == command
    venv = '".venv-$minor"'
    again = " ".join(ci_lines[ci_lines.index('echo "CI: the README\'s test command on Python $version"') + 1:][:2])
    assert again.replace(" \\ ", " ") == (command.replace("python3", "PYENV_VERSION=$version python3", 1)
                                            .replace(".venv/bin/pip", '".venv-$minor/bin/pip"')
                                            .replace(".venv/bin/python", '".venv-$minor/bin/python"')
                                            .replace(".venv", venv, 1))


def test_a_fit_needs_no_c_compiler_and_says_nothing_about_one(tmp_path):
    """No g++ on the PATH, empty PyTensor and JAX caches: the MAP fits and stderr stays empty."""
    script = ("from bayes_wsc.models.wsc import WSC\nfrom bayes_wsc.simulate import simulate_wsc\n"
              "data, truth = simulate_wsc(n_groups=30, items_per_group=20, n_bins=4, seed=1)\n"
              "import pytensor\nprint(repr(pytensor.config.cxx))\n"
              "print(WSC(method='map').fit(data).idata_.posterior['rho'].values.ravel())\n")
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "PYTENSOR_FLAGS": f"compiledir={tmp_path / 'pytensor'}"}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[0] == "''"
    assert proc.stderr.strip() == ""


#: the families that import together: PyMC major -> (PyTensor major, ArviZ major)
FAMILIES = {5: (2, 0), 6: (3, 1)}
#: releases of each family, oldest admitted and newest known when this was written
RELEASES = {"pymc": ["5.25.0", "5.28.5", "6.3.0", "6.4.0"], "pytensor": ["2.31.0", "2.38.0", "3.3.0", "3.3.8"],
            "arviz": ["0.21.0", "0.23.4", "1.1.0", "1.3.0"]}


def declared_requirements(python: str, extra: str | None = None) -> dict:
    """{name: specifier} of pyproject's dependencies (and an extra's) whose markers hold on `python`."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = project["dependencies"] + (project["optional-dependencies"][extra] if extra else [])
    environment = {"python_version": python, "python_full_version": f"{python}.0", "extra": extra or ""}
    found = {}
    for line in lines:
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate(environment):
            assert requirement.name not in found, f"{requirement.name} is declared twice for Python {python}"
            found[requirement.name] = requirement.specifier
    return found


@pytest.mark.parametrize("python", ["3.11", "3.12", "3.13"])
def test_each_python_gets_one_family_that_imports_together(python):
    """Under 3.11 the PyMC 5 family, under 3.12 and 3.13 the newest PyMC 6, PyTensor 3 and ArviZ 1; no
    resolver can pick a PyMC of one family beside a PyTensor or ArviZ of the other."""
    found = declared_requirements(python, "test")
    admitted = {name: [v for v in RELEASES[name] if found[name].contains(v)] for name in RELEASES}
    family = 5 if python == "3.11" else 6
    assert {int(v.split(".")[0]) for v in admitted["pymc"]} == {family}
    tensor, arviz = FAMILIES[family]
    assert {int(v.split(".")[0]) for v in admitted["pytensor"]} == {tensor}
    assert {int(v.split(".")[0]) for v in admitted["arviz"]} == {arviz}
    if family == 6:
        assert admitted["pymc"][-1] == "6.4.0" and admitted["pytensor"][-1] == "3.3.8"
        assert admitted["arviz"][-1] == "1.3.0" and found["jax"].contains("0.12.0")
        assert "pymc-extras" not in found  # it pins a PyMC minor below the newest
    else:
        assert admitted["pymc"][-1] == "5.28.5" and found["jax"].contains("0.10.2")
    assert "h5py" in found  # h5netcdf 1.8 no longer installs it, and fit files are HDF5


def test_the_installed_stack_is_the_declared_family():
    """The environment the tests run in holds the family pyproject pairs with this Python."""
    from importlib.metadata import version

    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    found = declared_requirements(python)
    for name in ("pymc", "pytensor", "arviz", "jax"):
        assert found[name].contains(version(name)), f"{name} {version(name)} is not {found[name]} on Python {python}"
