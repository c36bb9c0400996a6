"""Every model of the package, registered once: its name and where each of its parts lives.

The loader (`estimator.load`), the checks (`criticism.MODULES`), the command
line (`bayes-wsc fit | path | simulate | baseline`), `bayes_wsc.__all__` and
the tests that every model must pass all read this table, so a new model is
known everywhere by one entry in `MODELS`.

Parts are named as "module" or "module:attribute" text and imported on first
use: reading the table imports nothing, so `import bayes_wsc` and the command
line's start-up stay free of PyMC. Each part is checked against its role's
interface (`contract.py`) when it is first imported, and `ModelSpec.check`
checks them all at once: a part lacking a name of its role is one
`contract.ContractError` line naming what is missing.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass

from bayes_wsc import contract


def resolve(target: str):
    """The object that "module:attribute" names (a module when there is no attribute)."""
    module, _, attribute = target.partition(":")
    loaded = importlib.import_module(module)
    return getattr(loaded, attribute) if attribute else loaded


@dataclass(frozen=True)
class ModelSpec:
    """One model: its name (as `bayes-wsc fit NAME` and a fit file's `model` attribute say it) and its parts.

    estimator, data : "module:Class" of the `Estimator` subclass and of the data container its `fit` takes.
    commands : the module of `bayes-wsc fit NAME` (`add_parser`, `run`; optionally the path, simulate and
        baseline commands).
    checks : the module of the model's checks (`replicate`, `rows`; see `criticism.py`).
    report : the module of the model's HTML report (`write_report`).
    simulate : the module of its paper's simulation study.
    example_data : "module:function" of `function(seed)`, a small simulated data container of the model.
    """

    name: str
    estimator: str
    data: str
    commands: str
    checks: str
    report: str
    simulate: str
    example_data: str

    def estimator_class(self) -> type:
        """The model's `Estimator` subclass (imports its model file, not PyMC), checked to be this model's."""
        cls = resolve(self.estimator)
        if getattr(cls, "model_name", None) != self.name:
            raise contract.ContractError(f"model {self.name!r}: its estimator {self.estimator} says model_name = "
                                         f"{getattr(cls, 'model_name', None)!r}, not {self.name!r}")
        return cls

    def data_class(self) -> type:
        """The data container the model's `fit` takes."""
        return resolve(self.data)

    def example(self, seed: int = 0):
        """A small data container simulated from the model's study (a fit takes seconds), reproducible by `seed`."""
        return resolve(self.example_data)(seed=seed)

    def module(self, part: str):
        """One of the model's modules, imported and checked against its role (`contract.ROLES`): `part` is
        "commands", "checks", "report" or "simulate"."""
        return _checked_module(self.name, part, getattr(self, part))

    def check(self) -> None:
        """Every part of the model imported and checked against the contract (its estimator class, data
        container and modules): one `contract.ContractError` line for the first part that breaks it."""
        cls = self.estimator_class()
        if cls.data_class is not self.data_class():
            raise contract.ContractError(f"model {self.name!r}: its estimator's data_class is "
                                         f"{cls.data_class!r}, but the registry names {self.data}")
        for part in contract.ROLES:
            self.module(part)


@functools.cache
def _checked_module(model: str, part: str, name: str):
    module = importlib.import_module(name)
    contract.check_module(model, part, module)
    return module


def _folder(name: str, estimator: str, data: str) -> ModelSpec:
    """A model that is one folder, `models/<name>/`, with a module per role: model, checks, command, report,
    simulate (and its data container's `data`, unless the container is shared by several models and lives in
    `data/`: then `data` is its "module:Class")."""
    base = f"bayes_wsc.models.{name}"
    return ModelSpec(name=name, estimator=f"{base}.model:{estimator}",
                     data=data if ":" in data else f"{base}.data:{data}",
                     commands=f"{base}.command", checks=f"{base}.checks", report=f"{base}.report",
                     simulate=f"{base}.simulate", example_data=f"{base}.simulate:example")


#: every model, in the order the command line lists them
MODELS: tuple[ModelSpec, ...] = (
    _folder("wsc", "WSC", "bayes_wsc.data.grouped:GroupedCounts"),
    _folder("pcmix", "PCMixture", "bayes_wsc.data.labeled:LabeledItems"),
    _folder("experts", "NoisyExperts", "bayes_wsc.data.pairwise:PairwiseConstraints"),
    _folder("proportions", "ProportionsClassifier", "bayes_wsc.data.proportions:LabelProportions"),
    _folder("perception", "PerceptionClustering", "SeedSets"),
    _folder("combined", "CombinedClassifier", "CombinedSupervision"),
    _folder("crowd", "CrowdClassifier", "CrowdVotes"),
)

NAMES: tuple[str, ...] = tuple(spec.name for spec in MODELS)


def get(name: str) -> ModelSpec:
    """The model registered as `name`; a `KeyError` naming the known ones otherwise."""
    for spec in MODELS:
        if spec.name == name:
            return spec
    raise KeyError(f"no model {name!r} is registered (known: {', '.join(NAMES)})")


def public_names() -> dict[str, str]:
    """What `bayes_wsc` exports, name -> "module:attribute": every estimator and data container, and the
    package's own functions and errors."""
    names = {}
    for spec in MODELS:
        for target in (spec.estimator, spec.data):
            names[target.partition(":")[2]] = target
    names.update({"load": "bayes_wsc.estimator:load", "compare": "bayes_wsc.comparison:compare",
                  "InputError": "bayes_wsc.errors:InputError", "FitWarning": "bayes_wsc.errors:FitWarning"})
    return names
