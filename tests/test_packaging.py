"""The README's Quick start holds the two commands, and CI runs the same test command."""

import re
import subprocess
import sys
from pathlib import Path

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
    ci_lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
                if line.strip() and not line.startswith(("#", "set ", "cd "))]
    assert ci_lines == [quick_start_commands()[1]]


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
