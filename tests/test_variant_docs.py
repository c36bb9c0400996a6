"""The documentation's "Writing a model variant" (docs/variants.md) stays true to the code, so that a variant can be written from it.

Read from the section: the table (one row per model: its blocks and helpers, its shipped variants), and
each model's subsection: the signatures written as `name(params)`, the keys and shapes of the MAP's
starts ("Starts and held values": `key` (shape)) and the recorded log-likelihood ("LOO: `name[dim]`,
recorded by `block`"). Checked against the modules, the estimators' `initial_values(data)` on small
simulated data (no fit, no PyMC) and the files in models/.
"""

import ast
import importlib
import inspect
import re
from pathlib import Path

import numpy as np
import pytest

from bayes_wsc import registry
from bayes_wsc.inference import LOG_LIKELIHOOD_PREFIX
from bayes_wsc.models.wsc import WSC

ROOT = Path(__file__).resolve().parents[1]
MODELS = registry.NAMES
#: `name(params)` in backticks, the name first
CALL = re.compile(r"`([A-Za-z_]\w*)\(([^`]*)\)`")
#: a start's key and its shape: `key` (I,) or `key` () -- a count such as `restarts` (20) has no comma
START = re.compile(r"`(\w+)`\s+(\(\)|\([^()]*,[^()]*\))")


def section() -> str:
    """The page docs/variants.md up to its last part, "Checking a model of your own"."""
    text = (ROOT / "docs" / "variants.md").read_text()
    start = text.index("# Writing a model variant")
    end = text.index("\n## Checking a model of your own", start + 1)
    return text[start:end]


def table() -> dict[str, tuple[list[str], list[str]]]:
    """model -> (blocks and helpers, shipped variant files), from the section's table."""
    rows = {}
    for line in section().splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        model = cells[0].strip("`")
        names = [n for n in re.findall(r"`([^`]+)`", cells[1]) if n.isidentifier()]
        variants = re.findall(r"`([\w.]+\.py)`", cells[2])
        rows[model] = (names, variants)
    return rows


def subsection(model: str) -> str:
    """The model's subsection, found by its heading's (`model`)."""
    parts = section().split("\n## ")[1:]
    found = [p for p in parts if p.splitlines()[0].endswith(f"(`{model}`)")]
    assert len(found) == 1, f"docs/variants.md has no subsection for {model!r} under Writing a model variant"
    return found[0]


def paragraph(text: str, opening: str) -> str:
    start = text.index(opening)
    end = text.find("\n\n", start)
    return text[start:end if end >= 0 else None]


def module(model: str):
    """The module of the model's estimator, where its blocks live (`registry.py`)."""
    return importlib.import_module(registry.get(model).estimator.partition(":")[0])


def test_the_table_has_a_row_and_a_subsection_per_model():
    assert set(table()) == set(MODELS)
    for model in MODELS:
        subsection(model)


@pytest.mark.parametrize("model", MODELS)
def test_every_block_and_helper_named_exists(model):
    names, _ = table()[model]
    assert names, f"the {model} row names no blocks"
    bullets = re.findall(r"^\* `([A-Za-z_]\w*)\(", subsection(model), flags=re.M)
    for name in names + bullets:
        assert callable(getattr(module(model), name, None)), f"{module(model).__name__} has no {name}"


def documented_calls(model: str):
    """(name, function, documented parameters) of every `name(params)` in the subsection that names a
    function of the model's module and reads as a parameter list (not a call such as `f(data, est.wh)`)."""
    out = []
    for name, params in CALL.findall(subsection(model)):
        function = getattr(module(model), name, None)
        if not inspect.isfunction(function):
            continue
        try:
            tree = ast.parse(f"def f({' '.join(params.split())}): pass")
        except SyntaxError:
            continue
        out.append((name, function, tree.body[0].args))
    return out


@pytest.mark.parametrize("model", MODELS)
def test_documented_signatures_and_defaults_are_the_code(model):
    """Parameters in order, keyword-only where the page puts them after `*`, and every default it
    states equal to the code's: the priors and settings a variant starts from."""
    calls = documented_calls(model)
    assert "build_model" in [c[0] for c in calls], f"the {model} subsection does not give build_model's settings"
    for name, function, args in calls:
        real = list(inspect.signature(function).parameters.values())
        written = [(a.arg, False) for a in args.args] + [(a.arg, True) for a in args.kwonlyargs]
        assert len(written) <= len(real), f"{name}: the page lists more parameters than {name} takes"
        defaults = dict(zip([a.arg for a in args.args][len(args.args) - len(args.defaults):], args.defaults))
        defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
        for (arg, keyword_only), param in zip(written, real):
            assert arg == param.name, f"{name}: the page has {arg!r} where the code has {param.name!r}"
            assert keyword_only == (param.kind is param.KEYWORD_ONLY), f"{name}({arg}): keyword-only or not"
            if arg in defaults:
                value = ast.literal_eval(defaults[arg])
                assert param.default is not param.empty and param.default == value, \
                    f"{name}({arg}): the page says {value!r}, the code {param.default!r}"
        missing = [p.name for p in real[len(written):] if p.default is p.empty]
        assert not missing, f"{name}: the page leaves out required parameters {missing}"


# ---------------------------------------------------------------------- the settings and starts, on data
def configurations(model: str):
    """(estimator, data, sizes) for each configuration of a registered model whose starts differ: the sizes
    name the page's shape symbols (`<model>_configurations`, beside the model's contract case in
    contract_cases.py)."""
    import contract_cases

    found = getattr(contract_cases, f"{model}_configurations", None)
    assert found is not None, f"contract_cases.py has no {model}_configurations for the page's shapes"
    return found()


def returned_starts(est, data) -> dict[str, tuple]:
    starts = est.initial_values(data)
    starts = [starts] if isinstance(starts, dict) else starts
    assert starts, f"{type(est).__name__}.initial_values returned no start"
    return {key: np.shape(value) for start in starts for key, value in start.items()}


@pytest.mark.parametrize("model", MODELS)
def test_the_starts_the_readme_lists_are_the_estimators(model):
    """Every key the page lists is returned by the estimator's `initial_values(data)`, with the shape it
    gives, in some configuration of the model; and every key returned is listed."""
    listed = START.findall(paragraph(subsection(model), "Starts and held values:"))
    assert listed, f"the {model} subsection lists no starts"
    configs = [(returned_starts(est, data), sizes) for est, data, sizes in configurations(model)]
    returned = set().union(*(set(r) for r, _ in configs))
    for key, shape in listed:
        assert key in returned, f"the page lists {key!r}, which {model}'s initial_values never returns"
        terms = [t.strip() for t in shape.strip("()").split(",") if t.strip()]
        wanted = [tuple(int(eval(t, {"__builtins__": {}}, sizes)) for t in terms) for _, sizes in configs]
        got = [r[key] for r, _ in configs if key in r]
        assert any(g in wanted for g in got), f"{model} start {key!r}: the page says {shape}, it is {got}"
    assert returned <= {key for key, _ in listed}, \
        f"{model}'s initial_values returns {sorted(returned - {k for k, _ in listed})}, which the page omits"


@pytest.mark.parametrize("model", MODELS)
def test_build_model_takes_the_settings_the_estimator_passes(model):
    """The documented build_model's settings are the ones a variant receives (`build_settings`)."""
    documented = {name: args for name, _, args in documented_calls(model)}["build_model"]
    settings = {a.arg for a in documented.args[1:] + documented.kwonlyargs}
    for est, _, _ in configurations(model):
        assert set(est.build_settings()) <= settings
    if model == "wsc":
        assert set(WSC(mu="integrated", method="nuts").build_settings()) <= settings


# ---------------------------------------------------------------------- LOO and the shipped variants
@pytest.mark.parametrize("model", MODELS)
def test_the_recorded_log_likelihood_is_the_blocks(model):
    """"LOO: `name[dim]`, recorded by `block`": that block records the name with that dim."""
    found = re.search(r"LOO: `(\w+)\[(\w+)\]`, recorded by `(\w+)`", subsection(model))
    assert found, f"the {model} subsection does not say what its likelihood block records"
    name, dim, block = found.groups()
    source = inspect.getsource(getattr(module(model), block))
    assert re.search(rf'record_pointwise\(\s*"{name}",.*?dims="{dim}"\)', source, flags=re.S), \
        f"{block} does not record {name!r} along {dim!r}"
    assert f"`{LOG_LIKELIHOOD_PREFIX}<name>`" in section()


def test_every_shipped_variant_is_in_its_models_row():
    rows = table()
    shipped = {p.name for p in (ROOT / "models").glob("*.py")}
    named = {v: model for model, (_, variants) in rows.items() for v in variants}
    assert shipped == set(named), (f"models/ holds {sorted(shipped - set(named))} not in the table; the table "
                                   f"names {sorted(set(named) - shipped)} not in models/")
    owner = {f"bayes_wsc.models.{name}": name for name in registry.NAMES}  # a model's folder, or a module of it
    for variant, model in named.items():
        imports = set(re.findall(r"from (bayes_wsc\.models\.[\w.]+) import", (ROOT / "models" / variant).read_text()))
        assert {owner.get(".".join(i.split(".")[:3]), i) for i in imports} == {model}, \
            f"{variant} is in the {model} row but builds from {sorted(imports)}"
