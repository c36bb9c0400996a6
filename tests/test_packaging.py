"""The README's Quick start holds the two commands, and CI runs the same test command."""

import re
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
