"""Crowd votes drawn from the crowd model itself: each item's class from pi, each source's votes from its
confusion matrix on the items it is asked about, abstentions on the rest; optionally adversarial sources
(always a wrong class), for the agreement check's power. `example(seed)` (the registry's small data) and
`sbc_case`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from bayes_wsc.errors import InputError

#: the honest sources' accuracies (diagonal of their confusion matrices), cycled over the sources
ACCURACIES = (0.9, 0.8, 0.7, 0.65, 0.6)


@dataclass
class CrowdTruth:
    """What the simulation drew: the class prior, each source's confusion matrix and the items' classes."""

    classes: np.ndarray
    sources: np.ndarray
    pi: np.ndarray  # (K,)
    confusion: np.ndarray  # (S, K, K)
    z: np.ndarray  # (n,) class index per item

    @property
    def accuracy(self) -> np.ndarray:
        return np.diagonal(self.confusion, axis1=1, axis2=2).mean(axis=1)


def draw_confusion(accuracy: float, k: int, rng: np.random.Generator) -> np.ndarray:
    """A (K, K) confusion matrix with `accuracy` on the diagonal and each row's errors spread over the other
    classes by a flat Dirichlet (so that errors differ by class, as Dawid and Skene's model allows)."""
    out = np.zeros((k, k))
    for c in range(k):
        others = [v for v in range(k) if v != c]
        out[c, others] = (1.0 - accuracy) * rng.dirichlet(np.ones(k - 1))
        out[c, c] = accuracy
    return out


def adversarial_confusion(k: int) -> np.ndarray:
    """A source that never gives the true class: each row's votes spread evenly over the other classes."""
    out = np.full((k, k), 1.0 / (k - 1))
    np.fill_diagonal(out, 0.0)
    return out


def simulate_crowd(n_items: int = 200, n_classes: int = 3, n_sources: int = 5, *, vote_rate: float = 0.6,
                   adversarial: int = 0, random: int = 0, concentration: float = 5.0, seed: int | None = 0
                   ) -> tuple[pd.DataFrame, CrowdTruth]:
    """The votes table (item, source, vote; an empty vote an abstention) and the truth: pi ~
    Dirichlet(`concentration`), z_j ~ pi, `n_sources` honest sources at `ACCURACIES` (errors from
    `draw_confusion`), `adversarial` sources that never give the true class and `random` sources that vote
    uniformly whatever the class; each source votes on round(vote_rate n) random items and abstains on the
    rest."""
    if n_classes < 2 or n_items < 2 or n_sources + adversarial + random < 1:
        raise InputError(f"the crowd simulation needs 2 classes, 2 items and a source or more, got {n_classes} "
                         f"classes, {n_items} items, {n_sources + adversarial + random} sources")
    if not 0 < vote_rate <= 1:
        raise InputError(f"vote_rate must be in (0, 1], got {vote_rate!r}")
    rng = np.random.default_rng(seed)
    pi = rng.dirichlet(np.full(n_classes, float(concentration)))
    z = rng.choice(n_classes, size=n_items, p=pi)
    confusion = np.stack([draw_confusion(ACCURACIES[s % len(ACCURACIES)], n_classes, rng) for s in range(n_sources)]
                         + [adversarial_confusion(n_classes)] * adversarial
                         + [np.full((n_classes, n_classes), 1.0 / n_classes)] * random)
    classes = np.array([f"c{c}" for c in range(n_classes)], dtype=object)
    ids = np.array([f"item{j}" for j in range(n_items)], dtype=object)
    sources = np.array([f"annotator{s + 1}" for s in range(n_sources)]
                       + [f"adversary{s + 1}" for s in range(adversarial)]
                       + [f"random{s + 1}" for s in range(random)], dtype=object)
    rows = []
    for s in range(sources.size):
        asked = np.zeros(n_items, dtype=bool)
        asked[rng.choice(n_items, max(1, int(round(vote_rate * n_items))), replace=False)] = True
        for j in range(n_items):
            rows.append((ids[j], sources[s], classes[rng.choice(n_classes, p=confusion[s, z[j]])] if asked[j] else None))
    votes = pd.DataFrame(rows, columns=["item", "source", "vote"])
    return votes, CrowdTruth(classes, sources, pi, confusion, z)


def differs_from_the_fit(concentration: float = 5.0) -> str:
    """How `simulate_crowd`'s data differ from a draw of the crowd model's own prior at its defaults (truth.json's
    `differs_from_the_fit`); `sbc_case` draws every parameter from that prior instead."""
    return (f"pi ~ Dirichlet({concentration:g}, ...) where the fit's prior is Dirichlet(1, ...), and each honest "
            "source's confusion matrix has a fixed accuracy on its diagonal "
            f"({', '.join(f'{a:g}' for a in ACCURACIES)}, "
            "cycled over the sources; adversarial sources never give the true class), where the fit's prior draws "
            "each row from Dirichlet(1, ..., 4 at the true class, ..., 1). Data drawn from the fit's own prior: "
            "`sbc_case` of bayes_wsc.models.crowd.simulate, which tests/test_truth_coverage_slow.py fits.")


def example(seed: int | None = 0):
    """Small data of the model: 60 items, 3 classes, 4 sources each voting on 70% of the items (the rest
    abstentions). The registry's example (a fit takes seconds)."""
    from bayes_wsc.models.crowd.data import CrowdVotes

    votes, truth = simulate_crowd(60, 3, 4, vote_rate=0.7, seed=seed)
    return CrowdVotes.from_frame(votes, classes=list(truth.classes))


def sbc_case(n_items: int = 30, n_classes: int = 2, n_sources: int = 3, *, vote_rate: float = 0.7,
             draws: int = 400, tune: int = 400, chains: int = 2, seed: int = 0):
    """Simulation-based calibration of `CrowdClassifier` (see `bayes_wsc.sbc`).

    Fixed across simulations: which items each source votes on. Drawn per simulation from the model's prior
    (`pm.draw` of its free variables): pi and the confusion matrices; then each item's class from pi and
    every cast vote from its source's confusion row. Ranked: pi and each source's accuracy."""
    from bayes_wsc.models.crowd.data import CrowdVotes
    from bayes_wsc.models.crowd.model import CrowdClassifier
    from bayes_wsc.sbc import SBCCase

    rng = np.random.default_rng([seed, 43])
    votes, _ = simulate_crowd(n_items, n_classes, n_sources, vote_rate=vote_rate, seed=rng.integers(2**31))
    classes = [f"c{c}" for c in range(n_classes)]
    template = CrowdVotes.from_frame(votes.assign(vote=votes["vote"].where(votes["vote"].isna(), classes[0])),
                                     classes=classes)

    def simulate(draw, sim_rng):
        z = sim_rng.choice(n_classes, size=n_items, p=np.asarray(draw["pi"]))
        confusion = np.asarray(draw["confusion"])
        parts = {f: getattr(template, f) for f in template.__dataclass_fields__}
        cast = template.cast
        vote = np.full(template.vote.size, -1)
        vote[cast] = [sim_rng.choice(n_classes, p=confusion[s, z[j]])
                      for j, s in zip(template.vote_item[cast], template.vote_source[cast])]
        parts["vote"] = vote
        return CrowdVotes(**parts)

    def estimator(est_seed):
        return CrowdClassifier(method="nuts", draws=draws, tune=tune, chains=chains, seed=est_seed, progressbar=False)

    quantities = [f"pi[{c}]" for c in range(n_classes)] + [f"accuracy[{s}]" for s in range(n_sources)]
    description = (f"crowd, n = {n_items} items, K = {n_classes}, {n_sources} sources voting on {vote_rate:.0%} of "
                   f"the items each; NUTS {chains} chains x ({tune} + {draws})")
    return SBCCase("crowd", template, simulate, estimator, quantities, description=description)


__all__ = ["simulate_crowd", "differs_from_the_fit",
           "draw_confusion", "adversarial_confusion", "example", "sbc_case", "CrowdTruth"]
