"""One posterior from every kind of supervision: hand labels, crowd votes, expert pairs, bag counts and
noisy group averages, on one latent class per item::

    p(z_j = c | x_j) = q_jc = softmax(x_j W + b)_c           the class model every source shares
    hand label y_j = z_j                                      (exact)
    vote v_js | z_j = c ~ Categorical(confusion[s, c])        Dawid-Skene, one confusion matrix per source;
                                                              abstentions carry no likelihood (missing at random)
    link S_ij^m | z_i, z_j: alpha_m if same, 1 - beta_m if not   the noisy experts' term (seed 002)
    bag counts m_b = sum_{j in b} onehot(z_j)                 exact counts (seed 001's exact-counts likelihood)
    HE_g ~ Normal(logit mean_{j in g} q_j1, 1 / sqrt(WH))     a group's noisy average of a binary class (seed 000)

Every z_j is summed out. Each item's own evidence (its label and its votes) gives the local term
e_jc = log q_jc + log P(label_j | c) + sum_s log confusion[s, c, v_js]; with Z_j = sum_c exp(e_jc) and
r_j = exp(e_j) / Z_j (the item's class given its own evidence):

* an item in no bag is one unit, log Z_j (exact);
* a bag is one unit, sum_{j in b} log Z_j + log PM(m_b; r_j), PM the Poisson-multinomial probability of the
  bag's counts (`likelihoods.poisson_multinomial_logp`). This is the exact joint of the bag's counts and its
  items' labels and votes: sum over assignments with counts m_b of prod_j exp(e_j z_j) = prod_j Z_j PM(m_b; r).
  A labelled item's class is thus known inside its bag's count;
* a pair is one unit, the experts' links with (z_i, z_j) summed out under r_i, r_j (`pair_ratings_logp`),
  exact for a pair whose items are in no other pair and no bag; summed over pairs sharing items, or over
  items in bags, it is a **pairwise composite likelihood** (as the experts model's), a generalized posterior
  that may be more confident than the data warrant. With `pair_weighting=True` each pair's term is
  multiplied by w_ij = (1/n_i + 1/n_j) / 2, n_i the number of distinct pairs item i is in (`pair_weights`):
  an item in n_i pairs gives each 1/n_i of its weight, a tempered (generalized) posterior;
* a group is one unit: its HE measures the group's expected class share under the class model, as seed
  000's HE measures mu_i, not the realized share of its items; it is treated as independent of the other
  sources given the parameters.

The classes are named by the supervision (labels, votes, bag columns), so there is no label switching when
any of those is given; with pairs alone the classes are exchangeable and only the partition is identified.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from bayes_wsc._lazy import LazyModule
from bayes_wsc.data.proportions import LOG_ZERO, count_plan
from bayes_wsc.defaults import DEFAULT_CI
from bayes_wsc.estimator import Estimator
from bayes_wsc.models.combined.settings import CombinedSettings
from bayes_wsc.settings import checked
from bayes_wsc.graph_inputs import declare
from bayes_wsc.inference import LOG_LIKELIHOOD_PREFIX
from bayes_wsc.maths.dawid_skene import confusion_prior, start_confusion, vote_evidence, vote_inputs
from bayes_wsc.models.combined.data import CombinedSupervision
from bayes_wsc.posterior import append_predictions, check_ci, class_table, stacked

pm = LazyModule("pymc")
pt = LazyModule("pytensor.tensor")
likelihoods = LazyModule("bayes_wsc.likelihoods")
special = LazyModule("scipy.special")

#: the recorded per-unit log-likelihood (`likelihoods.record_pointwise("units")`)
UNITS = LOG_LIKELIHOOD_PREFIX + "units"
#: the dims of every `pm.Data` the blocks declare (the items that are units of their own and the pairs in
#: slots of a bucketed size, `slots`, the real ones first: see `add_units`)
DATA_DIMS = {"x": ("item", "feature"), "label_logp": ("item", "class"), "vote_item": ("cast",),
             "vote_source": ("cast",), "vote_value": ("cast",), "pair_ends": ("pair_slot", "end"),
             "pair_must_links": ("pair_slot", "expert"), "pair_cannot_links": ("pair_slot", "expert"),
             "pair_real": ("pair_slot",), "pair_weight": ("pair_slot",), "item_units": ("item_slot",),
             "item_unit_real": ("item_slot",), "bag_rows": ("bag_item",), "group_rows": ("group_item",),
             "group_member": ("group_item",), "group_he": ("group",)}


def check_settings(prior_sd, intercept_sd, vote_diagonal, accuracy_a, accuracy_b, wh, pair_weighting=False) -> None:
    """Fail early, naming the setting (as declared, `CombinedSettings`)."""
    checked(CombinedSettings, {"prior_sd": prior_sd, "intercept_sd": intercept_sd, "vote_diagonal": vote_diagonal,
                               "accuracy_a": accuracy_a, "accuracy_b": accuracy_b, "wh": wh,
                               "pair_weighting": pair_weighting})


# ---------------------------------------------------------------------- the data the graph reads (NumPy)
def label_logp(data: CombinedSupervision) -> np.ndarray:
    """(n, K) log P(label_j | z_j = c): 0 where c is the label or there is none, `LOG_ZERO` elsewhere."""
    out = np.zeros((data.n_items, data.n_classes))
    labelled = np.flatnonzero(data.label >= 0)
    out[labelled] = LOG_ZERO
    out[labelled, data.label[labelled]] = 0.0
    return out


def class_inputs(data: CombinedSupervision) -> dict[str, np.ndarray]:
    return {"x": data.features, "label_logp": label_logp(data)}


def slots(n: int) -> int:
    """Room for n units, rounded up to a multiple of a quarter of the power of two below n (at least 8): the
    number of items that carry evidence outside bags, and of distinct pairs, moves by a few between draws of
    the same design (splits of a study), and a compiled program is keyed by its shapes (`map_program`), so
    bucketed shapes let those draws share one program; at most a quarter of the slots are padding."""
    step = max(8, 2 ** max(int(n).bit_length() - 1, 0) // 4)
    return -(-int(n) // step) * step


def padded(values: np.ndarray, size: int) -> np.ndarray:
    """`values` followed by zeros (rows of zeros) up to `size` rows."""
    values = np.asarray(values)
    return np.concatenate([values, np.zeros((size - values.shape[0], *values.shape[1:]), values.dtype)])


def pair_weights(data: CombinedSupervision, pair_weighting: bool = False) -> np.ndarray:
    """Each distinct pair's weight on its term: 1 (the composite likelihood as it is), or with `pair_weighting`
    (1/n_i + 1/n_j) / 2, n_i the number of pairs item i is in: an item in several pairs has its judgments'
    weight shared among them, so the pairs count as half the number of their items (one pair alone: 1)."""
    if not pair_weighting or not data.n_pairs:
        return np.ones(data.n_pairs)
    per_item = np.bincount(data.pairs.ravel(), minlength=data.n_items)
    return (1.0 / per_item[data.pairs[:, 0]] + 1.0 / per_item[data.pairs[:, 1]]) / 2


def unit_inputs(data: CombinedSupervision, pair_weighting: bool = False) -> dict[str, np.ndarray]:
    """Which items are units of their own (evidence, no bag), the bags' items and counts' layout, the pairs'
    links, the groups' items and averages. Items and pairs fill `slots`; a padding slot (item 0, a pair
    (0, 0) with no links) is marked 0 in `item_unit_real` (`pair_real`) and adds exactly 0."""
    own = item_units(data)
    values = {"item_units": padded(own, slots(own.size)),
              "item_unit_real": padded(np.ones(own.size), slots(own.size))}
    if data.n_bags:
        values["bag_rows"] = bag_items(data)
        values.update(bag_plan(data).inputs())
    if data.n_pairs:
        must, cannot = data.link_counts()
        size = slots(data.n_pairs)
        values.update(pair_ends=padded(data.pairs, size), pair_must_links=padded(must, size),
                      pair_cannot_links=padded(cannot, size), pair_real=padded(np.ones(data.n_pairs), size),
                      pair_weight=padded(pair_weights(data, pair_weighting), size))
    if data.n_groups:
        member = np.flatnonzero(data.item_group >= 0)
        values.update(group_rows=member, group_member=data.item_group[member], group_he=data.group_he)
    return values


def item_units(data: CombinedSupervision) -> np.ndarray:
    evidence = data.evidence_items()
    return evidence[data.item_bag[evidence] < 0]


def bag_items(data: CombinedSupervision) -> np.ndarray:
    """Items in a bag, ordered by bag (the rows the count recursion reads)."""
    inside = np.flatnonzero(data.item_bag >= 0)
    return inside[np.argsort(data.item_bag[inside], kind="stable")]


def bag_plan(data: CombinedSupervision):
    return count_plan(data.item_bag[bag_items(data)], data.bag_counts.astype(np.int64))


def model_data(data: CombinedSupervision, pair_weighting: bool = False) -> dict[str, np.ndarray]:
    """Every value the blocks declare as `pm.Data`, by name, in NumPy (a cached MAP program's inputs)."""
    values = {**class_inputs(data), **unit_inputs(data, pair_weighting)}
    if data.cast.any():
        values.update(vote_inputs(data))
    return values


def model_coords(data: CombinedSupervision) -> dict[str, list]:
    """The data's dims of the sources present, and the units' slots (`unit_slots`; the fit's `unit`, what
    LOO leaves out, is the real ones: an item with its own labels and votes, a bag, a pair, a group)."""
    own = item_units(data).size
    coords = {"item": list(data.item_ids), "feature": data.feature_names, "class": list(data.classes),
              "item_slot": list(range(slots(own))), "unit_slot": list(range(unit_slots(data).size))}
    if data.cast.any():
        coords.update(source=list(data.source_names), vote=list(data.classes), cast=list(range(int(data.cast.sum()))))
    if data.n_pairs:
        coords.update(expert=list(data.expert_names), pair_slot=list(range(slots(data.n_pairs))), end=[0, 1])
    if data.n_bags:
        coords.update(bag=list(data.bag_names), bag_item=list(data.item_ids[bag_items(data)]))
    if data.n_groups:
        coords.update(group=list(data.group_names), group_item=list(data.item_ids[data.item_group >= 0]))
    return coords


def unit_slots(data: CombinedSupervision) -> np.ndarray:
    """The recorded units' slots (items', bags', pairs', groups', in that order): True where a slot holds a
    real unit, False for padding (`unit_inputs`). The recorded pointwise log-likelihood keeps the True ones
    (`CombinedClassifier.pointwise_log_likelihood`), in the order of `unit_names`."""
    own = item_units(data).size
    parts = [np.arange(slots(own)) < own, np.ones(data.n_bags, bool)]
    if data.n_pairs:
        parts.append(np.arange(slots(data.n_pairs)) < data.n_pairs)
    return np.concatenate([*parts, np.ones(data.n_groups, bool)])


def unit_names(data: CombinedSupervision) -> list[str]:
    ids = data.item_ids
    return ([f"item {i}" for i in ids[item_units(data)]] + [f"bag {b}" for b in data.bag_names]
            + [f"pair ({ids[a]}, {ids[b]})" for a, b in data.pairs] + [f"group {g}" for g in data.group_names])


# ---------------------------------------------------------------------- blocks
def add_class_model(data: CombinedSupervision, *, prior_sd: float = 1.0, intercept_sd: float = 2.0):
    """p(z = c | x) = softmax(x W + b), W_raw[feature, class] ~ Normal(0, prior_sd), b_raw ~ Normal(0,
    intercept_sd) on standardized features (as the proportions model's logistic emission); the reported
    W[class, feature] and b[class] are the zero-sum representative. Returns log q, (n, K)."""
    x = declare(class_inputs(data), DATA_DIMS, only=["x"])["x"]
    return likelihoods.logistic_class_model(x, prior_sd=prior_sd, intercept_sd=intercept_sd)


def add_label_evidence(data: CombinedSupervision):
    """(n, K) log P(hand label | class): exact labels."""
    return declare(class_inputs(data), DATA_DIMS, only=["label_logp"])["label_logp"]


def add_vote_evidence(data: CombinedSupervision, *, vote_diagonal: float = 4.0):
    """confusion[source, class, vote] ~ Dirichlet(1 + (vote_diagonal - 1) [vote = class]) per row (a source
    is a priori better than chance, which names the classes), and every item's vote evidence
    sum_s log confusion[s, c, v_js], (n, K); zeros without votes."""
    if not data.cast.any():
        return pt.zeros((data.n_items, data.n_classes))
    inputs = declare(vote_inputs(data), DATA_DIMS)
    return likelihoods.dawid_skene_evidence(inputs["vote_item"], inputs["vote_source"], inputs["vote_value"],
                                            data.n_items, confusion_prior(data.n_sources, data.n_classes,
                                                                          vote_diagonal))


def add_experts(data: CombinedSupervision, *, accuracy_a: float = 2.0, accuracy_b: float = 2.0):
    """alpha[expert], beta[expert] = 0.5 + 0.5 Beta(a, b), the noisy experts' sensitivity and specificity;
    None without pairs."""
    if not data.n_pairs:
        return None, None
    alpha_raw = pm.Beta("alpha_raw", accuracy_a, accuracy_b, dims="expert")
    beta_raw = pm.Beta("beta_raw", accuracy_a, accuracy_b, dims="expert")
    return (pm.Deterministic("alpha", 0.5 + 0.5 * alpha_raw, dims="expert"),
            pm.Deterministic("beta", 0.5 + 0.5 * beta_raw, dims="expert"))


def add_units(data: CombinedSupervision, log_q, evidence, alpha=None, beta=None, *, wh: float = 10.0,
              pair_weighting: bool = False):
    """Every unit's log-likelihood with the classes summed out (the module docstring), kept per unit slot
    (`record_pointwise("units")`; a padding slot adds exactly 0, `unit_inputs`) and summed in one Potential.
    `evidence` (n, K) is each item's own log P(label, votes | class). Returns the (slots,) tensor."""
    inputs = declare(unit_inputs(data, pair_weighting), DATA_DIMS)
    local = pt.specify_shape(log_q + evidence, (data.n_items, data.n_classes))  # static: JAX needs K
    log_z = likelihoods.logsumexp(local, axis=1, keepdims=False)
    log_r = local - log_z[:, None]
    parts = [pt.switch(inputs["item_unit_real"] > 0, log_z[inputs["item_units"]], 0.0)]
    if data.n_bags:
        rows = inputs["bag_rows"]
        plan = bag_plan(data)
        counts = likelihoods.poisson_multinomial_logp(log_r[rows], plan, inputs)
        parts.append(likelihoods.segment_sum(log_z[rows], pt.as_tensor(data.item_bag[bag_items(data)]), data.n_bags)
                     + counts)
    if data.n_pairs:
        ends = inputs["pair_ends"]
        log_same, log_different = likelihoods.pair_log_coclustering(log_r[ends[:, 0]], log_r[ends[:, 1]])
        parts.append(pt.switch(inputs["pair_real"] > 0, inputs["pair_weight"] * likelihoods.pair_ratings_logp(
            log_same, log_different, inputs["pair_must_links"], inputs["pair_cannot_links"], alpha, beta), 0.0))
    if data.n_groups:
        q = pt.exp(log_q[inputs["group_rows"]])
        shares = likelihoods.segment_sum(q, inputs["group_member"], data.n_groups)
        mu = pt.log(shares[:, 1]) - pt.log(shares[:, 0])
        parts.append(pm.logp(pm.Normal.dist(mu, 1.0 / math.sqrt(wh)), inputs["group_he"]))
    terms = pt.concatenate(parts) if len(parts) > 1 else parts[0]
    pm.Potential("supervision", pt.sum(likelihoods.record_pointwise("units", terms, dims="unit_slot")))
    return terms


def build_model(data: CombinedSupervision, *, prior_sd: float = 1.0, intercept_sd: float = 2.0,
                vote_diagonal: float = 4.0, accuracy_a: float = 2.0, accuracy_b: float = 2.0,
                wh: float = 10.0, pair_weighting: bool = False) -> pm.Model:
    """The combined model as a `pm.Model`: every source given in `data`, one latent class per item summed out."""
    check_settings(prior_sd, intercept_sd, vote_diagonal, accuracy_a, accuracy_b, wh, pair_weighting)
    with pm.Model(coords=model_coords(data)) as model:
        log_q = add_class_model(data, prior_sd=prior_sd, intercept_sd=intercept_sd)
        evidence = add_label_evidence(data) + add_vote_evidence(data, vote_diagonal=vote_diagonal)
        alpha, beta = add_experts(data, accuracy_a=accuracy_a, accuracy_b=accuracy_b)
        add_units(data, log_q, evidence, alpha, beta, wh=wh, pair_weighting=pair_weighting)
    return model


# ---------------------------------------------------------------------- the same likelihood in NumPy
def class_log_probabilities(features: np.ndarray, W: np.ndarray, b: np.ndarray) -> np.ndarray:
    """log softmax(x W^T + b) for draws W (S, K, D), b (S, K): (S, n, K)."""
    return special.log_softmax(np.einsum("nd,skd->snk", features, W, optimize=True) + b[:, None, :], axis=-1)


def count_logp(log_r: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """log P(class counts = counts) when item j is of class c with probability r_jc independently:
    log_r (S, m, K) -> (S,), by the recursion over items on the dense table of counts (small bags)."""
    counts = np.asarray(counts, dtype=np.int64)
    n_draws, m, k = log_r.shape
    shape = tuple(int(c) + 1 for c in counts[1:])
    state = np.full((n_draws, *shape), -np.inf)
    state[(slice(None), *([0] * (k - 1)))] = 0.0
    tail = (None,) * (k - 1)
    with np.errstate(invalid="ignore"):
        for j in range(m):
            new = state + log_r[:, j, 0][(slice(None), *tail)]
            for t in range(k - 1):
                pad = np.full((*state.shape[:t + 1], 1, *state.shape[t + 2:]), -np.inf)
                shifted = np.concatenate([pad, np.take(state, range(state.shape[t + 1] - 1), axis=t + 1)], axis=t + 1)
                new = np.logaddexp(new, shifted + log_r[:, j, t + 1][(slice(None), *tail)])
            state = new
    return state[(slice(None), *counts[1:])]


def unit_log_likelihood(data: CombinedSupervision, params: dict, *, wh: float = 10.0,
                        label_evidence: np.ndarray | None = None, pair_weighting: bool = False) -> np.ndarray:
    """The default model's per-unit log-likelihood (S, U) at draws of W, b, confusion, alpha, beta, in
    NumPy: what the checks replicate from and the tests hold the graph to. `label_evidence` (S, n, K)
    replaces the exact labels' log P(label | class) (a variant's noisy labels)."""
    W, b = np.asarray(params["W"], float), np.asarray(params["b"], float)
    log_q = class_log_probabilities(data.features, W, b)
    labels = label_logp(data)[None] if label_evidence is None else label_evidence
    local = log_q + labels + vote_evidence(data, params.get("confusion"))
    log_z = special.logsumexp(local, axis=-1)
    log_r = local - log_z[..., None]
    parts = [log_z[:, item_units(data)]]
    if data.n_bags:
        parts.append(np.stack([log_z[:, data.item_bag == g].sum(axis=1)
                               + count_logp(log_r[:, data.item_bag == g], data.bag_counts[g])
                               for g in range(data.n_bags)], axis=1))
    if data.n_pairs:
        first, second = log_r[:, data.pairs[:, 0]], log_r[:, data.pairs[:, 1]]
        same = np.exp(special.logsumexp(first + second, axis=-1))
        alpha, beta = np.asarray(params["alpha"], float), np.asarray(params["beta"], float)
        must, cannot = data.link_counts()
        given_same = (must @ np.log(alpha).T + cannot @ np.log1p(-alpha).T).T
        given_different = (must @ np.log1p(-beta).T + cannot @ np.log(beta).T).T
        parts.append(pair_weights(data, pair_weighting)
                     * np.log(same * np.exp(given_same) + (1 - same) * np.exp(given_different)))
    if data.n_groups:
        q = np.exp(log_q)
        member = data.item_group >= 0
        shares = np.stack([np.bincount(data.item_group[member], weights=q[s, member, 1], minlength=data.n_groups)
                           / np.bincount(data.item_group[member], weights=q[s, member].sum(axis=1),
                                         minlength=data.n_groups) for s in range(q.shape[0])])
        mu = np.log(shares) - np.log1p(-shares)
        sigma = 1.0 / math.sqrt(wh)
        parts.append(-0.5 * ((data.group_he - mu) / sigma) ** 2 - math.log(sigma) - 0.5 * math.log(2 * math.pi))
    return np.concatenate(parts, axis=1)


# ---------------------------------------------------------------------- estimator
class CombinedClassifier(Estimator):
    """A classifier learned from every kind of supervision at once (hand labels, crowd votes with
    abstentions, experts' must-/cannot-links, bags' class counts, groups' noisy averages), each an optional
    likelihood term on one latent class per item, summed out (see the module docstring).

    Parameters
    ----------
    prior_sd, intercept_sd : sds of the Normal priors on the class model's weights and intercepts.
    vote_diagonal : a source's confusion rows ~ Dirichlet(1, ..., vote_diagonal at the true class, ..., 1).
    accuracy_a, accuracy_b : the experts' alpha, beta ~ 0.5 + 0.5 Beta(a, b).
    wh : the groups' averages' precision on the logit scale (seed 000's WH).
    restarts : MAP starts (the first at zero weights, the rest drawn from the priors).
    conflict_check : with the fit's checks, leave each source out in turn, refit the rest (Laplace) and
        score the source against it (`checks.source_conflict`): one fit per source, so off by default.
    method, draws, tune, chains, seed, ... : as every estimator.

    After `fit(data)`: `idata_` with W[class, feature], b[class], and where their sources are given
    confusion[source, class, vote], accuracy[source], alpha[expert], beta[expert].
    """

    model_name = "combined"
    data_class = CombinedSupervision
    required_groups = ("posterior", "observed_data", "constant_data")
    bounds = {"confusion": (0.0, 1.0), "accuracy": (0.0, 1.0), "alpha": (0.5, 1.0), "beta": (0.5, 1.0),
              "alpha_raw": (0.0, 1.0), "beta_raw": (0.0, 1.0)}
    estimands = ["b", "W", "accuracy", "confusion", "alpha", "beta"]
    internal_variables = ("W_raw", "b_raw", "alpha_raw", "beta_raw")
    unit_dims = ("item", "unit")
    Settings = CombinedSettings

    def build_model(self, data: CombinedSupervision) -> pm.Model:
        return build_model(data, **self.build_settings())

    def model_inputs(self, data: CombinedSupervision):
        return model_coords(data), model_data(data, self.pair_weighting)

    def data_messages(self, data: CombinedSupervision) -> list[str]:
        from bayes_wsc.diagnostics import constant_features_message

        found = [constant_features_message(data.features, data.feature_names, "their weights in the class model")]
        if data.present_sources() == ["pairs"]:
            found.append("only pairs are given: nothing names the classes, so the fit finds a partition whose "
                         "classes may be in any order (give a few labels, votes or bags to name them).")
        return [m for m in found if m]

    def initial_values(self, data: CombinedSupervision) -> list[dict]:
        """The first start at zero weights, the others' weights drawn from the priors; confusion rows at
        accuracy 0.7, experts at 0.75."""
        rng = np.random.default_rng(self.seed)
        k = data.n_classes
        starts = []
        for r in range(self.restarts):
            start = {"W_raw": np.zeros((data.n_features, k)) if r == 0 else
                     rng.normal(0, self.prior_sd, (data.n_features, k)),
                     "b_raw": np.zeros(k) if r == 0 else rng.normal(0, self.intercept_sd, k)}
            if data.cast.any():
                start["confusion"] = start_confusion(data.n_sources, k, 0.7)
            if data.n_pairs:
                start["alpha_raw"] = start["beta_raw"] = np.full(data.n_experts, 0.5)
            starts.append(start)
        return starts

    def data_groups(self, data: CombinedSupervision) -> dict:
        """The supervision as observed data (labels, votes, links, bag counts, group averages; -1 for none), the
        items' features, scaling and memberships as constant data: enough to rebuild the container."""
        observed = {"label": data.label}
        const = {"features": data.features, "feature_mean": data.scaling.mean, "feature_scale": data.scaling.scale,
                 "item_bag": data.item_bag, "item_group": data.item_group}
        dims = {"features": ["item", "feature"], "feature_mean": ["feature"], "feature_scale": ["feature"],
                "label": ["item"], "item_bag": ["item"], "item_group": ["item"]}
        coords = {"class_name": ("class_name", list(data.classes))}
        if data.vote.size:
            observed["vote_value"] = data.vote
            const.update(vote_item=data.vote_item, vote_source=data.vote_source)
            dims.update(vote_item=["vote_row"], vote_source=["vote_row"], vote_value=["vote_row"],
                        vote_source_name=["source_name"])
            const["vote_source_name"] = np.arange(data.n_sources)
            coords["source_name"] = ("source_name", list(data.source_names))
        if data.link.size:
            observed["link"] = data.link.astype(np.int64)
            const.update(pair_first=data.pairs[:, 0], pair_second=data.pairs[:, 1], constraint_pair=data.cell_pair,
                         constraint_expert=data.cell_expert)
            dims.update(pair_first=["pair"], pair_second=["pair"], constraint_pair=["constraint"],
                        constraint_expert=["constraint"], link=["constraint"], expert_index=["expert_name"])
            const["expert_index"] = np.arange(data.n_experts)
            coords["expert_name"] = ("expert_name", list(data.expert_names))
        if data.n_bags:
            observed["bag_counts"] = data.bag_counts
            dims["bag_counts"] = ["bag", "class_name"]
        if data.n_groups:
            observed["group_he"] = data.group_he
            dims["group_he"] = ["group"]
        const["class_index"] = np.arange(data.n_classes)
        dims["class_index"] = ["class_name"]
        # the units LOO leaves out, by name, and the slot each had in the recorded units (`unit_slots`)
        const["unit_slot_index"] = np.flatnonzero(unit_slots(data))
        dims.update(unit_slot_index=["unit"], **{UNITS: ["unit"]})
        coords["unit"] = ("unit", unit_names(data))
        return {"observed_data": observed, "constant_data": const, "dims": dims, "extra_coords": coords,
                "attrs": {"data_settings": data.settings}}

    def complete_draws(self, draws, data) -> dict:
        """Nothing to add; the recorded units' dim once `pointwise_log_likelihood` has dropped the padding."""
        return {UNITS: ["unit"]}

    def pointwise_log_likelihood(self, draws, data) -> str | None:
        """The recorded units without their padding slots (`unit_slots`): one value per unit of `unit_names`,
        the likelihood unchanged (a padding slot adds exactly 0)."""
        recorded = draws.posterior.get(UNITS)
        real = unit_slots(data)
        if recorded is not None and np.shape(recorded)[-1] == real.size:
            draws.posterior[UNITS] = np.asarray(recorded)[..., real]
        return None

    def data_from_fit(self) -> CombinedSupervision:
        """The items and every source the fit saw, rebuilt from the saved fit."""
        from bayes_wsc import inference
        from bayes_wsc.data.tables import FeatureScaling

        self._check_fitted()
        fitted = self._fitted()
        const, observed = fitted.constant_data, fitted.observed_data

        def get(name, default):
            group = observed if name in observed else const
            return group[name].values if name in group else default

        def names(coord):
            for group in (const, observed):
                if coord in group.coords:
                    return np.asarray(group[coord].values).astype(str)
            return np.zeros(0, str)

        none = np.zeros(0, np.int64)
        first, second = get("pair_first", none), get("pair_second", none)
        return CombinedSupervision(
            const["item"].values, const["features"].values, FeatureScaling.saved(const), names("class_name"),
            observed["label"].values, get("vote_item", none), get("vote_source", none), get("vote_value", none),
            names("source_name"), np.stack([first, second], axis=1), get("constraint_pair", none),
            get("constraint_expert", none), get("link", none), names("expert_name"), const["item_bag"].values,
            names("bag"), get("bag_counts", np.zeros((0, len(names("class_name"))))), const["item_group"].values,
            names("group"), get("group_he", np.zeros(0)), dict(inference.get_attrs(fitted).get("data_settings", {})))

    # ------------------------------------------------------------------ predictions
    @property
    def classes_(self) -> list[str]:
        self._check_fitted()
        return [str(c) for c in self._fitted().posterior["class"].values]

    def _probability_frame(self, probabilities_of, n_rows: int, ci: float, index) -> pd.DataFrame:
        n_draws = stacked(self._fitted(), "b").shape[0]
        return class_table(self.classes_, probabilities_of, n_rows, n_draws, ci, index)

    def predict(self, items: pd.DataFrame, *, ci: float = DEFAULT_CI) -> pd.DataFrame:
        """Every input column plus `class` (most probable), `prob_<class>` (posterior mean of p(class | x))
        and `prob_low`, `prob_high` (the HDI of the chosen class's probability; empty after a MAP). New items
        need the fit's feature columns, scaled as the training items were."""
        self._check_fitted()
        check_ci(ci)
        from bayes_wsc.data.tables import FeatureScaling

        features = FeatureScaling.saved(self._fitted().constant_data).transform(items, "items")
        W, b = stacked(self._fitted(), "W"), stacked(self._fitted(), "b")
        frame = self._probability_frame(lambda rows: special.softmax(np.einsum("nd,skd->snk", features[rows], W, optimize=True)
                                                             + b[:, None, :], axis=-1),
                                        features.shape[0], ci, items.index)
        return append_predictions(items, frame)

    def item_probabilities(self, ci: float = DEFAULT_CI) -> pd.DataFrame:
        """The training items' classes given their features and their own labels and votes (r_j of the
        module docstring), indexed by item id, with the HDI of the chosen class's probability. An item in a
        bag or a pair is not further conditioned on its bag's counts or its pairs' links here."""
        self._check_fitted()
        check_ci(ci)
        data = self.data_from_fit()
        post = self._fitted().posterior
        params = {n: stacked(self._fitted(), n) for n in ("W", "b", "confusion") if n in post}

        def probabilities_of(rows):
            local = (class_log_probabilities(data.features, params["W"], params["b"]) + label_logp(data)[None]
                     + vote_evidence(data, params.get("confusion")))
            return special.softmax(local[:, rows], axis=-1)

        index = pd.Index(data.item_ids, name="item")
        return self._probability_frame(probabilities_of, data.n_items, ci, index)

    def write_report(self, out_dir, **kwargs):
        from bayes_wsc.models.combined.report import write_report

        return write_report(self, out_dir, **kwargs)
