"""Data drawn from the combined model itself: items with features, a class per item, and every kind of
supervision drawn from the true classes; `example(seed)` (the registry's small data) and `sbc_case`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import softmax

from bayes_wsc.errors import InputError


@dataclass
class CombinedTruth:
    """What the simulation drew: each item's class, the class model, each source's reliability."""

    classes: np.ndarray
    W: np.ndarray  # (K, D)
    b: np.ndarray  # (K,)
    accuracy: np.ndarray  # per annotator
    alpha: np.ndarray  # per expert
    beta: np.ndarray


def _confusion(accuracy: float, k: int) -> np.ndarray:
    """A confusion matrix with `accuracy` on the diagonal and the rest spread evenly."""
    out = np.full((k, k), (1.0 - accuracy) / (k - 1))
    np.fill_diagonal(out, accuracy)
    return out


def supervision_tables(z: np.ndarray, q1: np.ndarray | None, class_names, rng: np.random.Generator, *,
                       ids, n_labels: int = 10, accuracy=(0.9, 0.75, 0.6), vote_rate: float = 0.3,
                       alpha=(0.9, 0.7), beta=(0.9, 0.7), pairs_per_expert: int = 40, n_bags: int = 4,
                       bag_size: int = 6, n_groups: int = 0, group_size: int = 6, wh: float = 10.0,
                       confusions=None) -> dict[str, pd.DataFrame]:
    """Every kind of supervision drawn from the true classes `z` (indices into `class_names`): a `label`,
    `bag` and `group` column for the items table, and the votes (each source on round(vote_rate n) random
    items, an abstention on the others), pairs, bags and groups tables. The labels,
    bags and groups fall on distinct random items; `q1` (P(class 1 | x) per item) gives the groups' averages."""
    n, k = z.size, len(class_names)
    class_names = np.asarray(class_names, dtype=object)
    ids = np.asarray(ids, dtype=object)
    order = rng.permutation(n)
    if n_labels + n_bags * bag_size > n or n_groups * group_size > n:
        raise InputError(f"{n} items are too few for {n_labels} labels and {n_bags} bags of {bag_size} "
                         f"(and {n_groups} groups of {group_size})")
    columns = {"label": np.full(n, None, dtype=object), "bag": np.full(n, None, dtype=object),
               "group": np.full(n, None, dtype=object)}
    labelled = order[:n_labels]
    columns["label"][labelled] = class_names[z[labelled]]
    tables = {}
    if len(accuracy):
        rows = []
        for s, acc in enumerate(accuracy):
            matrix = confusions[s] if confusions is not None else _confusion(acc, k)
            voted = np.zeros(n, dtype=bool)
            voted[rng.choice(n, int(round(vote_rate * n)), replace=False)] = True  # a fixed number per source
            for j in range(n):
                vote = class_names[rng.choice(k, p=matrix[z[j]])] if voted[j] else None
                rows.append((ids[j], f"annotator{s + 1}", vote))
        tables["votes"] = pd.DataFrame(rows, columns=["item", "source", "vote"])
    if len(alpha) and pairs_per_expert:
        frames = []
        all_i, all_j = np.triu_indices(n, 1)
        for m, (a, b) in enumerate(zip(alpha, beta)):
            chosen = rng.choice(all_i.size, pairs_per_expert, replace=False)
            i, j = all_i[chosen], all_j[chosen]
            same = z[i] == z[j]
            link = np.where(same, rng.random(i.size) < a, rng.random(i.size) >= b).astype(np.int64)
            frames.append(pd.DataFrame({"expert": f"expert{m + 1}", "i": ids[i], "j": ids[j], "link": link}))
        tables["pairs"] = pd.concat(frames, ignore_index=True)
    if n_bags:
        start = n_labels
        bag_rows = []
        for g in range(n_bags):
            members = order[start + g * bag_size: start + (g + 1) * bag_size]
            columns["bag"][members] = f"bag{g + 1}"
            counts = np.bincount(z[members], minlength=k)
            bag_rows.append({"bag": f"bag{g + 1}", **{str(c): int(v) for c, v in zip(class_names, counts)}})
        tables["bags"] = pd.DataFrame(bag_rows)
    if n_groups:
        if k != 2 or q1 is None:
            raise InputError("group averages are of a binary class: simulate 2 classes")
        grouped = rng.permutation(n)
        he = []
        for g in range(n_groups):
            members = grouped[g * group_size:(g + 1) * group_size]
            columns["group"][members] = f"group{g + 1}"
            share = q1[members].mean()
            he.append(np.log(share) - np.log1p(-share) + rng.normal(0, 1 / np.sqrt(wh)))
        tables["groups"] = pd.DataFrame({"group": [f"group{g + 1}" for g in range(n_groups)], "he": he})
    tables["item_columns"] = pd.DataFrame({c: v for c, v in columns.items() if pd.notna(v).any()})
    return tables


def simulate_combined(n_items: int = 200, n_features: int = 3, n_classes: int = 2, *, separation: float = 2.0,
                      seed: int | None = 0, **supervision) -> tuple[dict[str, pd.DataFrame], CombinedTruth, np.ndarray]:
    """Items x ~ N(0, I), z ~ softmax(x W^T + b) with W of size about `separation`, and the supervision of
    `supervision_tables`. Returns the tables (items, votes, pairs, bags, groups: those drawn), the truth
    and the true classes (as names)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_items, n_features))
    W = separation * rng.standard_normal((n_classes, n_features))
    W -= W.mean(axis=0, keepdims=True)
    b = np.zeros(n_classes)
    probs = softmax(x @ W.T + b, axis=1)
    z = (rng.random(n_items)[:, None] > np.cumsum(probs, axis=1)).sum(axis=1).clip(max=n_classes - 1)
    classes = np.array([f"c{c}" for c in range(n_classes)], dtype=object)
    ids = np.array([f"item{i}" for i in range(n_items)], dtype=object)
    tables = supervision_tables(z, probs[:, 1] if n_classes == 2 else None, classes, rng, ids=ids, **supervision)
    items = pd.DataFrame(x, columns=[f"x{d + 1}" for d in range(n_features)])
    items.insert(0, "id", ids)
    extra = tables.pop("item_columns")
    items = pd.concat([items, extra], axis=1)
    truth = CombinedTruth(classes=classes, W=W, b=b, accuracy=np.asarray(supervision.get("accuracy", (0.9, 0.75, 0.6))),
                          alpha=np.asarray(supervision.get("alpha", (0.9, 0.7))),
                          beta=np.asarray(supervision.get("beta", (0.9, 0.7))))
    return {"items": items, **tables}, truth, classes[z]


def differs_from_the_fit(separation: float = 2.0) -> str:
    """How `simulate_combined`'s data differ from a draw of the combined model's own prior at its defaults
    (truth.json's `differs_from_the_fit`); `sbc_case` draws every parameter from that prior instead."""
    return (f"W's entries ~ N(0, {separation:g}^2) on x ~ N(0, I), then centred over the classes, and b = 0, where "
            "the fit's prior is W ~ N(0, 1), b ~ N(0, 2^2) on standardized features; the annotators' accuracies "
            "(each a confusion matrix with that diagonal and the rest spread evenly) and the experts' alpha and "
            "beta are fixed values, not draws from the fit's Dirichlet and 0.5 + 0.5 Beta(2, 2) priors. Data "
            "drawn from the fit's own prior: `sbc_case` of bayes_wsc.models.combined.simulate, "
            "which tests/test_truth_coverage_slow.py fits.")


def data_from_tables(tables: dict[str, pd.DataFrame], **kwargs):
    """The container of simulated tables."""
    from bayes_wsc.models.combined.data import CombinedSupervision

    return CombinedSupervision.from_frames(tables["items"], votes=tables.get("votes"), pairs=tables.get("pairs"),
                                           bags=tables.get("bags"), groups=tables.get("groups"), **kwargs)


def example(seed: int | None = 0):
    """Small data of the model with every source: 60 items, 2 features, 2 classes; 10 hand labels, three
    annotators voting on 30% of the items, two experts on 40 pairs each, 4 bags of 6 items, 4 groups of
    6 items. The registry's example (a fit takes seconds)."""
    tables, _, _ = simulate_combined(60, 2, 2, seed=seed, n_groups=4)
    return data_from_tables(tables)


def sbc_case(n_items: int = 40, n_features: int = 2, n_classes: int = 2, *, draws: int = 400, tune: int = 400,
             chains: int = 2, seed: int = 0):
    """Simulation-based calibration of `CombinedClassifier` (see `bayes_wsc.sbc`).

    Fixed across simulations: the features, which items are labelled, which items each of two annotators
    votes on, the pairs (each item in at most one pair and in no bag, so that the pairwise term is exact),
    the bags and the groups. Drawn per simulation from the model's prior (`pm.draw` of its free variables):
    W_raw, b_raw, the confusion matrices, alpha_raw and beta_raw; then each item's class from softmax(x W^T + b) and every source from it.
    Ranked: b, W, each annotator's accuracy and each expert's alpha and beta."""
    from bayes_wsc.models.combined.data import CombinedSupervision
    from bayes_wsc.models.combined.model import CombinedClassifier
    from bayes_wsc.sbc import SBCCase

    rng = np.random.default_rng([seed, 41])
    x = rng.standard_normal((n_items, n_features))
    ids = np.array([f"item{i}" for i in range(n_items)])
    items = pd.DataFrame(x, columns=[f"x{d + 1}" for d in range(n_features)])
    items.insert(0, "id", ids)
    classes = [f"c{c}" for c in range(n_classes)]
    order = rng.permutation(n_items)
    labelled, bagged, paired = order[:6], order[6:18], order[18:30]
    label = np.full(n_items, None, dtype=object)
    label[labelled] = rng.choice(classes, labelled.size)
    bag = np.full(n_items, None, dtype=object)
    bag[bagged] = [f"bag{g}" for g in np.repeat(range(3), 4)]
    group = np.full(n_items, None, dtype=object)
    group[order[:16]] = [f"group{g}" for g in np.repeat(range(4), 4)]
    items = items.assign(label=label, bag=bag, **({"group": group} if n_classes == 2 else {}))
    voters = {s: rng.random(n_items) < 0.5 for s in ("annotator1", "annotator2")}
    votes = pd.DataFrame([(ids[j], s, classes[0]) for s, on in voters.items() for j in np.flatnonzero(on)],
                         columns=["item", "source", "vote"])
    pairs = pd.DataFrame({"expert": np.tile(["expert1", "expert2"], 3), "i": ids[paired[0::2]], "j": ids[paired[1::2]],
                          "link": 1})
    bags = pd.DataFrame({"bag": [f"bag{g}" for g in range(3)], classes[0]: 4, classes[1]: 0})
    groups = pd.DataFrame({"group": [f"group{g}" for g in range(4)], "he": 0.0}) if n_classes == 2 else None
    template = CombinedSupervision.from_frames(items, votes=votes, pairs=pairs, bags=bags, groups=groups,
                                               classes=classes)
    wh = 10.0

    def simulate(draw, sim_rng):
        probs = softmax(template.features @ np.asarray(draw["W_raw"]) + np.asarray(draw["b_raw"]), axis=1)
        z = (sim_rng.random(n_items)[:, None] > np.cumsum(probs, axis=1)).sum(axis=1).clip(max=n_classes - 1)
        parts = {f: getattr(template, f) for f in template.__dataclass_fields__}
        parts["label"] = np.where(template.label >= 0, z, -1)
        confusion = np.asarray(draw["confusion"])
        parts["vote"] = np.array([sim_rng.choice(n_classes, p=confusion[s, z[j]])
                                  for j, s in zip(template.vote_item, template.vote_source)])
        same = z[template.pairs[template.cell_pair, 0]] == z[template.pairs[template.cell_pair, 1]]
        alpha = 0.5 + 0.5 * np.asarray(draw["alpha_raw"])[template.cell_expert]
        beta = 0.5 + 0.5 * np.asarray(draw["beta_raw"])[template.cell_expert]
        parts["link"] = np.where(same, sim_rng.random(same.size) < alpha, sim_rng.random(same.size) >= beta)
        parts["bag_counts"] = np.stack([np.bincount(z[template.item_bag == g], minlength=n_classes)
                                        for g in range(template.n_bags)]).astype(float)
        if template.n_groups:
            member = template.item_group >= 0
            share = (np.bincount(template.item_group[member], weights=probs[member, 1])
                     / np.bincount(template.item_group[member]))
            parts["group_he"] = np.log(share) - np.log1p(-share) + sim_rng.normal(0, 1 / np.sqrt(wh), share.size)
        return CombinedSupervision(**parts)

    def estimator(est_seed):
        return CombinedClassifier(method="nuts", draws=draws, tune=tune, chains=chains, seed=est_seed, wh=wh,
                                  progressbar=False)

    quantities = ([f"b[{c}]" for c in range(n_classes)] + [f"W[{c},{d}]" for c in range(n_classes)
                                                           for d in range(n_features)]
                  + [f"accuracy[{s}]" for s in range(2)] + [f"{n}[{m}]" for n in ("alpha", "beta") for m in range(2)])
    description = (f"combined, n = {n_items} items, d = {n_features}, K = {n_classes}: 6 labels, 2 annotators "
                   "on half the items each, 2 experts on 3 disjoint pairs each, 3 bags of 4, "
                   f"{template.n_groups} groups of 4; NUTS {chains} chains x ({tune} + {draws})")
    return SBCCase("combined", template, simulate, estimator, quantities, description=description)


__all__ = ["simulate_combined", "supervision_tables", "example", "sbc_case", "data_from_tables", "differs_from_the_fit"]
