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
to Dawid-Skene, a reliable annotator with a permuted confusion matrix) passes them. The conflict check
asks instead whether a source agrees with what the others imply (`source_conflict`, run when the estimator
has `conflict_check=True`): each source in turn (the hand labels, each annotator, each expert, the bags, the
groups) is left out, the model is refitted on the rest by the Laplace approximation (`rest_fit`), and the
source's observations are scored under the rest's posterior predictive: replicate i is drawn from the rest's
draw i, so the predictive carries the rest's parameter uncertainty, and a statistic that needs each item's
class uses r, the items' class probabilities averaged over the draws. (Plugging the rest's MAP in instead,
`predictive="map"`, leaves that uncertainty out: the logit of a group's class share under the rest's draws has
an sd of 0.2-0.3, next to the averages' own noise sd of 0.32, so the plug-in made honest averages look too far
off; RESULTS.md, issue 41, fifth round.)

* hand labels: their mean predicted probability sum_j r_j[y_j] / n against labels drawn from the predictive
  (lower tail; effect = replicates' mean - observed, tolerance `LABEL_TOLERANCE`);
* an annotator (an expert): its agreement with the rest, the mean predicted probability of its votes (of
  its links agreeing with the co-classification), against a source that answers independently of the
  class at its own vote (link) frequencies, i.e. chance (lower tail; effect = chance - observed, tolerance
  `CHANCE_TOLERANCE`). An annotator or expert that is merely noisy, or answers at random, does not
  contradict the rest (the model learns its reliability); one worse than chance does;
* bags: their counts' surprise under the rest's predictive, S = -sum_b log P(m_b), P(m_b) = mean_s
  P(m_b | r_s), P(m | r_s) the exact Poisson-multinomial probability of a bag's counts given its items'
  classes r_s under the rest's draw s (`model.count_logp`), against counts drawn from the same predictive
  (upper tail; effect = S - the replicates' mean S, in nats, tolerance `BAG_SURPRISE_TOLERANCE`). A bag's
  count is a sum of a few items whose classes the rest often knows well, so its predictive is skewed: a count
  two off can be very improbable although within two predictive sds, which a chi-square discrepancy (sum of
  squared sd units) does not see;
* groups: the chi-square discrepancy of their averages against replicates from the rest's predictive, each
  the logit of the group's class share under a draw of the class model plus the averages' noise
  (`criticism.omnibus`, effect phi against `PHI_TOLERANCE`).

One row names the source whose p-value (Bonferroni over the sources) is smallest among those beyond their
tolerance; it flags when that p-value is below `criticism.ALPHA`. A second row (`source_information`, never
flagged) names the annotators and experts whose agreement with the rest cannot be told from chance either
way: a source answering at random does not contradict the others, it tells them nothing.
"""

from __future__ import annotations

import numpy as np

from bayes_wsc._lazy import LazyModule
from bayes_wsc.criticism import (ALPHA, PHI_TOLERANCE, Check, Replicates, omnibus, p_value_two_sided,
                                  p_value_upper, worst_element)

special = LazyModule("scipy.special")

#: a source's agreement statistic may differ from its replicates' by this much before it flags
AGREEMENT_TOLERANCE = 0.1
#: held-out hand labels: mean predicted probability this far below what honest labels give
LABEL_TOLERANCE = 0.1
#: a held-out annotator or expert: agreement with the rest this far below chance
CHANCE_TOLERANCE = 0.05
#: replicates of each held-out source's statistic
CONFLICT_REPLICATES = 400
#: held-out bags: their counts this many nats more surprising than counts drawn from the rest (a factor e^3 = 20)
BAG_SURPRISE_TOLERANCE = 3.0


def variates(data) -> int:
    return int(data.n_items + data.vote.size + data.link.size + data.n_groups)


def parameters(posterior) -> list[str]:
    return [n for n in ("W", "b", "confusion", "alpha", "beta") if n in posterior]


def default_log_likelihood(est, data, params: dict) -> np.ndarray:
    """The default model's per-unit log-likelihood in NumPy (`model.unit_log_likelihood`)."""
    from bayes_wsc.models.combined.model import unit_log_likelihood

    return unit_log_likelihood(data, params, wh=est.wh, pair_weighting=est.pair_weighting)


def _draw(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A class per row of (..., K) probabilities."""
    u = rng.random(probs.shape[:-1])[..., None]
    return np.minimum((u > np.cumsum(probs, axis=-1)).sum(axis=-1), probs.shape[-1] - 1)


def replicate(est, data, params: dict, rng: np.random.Generator) -> Replicates:
    W, b = np.asarray(params["W"], float), np.asarray(params["b"], float)
    n_rep, k = b.shape
    log_q = special.log_softmax(np.einsum("nd,skd->snk", data.features, W, optimize=True) + b[:, None, :], axis=-1)
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
    for name, labels, noun, what, advice in (
            ("label_agreement", ["hand labels"], "source", "How probable the class model finds the hand labels",
             "The hand labels are less (or more) probable under the class model than labels drawn from it: some "
             "may be wrong, or the features do not separate the classes as the other sources say."),
            ("vote_agreement", list(data.source_names), "source",
             "How probable the class model finds each annotator's votes",
             "This annotator's votes agree with the class model out of line with its own confusion matrix: its "
             "errors may depend on the item. Look at its votes, or fit without it and compare."),
            ("link_agreement", list(data.expert_names), "expert", "How often each expert's links agree with the "
             "class model", "This expert's links agree with the classes out of line with any sensitivity and "
             "specificity in [0.5, 1]: it may link against the classes. Fit without it and compare.")):
        if name in realized:
            obs, rep = realized[name]
            out.append(worst_element(name, p_value_two_sided(obs, rep), obs.mean(axis=0), rep.mean(axis=0), labels,
                                     noun, what, advice, tolerance=AGREEMENT_TOLERANCE))
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


def held_out_sources(data) -> list[str]:
    """Every source the conflict check leaves out in turn (`CombinedSupervision.without` names them)."""
    out = ["labels"] if (data.label >= 0).any() else []
    cast = data.cast
    out += [f"votes:{n}" for i, n in enumerate(data.source_names) if (cast & (data.vote_source == i)).any()]
    out += [f"pairs:{n}" for n in data.expert_names]
    out += [kind for kind in ("bags", "groups") if kind in data.present_sources()]
    return out


def rest_fit(est, rest, predictive: str = "laplace"):
    """The model on the other sources (no checks of its own): a Laplace fit with one draw per replicate
    (`predictive="laplace"`, the check's default: the rest's parameter uncertainty enters the predictive), or
    its MAP alone (`"map"`: the plug-in predictive, narrower)."""
    settings = {k: v for k, v in est.get_params().items() if k not in ("method", "checks", "conflict_check")}
    method = {"laplace": {"method": "laplace", "draws": CONFLICT_REPLICATES}, "map": {"method": "map"}}[predictive]
    return type(est)(**{**settings, **method, "checks": False, "conflict_check": False,
                        "progressbar": False}).fit(rest)


def _rest_classes(fit, rest):
    """Per draw of the rest's fit (one for a MAP): each item's class given its features and the rest's labels
    and votes (S, n, K), and the class model's probabilities (S, n, K)."""
    from bayes_wsc.models.combined.model import class_log_probabilities, label_logp, vote_evidence

    post = fit.idata_.posterior
    params = {n: np.asarray(post[n].values, float).reshape(-1, *post[n].shape[2:])
              for n in ("W", "b", "confusion") if n in post}
    log_q = class_log_probabilities(rest.features, params["W"], params["b"])
    local = log_q + label_logp(rest)[None] + vote_evidence(rest, params.get("confusion"))
    return special.softmax(local, axis=-1), np.exp(log_q)


def _lower(observed: float, replicated: np.ndarray) -> float:
    """P(replicate <= observed), with normal tails beyond the replicates (`criticism.p_value_upper`)."""
    return float(p_value_upper(np.asarray(-observed), -np.asarray(replicated)))


def _per_replicate(values: np.ndarray, reps: int) -> np.ndarray:
    """`reps` rows of per-draw values (S, ...): replicate i from draw i mod S (a MAP: every replicate from it)."""
    return values[np.arange(reps) % values.shape[0]]


def bag_surprise(data, r: np.ndarray, rng: np.random.Generator, reps: int) -> tuple[float, np.ndarray]:
    """The bags' surprise S = -sum_b log P(m_b) of the observed counts, and of `reps` replicated counts, under
    the rest's posterior predictive of each bag's counts, P(m_b) = mean_s P(m_b | r_s), r (S, n, K) or (n, K)
    the items' classes per draw: replicate i draws each item's class from draw i mod S and reads off a bag's
    counts (module docstring)."""
    from bayes_wsc.models.combined.model import count_logp

    r = r[None] if r.ndim == 2 else r
    log_r = np.log(np.clip(r, 1e-300, 1.0))
    members = [np.flatnonzero(data.item_bag == g) for g in range(data.n_bags)]
    known: dict = {}

    def surprise(g: int, counts: np.ndarray) -> float:
        key = (g, *counts.tolist())
        if key not in known:
            known[key] = -float(special.logsumexp(count_logp(log_r[:, members[g]], counts)) - np.log(r.shape[0]))
        return known[key]

    observed = sum(surprise(g, data.bag_counts[g].astype(np.int64)) for g in range(data.n_bags))
    replicated = np.zeros(reps)
    for g, rows in enumerate(members):
        drawn = _draw(_per_replicate(r[:, rows], reps), rng)
        counts = np.stack([np.bincount(d, minlength=data.n_classes) for d in drawn])
        replicated += [surprise(g, c) for c in counts]
    return observed, replicated


def chance_row(observed: float, replicated: np.ndarray) -> tuple[float, float, float]:
    """(P(chance >= observed), P(chance <= observed), observed - chance's mean) of an annotator's or expert's
    agreement with the rest against answers at chance (`source_information`)."""
    return (float(p_value_upper(np.asarray(observed), np.asarray(replicated))), _lower(observed, replicated),
            float(observed - replicated.mean()))


def score_source(source: str, data, fit, rest, rng: np.random.Generator) -> tuple:
    """(p-value, effect, tolerance, words, information) of one held-out source under the rest's posterior
    predictive (one replicate per draw of the rest's fit); `information` is `chance_row` of an annotator's or
    expert's agreement against chance, None for the other sources."""
    r_draws, q_draws = _rest_classes(fit, rest)
    r = r_draws.mean(axis=0)  # the predictive probability of each item's class
    kind, _, name = source.partition(":")
    reps = CONFLICT_REPLICATES
    if kind == "labels":
        rows = np.flatnonzero(data.label >= 0)
        observed = float(r[rows, data.label[rows]].mean())
        drawn = _draw(_per_replicate(r_draws[:, rows], reps), rng)
        replicated = np.take_along_axis(r[rows][None], drawn[..., None], axis=2)[..., 0].mean(axis=1)
        effect = float(replicated.mean() - observed)
        return _lower(observed, replicated), effect, LABEL_TOLERANCE, (
            f"the hand labels' mean probability under the other sources is {observed:.3g}, where labels drawn from "
            f"those sources give {replicated.mean():.3g}"), None
    if kind == "votes":
        mine = data.cast & (data.source_names[data.vote_source] == name)
        items, votes = data.vote_item[mine], data.vote[mine]
        observed = float(r[items, votes].mean())
        frequency = np.bincount(votes, minlength=data.n_classes) / votes.size
        chance = rng.choice(data.n_classes, size=(reps, votes.size), p=frequency)
        replicated = r[items[None, :], chance].mean(axis=1)
        return _lower(observed, replicated), float(replicated.mean() - observed), CHANCE_TOLERANCE, (
            f"annotator {name!r}'s votes have mean probability {observed:.3g} under the other sources, where votes "
            f"independent of the class at its own frequencies (chance) give {replicated.mean():.3g}"), \
            chance_row(observed, replicated)
    if kind == "pairs":
        mine = data.expert_names[data.cell_expert] == name
        first, second = data.pairs[data.cell_pair[mine], 0], data.pairs[data.cell_pair[mine], 1]
        gamma = np.sum(r_draws[:, first] * r_draws[:, second], axis=2).mean(axis=0)  # P(same class), predictive
        link = data.link[mine].astype(float)
        observed = float(np.mean(link * gamma + (1 - link) * (1 - gamma)))
        chance_links = (rng.random((reps, link.size)) < link.mean()).astype(float)
        replicated = np.mean(chance_links * gamma + (1 - chance_links) * (1 - gamma), axis=1)
        return _lower(observed, replicated), float(replicated.mean() - observed), CHANCE_TOLERANCE, (
            f"expert {name!r}'s links agree with the other sources' classes with probability {observed:.3g}, where "
            f"links independent of the classes at its own rate (chance) give {replicated.mean():.3g}"), \
            chance_row(observed, replicated)
    if kind == "bags":
        observed, replicated = bag_surprise(data, r_draws, rng, reps)
        effect = float(observed - replicated.mean())
        return float(p_value_upper(observed, replicated)), effect, BAG_SURPRISE_TOLERANCE, (
            f"the bags' class counts are {np.exp(min(effect, 700.0)):.3g} times less probable under the other "
            f"sources than counts drawn from them (log probability {-observed:.3g} against "
            f"{-replicated.mean():.3g})"), None
    member = data.item_group >= 0
    sizes = np.bincount(data.item_group[member], minlength=data.n_groups)
    share = np.stack([np.bincount(data.item_group[member], weights=q[member, 1], minlength=data.n_groups)
                      for q in q_draws]) / sizes
    mu = _per_replicate(np.log(share) - np.log1p(-share), reps)
    replicated = mu + rng.normal(0, 1 / np.sqrt(fit.wh), (reps, data.n_groups))
    row = omnibus("groups", data.group_he, replicated, list(data.group_names), "group", "", "")
    return row.p_value, row.effect, PHI_TOLERANCE, (
        f"the groups' averages are {row.effect:.3g} times as far from the other sources' class shares as "
        "averages drawn from them"), None


def source_information(informative: list) -> list[Check]:
    """One row on the annotators and experts whose agreement with the rest cannot be told from chance in either
    direction (P(chance >= observed) and P(chance <= observed) both at least `ALPHA`): as far as the other
    sources can tell they answer at random, so the fit learns little from them (the model learns a reliability
    near chance for them). A weak but honest source with few answers is named too: the row says what the data
    can tell, not that the source is corrupted. Not a conflict: the row never flags.
    `informative` is (source, p above chance, p below chance, excess agreement over chance) per annotator and
    expert."""
    if not informative:
        return []
    near = [s for s in informative if s[1] >= ALPHA and s[2] >= ALPHA]
    if not near:
        return [Check("source_information", float("nan"), float("nan"), float("nan"), False,
                      "Every annotator and expert agrees with the other sources better or worse than chance: "
                      + ", ".join(f"{s[0]} by {s[3]:+.3g}" for s in informative) + ".", float("nan"),
                      CHANCE_TOLERANCE)]
    worst = max(near, key=lambda s: s[1])
    names = "; ".join(f"{s[0]} (agreement {s[3]:+.3g} over chance, p = {s[1]:.3g} that chance agrees as well)"
                      for s in near)
    return [Check("source_information", float(worst[3]), 0.0, float(worst[1]), False,
                  f"Near chance: {names}. The other sources cannot tell these answers from answers at random: "
                  "the fit learns little from them (the model gives such a source a reliability near chance). Not a "
                  "contradiction; a source that should know the classes may be answering at random.", float(worst[3]),
                  CHANCE_TOLERANCE)]


def source_conflict(est, data, seed: int = 0, predictive: str = "laplace") -> list[Check]:
    """The held-out-source conflict check (module docstring): one row, naming the source that contradicts the
    rest, if any, and one on the annotators and experts near chance (`source_information`); none when the
    estimator's `conflict_check` is off. `predictive="map"` scores against the rest's MAP plugged in (`rest_fit`)."""
    if not getattr(est, "conflict_check", False):
        return []
    sources = held_out_sources(data)
    if len(data.present_sources()) < 2 and len(sources) < 2:
        return [Check("source_conflict", float("nan"), float("nan"), float("nan"), False,
                      "Only one source is given: there is nothing to hold it against.")]
    rng = np.random.default_rng(seed)
    scored, informative = [], []
    for source in sources:
        rest = data.without(source)
        try:
            fit = rest_fit(est, rest, predictive)
        except Exception as exc:  # noqa: BLE001 - the rest cannot be fitted alone (no supervision left...)
            scored.append((source, float("nan"), float("nan"), float("nan"), f"not scored: {exc}"))
            continue
        p, effect, tolerance, words, information = score_source(source, data, fit, rest, rng)
        scored.append((source, p, effect, tolerance, words))
        if information is not None:
            informative.append((source, *information))
    finite = [s for s in scored if np.isfinite(s[1])]
    if not finite:
        return [Check("source_conflict", float("nan"), float("nan"), float("nan"), False,
                      "No source could be held against the others: " + "; ".join(f"{s[0]} {s[4]}" for s in scored))]
    beyond = [s for s in finite if s[2] > s[3]]
    source, p, effect, tolerance, words = min(beyond or finite, key=lambda s: s[1])
    p_corrected = min(1.0, p * len(finite))
    flagged = bool(beyond) and p_corrected < ALPHA
    if flagged:
        message = (f"Source {source} contradicts the other sources: {words} (effect {effect:.3g}, tolerance "
                   f"{tolerance:g}; p = {p_corrected:.3g}, Bonferroni over {len(finite)} sources). Look at it, or "
                   "fit without it and compare.")
    else:
        message = (f"No source contradicts the others (held out in turn: {', '.join(s[0] for s in finite)}); the "
                   f"least consistent is {source}: {words} (effect {effect:.3g}, tolerance {tolerance:g}, p = "
                   f"{p_corrected:.3g} after Bonferroni).")
    # the statistic is the worst source's effect (its own units: probability below what the rest implies, or
    # the discrepancy's ratio); the message gives its observed value and what the rest implies
    return [Check("source_conflict", float(effect), float("nan"), p_corrected, flagged, message, float(effect),
                  float(tolerance)), *source_information(informative)]


def targeted() -> list:
    """The held-out-source conflict check (it refits the model once per source, so it runs only when the
    estimator asks for it: `conflict_check=True`)."""
    return [source_conflict]


