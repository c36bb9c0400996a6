"""The combined model against the single-source models and the peers a user would pick (issue 41's study).

Data: scikit-learn's breast_cancer (2 classes, 30 features), wine (3, 13) and digits (10 classes; its 64
pixels reduced to 16 principal components fitted on the training items), standardized on the training items;
each split puts 30% of the items aside (stratified) as the test set. Supervision is drawn on the training
items from their true labels (`draw_sources`):

* hand labels on a few random items;
* votes of three annotators (accuracy 0.8, 0.7, 0.6, errors spread evenly over the other classes), each
  voting on a fixed share of the items and abstaining on the rest;
* must-/cannot-link judgments of two experts (accuracy 0.9 and 0.75 on same and on different pairs) on
  random pairs;
* the exact class counts of a few bags of `BAG_SIZE` items (on items without a hand label);
* binary tasks only: groups of 10 items with a noisy average, logit(the group's class-1 share) + N(0, 1/sqrt(10)).

`--study sources` (the default) draws every source at each size of `SIZES` and runs, on the same draw:

* lr_labels: scikit-learn's logistic regression (C = 1) on the hand labels;
* pcmix_labels: the package's PC mixture (`PCMixture`, K components, lam = 1, 3 restarts) on the hand
  labels and the unlabelled training items;
* snorkel_lr, crowdkit_lr: Snorkel's `LabelModel` (500 epochs) and crowd-kit's `DawidSkene` (100 iterations)
  on the votes, then the logistic regression on their soft labels (each item with a vote once per class,
  weighted by its probability);
* majority_lr: the annotators' majority vote (ties to the first class), then the logistic regression;
* combined_votes: the combined model on the votes alone (the package has no separate crowd model);
* pckmeans: the experts' majority vote per pair fed to PCKMeans (`majority_vote_pckmeans`), test items
  to the nearest centre; experts_pairs: the package's noisy-experts model (`NoisyExperts`, 5 restarts);
  both name no class, so their clusters are matched to the true classes on the test items (Hungarian
  method), which flatters them;
* llp: llp-learn on the bags (EM with a logistic regression for two classes, DLLP for more; see
  `proportions_sec4.llp_learn_predict`; hard classes only, so no log loss); proportions_bags: the package's
  label-proportions model (`ProportionsClassifier`, logistic emission, exact counts) on the bags;
* combined_groups (binary tasks): the combined model on the group averages alone;
* combined_all: the combined model on every source at once, by Laplace (`method="laplace"`): its
  accuracy and log loss are those of the posterior mean class probabilities, and its draws give the 90%
  predictive intervals of held-out bags' class shares (`bag_coverage`: the test items cut into bags of
  `BAG_SIZE`; each draw of the class model draws every item's class, the bag's share of each class is read
  off, and the 5% and 95% quantiles of those shares are the interval; shares are multiples of 1 / size,
  so the interval's coverage is at least nominal when the model is right; `bag_coverage_pit`, by the
  randomized probability integral transform, is exact at 90% for a calibrated model).

Also by `--arms` only (a diagnosis on the same draws, usually with `--tag _diag`): combined_all_map (the same fit
by MAP) and combined_without_<source> (every source but one, by MAP); the ceilings lr_truth (the logistic regression
on every training item's true label) and combined_truth (the combined model, Laplace, on every training item's true
label as its only source, with its held-out bags' coverage); combined_all_sd2 (combined_all with `prior_sd=2`).

`--study cost` spends an equal budget under a cost model (`COSTS`: A = a hand label 1, a vote 0.1, a pair
judgment 0.25, a bag's counts 1; B = 1, 0.05, 0.1, 0.5) either on one source alone or a quarter on each of
labels, votes, pairs and bags (`allocations`; bags of `COST_BAG_SIZE` items), and fits the combined model
on each allocation (`combined_<source>`, `combined_mix`; on pairs alone its clusters matched to the classes as
above), beside the cheap peers on the single sources
(lr_labels, snorkel_lr, crowdkit_lr, pckmeans, llp).

Each combined, noisy-experts, proportions and PC-mixture fit is a MAP (the combined_all arm a Laplace
approximation) with the package's defaults unless said above. Scores on the test items: accuracy and log loss
(probabilities clipped at 1e-6; none for arms that give hard classes). Every run stands alone (nothing is
cached between data sets or runs beyond PyMC/JAX's own compilation caches); each data set is its own run:

    python benchmarks/combined.py --data wine --splits 10 --sizes small,large
    python benchmarks/combined.py --data breast_cancer --study cost --costs A,B --splits 5
    python benchmarks/combined.py --report      # the tables of RESULTS.md from benchmarks/out/combined_*.csv
    python benchmarks/combined.py --report --tag _r7 --data wine,breast_cancer   # one run's files, with the targets
    python benchmarks/combined.py --reference --data wine --splits 20    # bags' coverage under a reference model

Writes benchmarks/out/combined_<study>_<data>.csv (one row per split, size or cost, and arm; rewritten after
every arm) and prints each arm's mean per data set and size.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment

sys.path.insert(0, str(Path(__file__).resolve().parent))
from output_paths import OUT  # noqa: E402

DATASETS = ("breast_cancer", "wine", "digits")
ACCURACY = (0.8, 0.7, 0.6)
EXPERTS = (0.9, 0.75)
#: supervision at each size: hand labels, the share of items each annotator votes on, pairs per expert,
#: bags, groups (binary tasks)
SIZES = {"small": {"labels": 10, "vote_rate": 0.1, "pairs": 50, "bags": 3, "groups": 4},
         "large": {"labels": 30, "vote_rate": 0.3, "pairs": 200, "bags": 8, "groups": 10}}
#: items per bag: 5 for digits' ten classes (the exact-counts recursion's cost grows fast with the classes)
BAG_SIZE = {"breast_cancer": 10, "wine": 10, "digits": 5}
GROUP_SIZE = 10
#: price of one hand label, one vote, one pair judgment, one bag's class counts
COSTS = {"A": {"labels": 1.0, "votes": 0.1, "pairs": 0.25, "bags": 1.0},
         "B": {"labels": 1.0, "votes": 0.05, "pairs": 0.1, "bags": 0.5}}
BUDGET = 12.0
COST_BAG_SIZE = 5
SOURCE_ARMS = ("lr_labels", "pcmix_labels", "snorkel_lr", "crowdkit_lr", "majority_lr", "combined_votes", "pckmeans",
               "experts_pairs", "llp", "proportions_bags", "combined_groups", "combined_all")
COST_ARMS = ("lr_labels", "snorkel_lr", "crowdkit_lr", "pckmeans", "llp", "combined_labels", "combined_votes",
             "combined_pairs", "combined_bags", "combined_mix")
#: the source each arm reads, for the tables ("all" and "mix": every source)
ALL_SOURCES = ("labels", "votes", "pairs", "bags", "groups")
ARM_SOURCE = {"lr_labels": "labels", "pcmix_labels": "labels", "combined_labels": "labels", "snorkel_lr": "votes",
              "crowdkit_lr": "votes", "majority_lr": "votes", "combined_votes": "votes", "pckmeans": "pairs",
              "experts_pairs": "pairs", "combined_pairs": "pairs", "llp": "bags", "proportions_bags": "bags",
              "combined_bags": "bags", "combined_groups": "groups", "combined_all": "all", "combined_all_map": "all", "combined_mix": "mix"}


# ---------------------------------------------------------------------- data and supervision
def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    from sklearn import datasets

    bunch = getattr(datasets, f"load_{name}")()
    return bunch.data.astype(float), bunch.target.astype(int)


def split_data(name: str, split: int):
    """Standardized train and test features (digits: 16 principal components) and their classes."""
    from sklearn.decomposition import PCA
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    x_all, y_all = load(name)
    x_train, x_test, y_train, y_test = train_test_split(x_all, y_all, test_size=0.3, random_state=split,
                                                        stratify=y_all)
    scaler = StandardScaler().fit(x_train)
    x_train, x_test = scaler.transform(x_train), scaler.transform(x_test)
    if name == "digits":
        pca = PCA(16, random_state=0).fit(x_train)
        x_train, x_test = pca.transform(x_train), pca.transform(x_test)
        scale = x_train.std(axis=0)
        x_train, x_test = x_train / scale, x_test / scale
    return x_train, x_test, y_train, y_test


def group_averages(z: np.ndarray, rng, n_groups: int, size: int = GROUP_SIZE, wh: float = 10.0):
    """Groups of items with a noisy logit of their true class-1 share (binary tasks)."""
    order = rng.permutation(z.size)
    group = np.full(z.size, None, dtype=object)
    he = []
    for g in range(n_groups):
        members = order[g * size:(g + 1) * size]
        group[members] = f"g{g}"
        share = np.clip(z[members].mean(), 0.5 / size, 1 - 0.5 / size)
        he.append(np.log(share / (1 - share)) + rng.normal(0, 1 / np.sqrt(wh)))
    return group, pd.DataFrame({"group": [f"g{g}" for g in range(n_groups)], "he": he})


def draw_sources(z: np.ndarray, k: int, rng, *, labels: int, votes_per_annotator: int, pairs: int, bags: int,
                 bag_size: int, groups: int = 0) -> dict:
    """Every source drawn from the true classes `z` (0 of a source: not drawn): `item_columns` (label, bag,
    group per item), and the votes, pairs, bags and groups tables."""
    from bayes_wsc.models.combined.simulate import supervision_tables

    classes = [f"c{c}" for c in range(k)]
    tables = supervision_tables(z, None, classes, rng, ids=[f"i{j}" for j in range(z.size)], n_labels=labels,
                                accuracy=ACCURACY if votes_per_annotator else (),
                                vote_rate=votes_per_annotator / z.size, alpha=EXPERTS if pairs else (),
                                beta=EXPERTS if pairs else (), pairs_per_expert=pairs, n_bags=bags,
                                bag_size=bag_size, n_groups=0)
    columns = tables.pop("item_columns").reindex(columns=["label", "bag"])
    if groups:
        columns["group"], tables["groups"] = group_averages(z, rng, groups)
    tables["item_columns"] = columns
    return tables


def allocations(cost: dict) -> dict[str, dict]:
    """The budget spent on each source alone and a quarter on each (votes split over the three annotators,
    pairs over the two experts)."""
    def spend(share):
        return {"labels": int(round(share["labels"] * BUDGET / cost["labels"])),
                "votes_per_annotator": int(round(share["votes"] * BUDGET / cost["votes"] / len(ACCURACY))),
                "pairs": int(round(share["pairs"] * BUDGET / cost["pairs"] / len(EXPERTS))),
                "bags": int(round(share["bags"] * BUDGET / cost["bags"]))}

    alone = {s: spend({t: float(t == s) for t in cost}) for s in cost}
    return {**alone, "mix": spend({t: 0.25 for t in cost})}


# ---------------------------------------------------------------------- scores
def match_clusters(probs: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Columns reordered so that cluster c is the class it overlaps most on the test items (Hungarian)."""
    k = probs.shape[1]
    cost = -np.array([[probs[truth == t, c].sum() for c in range(k)] for t in range(k)])
    rows, cols = linear_sum_assignment(cost)
    return probs[:, cols[np.argsort(rows)]]


def scores(probs: np.ndarray, truth: np.ndarray, hard: bool = False) -> tuple[float, float]:
    """Accuracy and log loss (NaN for hard classes)."""
    accuracy = float((probs.argmax(axis=1) == truth).mean())
    if hard:
        return accuracy, float("nan")
    clipped = np.clip(probs, 1e-6, 1)
    clipped /= clipped.sum(axis=1, keepdims=True)
    return accuracy, float(-np.log(clipped[np.arange(truth.size), truth]).mean())


def one_hot(classes: np.ndarray, k: int) -> np.ndarray:
    return np.eye(k)[np.asarray(classes, dtype=np.int64)]


# ---------------------------------------------------------------------- the arms
class Case:
    """One split's training and test items and one draw of the supervision."""

    def __init__(self, x_train, x_test, y_train, y_test, tables, seed: int, bag_size: int):
        self.x_train, self.x_test, self.y_train, self.y_test = x_train, x_test, y_train, y_test
        self.k = int(max(y_train.max(), y_test.max()) + 1)
        self.classes = [f"c{c}" for c in range(self.k)]
        self.tables, self.seed, self.bag_size = tables, seed, bag_size
        self.columns = [f"f{d}" for d in range(x_train.shape[1])]
        self.ids = np.array([f"i{j}" for j in range(y_train.size)], dtype=object)
        self.test = pd.DataFrame(x_test, columns=self.columns)

    def has(self, source: str) -> bool:
        if source == "labels":
            return bool(self.tables["item_columns"]["label"].notna().any())
        return source in self.tables and len(self.tables[source]) > 0

    def labelled(self):
        label = self.tables["item_columns"]["label"]
        rows = np.flatnonzero(label.notna().to_numpy())
        return rows, np.array([self.classes.index(c) for c in label.iloc[rows]])

    def vote_matrix(self) -> np.ndarray:
        """(n, annotators) class index of each vote, -1 for an abstention."""
        votes = self.tables["votes"]
        sources = sorted(votes["source"].unique())
        out = np.full((self.y_train.size, len(sources)), -1)
        cast = votes.dropna(subset=["vote"])
        rows = pd.Index(self.ids).get_indexer(cast["item"])
        out[rows, [sources.index(s) for s in cast["source"]]] = [self.classes.index(v) for v in cast["vote"]]
        return out

    def items_frame(self, sources) -> pd.DataFrame:
        items = pd.DataFrame(self.x_train, columns=self.columns)
        items.insert(0, "id", self.ids)
        columns = self.tables["item_columns"]
        items["label"] = columns["label"].to_numpy() if "labels" in sources else None
        if "bags" in sources and self.has("bags"):
            items["bag"] = columns["bag"].to_numpy()
        if "groups" in sources and self.has("groups"):
            items["group"] = columns["group"].to_numpy()
        return items


def lr_probs(case: Case, x, y, weight=None) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(C=1.0, max_iter=5000).fit(x, y, sample_weight=weight)
    probs = np.zeros((case.y_test.size, case.k))
    probs[:, lr.classes_] = lr.predict_proba(case.x_test)
    return probs


def lr_soft(case: Case, rows: np.ndarray, soft: np.ndarray) -> np.ndarray:
    """The logistic regression on soft labels: each item once per class, weighted by its probability."""
    k = case.k
    item = np.repeat(rows, k)
    label = np.tile(np.arange(k), rows.size)
    weight = np.asarray(soft, float).ravel()
    keep = weight > 1e-8
    return lr_probs(case, case.x_train[item[keep]], label[keep], weight[keep])


def arm_lr_labels(case):
    rows, y = case.labelled()
    return lr_probs(case, case.x_train[rows], y), False


def arm_pcmix_labels(case):
    from bayes_wsc.data.labeled import LabeledItems
    from bayes_wsc.models.pcmix.model import PCMixture

    rows, y = case.labelled()
    labels = np.full(case.y_train.size, None, dtype=object)
    labels[rows] = np.asarray(case.classes, dtype=object)[y]
    data = LabeledItems.from_arrays(case.x_train, labels, features=case.columns, classes=case.classes)
    est = PCMixture(components=case.k, restarts=3, seed=case.seed, progressbar=False, checks=False).fit(data)
    out = est.predict(case.test)
    if case.k == 2:
        return np.column_stack([1 - out["prob"], out["prob"]]), False
    return out[[f"prob_{c}" for c in case.classes]].to_numpy(), False


def arm_majority_lr(case):
    votes = case.vote_matrix()
    rows = np.flatnonzero((votes >= 0).any(axis=1))
    counts = np.stack([(votes[rows] == c).sum(axis=1) for c in range(case.k)], axis=1)
    return lr_probs(case, case.x_train[rows], counts.argmax(axis=1)), False


def arm_snorkel_lr(case):
    import torch
    from snorkel.labeling.model import LabelModel

    torch.set_num_threads(1)  # a shared machine: one thread, as the other arms
    votes = case.vote_matrix()
    rows = np.flatnonzero((votes >= 0).any(axis=1))
    model = LabelModel(cardinality=case.k, verbose=False)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        model.fit(votes[rows], n_epochs=500, seed=case.seed % 2**31, progress_bar=False)
    return lr_soft(case, rows, model.predict_proba(votes[rows])), False


def arm_crowdkit_lr(case):
    from crowdkit.aggregation import DawidSkene

    votes = case.tables["votes"].dropna(subset=["vote"])
    frame = pd.DataFrame({"task": votes["item"].to_numpy(), "worker": votes["source"].to_numpy(),
                          "label": [case.classes.index(v) for v in votes["vote"]]})
    proba = DawidSkene(n_iter=100).fit_predict_proba(frame).reindex(columns=range(case.k), fill_value=0.0)
    rows = pd.Index(case.ids).get_indexer(proba.index)
    return lr_soft(case, rows, proba.fillna(0.0).to_numpy()), False


def pair_data(case):
    from bayes_wsc.data.pairwise import PairwiseConstraints

    return PairwiseConstraints.from_frames(case.items_frame(()).drop(columns="label"), case.tables["pairs"],
                                           standardize=False)


def arm_pckmeans(case):
    from bayes_wsc.models.experts.baselines import majority_vote_pckmeans

    result = majority_vote_pckmeans(pair_data(case), case.k, seed=case.seed % 2**31)
    distance = ((case.x_test[:, None, :] - result.centers[None]) ** 2).sum(axis=2)
    return match_clusters(one_hot(distance.argmin(axis=1), case.k), case.y_test), True


def arm_experts_pairs(case):
    from bayes_wsc.models.experts.model import NoisyExperts

    est = NoisyExperts(n_clusters=case.k, restarts=5, seed=case.seed, progressbar=False, checks=False)
    est.fit(pair_data(case))
    probs = est.predict(case.test)[[f"prob_{c}" for c in range(case.k)]].to_numpy()
    return match_clusters(probs, case.y_test), False


def bag_arrays(case):
    """The bagged items' rows, their bag index and the bags' class proportions (B, K)."""
    bag = case.tables["item_columns"]["bag"]
    rows = np.flatnonzero(bag.notna().to_numpy())
    names = list(case.tables["bags"]["bag"])
    groups = np.array([names.index(b) for b in bag.iloc[rows]])
    counts = case.tables["bags"][case.classes].to_numpy(float)
    return rows, groups, counts / counts.sum(axis=1, keepdims=True)


def arm_llp(case):
    from proportions_sec4 import llp_learn_predict

    rows, groups, proportions = bag_arrays(case)
    method = "em-lr" if case.k == 2 else "dllp"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        predicted = llp_learn_predict(method, case.x_train[rows], groups, proportions, case.x_test,
                                      seed=case.seed % 2**31)
    return one_hot(predicted, case.k), True


def arm_proportions_bags(case):
    from bayes_wsc.data.proportions import LabelProportions
    from bayes_wsc.models.proportions.model import ProportionsClassifier

    rows, groups, proportions = bag_arrays(case)
    data = LabelProportions.from_arrays(case.x_train[rows], groups, proportions, classes=case.classes,
                                        features=case.columns)
    est = ProportionsClassifier(seed=case.seed, progressbar=False, checks=False).fit(data)
    return est.predict(case.test)[[f"prob_{c}" for c in case.classes]].to_numpy(), False


def fit_combined(case, sources, method="map", **settings):
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.combined.data import CombinedSupervision
    from bayes_wsc.models.combined.model import CombinedClassifier

    given = {s: case.tables[s] for s in ("votes", "pairs", "bags", "groups") if s in sources and case.has(s)}
    data = CombinedSupervision.from_frames(case.items_frame(sources), classes=case.classes, **given)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return CombinedClassifier(method=method, progressbar=False, checks=False, restarts=2,
                                  seed=case.seed, **settings).fit(data)


def combined_arm(sources, method="map"):
    def arm(case):
        est = fit_combined(case, sources, method)
        probs = est.predict(case.test)[[f"prob_{c}" for c in case.classes]].to_numpy()
        if tuple(sources) == ("pairs",):  # pairs alone name no class: matched as the other pair arms are
            probs = match_clusters(probs, case.y_test)
        return probs, False
    return arm


def held_out_bags(case, rng) -> np.ndarray:
    """The test items cut at random into bags of the training bags' size, (bags, size) row indices."""
    order = rng.permutation(case.y_test.size)
    n_bags = order.size // case.bag_size
    return order[:n_bags * case.bag_size].reshape(n_bags, case.bag_size)


def draw_classes(q: np.ndarray, rng) -> np.ndarray:
    """One class per item and draw from the class probabilities q (S, n, K): (S, n)."""
    cumulative = np.cumsum(q, axis=2)
    return (rng.random(q.shape[:2])[..., None] > cumulative).sum(axis=2).clip(max=q.shape[2] - 1)


def share_coverage(q: np.ndarray, bags: np.ndarray, truth_classes: np.ndarray, rng,
                   level: float = 0.9) -> dict[str, float]:
    """The held-out bags' *realized* class shares (each draw s draws every item's class from q[s]) against the
    bags' true realized shares, over (bag, class) cells: `coverage` of the central `level` interval; `pit`, the
    randomized probability integral transform inside the central `level` band (exact at `level` for a
    calibrated predictive, however discrete the shares); `z2`, the mean squared error of the predictive mean
    share over the mean predictive variance (1 for a calibrated predictive, below 1: too wide)."""
    k = q.shape[2]
    drawn = draw_classes(q, rng)  # (S, n)
    covered, pit, error2, variance = [], [], [], []
    for members in bags:
        shares = one_hot(drawn[:, members], k).mean(axis=1)  # (S, K)
        low, high = np.quantile(shares, [(1 - level) / 2, (1 + level) / 2], axis=0)
        truth = np.bincount(truth_classes[members], minlength=k) / members.size
        covered.extend((truth >= low - 1e-12) & (truth <= high + 1e-12))
        below = (shares < truth - 1e-12).mean(axis=0)
        at_most = (shares <= truth + 1e-12).mean(axis=0)
        pit.extend(below + rng.random(k) * (at_most - below))
        error2.extend((truth - shares.mean(axis=0)) ** 2)
        variance.extend(shares.var(axis=0))
    pit = np.asarray(pit)
    return {"coverage": float(np.mean(covered)),
            "pit": float(np.mean((pit >= (1 - level) / 2) & (pit <= (1 + level) / 2))),
            "z2": float(np.mean(error2) / np.mean(variance))}


def bag_coverage(est, case, rng, level: float = 0.9, n_draws: int = 1000) -> dict[str, float]:
    """How often held-out bags' true class shares fall in the fit's `level` predictive intervals, over (bag,
    class) cells. `bag_coverage`: the central interval of the predicted shares (a share is a multiple of
    1 / size, so a calibrated model covers at least `level`, up to 1); `bag_coverage_pit`: the randomized
    probability integral transform u ~ U(P(share < truth), P(share <= truth)) inside the central `level`
    band, which a calibrated model covers at exactly `level` however discrete the shares.

    The interval is of a bag's realized share (every item's class drawn), and so is the truth it is scored
    against. Beside it, to say where its width comes from (`share_diagnosis`, its own random stream, so the two
    columns above are as before): `bag_z2` (squared error over predictive variance, 1 when calibrated); the PIT
    with the class model's uncertainty left out (`pit_plugin`: every draw at the posterior mean of W and b);
    with the items' classes independent (`pit_independent`: each item drawn from its posterior mean
    probabilities); of the bag's expected share (`coverage_expected`: the interval of the mean of q over the
    bag's items, a parameter, against the realized truth); the test items' mean probability of the class the
    fit picks against its accuracy (`mean_confidence`, under 1 - error when the fit is underconfident); and the
    same PIT under a reference class model, the logistic regression (C = 1) on every training item's true label
    (`pit_reference`)."""
    from bayes_wsc.posterior import stacked
    from scipy.special import softmax

    W, b = stacked(est._fitted(), "W"), stacked(est._fitted(), "b")
    take = rng.choice(W.shape[0], min(n_draws, W.shape[0]), replace=False)
    bags = held_out_bags(case, rng)
    q = softmax(np.einsum("nd,skd->snk", case.x_test, W[take]) + b[take][:, None, :], axis=-1)  # (S, n, K)
    main = share_coverage(q, bags, case.y_test, rng, level)
    return {"bag_coverage": main["coverage"], "bag_coverage_pit": main["pit"],
            **share_diagnosis(case, q, W[take].mean(axis=0), b[take].mean(axis=0), bags,
                              np.random.default_rng([case.seed, 91]), level)}


def share_diagnosis(case, q, W_mean, b_mean, bags, rng, level: float = 0.9) -> dict[str, float]:
    """Where the held-out bags' interval width comes from (see `bag_coverage`)."""
    from scipy.special import softmax
    from sklearn.linear_model import LogisticRegression

    s = q.shape[0]
    out = {"bag_z2": share_coverage(q, bags, case.y_test, rng, level)["z2"]}
    plugin = softmax(case.x_test @ W_mean.T + b_mean, axis=-1)
    out["pit_plugin"] = share_coverage(np.broadcast_to(plugin, q.shape), bags, case.y_test, rng, level)["pit"]
    mean_q = q.mean(axis=0)
    out["pit_independent"] = share_coverage(np.broadcast_to(mean_q, q.shape), bags, case.y_test, rng, level)["pit"]
    expected = q[:, bags, :].mean(axis=2)  # (S, bags, K): each bag's expected share under each draw
    low, high = np.quantile(expected, [(1 - level) / 2, (1 + level) / 2], axis=0)
    truth = np.stack([np.bincount(case.y_test[m], minlength=case.k) / m.size for m in bags])
    out["coverage_expected"] = float(np.mean((truth >= low - 1e-12) & (truth <= high + 1e-12)))
    out["mean_confidence"] = float(mean_q.max(axis=1).mean())
    reference = LogisticRegression(C=1.0, max_iter=5000).fit(case.x_train, case.y_train).predict_proba(case.x_test)
    out["pit_reference"] = share_coverage(np.broadcast_to(reference, (s, *reference.shape)), bags, case.y_test,
                                          rng, level)["pit"]
    return out


def reference_shares(names, splits, sizes=("small",), strengths=(0.1, 1.0, 10.0, 100.0)) -> pd.DataFrame:
    """The held-out bags' share coverage (as `bag_coverage`'s, on bags of the same size drawn from the same seed,
    not the same bags: `bag_coverage` draws its Laplace draws' indices first) when the class model is a
    logistic regression on every training item's true label, at several inverse regularization strengths C:
    how the coverage follows the gap between a model's confidence and its accuracy, with no fit of the package."""
    from sklearn.linear_model import LogisticRegression

    rows = []
    for name in names:
        for split in splits:
            split_items = split_data(name, split)
            for size in sizes:
                case = study_case(name, split, size, split_items)
                rng = np.random.default_rng([case.seed, 90])
                bags = held_out_bags(case, rng)
                for c in strengths:
                    probs = LogisticRegression(C=c, max_iter=20000).fit(case.x_train, case.y_train).predict_proba(
                        case.x_test)
                    accuracy, log_loss = scores(probs, case.y_test)
                    out = share_coverage(np.broadcast_to(probs, (1000, *probs.shape)), bags, case.y_test,
                                         np.random.default_rng([case.seed, 92]))
                    rows.append({"dataset": name, "split": split, "size": size, "C": c, "accuracy": accuracy,
                                 "log_loss": log_loss, "mean_confidence": float(probs.max(axis=1).mean()),
                                 "pit": out["pit"], "coverage": out["coverage"], "z2": out["z2"]})
    return pd.DataFrame(rows)


def arm_combined_all(case, **settings):
    est = fit_combined(case, ALL_SOURCES, method="laplace", **settings)
    coverage = bag_coverage(est, case, np.random.default_rng([case.seed, 90]))
    probs = est.predict(case.test)[[f"prob_{c}" for c in case.classes]].to_numpy()
    return probs, False, coverage


def arm_combined_all_sd2(case):
    """combined_all with the class weights' prior twice as wide (`prior_sd=2`): what the prior does to the bags'
    intervals."""
    return arm_combined_all(case, prior_sd=2.0)


def arm_lr_truth(case):
    """The ceiling of a class model on these features: the logistic regression on every training item's label."""
    return lr_probs(case, case.x_train, case.y_train), False


def arm_combined_truth(case):
    """The combined model (Laplace, as combined_all) with every training item's true label as its only source:
    what its class model reaches when the supervision is complete, and its held-out bags' coverage then."""
    from bayes_wsc.errors import FitWarning
    from bayes_wsc.models.combined.data import CombinedSupervision
    from bayes_wsc.models.combined.model import CombinedClassifier

    items = pd.DataFrame(case.x_train, columns=case.columns)
    items.insert(0, "id", case.ids)
    items["label"] = np.asarray(case.classes, dtype=object)[case.y_train]
    data = CombinedSupervision.from_frames(items, classes=case.classes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        est = CombinedClassifier(method="laplace", progressbar=False, checks=False, restarts=2,
                                 seed=case.seed).fit(data)
    coverage = bag_coverage(est, case, np.random.default_rng([case.seed, 90]))
    return est.predict(case.test)[[f"prob_{c}" for c in case.classes]].to_numpy(), False, coverage


ARMS = {"lr_labels": arm_lr_labels, "pcmix_labels": arm_pcmix_labels, "majority_lr": arm_majority_lr,
        "snorkel_lr": arm_snorkel_lr, "crowdkit_lr": arm_crowdkit_lr, "pckmeans": arm_pckmeans,
        "experts_pairs": arm_experts_pairs, "llp": arm_llp, "proportions_bags": arm_proportions_bags,
        "combined_labels": combined_arm(("labels",)), "combined_votes": combined_arm(("votes",)),
        "combined_pairs": combined_arm(("pairs",)), "combined_bags": combined_arm(("bags",)),
        "combined_groups": combined_arm(("groups",)),
        "combined_mix": combined_arm(("labels", "votes", "pairs", "bags")), "combined_all": arm_combined_all,
        "combined_all_map": combined_arm(ALL_SOURCES), "lr_truth": arm_lr_truth, "combined_truth": arm_combined_truth,
        "combined_all_sd2": arm_combined_all_sd2}
ARM_SOURCE.update(lr_truth="truth", combined_truth="truth", combined_all_sd2="all")
#: diagnosis (asked for by --arms): the combined MAP on every source but one
for _left_out in ALL_SOURCES:
    ARMS[f"combined_without_{_left_out}"] = combined_arm(tuple(s for s in ALL_SOURCES if s != _left_out))
    ARM_SOURCE[f"combined_without_{_left_out}"] = "all"


# ---------------------------------------------------------------------- runs
def run_arm(name, case, key, rows, out):
    source = ARM_SOURCE[name]
    if source not in ("all", "mix", "truth") and not case.has(source):
        return
    start = time.time()
    extra = {}
    try:
        result = ARMS[name](case)
        probs, hard = result[0], result[1]
        extra = result[2] if len(result) > 2 else {}
        accuracy, log_loss = scores(probs, case.y_test, hard)
        failed = ""
    except Exception as exc:  # a peer that fails on a case is recorded as failed, never silently dropped
        accuracy = log_loss = float("nan")
        failed = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
    seconds = time.time() - start
    rows.append({**key, "arm": name, "source": source, "accuracy": accuracy, "log_loss": log_loss,
                 "seconds": seconds, "failed": failed, **extra})
    print(f"{' '.join(str(v) for v in key.values())} {name}: accuracy {accuracy:.3f} log loss {log_loss:.3f} "
          f"({seconds:.0f} s){' ' + failed if failed else ''}"
          f"{''.join(f' {k} {v:.3f}' for k, v in extra.items())}", flush=True)
    pd.DataFrame(rows).to_csv(out, index=False)


def study_case(name: str, split: int, size: str, split_items=None) -> Case:
    """The sources study's case of one data set, split and size: the supervision drawn from the split's
    training classes with the seed [split, 41, size] (`split_items`: `split_data(name, split)` if already read)."""
    x_train, x_test, y_train, y_test = split_data(name, split) if split_items is None else split_items
    k = int(y_train.max() + 1)
    spec = SIZES[size]
    rng = np.random.default_rng([split, 41, list(SIZES).index(size)])
    tables = draw_sources(y_train, k, rng, labels=spec["labels"],
                          votes_per_annotator=int(round(spec["vote_rate"] * y_train.size)),
                          pairs=spec["pairs"], bags=spec["bags"], bag_size=BAG_SIZE[name],
                          groups=spec["groups"] if k == 2 else 0)
    return Case(x_train, x_test, y_train, y_test, tables, seed=int(rng.integers(2**31)), bag_size=BAG_SIZE[name])


def run_sources(name, splits, sizes, arms, out):
    rows = []
    for split in splits:
        split_items = split_data(name, split)
        for size in sizes:
            case = study_case(name, split, size, split_items)
            for arm in arms:
                run_arm(arm, case, {"dataset": name, "split": split, "size": size}, rows, out)
    return rows


def run_cost(name, splits, costs, arms, out):
    rows = []
    for split in splits:
        x_train, x_test, y_train, y_test = split_data(name, split)
        k = int(y_train.max() + 1)
        for cost in costs:
            for allocation, spend in allocations(COSTS[cost]).items():
                rng = np.random.default_rng([split, 42, list(COSTS).index(cost), list(COSTS[cost]).index(allocation)
                                             if allocation in COSTS[cost] else 4])
                tables = draw_sources(y_train, k, rng, bag_size=COST_BAG_SIZE, **spend)
                case = Case(x_train, x_test, y_train, y_test, tables, seed=int(rng.integers(2**31)),
                            bag_size=COST_BAG_SIZE)
                chosen = [a for a in arms if (ARM_SOURCE[a] == allocation) or (allocation == "mix" and a == "combined_mix")]
                spent = ", ".join(f"{s} {v}" for s, v in spend.items())
                for arm in chosen:
                    run_arm(arm, case, {"dataset": name, "split": split, "cost": cost, "allocation": allocation,
                                        "spend": spent}, rows, out)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", choices=("sources", "cost"), default="sources")
    parser.add_argument("--data", default=",".join(DATASETS), help="comma-separated: " + ", ".join(DATASETS))
    parser.add_argument("--splits", type=int, default=10, help="splits 0..N-1 (or --first-split)")
    parser.add_argument("--first-split", type=int, default=0)
    parser.add_argument("--sizes", default=",".join(SIZES), help="sources study: " + ", ".join(SIZES))
    parser.add_argument("--costs", default=",".join(COSTS), help="cost study: " + ", ".join(COSTS))
    parser.add_argument("--arms", default=None, help="comma-separated arms (default: every arm of the study)")
    parser.add_argument("--tag", default="", help="appended to the output file's name")
    parser.add_argument("--report", action="store_true", help="print the tables from benchmarks/out/combined_*.csv")
    parser.add_argument("--reference", action="store_true",
                        help="only the held-out bags' coverage under a logistic regression on every training label "
                             "(`reference_shares`), at several C")
    args = parser.parse_args()
    if args.reference:
        frame = reference_shares(args.data.split(","), range(args.first_split, args.first_split + args.splits),
                                 args.sizes.split(","))
        frame.to_csv(OUT / f"combined_reference{args.tag}.csv", index=False)
        print(frame.groupby(["dataset", "size", "C"])[["accuracy", "log_loss", "mean_confidence", "pit", "coverage",
                                                        "z2"]].mean().round(3).to_string())
        return
    if args.report:
        report(args.tag, args.data.split(",")) if args.tag else report()
        return
    names = args.data.split(",")
    default_arms = SOURCE_ARMS if args.study == "sources" else COST_ARMS
    arms = default_arms if args.arms is None else tuple(args.arms.split(","))
    for name in names + list(arms):
        if name not in DATASETS and name not in ARMS:
            parser.error(f"unknown data set or arm {name!r}")
    splits = range(args.first_split, args.first_split + args.splits)
    OUT.mkdir(exist_ok=True)
    for name in names:
        out = OUT / f"combined_{args.study}_{name}{args.tag}.csv"
        if args.study == "sources":
            rows = run_sources(name, splits, args.sizes.split(","), arms, out)
            keys = ["dataset", "size", "arm"]
        else:
            rows = run_cost(name, splits, args.costs.split(","), arms, out)
            keys = ["dataset", "cost", "allocation", "arm"]
        table = pd.DataFrame(rows).groupby(keys, sort=False)[["accuracy", "log_loss", "seconds"]].mean()
        print(table.round(3).to_string(), flush=True)


#: arms that are neither a single source's nor a peer's (ceilings, diagnoses)
NOT_COMPARED = ("combined_all", "combined_all_map", "combined_all_sd2", "combined_mix", "lr_truth", "combined_truth")


def target_differences(frame: pd.DataFrame) -> pd.DataFrame:
    """Per data set and size, paired by split: combined_all minus the single-source or peer arm of the best mean
    accuracy (the never-hurts and +0.02 targets) and combined_votes minus the better of snorkel_lr and crowdkit_lr
    by mean (the votes-only target), with the se of the paired mean, the splits, and wins / ties / losses."""
    rows = []
    for (name, size), part in frame.groupby(["dataset", "size"], sort=False):
        accuracy = part.pivot_table(index="split", columns="arm", values="accuracy")
        compared = [a for a in accuracy.columns if a not in NOT_COMPARED and not a.startswith("combined_without")]
        peers = [a for a in ("snorkel_lr", "crowdkit_lr") if a in accuracy.columns]
        for label, arm, against in (("combined_all - best arm", "combined_all", compared),
                                    ("combined_votes - better peer", "combined_votes", peers)):
            if arm not in accuracy.columns or not against:
                continue
            best = accuracy[against].mean().idxmax()
            diff = (accuracy[arm] - accuracy[best]).dropna()
            rows.append({"dataset": name, "size": size, "target": label, "against": best,
                         "difference": diff.mean(), "se": diff.std(ddof=1) / np.sqrt(diff.size),
                         "splits": diff.size, "won": int((diff > 1e-9).sum()), "tied": int((diff.abs() <= 1e-9).sum()),
                         "lost": int((diff < -1e-9).sum())})
    return pd.DataFrame(rows)


def report(tag: str = "", names=DATASETS) -> None:
    """Markdown tables from every file of each study (`tag`: the files of that tag only): mean accuracy (mean log
    loss) per arm, one column per data set and size (sources) or cost model (cost), with the number of splits;
    then the raw summary, and with a tag the targets paired by split (`target_differences`)."""
    for study in ("sources", "cost"):
        files = [OUT / f"combined_{study}_{name}{tag}.csv" for name in names
                 if (OUT / f"combined_{study}_{name}{tag}.csv").exists()]
        if not files:
            continue
        frame = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
        frame["failed"] = frame["failed"].astype(object).fillna("").astype(str)
        keys = ["dataset", "size"] if study == "sources" else ["dataset", "cost"]
        # only the splits whose combined fit finished (a run stopped part-way leaves others' arms alone)
        anchor = frame[frame["arm"] == ("combined_all" if study == "sources" else "combined_mix")]
        frame = frame.merge(anchor[[*keys, "split"]].drop_duplicates(), on=[*keys, "split"])
        rows = "arm" if study == "sources" else "allocation_arm"
        if study == "cost":
            frame["allocation_arm"] = frame["allocation"] + ": " + frame["arm"]
        grouped = frame.groupby([*keys, rows], sort=False)
        summary = grouped.agg(accuracy=("accuracy", "mean"), sd=("accuracy", "std"), log_loss=("log_loss", "mean"),
                              splits=("accuracy", "count"), failed=("failed", lambda v: int((v != "").sum())),
                              seconds=("seconds", "mean"))
        for column in ("bag_coverage", "bag_coverage_pit", "bag_z2", "pit_plugin", "pit_independent",
                       "coverage_expected", "mean_confidence", "pit_reference"):
            if column in frame:
                summary[column] = grouped[column].mean()
        cell = summary.apply(lambda r: f"{r.accuracy:.3f}" + ("" if np.isnan(r.log_loss) else f" ({r.log_loss:.3f})")
                             + ("" if not r.failed else f" [{r.failed} failed]"), axis=1)
        table = cell.unstack(keys)
        table.columns = [" ".join(str(c) for c in col) + f" (n={int(summary['splits'].xs(col, level=keys).max())})"
                         for col in table.columns]
        print(f"## {study}\n")
        print("| arm | " + " | ".join(table.columns) + " |")
        print("|---" * (len(table.columns) + 1) + "|")
        for arm, row in table.iterrows():
            print(f"| {arm} | " + " | ".join("-" if pd.isna(v) else v for v in row) + " |")
        print()
        print(summary.round(3).to_string(), "\n")
        if tag and study == "sources":
            print(target_differences(frame).round(3).to_string(), "\n")
    if tag:
        return
    for tag in ("diag",):  # runs of --tag _diag (other arms on the same draws): their means
        files = sorted(OUT.glob(f"combined_sources_*_{tag}.csv"))
        if files:
            frame = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
            print(f"## {tag}\n")
            print(frame.groupby(["dataset", "size", "arm"], sort=False)[["accuracy", "log_loss"]].agg(["mean", "count"])
                  .round(3).to_string(), "\n")
    files = sorted(OUT.glob("combined_sources_*_coverage.csv"))
    if files:  # runs of --arms combined_all --tag _coverage: the held-out bags' coverage
        frame = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
        print("## coverage of held-out bags' class shares (combined_all)\n")
        print(frame.groupby(["dataset", "size"]).agg(splits=("split", "count"), accuracy=("accuracy", "mean"),
                                                      bag_coverage=("bag_coverage", "mean"),
                                                      bag_coverage_pit=("bag_coverage_pit", "mean")).round(3))


if __name__ == "__main__":
    main()
