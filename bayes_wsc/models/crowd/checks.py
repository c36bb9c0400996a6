"""Checks of the crowd model: does each source agree with what the other sources say?

To Dawid and Skene's likelihood a source that always answers wrong is a reliable source with a permuted
confusion matrix, so no in-sample replicate of its own votes can catch it: the fit describes it well. The
check asks instead whether each source agrees with the others. At each draw of pi and the confusion
matrices, every item's class is computed from the *other* sources' votes alone, r_-s(j) (the source's own
votes taken out of the item's evidence; parameters are the whole fit's, not a refit without the source), and
the source's agreement is the mean probability r_-s gives its votes. It is compared with a source that votes
independently of the class at this source's own vote frequencies (chance), drawn anew at each draw:

* `source_agreement`: per source, p = P(chance agreement <= observed) (lower tail: a source agreeing less
  than chance contradicts the others), effect = chance - observed, tolerance `CHANCE_TOLERANCE`; the row
  names the worst source beyond the tolerance, Bonferroni over the sources, and flags below `criticism.ALPHA`.
  A noisy or random source does not flag (the model learns its reliability); one worse than chance does.
  Its power on an adversarial annotator and its false alarms on honest ones: `benchmarks/crowd_check.py`.

The replicated data for `ppc` are each source's vote shares per class (`vote_share`), with every item's class
drawn anew from pi and each cast vote from its source's confusion row (abstentions kept where they are).
"""

from __future__ import annotations

import numpy as np

from bayes_wsc._lazy import LazyModule
from bayes_wsc.criticism import ALPHA, Check, Replicates, p_value_upper
from bayes_wsc.maths.dawid_skene import vote_evidence, vote_inputs

special = LazyModule("scipy.special")

#: a source's agreement with the others this far below chance flags
CHANCE_TOLERANCE = 0.05


def variates(data) -> int:
    return int(data.n_items + data.vote.size)


def parameters(posterior) -> list[str]:
    return ["pi", "confusion"]


def default_log_likelihood(est, data, params: dict) -> np.ndarray:
    """The default model's per-unit log-likelihood in NumPy (`model.unit_log_likelihood`)."""
    from bayes_wsc.models.crowd.model import unit_log_likelihood

    return unit_log_likelihood(data, params)


def _draw(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A class per row of (..., K) probabilities."""
    u = rng.random(probs.shape[:-1])[..., None]
    return np.minimum((u > np.cumsum(probs, axis=-1)).sum(axis=-1), probs.shape[-1] - 1)


def others_posterior(data, pi: np.ndarray, confusion: np.ndarray) -> np.ndarray:
    """(S, V, K) for each cast vote, its item's class given the other sources' votes: log pi plus the item's
    vote evidence less this vote's own term, normalized."""
    inputs = vote_inputs(data)
    log_confusion = np.log(confusion)
    evidence = np.log(pi)[:, None, :] + vote_evidence(data, confusion)
    own = np.moveaxis(log_confusion[:, inputs["vote_source"], :, inputs["vote_value"]], 0, 1)  # (S, V, K)
    return np.exp(special.log_softmax(evidence[:, inputs["vote_item"]] - own, axis=-1))


def agreement(data, r_others: np.ndarray, votes: np.ndarray) -> np.ndarray:
    """(S, sources) each source's mean probability under the others of `votes` (S, V), one per cast vote."""
    sources = vote_inputs(data)["vote_source"]
    counts = np.maximum(np.bincount(sources, minlength=data.n_sources), 1)
    given = np.take_along_axis(r_others, votes[..., None], axis=-1)[..., 0]
    return np.stack([np.bincount(sources, weights=row, minlength=data.n_sources) for row in given]) / counts


def replicate(est, data, params: dict, rng: np.random.Generator) -> Replicates:
    pi, confusion = np.asarray(params["pi"], float), np.asarray(params["confusion"], float)
    n_rep, k = pi.shape
    inputs = vote_inputs(data)
    items, sources, votes = inputs["vote_item"], inputs["vote_source"], inputs["vote_value"]
    z = _draw(np.broadcast_to(pi[:, None, :], (n_rep, data.n_items, k)), rng)
    new_votes = _draw(confusion[np.arange(n_rep)[:, None], sources[None, :], z[:, items]], rng)  # (S, V)
    counts = np.maximum(np.bincount(sources, minlength=data.n_sources), 1)[:, None]

    def shares(v):
        return np.bincount(v + k * sources, minlength=k * data.n_sources).reshape(data.n_sources, k) / counts

    r_others = others_posterior(data, pi, confusion)
    chance = np.empty((n_rep, votes.size), dtype=np.int64)
    for s in range(data.n_sources):
        mine = sources == s
        if mine.any():
            frequency = np.bincount(votes[mine], minlength=k) / mine.sum()
            chance[:, mine] = rng.choice(k, size=(n_rep, int(mine.sum())), p=frequency)
    observed_agreement = agreement(data, r_others, np.broadcast_to(votes, (n_rep, votes.size)))
    return Replicates({"vote_share": np.stack([shares(v) for v in new_votes])}, {"vote_share": shares(votes)},
                      dims={"vote_share": ["source", "class"]},
                      coords={"source": list(data.source_names), "class": list(data.classes)},
                      realized={"source_agreement": (observed_agreement, agreement(data, r_others, chance))})


def rows(est, data, replicates: Replicates) -> list[Check]:
    observed, chance = replicates.realized["source_agreement"]
    voted = np.bincount(vote_inputs(data)["vote_source"], minlength=data.n_sources) > 0
    return [agreement_row(observed[:, voted], chance[:, voted], data.source_names[voted])]


def agreement_row(observed: np.ndarray, chance: np.ndarray, names) -> Check:
    """The `source_agreement` row from each source's agreement with the others and chance's, (S, sources)."""
    p = np.atleast_1d(p_value_upper(-observed, -chance))  # P(chance <= observed), draw by draw
    effect = chance.mean(axis=0) - observed.mean(axis=0)
    beyond = effect > CHANCE_TOLERANCE
    pool = np.flatnonzero(beyond) if beyond.any() else np.arange(p.size)
    worst = int(pool[np.argmin(p[pool])])
    p_corrected = float(min(1.0, p[worst] * p.size))
    flagged = bool(beyond.any()) and p_corrected < ALPHA
    words = (f"source {names[worst]!r} gives its votes mean probability {observed[:, worst].mean():.3g} under the "
             f"other sources, where votes independent of the class at its own frequencies (chance) give "
             f"{chance[:, worst].mean():.3g} (effect {effect[worst]:.3g}, tolerance {CHANCE_TOLERANCE:g}; "
             f"p = {p_corrected:.3g}, Bonferroni over {p.size} sources)")
    if flagged:
        message = (f"A source contradicts the others: {words}. It votes against what the others say, as an "
                   "adversarial or mislabelled annotator would (its confusion matrix is then no guide to its "
                   "errors): look at its votes, or fit without it and compare.")
    else:
        message = f"No source contradicts the others; the least consistent: {words}."
    return Check("source_agreement", float(observed[:, worst].mean()), float(chance[:, worst].mean()), p_corrected,
                 flagged, message, float(effect[worst]), CHANCE_TOLERANCE)


def targeted() -> list:
    return []
