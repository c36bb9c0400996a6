"""The package's imports follow its layers (ARCHITECTURE.md, "Layers"): nothing flows back.

Every module of `bayes_wsc/` is read with `ast`, every import counted, those inside functions too
(a lazy import is still a dependency). A module may import modules of its own layer or of a lower
one; a model file imports neither another model nor a baseline (what they share lives in
`maths/`); and no modules import each other in a circle. The layers are a rule by path prefix,
not a list of today's files: a new module falls in its folder's layer, and a module that no
prefix covers fails until ARCHITECTURE.md and `LAYERS` place it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "bayes_wsc"

#: layers from the bottom up; a module's layer is that of the longest prefix of its path (within bayes_wsc/)
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("__init__.py", "_lazy.py", "_moved.py", "_runtime.py", "errors.py", "defaults.py", "version.py",
                    "registry.py", "contract.py", "settings.py", "jax_setup.py", "backends.py", "stack.py", "draws.py",
                    "draw_stats.py", "psis.py", "transforms.py", "relabel.py", "status.py", "group_quadrature.py",
                    "outputs.py", "value_checks.py", "datasets/")),
    ("data", ("data/",)),
    ("maths", ("maths/",)),
    ("inference", ("netcdf_reader.py", "inference.py", "posterior.py", "diagnostics.py", "map_program.py",
                   "laplace.py", "nested_laplace.py", "fit.py",
                   "likelihoods.py", "graph_inputs.py", "model_terms.py", "comparison.py", "criticism.py")),
    ("baselines", ("baselines/",)),
    ("reports", ("report/",)),
    ("estimator", ("estimator.py", "estimator_settings.py", "model_hooks.py", "fit_criticism.py", "class_checks.py",
                   "variant_files.py", "fit_files.py", "fit_log_likelihood.py", "fit_starts.py", "sbc.py")),
    ("models", ("models/",)),
    ("model checks", ("checks/",)),
    ("simulations", ("simulate/",)),
    ("commands", ("commands/", "demo.py")),
    ("command line", ("cli.py",)),
    ("testing", ("testing.py",)),
)
#: a model that is one folder (`models/<name>/`) has a module per role, each in the layer of its role
ROLE_LAYERS = {"settings.py": "foundation", "data.py": "data", "baselines.py": "baselines", "report.py": "reports",
               "__init__.py": "models", "model.py": "models", "checks.py": "model checks", "simulate.py": "simulations", "command.py": "commands"}
#: folders whose modules must not import these folders, though they lie below: a model stands alone
#: (a sixth model is added without touching the others) and is not built on its paper's baselines
SEPARATE = {"models/": ("models/", "baselines/")}
#: within a model folder, roles that must not import these roles, though they lie below: the model is not
#: built on its paper's baselines (what they share lives in `maths/`)
SEPARATE_ROLES = {"model.py": ("baselines.py",), "__init__.py": ("baselines.py",)}


def module_paths() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def relative(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def model_folder(rel: str) -> str | None:
    """"models/<name>/" for a module of a model that is one folder, else None."""
    parts = rel.split("/")
    return f"models/{parts[1]}/" if len(parts) == 3 and parts[0] == "models" else None


def layer_of(path: Path) -> int | None:
    """The index in `LAYERS` of the longest prefix matching the module's path, None when none does; a
    module of a model folder (`models/<name>/<role>.py`) is in its role's layer (`ROLE_LAYERS`)."""
    rel, best, found = relative(path), -1, None
    if model_folder(rel):
        role = ROLE_LAYERS.get(rel.rsplit("/", 1)[1])
        return None if role is None else [name for name, _ in LAYERS].index(role)
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (rel == prefix or (prefix.endswith("/") and rel.startswith(prefix))) and len(prefix) > best:
                best, found = len(prefix), index
    return found


def imports(name: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """The package's modules that `name` imports anywhere in its file, with the line: `import a.b`,
    `from a import b` (b a module, else a), relative imports resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name and (target, node.lineno) not in found:
                found.append((target, node.lineno))
    return found


MODULES = module_paths()
EDGES = {name: imports(name, path, MODULES) for name, path in MODULES.items()}


def test_every_module_has_a_layer():
    unplaced = [relative(p) for p in MODULES.values() if layer_of(p) is None]
    assert not unplaced, f"no layer covers {unplaced}: place them in LAYERS and in ARCHITECTURE.md's Layers"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_import_climbs_a_layer(name):
    path = MODULES[name]
    own = layer_of(path)
    if own is None:
        pytest.skip("no layer (test_every_module_has_a_layer fails)")
    climbing = []
    for target, line in EDGES[name]:
        theirs = layer_of(MODULES[target])
        if theirs is not None and theirs > own:
            climbing.append(f"{relative(path)}:{line} imports {target} ({LAYERS[theirs][0]}, above "
                            f"{LAYERS[own][0]})")
        for folder, barred in SEPARATE.items():
            target_path = relative(MODULES[target])
            own_folder = model_folder(relative(path))
            if own_folder and target_path.startswith(own_folder):
                own_role, target_role = relative(path).rsplit("/", 1)[1], target_path.rsplit("/", 1)[1]
                if target_role in SEPARATE_ROLES.get(own_role, ()):
                    climbing.append(f"{relative(path)}:{line} imports {target}: a model's {own_role} imports "
                                    f"no {target_role} of its folder")
                continue  # a model folder's roles import each other by layer
            if relative(path).startswith(folder) and any(target_path.startswith(b) for b in barred):
                climbing.append(f"{relative(path)}:{line} imports {target}: a module of {folder} imports "
                                f"none of {', '.join(barred)}")
    assert not climbing, "\n".join(climbing)


def test_no_import_circles():
    """No chain of imports (inside functions too) leads from a module back to itself."""
    graph = {name: sorted({t for t, _ in targets}) for name, targets in EDGES.items()}
    state, stack, circles = {}, [], []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in graph[node]:
            if state.get(nxt) == "open":
                circles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in graph:
        if node not in state:
            visit(node)
    assert not circles, "\n".join(circles)


def test_the_rule_catches_a_climbing_import(tmp_path):
    """The walk itself: an import inside a function, from a lower layer to a higher one, is seen."""
    source = "def f():\n    from bayes_wsc.models import wsc\n    import bayes_wsc.cli\n"
    fake = tmp_path / "fake.py"
    fake.write_text(source)
    found = {t for t, _ in imports("bayes_wsc.data.fake", fake, MODULES)}
    assert found == {"bayes_wsc.models.wsc", "bayes_wsc.cli"}
    assert layer_of(PACKAGE / "data" / "fake.py") < layer_of(MODULES["bayes_wsc.models.wsc"])


def test_a_model_folders_roles_have_their_layers():
    """models/<name>/data.py is data, model.py a model, checks.py a model check, command.py a command."""
    layers = [name for name, _ in LAYERS]
    for role, layer in ROLE_LAYERS.items():
        assert layer_of(PACKAGE / "models" / "any" / role) == layers.index(layer), role
    assert layer_of(PACKAGE / "models" / "any" / "other.py") is None


def test_architecture_states_these_layers():
    """ARCHITECTURE.md's "Layers" table lists the layers of `LAYERS`, in the same order."""
    text = (PACKAGE.parent / "ARCHITECTURE.md").read_text()
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    stated = [m.group(1) for m in re.finditer(r"^\| \d+ \| ([^|]+?) \|", section, re.MULTILINE)]
    assert [s.lower() for s in stated] == [name.lower() for name, _ in LAYERS]


#: the layer of each part the registry names (`registry.ModelSpec`), by its role
PART_LAYERS = {"estimator": "models", "data": "data", "commands": "commands", "checks": "model checks",
               "report": "reports", "simulate": "simulations", "example_data": "simulations"}


def test_the_registrys_parts_lie_in_their_roles_layers():
    """The registry names each model's parts as text, imported on use (by the loader, the checks, the
    command line): edges no `import` statement shows. Here they are read as edges too: every part names a
    module of the package, in the layer of its role, so that what resolves it at run time (criticism,
    cli, estimator.load) reaches the part the layers say it may."""
    from dataclasses import fields

    from bayes_wsc import registry

    wrong = []
    for spec in registry.MODELS:
        for role in (f.name for f in fields(spec) if f.name != "name"):
            module = getattr(spec, role).partition(":")[0]
            if module not in MODULES:
                wrong.append(f"{spec.name}.{role}: {module} is not a module of the package")
            elif LAYERS[layer_of(MODULES[module])][0] != PART_LAYERS[role]:
                wrong.append(f"{spec.name}.{role}: {module} is in the {LAYERS[layer_of(MODULES[module])][0]} layer, "
                             f"not {PART_LAYERS[role]}")
    assert not wrong, "\n".join(wrong)
