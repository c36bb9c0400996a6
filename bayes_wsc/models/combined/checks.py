"""Checks of the combined model: one row per kind of supervision, each source against what the fit
implies for it.

Every replicate draws each item's class anew from the class model, z_j ~ softmax(x_j W^T + b), and from it
every source: hand labels y_j = z_j, votes from each source's confusion row (on the items it voted on),
links from each expert's alpha, beta, bag counts, and group averages ~ Normal(logit share, 1 / sqrt(WH)).
Each row compares a statistic of the observed source with its replicates under the same draws (realized
discrepancies where the statistic involves the parameters):

* `label_agreement`: the mean class-model probability of the hand labels, sum_j q_j[y_j] / n_labels;
* `vote_agreement[source]`: per annotator, the mean class-model probability of its votes;
* `link_agreement[expert]`: per expert, the mean probability that its links agree with the co-clustering;
* `bag_counts` (omnibus over bags' class counts) and `group_he` (omnibus over groups' averages).

These are in-sample checks: a source the model can describe (an annotator who always answers wrong is,
to Dawid-Skene, a reliable annotator with a permuted confusion matrix) passes them; the held-out-source
check that asks whether a source agrees with what the others imply is not written yet.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax, softmax

from bayes_wsc.criticism import Check, Replicates, omnibus, p_value_two_sided, worst_element

#: a source's agreement statistic may differ from its replicates' by this much before it flags
AGREEMENT_TOLERANCE = 0.1


def variates(data) -> int:
    return int(data.n_items + data.vote.size + data.link.size + data.n_groups)


def parameters(posterior) -> list[str]:
    return [n for n in ("W", "b", "confusion", "alpha", "beta") if n in posterior]


def default_log_likelihood(est, data, params: dict) -> np.ndarray:
    """The default model's per-unit log-likelihood in NumPy (`model.unit_log_likelihood`)."""
    from bayes_wsc.models.combined.model import unit_log_likelihood

    return unit_log_likelihood(data, params, wh=est.wh)


def _draw(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A class per row of (..., K) probabilities."""
    u = rng.random(probs.shape[:-1])[..., None]
    return np.minimum((u > np.cumsum(probs, axis=-1)).sum(axis=-1), probs.shape[-1] - 1)


def replicate(est, data, params: dict, rng: np.random.Generator) -> Replicates:
    W, b = np.asarray(params["W"], float), np.asarray(params["b"], float)
    n_rep, k = b.shape
    log_q = log_softmax(np.einsum("nd,skd->snk", data.features, W) + b[:, None, :], axis=-1)
    q = np.exp(log_q)
    z = _draw(q, rng)  # (S, n)
    replicated, observed, dims, coords, realized = {}, {}, {}, {}, {}
    labelled = np.flatnonzero(data.label >= 0)
    if labelled.size:
        obs = np.take_along_axis(q[:, labelled], data.label[labelled][None, :, None], axis=2)[..., 0].mean(axis=1)
        rep = np.take_along_axis(q[:, labelled], z[:, labelled, None], axis=2)[..., 0].mean(axis=1)
        realized["label_agreement"] = (obs[:, None], rep[:, None])
    cast = data.cast
    if cast.any():
        confusion = np.asarray(params["confusion"], float)
        items, sources, votes = data.vote_item[cast], data.vote_source[cast], data.vote[cast]
        rows = confusion[np.arange(n_rep)[:, None], sources[None, :], z[:, items]]  # (S, V, K)
        new_votes = _draw(rows, rng)
        counts = np.bincount(sources, minlength=data.n_sources)
        obs = np.stack([np.bincount(sources, weights=q[s, items, votes], minlength=data.n_sources)
                        for s in range(n_rep)]) / np.maximum(counts, 1)
        rep = np.stack([np.bincount(sources, weights=q[s, items, new_votes[s]], minlength=data.n_sources)
                        for s in range(n_rep)]) / np.maximum(counts, 1)
        realized["vote_agreement"] = (obs, rep)
        replicated["vote_share"] = np.stack([np.bincount(votes * 0 + new_votes[s] + k * sources,
                                                         minlength=k * data.n_sources) for s in range(n_rep)]
                                            ).reshape(n_rep, data.n_sources, k) / np.maximum(counts, 1)[:, None]
        observed["vote_share"] = (np.bincount(votes + k * sources, minlength=k * data.n_sources)
                                  .reshape(data.n_sources, k) / np.maximum(counts, 1)[:, None])
        dims["vote_share"] = ["source", "class"]
        coords.update(source=list(data.source_names), **{"class": list(data.classes)})
    if data.link.size:
        alpha, beta = np.asarray(params["alpha"], float), np.asarray(params["beta"], float)
        first, second = data.pairs[data.cell_pair, 0], data.pairs[data.cell_pair, 1]
        expert = data.cell_expert
        same = z[:, first] == z[:, second]
        p_link = np.where(same, alpha[:, expert], 1 - beta[:, expert])
        links = (rng.random(p_link.shape) < p_link).astype(float)
        gamma = np.sum(q[:, first] * q[:, second], axis=-1)
        rated = np.maximum(np.bincount(expert, minlength=data.n_experts), 1)

        def per_expert(values):
            return np.stack([np.bincount(expert, weights=v, minlength=data.n_experts) for v in values]) / rated

        link = data.link.astype(float)[None]
        realized["link_agreement"] = (per_expert(link * gamma + (1 - link) * (1 - gamma)),
                                      per_expert(links * gamma + (1 - links) * (1 - gamma)))
        replicated["link_rate"] = per_expert(links)
        observed["link_rate"] = np.bincount(expert, weights=data.link, minlength=data.n_experts) / rated
        dims["link_rate"] = ["expert"]
        coords["expert"] = list(data.expert_names)
    if data.n_bags:
        inside = data.item_bag >= 0
        replicated["bag_counts"] = np.stack([
            np.stack([np.bincount(z[s, inside & (data.item_bag == g)], minlength=k) for g in range(data.n_bags)])
            for s in range(n_rep)]).astype(float)
        observed["bag_counts"] = data.bag_counts
        dims["bag_counts"] = ["bag", "class"]
        coords.update(bag=list(data.bag_names), **{"class": list(data.classes)})
    if data.n_groups:
        member = data.item_group >= 0
        sizes = np.bincount(data.item_group[member], minlength=data.n_groups)
        share = np.stack([np.bincount(data.item_group[member], weights=q[s, member, 1], minlength=data.n_groups)
                          for s in range(n_rep)]) / sizes
        mu = np.log(share) - np.log1p(-share)
        replicated["group_he"] = mu + rng.normal(0, 1 / np.sqrt(est.wh), mu.shape)
        observed["group_he"] = data.group_he
        dims["group_he"] = ["group"]
        coords["group"] = list(data.group_names)
    return Replicates(replicated, observed, dims=dims, coords=coords, realized=realized)


def rows(est, data, replicates: Replicates) -> list[Check]:
    out = []
    realized = replicates.realized
    if "label_agreement" in realized:
        obs, rep = realized["label_agreement"]
        out.append(worst_element(
            "label_agreement", p_value_two_sided(obs, rep), obs.mean(axis=0), rep.mean(axis=0), ["hand labels"],
            "source", "How probable the class model finds the hand labels",
            "The hand labels are less (or more) probable under the class model than labels drawn from it: some "
            "may be wrong, or the features do not separate the classes as the other sources say.",
            tolerance=AGREEMENT_TOLERANCE))
    if "vote_agreement" in realized:
        obs, rep = realized["vote_agreement"]
        out.append(worst_element(
            "vote_agreement", p_value_two_sided(obs, rep), obs.mean(axis=0), rep.mean(axis=0),
            list(data.source_names), "source", "How probable the class model finds each annotator's votes",
            "This annotator's votes agree with the class model out of line with its own confusion matrix: its "
            "errors may depend on the item. Look at its votes, or fit without it and compare.",
            tolerance=AGREEMENT_TOLERANCE))
    if "link_agreement" in realized:
        obs, rep = realized["link_agreement"]
        out.append(worst_element(
            "link_agreement", p_value_two_sided(obs, rep), obs.mean(axis=0), rep.mean(axis=0),
            list(data.expert_names), "expert", "How often each expert's links agree with the class model",
            "This expert's links agree with the classes out of line with any sensitivity and specificity in "
            "[0.5, 1]: it may link against the classes. Fit without it and compare.", tolerance=AGREEMENT_TOLERANCE))
    if "bag_counts" in replicates.replicated:
        labels = [f"{b}/{c}" for b in data.bag_names for c in data.classes]
        out.append(omnibus("bag_counts", replicates.observed["bag_counts"], replicates.replicated["bag_counts"],
                           labels, "bag class count", "The bags' class counts against the classes the fit predicts",
                           "Some bags' counts are out of line with the classes the features and the other sources "
                           "imply: the counts may be wrong, or the class model too simple."))
    if "group_he" in replicates.replicated:
        out.append(omnibus("group_he", replicates.observed["group_he"], replicates.replicated["group_he"],
                           list(data.group_names), "group", "The groups' averages against the class shares the fit "
                           "predicts", "Some groups' averages are out of line with the class model's shares: the "
                           "averages may be biased, or WH too high."))
    return out


def unit_label(idata, label) -> str:
    """A unit is named by what it is: "item a1", "bag b2", "pair (a1, a7)", "group g3"."""
    return str(label)


def targeted() -> list:
    """The rows come from the replicates (`rows`); nothing more runs."""
    return []


__all__ = ["variates", "parameters", "default_log_likelihood", "replicate", "rows", "targeted", "softmax"]
