"""The crowd model (Dawid and Skene 1979): each item has a latent class, each source (an annotator or a
labelling rule) votes on some items through a confusion matrix of its own, and may abstain::

    pi ~ Dirichlet(class_concentration, ..., class_concentration)      the class prior
    confusion[s, c, :] ~ Dirichlet(1 + (vote_diagonal - 1) [v = c])    each source's row per true class
    z_j ~ Categorical(pi)                                              summed out
    v_js | z_j = c ~ Categorical(confusion[s, c])                      a cast vote; an abstention carries
                                                                       no likelihood (missing at random)

Each item with a cast vote is one unit, log sum_c pi_c prod_s confusion[s, c, v_js] (log-sum-exp over the
classes); an item on which every source abstained carries no likelihood and its class is pi's. The vote
term is the combined model's (`likelihoods.dawid_skene_evidence`, `maths.dawid_skene`). The prior's
diagonal names the classes (a source is a priori better than chance), so there is no label switching to
undo; a source that always answers wrong is, to this likelihood, a reliable source with a permuted
confusion matrix, which the checks' agreement row catches (`checks.py`).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

from bayes_wsc._lazy import LazyModule
from bayes_wsc.defaults import DEFAULT_CI
from bayes_wsc.errors import InputError
from bayes_wsc.settings import checked
from bayes_wsc.estimator import Estimator
from bayes_wsc.graph_inputs import declare
from bayes_wsc.maths.dawid_skene import confusion_prior, start_confusion, vote_evidence, vote_inputs
from bayes_wsc.models.crowd.data import CrowdVotes
from bayes_wsc.models.crowd.settings import CrowdSettings
from bayes_wsc.posterior import append_predictions, class_table, stacked

pm = LazyModule("pymc")
pt = LazyModule("pytensor.tensor")
likelihoods = LazyModule("bayes_wsc.likelihoods")
special = LazyModule("scipy.special")

#: the dims of every `pm.Data` the blocks declare
DATA_DIMS = {"vote_item": ("cast",), "vote_source": ("cast",), "vote_value": ("cast",), "voted": ("voted_item",)}


def check_settings(vote_diagonal, class_concentration) -> None:
    """Fail early, naming the setting (as declared, `CrowdSettings`)."""
    checked(CrowdSettings, {"vote_diagonal": vote_diagonal, "class_concentration": class_concentration})


# ---------------------------------------------------------------------- the data the graph reads (NumPy)
def model_data(data: CrowdVotes) -> dict[str, np.ndarray]:
    """Every value the blocks declare as `pm.Data`, by name, in NumPy (a cached MAP program's inputs)."""
    return {**vote_inputs(data), "voted": data.voted_items()}


def model_coords(data: CrowdVotes) -> dict[str, list]:
    """The data's dims, `cast` (the cast votes) and `voted_item` (the units: items with a cast vote)."""
    return {**data.coords, "cast": list(range(int(data.cast.sum()))),
            "voted_item": list(data.item_ids[data.voted_items()])}


# ---------------------------------------------------------------------- blocks
def add_class_prior(data: CrowdVotes, *, class_concentration: float = 1.0):
    """pi[class] ~ Dirichlet(class_concentration); returns log pi (K,)."""
    from bayes_wsc.transforms import StickBreaking

    pi = pm.Dirichlet("pi", a=np.full(data.n_classes, float(class_concentration)), dims="class",
                      default_transform=StickBreaking())
    return pt.log(pi)


def add_vote_evidence(data: CrowdVotes, *, vote_diagonal: float = 4.0):
    """confusion[source, class, vote] (Dirichlet rows favouring the diagonal), accuracy[source], and every
    item's vote evidence sum_s log confusion[s, c, v_js] (n, K): the shared Dawid-Skene term."""
    inputs = declare(vote_inputs(data), DATA_DIMS)
    return likelihoods.dawid_skene_evidence(inputs["vote_item"], inputs["vote_source"], inputs["vote_value"],
                                            data.n_items, confusion_prior(data.n_sources, data.n_classes,
                                                                          vote_diagonal))


def add_items(data: CrowdVotes, log_pi, evidence):
    """Each voted item's log-likelihood with its class summed out, log sum_c exp(log pi_c + evidence_jc),
    kept per unit (`record_pointwise("items")`) and summed in one Potential. Returns the (U,) tensor."""
    voted = declare(model_data(data), DATA_DIMS, only=["voted"])["voted"]
    local = pt.specify_shape(log_pi[None, :] + evidence, (data.n_items, data.n_classes))  # static: JAX needs K
    terms = likelihoods.mixture_logp(pt.zeros((1, data.n_classes)), local)[voted]
    pm.Potential("votes", pt.sum(likelihoods.record_pointwise("items", terms, dims="voted_item")))
    return terms


def build_model(data: CrowdVotes, *, vote_diagonal: float = 4.0, class_concentration: float = 1.0) -> pm.Model:
    """The crowd model as a `pm.Model`: the class prior, every source's confusion matrix, the classes summed out."""
    check_settings(vote_diagonal, class_concentration)
    with pm.Model(coords=model_coords(data)) as model:
        log_pi = add_class_prior(data, class_concentration=class_concentration)
        add_items(data, log_pi, add_vote_evidence(data, vote_diagonal=vote_diagonal))
    return model


# ---------------------------------------------------------------------- the same likelihood in NumPy
def item_log_evidence(data: CrowdVotes, pi: np.ndarray, confusion: np.ndarray) -> np.ndarray:
    """(S, n, K) log pi_c + sum_s log confusion[s, c, v_js] at draws pi (S, K), confusion (S, sources, K, K)."""
    return np.log(pi)[:, None, :] + vote_evidence(data, confusion)


def unit_log_likelihood(data: CrowdVotes, params: dict) -> np.ndarray:
    """The default model's per-unit log-likelihood (S, U) at draws of pi and confusion, in NumPy: what the
    checks and the variant test read, and the tests hold the graph and brute-force enumeration to."""
    local = item_log_evidence(data, np.asarray(params["pi"], float), np.asarray(params["confusion"], float))
    return special.logsumexp(local, axis=-1)[:, data.voted_items()]


# ---------------------------------------------------------------------- estimator
class CrowdClassifier(Estimator):
    """Each item's class from crowd votes (annotators or labelling rules, abstentions allowed), learning each
    source's confusion matrix and the class prior (Dawid and Skene 1979; the module docstring).

    Parameters
    ----------
    vote_diagonal : a source's confusion rows ~ Dirichlet(1, ..., vote_diagonal at the true class, ..., 1).
    class_concentration : pi ~ Dirichlet(class_concentration, ...).
    restarts : MAP starts (the first at accuracy 0.7 and pi uniform, the others drawn from the priors).
    method, draws, tune, chains, seed, ... : as every estimator.

    After `fit(data)`: `idata_` with pi[class], confusion[source, class, vote] and accuracy[source];
    `item_probabilities()` each item's class given its votes, `predict(table)` for new items' votes.
    """

    Settings = CrowdSettings

    model_name = "crowd"
    data_class = CrowdVotes
    required_groups = ("posterior", "observed_data", "constant_data")
    bounds = {"pi": (0.0, 1.0), "confusion": (0.0, 1.0), "accuracy": (0.0, 1.0)}
    estimands = ["pi", "accuracy", "confusion"]

    def build_model(self, data: CrowdVotes) -> pm.Model:
        return build_model(data, **self.build_settings())

    def model_inputs(self, data: CrowdVotes):
        return model_coords(data), model_data(data)

    def data_messages(self, data: CrowdVotes) -> list[str]:
        found = []
        silent = data.n_items - data.voted_items().size
        if silent:
            found.append(f"{silent} item(s) have no cast vote (every source abstained): their class is the class "
                         "prior's alone.")
        per_source = np.bincount(data.vote_source[data.cast], minlength=data.n_sources)
        if (per_source == 0).any():
            found.append(f"source {data.source_names[np.flatnonzero(per_source == 0)[0]]!r} abstained on every "
                         "item: its confusion matrix is its prior's.")
        return found

    def initial_values(self, data: CrowdVotes) -> list[dict]:
        """The first start at accuracy 0.7 and a uniform pi; the others' confusion rows and pi drawn from
        their priors."""
        rng = np.random.default_rng(self.seed)
        k, s = data.n_classes, data.n_sources
        starts = [{"pi": np.full(k, 1.0 / k), "confusion": start_confusion(s, k, 0.7)}]
        for _ in range(1, self.restarts):
            starts.append({"pi": rng.dirichlet(np.full(k, float(self.class_concentration))),
                           "confusion": np.stack([[rng.dirichlet(row) for row in prior]
                                                  for prior in confusion_prior(s, k, self.vote_diagonal)])})
        return starts

    def data_groups(self, data: CrowdVotes) -> dict:
        """Every row of the votes table (-1: abstention) as observed and constant data, with the names of the
        items, classes and sources: enough to rebuild the container."""
        return {"observed_data": {"vote_value": data.vote},
                "constant_data": {"vote_item": data.vote_item, "vote_source": data.vote_source,
                                  "item_index": np.arange(data.n_items), "source_index": np.arange(data.n_sources),
                                  "class_index": np.arange(data.n_classes)},
                "dims": {"vote_value": ["vote_row"], "vote_item": ["vote_row"], "vote_source": ["vote_row"],
                         "item_index": ["item"], "source_index": ["source_name"], "class_index": ["class_name"]},
                "extra_coords": {"source_name": ("source_name", list(data.source_names)),
                                 "class_name": ("class_name", list(data.classes)),
                                 "item": ("item", list(data.item_ids))},
                "attrs": {"data_settings": data.settings}}

    def data_from_fit(self) -> CrowdVotes:
        """The votes the fit saw, rebuilt from the saved fit."""
        from bayes_wsc import inference

        self._check_fitted()
        fitted = self._fitted()
        const, observed = fitted.constant_data, fitted.observed_data
        return CrowdVotes(const["item"].values, const["class_name"].values, const["source_name"].values,
                          const["vote_item"].values, const["vote_source"].values, observed["vote_value"].values,
                          dict(inference.get_attrs(fitted).get("data_settings", {})))

    # ------------------------------------------------------------------ predictions
    @property
    def classes_(self) -> list[str]:
        self._check_fitted()
        return [str(c) for c in self._fitted().posterior["class"].values]

    @property
    def sources_(self) -> list[str]:
        self._check_fitted()
        return [str(c) for c in self._fitted().posterior["source"].values]

    def key_columns(self) -> list[str]:
        """The item column and the sources' columns of the table `predict` reads: ids and class names, kept as
        text ('001' stays '001')."""
        return ["item", *self.sources_]

    def _probabilities(self, data: CrowdVotes, ci: float, index) -> pd.DataFrame:
        pi, confusion = stacked(self._fitted(), "pi"), stacked(self._fitted(), "confusion")
        return class_table(self.classes_,
                           lambda rows: special.softmax(item_log_evidence(data, pi, confusion)[:, rows], axis=-1),
                           data.n_items, pi.shape[0], ci, index)

    def predict(self, items: pd.DataFrame, *, ci: float = DEFAULT_CI) -> pd.DataFrame:
        """Every input column plus `class` (most probable), `prob_<class>` (posterior mean of P(class | the
        row's votes)) and `prob_low`, `prob_high` (the HDI of the chosen class's probability; empty after a
        MAP). `items` has one row per item and one column per source of the fit, holding its vote (a class
        name; empty: abstained), and optionally an `item` column; any other column is refused."""
        self._check_fitted()
        data = self._votes_of(items)
        return append_predictions(items, self._probabilities(data, ci, items.index))

    def _votes_of(self, items: pd.DataFrame) -> SimpleNamespace:
        from bayes_wsc.data.tables import check_frame, key_text, text_column

        check_frame(items, "items")
        sources, classes = self.sources_, pd.Index(self.classes_)
        unknown = [c for c in items.columns if c != "item" and str(c) not in sources]
        if unknown:
            raise InputError(f"items column {str(unknown[0])!r} is not a source of the fit (its sources: "
                             f"{', '.join(sources)}); give an item column and one column per source")
        rows, given = np.arange(len(items)), [c for c in items.columns if c != "item"]
        item, source, vote = [], [], []
        for column in given:
            text = text_column(key_text(items[column]), str(column), "items")
            codes = np.full(len(items), -1, dtype=np.int64)
            present = text.notna().to_numpy()
            codes[present] = classes.get_indexer(text[present].astype(str))
            bad = np.flatnonzero(present & (codes < 0))
            if bad.size:
                raise InputError(f"items column {str(column)!r} row {bad[0] + 1}: vote {text.iloc[bad[0]]!r} is not a "
                                 f"class of the fit ({', '.join(classes)})")
            item.append(rows)
            source.append(np.full(len(items), sources.index(str(column))))
            vote.append(codes)
        empty = np.zeros(0, dtype=np.int64)
        # new items: any number, with or without a cast vote (what `vote_evidence` reads of a container)
        return SimpleNamespace(n_items=len(items), n_classes=classes.size,
                               vote_item=np.concatenate(item) if item else empty,
                               vote_source=np.concatenate(source) if source else empty,
                               vote=np.concatenate(vote) if vote else empty)

    def item_probabilities(self, ci: float = DEFAULT_CI) -> pd.DataFrame:
        """The training items' classes given their votes, indexed by item id, with the HDI of the chosen
        class's probability (empty after a MAP)."""
        self._check_fitted()
        data = self.data_from_fit()
        return self._probabilities(data, ci, pd.Index(data.item_ids, name="item"))

    def write_report(self, out_dir, **kwargs):
        from bayes_wsc.models.crowd.report import write_report

        return write_report(self, out_dir, **kwargs)
