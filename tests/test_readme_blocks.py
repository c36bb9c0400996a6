"""The "Try it" blocks of the README and of the documentation's pages (docs/) run as written, from an
empty folder.

A block is a fenced code block (```) that follows a line reading exactly
``Try it:`` (blank lines between are allowed). Every non-blank line of it
that does not start with ``#`` is one `bayes-wsc` command, written as a user
would paste it into a shell (no prompt, no line continuation, no shell syntax
but quoting). Each model's guide (docs/guides/MODEL.md) starts with one:
`simulate MODEL`, then `fit MODEL ... --report DIR`; a block written in
several pages (the README's example, the first fit of Getting started) runs
once.

Each block runs in a new empty folder, its commands in order and in this
process (`bayes_wsc.cli.main(shlex.split(line)[1:])`, so the imports and
compiled programs are shared between blocks); every command must exit 0,
and every path it names must exist afterwards: its input files, the files
`simulate` declares in its folder, the fit and the report page. A block
should run in seconds; when one grows slow, make its sizes smaller in the
page rather than marking it slow.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path

import pytest

from bayes_wsc import registry
from bayes_wsc.cli import main
from bayes_wsc.commands import FIT_COMMANDS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: the pages whose blocks run: the README and every Markdown page of the documentation site
PAGES = [README, *sorted(page for page in (ROOT / "docs").rglob("*.md")
                          if not {"_build", "generated"} & set(page.relative_to(ROOT / "docs").parts))]
MARKER = "Try it:"


def where(page: Path, line: int) -> str:
    return f"{page.relative_to(ROOT)} line {line}"


def page_blocks(page: Path) -> list[tuple[str, list[tuple[str, str]]]]:
    """(where the marker is, [(where, command), ...]) of every block of one page, lines numbered from 1."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks = []
    for i, line in enumerate(lines):
        if line.strip() != MARKER:
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        if j == len(lines) or not lines[j].startswith("```"):
            raise AssertionError(f"{where(page, i + 1)}: {MARKER!r} is not followed by a fenced block")
        commands = []
        k = j + 1
        while k < len(lines) and not lines[k].startswith("```"):
            text = lines[k].strip()
            if text and not text.startswith("#"):
                commands.append((where(page, k + 1), text))
            k += 1
        blocks.append((where(page, i + 1), commands))
    return blocks


def readme_blocks() -> list[tuple[str, list[tuple[str, str]]]]:
    """Every block of the README and the docs, each distinct block once (the first page that writes it)."""
    blocks, seen = [], set()
    for page in PAGES:
        for block in page_blocks(page):
            commands = tuple(command for _, command in block[1])
            if commands not in seen:
                seen.add(commands)
                blocks.append(block)
    return blocks


BLOCKS = readme_blocks()


def block_id(block) -> str:
    words = shlex.split(block[1][0][1]) if block[1] else []
    return " ".join(words[1:3]) or block[0]


def named_paths(words: list[str]) -> list[Path]:
    """The paths a command names: the values of its options that are paths, and for `simulate` and
    `--report` the files written in their folders."""
    from bayes_wsc.outputs import REPORT_CONTENTS

    paths = []
    for option, value in zip(words, words[1:]):
        if not option.startswith("--") or value.startswith("--"):
            continue
        if option == "--report":
            paths += [Path(value) / name for name in REPORT_CONTENTS]
        elif option == "--out" and words[1] == "simulate":
            paths += [Path(value) / name for name in registry.get(words[2]).module("commands").SIMULATE_FILES]
        elif option == "--out" or "/" in value or Path(value).suffix in (".csv", ".nc", ".parquet", ".json"):
            paths.append(Path(value))
    return paths


def test_every_model_has_a_block():
    """Every block starts with `simulate MODEL` and fits the same model; each model's guide has one."""
    for line, commands in BLOCKS:
        assert commands, f"{line}: an empty block"
        first = shlex.split(commands[0][1])
        assert first[:2] == ["bayes-wsc", "simulate"], f"{commands[0][0]}: not a simulate command"
        assert any(shlex.split(c)[1:3] == ["fit", first[2]] for _, c in commands), \
            f"{line}: the block of {first[2]} does not fit it"
    for model in FIT_COMMANDS:
        guide = ROOT / "docs" / "guides" / f"{model}.md"
        models = [shlex.split(commands[0][1])[2] for _, commands in page_blocks(guide)]
        assert models == [model], f"{guide.relative_to(ROOT)}: its blocks simulate {models}, not [{model!r}]"


@pytest.mark.parametrize("block", BLOCKS, ids=[block_id(b) for b in BLOCKS])
def test_block_runs_as_written(block, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    started = time.perf_counter()
    for line, command in block[1]:
        words = shlex.split(command)
        assert words[0] == "bayes-wsc", f"{line}: not a bayes-wsc command"
        code = main(words[1:])
        err = capsys.readouterr().err
        assert code == 0, f"{line}: exit {code}: {command}\n{err}"
        missing = [str(p) for p in named_paths(words) if not (tmp_path / p).exists()]
        assert not missing, f"{line}: {command}\nleft no {missing}"
    elapsed = time.perf_counter() - started
    print(f"{block_id(block)}: {elapsed:.1f} s")


# ---------------------------------------------------------------------- the API examples
#: each registered model's data container, by its class name
CONTAINERS = {spec.data.partition(":")[2]: spec.name for spec in registry.MODELS}


def api_tables(source: str, folder: Path, predict_file: str) -> dict[str, Path]:
    """The tables an API block reads, by the names it gives them, from `bayes-wsc simulate MODEL`'s files in
    `folder`: each name the block uses without defining it, read from `<name>.csv`; new items to predict
    (`new...`) are the training items themselves (the model's contract case's `predict_file`)."""
    import ast
    import builtins

    tree = ast.parse(source)
    names = [node for node in ast.walk(tree) if isinstance(node, ast.Name)]
    defined = {node.id for node in names if isinstance(node.ctx, ast.Store)} | set(dir(builtins))
    defined |= {(alias.asname or alias.name).split(".")[0] for node in ast.walk(tree)
                if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    tables = {}
    for name in sorted({node.id for node in names if isinstance(node.ctx, ast.Load)} - defined):
        if (folder / f"{name}.csv").is_file():
            tables[name] = folder / f"{name}.csv"
        elif name.startswith("new"):
            tables[name] = folder / predict_file
    return tables


def readme_api_blocks() -> list[tuple[str, str, str]]:
    """(where, model, source) of every ```python block of the README and the docs that builds a model's data
    container."""
    blocks = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if line.strip() != "```python":
                continue
            end = next(k for k in range(i + 1, len(lines)) if lines[k].startswith("```"))
            source = "\n".join(lines[i + 1:end])
            models = {model for name, model in CONTAINERS.items() if f"{name}.from_" in source}
            if len(models) == 1:
                blocks.append((where(page, i + 1), models.pop(), source))
    return blocks


API_BLOCKS = readme_api_blocks()


def test_every_model_has_an_api_block():
    assert sorted(model for _, model, _ in API_BLOCKS) == sorted(FIT_COMMANDS)


@pytest.mark.parametrize("block", API_BLOCKS, ids=[b[1] for b in API_BLOCKS])
def test_api_block_reads_the_simulated_files(block, tmp_path, monkeypatch):
    """Each API block's imports and its data container, as written, on the files `bayes-wsc simulate` writes
    (the tables under the names the block uses): a column named `id` is the items' id in every container.
    (The fits that follow in a block are NUTS fits at the default sizes, minutes each: not run here.)"""
    import ast

    import pandas as pd
    from contract_cases import CASES

    line, model, source = block
    monkeypatch.chdir(tmp_path)
    assert main(["simulate", model, "--out", "sim", "--seed", "1", *CASES[model].simulate]) == 0
    monkeypatch.chdir(tmp_path / "sim")
    tables = api_tables(source, Path("."), CASES[model].predict_file)
    namespace = {name: pd.read_csv(file) for name, file in tables.items()}
    tree = ast.parse(source)
    for statement in tree.body:
        code = compile(ast.Module([statement], type_ignores=[]), line, "exec")
        exec(code, namespace)  # noqa: S102 - the page's own example
        if isinstance(statement, ast.Assign) and any(getattr(t, "id", None) == "data" for t in statement.targets):
            break
    data = namespace["data"]
    if "items" in namespace:
        assert list(data.item_ids) == [str(i) for i in namespace["items"]["id"]], \
            f"{line}: the {model} block's container did not take the items' id column as their ids"
