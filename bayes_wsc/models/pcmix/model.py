"""Prediction-constrained supervised mixture (seed 003: Hughes et al., Sec. 2-3, eq. 19-25).

    z_d ~ Categorical(pi)                           pi ~ Dirichlet(1.01)
    x_d | z = k ~ Normal(mean_k, diag(sd_k^2))      sd_kj >= 0.001 (standardized units)
    y_d | z = k ~ Categorical(rho_k)                 rho_k ~ Beta(1.01, 1.01) or Dirichlet(1.01)

z is summed out. With p(x_d) = sum_k pi_k f(x_d | k) and
p(y_d | x_d) = sum_k pi_k f(x_d | k) g(y_d | k) / p(x_d) (eq. 22-23), the
prediction-constrained (PC) objective of eq. 5 and, with missing labels, eq. 9

    J(xi) = sum_d log p(x_d) + lam * sum_{labeled d} log p(y_d | x_d)

enters the model as one `pm.Potential`. So

* the model's log density is log p0(xi) + J(xi), and its mode (MAP) *is* PC
  training (eq. 24 with R = -log p0). lam = 1 is the ordinary joint model,
  log p(x, y); lam = 0 ignores the labels; lam > 1 asks the clusters to
  predict y from x at some cost in how well they describe x.
* NUTS samples the *generalized posterior* proportional to p0(xi) exp(J(xi)).
  At lam = 1 it is the ordinary Bayesian posterior of the joint model. At any
  other lam it is not the posterior of any probability model of the data:
  the labels' conditional likelihood is counted lam times, so the draws
  concentrate as if there were lam times more labeled information than there
  is. Its spread shows which parameters are compatible with the lam-weighted
  objective (how flat it is around the optimum, and whether other basins
  compete); its credible intervals are not calibrated in either the Bayesian
  or the frequentist sense and should not be read as such. Nobody has
  published this use of the PC objective; treat it as a sensitivity tool.

Features are standardized by the data container; the priors on the means
(Normal(0, 3)) and on the sds (0.001 + Gamma(2, 1)) are weakly informative
on that scale. `mean` and `sd` are reported in the data's units.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from bayes_wsc import inference
from bayes_wsc._lazy import LazyModule
from bayes_wsc.maths.pcmix import (Params, Priors, check_components, check_lam, component_logp,
                                   component_logp_rows, lam_text, random_starts)
from bayes_wsc.data.labeled import LabeledItems, standardize
from bayes_wsc.defaults import DEFAULT_CI
from bayes_wsc.errors import InputError
from bayes_wsc.estimator import Estimator, is_count, is_labels
from bayes_wsc.models.pcmix.settings import PCMixSettings
from bayes_wsc.settings import checked
from bayes_wsc.graph_inputs import declare
from bayes_wsc.posterior import append_predictions, stacked, summarize_rows
from bayes_wsc.relabel import canonical_permutation, cluster_axes, mode_messages, permute_clusters, relabel_draws

# PyMC and PyTensor load when a model is built, not when the estimator is: a MAP whose compiled
# program is cached (bayes_wsc.map_program) runs without them
pm = LazyModule("pymc")
pt = LazyModule("pytensor.tensor")
likelihoods = LazyModule("bayes_wsc.likelihoods")
transforms = LazyModule("bayes_wsc.transforms")
special = LazyModule("scipy.special")

#: items used to compute memberships when aligning draws (a seeded subsample beyond this)
RELABEL_ITEMS = 2000
#: two restarts reached the same basin when their log densities agree this closely (relative)
BASIN_TOL = 1e-5
#: ... and never closer than this (nats): L-BFGS stops a little short on the flat rho directions
BASIN_ATOL = 0.05


# ---------------------------------------------------------------------- settings
def priors_from(sd_floor: float = 0.001, mean_prior_sd: float = 3.0, sd_prior_rate: float = 1.0,
                concentration: float = 1.01) -> Priors:
    """The priors, each setting checked as declared (`PCMixSettings`)."""
    checked(PCMixSettings, {"sd_floor": sd_floor, "mean_prior_sd": mean_prior_sd, "sd_prior_rate": sd_prior_rate,
                            "concentration": concentration})
    return Priors(pi_concentration=float(concentration), rho_concentration=float(concentration),
                  mean_sd=float(mean_prior_sd), sd_rate=float(sd_prior_rate), sd_floor=float(sd_floor))


def check_data(data) -> LabeledItems:
    if not isinstance(data, LabeledItems):
        raise InputError(f"PCMixture fits LabeledItems (bayes_wsc.data.labeled), got {type(data).__name__}")
    return data


# ---------------------------------------------------------------------- blocks
def add_mixture_weights(priors: Priors = Priors()):
    """pi[component] ~ Dirichlet(1.01) (eq. 25), on stick-breaking coordinates."""
    components = len(pm.modelcontext(None).coords["component"])
    if components == 1:
        return pm.Deterministic("pi", pt.ones(1), dims="component")
    return pm.Dirichlet("pi", a=np.full(components, priors.pi_concentration), dims="component",
                        default_transform=transforms.StickBreaking())


def add_gaussian_components(priors: Priors = Priors()):
    """mean_z[component, feature] ~ Normal(0, 3) and sd_z = 0.001 + Gamma(2, 1) on standardized features.

    Returns (mean_z, sd_z). The Gamma(2, .) density vanishes at 0, which keeps
    a component from collapsing onto one point; the floor is the paper's.
    """
    return add_component_means(priors), add_component_sds(priors)


def add_component_means(priors: Priors = Priors()):
    """mean_z[component, feature] ~ Normal(0, 3) on standardized features."""
    return pm.Normal("mean_z", 0.0, priors.mean_sd, dims=("component", "feature"))


def add_component_sds(priors: Priors = Priors()):
    """sd_z[component, feature] = sd_floor + sd_excess, sd_excess ~ Gamma(2, 1), on standardized features."""
    excess = pm.Gamma("sd_excess", alpha=priors.sd_shape, beta=priors.sd_rate, dims=("component", "feature"))
    return priors.sd_floor + excess


def add_label_probabilities(n_classes: int, priors: Priors = Priors()):
    """rho[component] = P(y = 1 | z) ~ Beta(1.01, 1.01) for two classes (eq. 25), or
    rho[component, class] ~ Dirichlet(1.01) for more. Returns log P(y = c | z = k) as (K, C)."""
    if n_classes == 2:
        rho = pm.Beta("rho", priors.rho_concentration, priors.rho_concentration, dims="component")
        return pt.stack([pt.log1p(-rho), pt.log(rho)], axis=-1)
    components = len(pm.modelcontext(None).coords["component"])
    rho = pm.Dirichlet("rho", a=np.full((components, n_classes), priors.rho_concentration),
                       dims=("component", "class"), default_transform=transforms.StickBreaking())
    return pt.log(rho)


def add_pc_objective(data: LabeledItems, pi, mean_z, sd_z, log_rho, lam: float = 1.0):
    """The PC objective sum_d log p(x_d) + lam sum_{labeled d} log p(y_d | x_d) as one Potential.

    log p(x_d) is computed for every item and log p(y_d | x_d) for the
    labeled ones only (eq. 9). Also records the two terms per draw
    (`data_loglik`, `label_loglik`) and, per item, the pointwise log-likelihood
    log p(x_d) + log p(y_d | x_d) = log p(x_d, y_d) (log p(x_d) for an unlabeled item) as
    `items` in the `log_likelihood` group. That is the item's factor in the joint model
    (lam = 1) and what LOO scores a held-out item by, whatever lam. At lam != 1 the item's
    factor in the generalized posterior is log p(x_d) + lam log p(y_d | x_d) instead, so LOO's
    importance weights treat the draws as if they came from the joint model's posterior:
    an approximation, whose failures show in the Pareto k values.
    """
    inputs = declare(objective_inputs(data, lam), DATA_DIMS)
    x, lam = inputs["x"], inputs["lam"]
    log_weights = pt.log(pi)[None, :]
    x_logp = likelihoods.diag_normal_logp(x, mean_z, sd_z)
    log_px = likelihoods.mixture_logp(log_weights, x_logp)
    data_term = pt.sum(log_px)
    if data.n_labeled:
        labeled, labels = inputs["labeled_index"], inputs["labels"]  # labels: (n labeled, C) indicators
        y_logp = pt.sum(labels[:, None, :] * log_rho[None, :, :], axis=-1)  # (n labeled, K)
        log_py = likelihoods.predictive_mixture_logp(log_weights, x_logp[labeled], y_logp)[1]
        label_term = pt.sum(log_py)
        per_item = pt.inc_subtensor(log_px[labeled], log_py)
    else:  # nothing to predict: the objective is the unsupervised mixture's
        label_term = pt.zeros(())
        per_item = log_px
    likelihoods.record_pointwise("items", per_item, dims="item")
    pm.Deterministic("data_loglik", data_term)
    pm.Deterministic("label_loglik", label_term)
    return pm.Potential("pc_objective", data_term + lam * label_term)


def add_estimands(data: LabeledItems, mean_z, sd_z):
    """mean and sd[component, feature] in the data's units (the features were standardized); every
    use of a fit reads these, so a variant may parameterize mean_z and sd_z as it likes."""
    center, scale = declare(estimand_inputs(data), DATA_DIMS).values()
    pm.Deterministic("mean", center + scale * mean_z, dims=("component", "feature"))
    pm.Deterministic("sd", scale * sd_z, dims=("component", "feature"))


def labeled_index(data: LabeledItems) -> np.ndarray:
    return np.flatnonzero(data.labeled).astype(np.int64)


#: the dims of the `pm.Data` the blocks declare with dims (`graph_inputs.declare`)
DATA_DIMS = {"x": ("item", "feature"), "feature_center": "feature", "feature_scale": "feature"}


def objective_inputs(data: LabeledItems, lam: float) -> dict[str, np.ndarray]:
    """The values `add_pc_objective` declares as `pm.Data`: the features, lam, and the labeled items'
    positions and class indicators."""
    values = {"x": data.x, "lam": np.asarray(float(lam))}
    if data.n_labeled:
        values.update(labeled_index=labeled_index(data), labels=data.onehot[data.labeled])
    return values


def estimand_inputs(data: LabeledItems) -> dict[str, np.ndarray]:
    """The values `add_estimands` declares as `pm.Data`: the standardization's centre and scale."""
    return {"feature_center": data.center, "feature_scale": data.scale}


def model_data(data: LabeledItems, lam: float) -> dict[str, np.ndarray]:
    """Every value that `build_model`'s blocks declare as `pm.Data`, by name, in NumPy: the data's
    and lam (so that a lam path reuses one program).

    A cached MAP program (`map_program`) takes them as runtime inputs, so one program serves every
    data set of the same shapes; building a program checks that this list and the model agree.
    """
    return {**objective_inputs(data, check_lam(lam)), **estimand_inputs(data)}


def model_coords(data: LabeledItems, components: int) -> dict:
    """The model's coords (component, and the data's feature, class, item), after checking that the
    data are LabeledItems with at least K items."""
    check_components(check_data(data), components)
    return {"component": list(range(int(components))), **data.coords}


def build_model(data: LabeledItems, *, components: int = 2, lam: float = 1.0, sd_floor: float = 0.001,
                mean_prior_sd: float = 3.0, sd_prior_rate: float = 1.0, concentration: float = 1.01) -> pm.Model:
    """The supervised mixture with the PC objective, as a `pm.Model` with dims component, feature,
    class and item. Its MAP is PC training at `lam`; NUTS samples the generalized posterior."""
    coords = model_coords(data, components)
    lam = check_lam(lam)
    priors = priors_from(sd_floor, mean_prior_sd, sd_prior_rate, concentration)
    with pm.Model(coords=coords) as model:
        pi = add_mixture_weights(priors)
        mean_z, sd_z = add_gaussian_components(priors)
        log_rho = add_label_probabilities(data.n_classes, priors)
        add_pc_objective(data, pi, mean_z, sd_z, log_rho, lam)
        add_estimands(data, mean_z, sd_z)
    return model


# ---------------------------------------------------------------------- numbers from draws
def params_to_point(params: Params, sd_floor: float) -> dict:
    """Mixture parameters (standardized scale) as a start for the model (constrained scale)."""
    rho = params.rho[:, 1] if params.rho.shape[1] == 2 else params.rho
    return {"pi": params.pi, "mean_z": params.mean, "sd_excess": np.maximum(params.sd - sd_floor, 1e-6),
            "rho": np.clip(rho, 1e-9, 1 - 1e-9)}


def point_to_params(point: dict, sd_floor: float) -> Params:
    rho = np.asarray(point["rho"], dtype=float)
    if rho.ndim == 1:
        rho = np.stack([1 - rho, rho], axis=-1)
    return Params(np.asarray(point["pi"], float), np.asarray(point["mean_z"], float),
                  sd_floor + np.asarray(point["sd_excess"], float), rho)


def memberships(x: np.ndarray, pi: np.ndarray, mean_z: np.ndarray, sd_z: np.ndarray) -> np.ndarray:
    """p(z = k | x_d) for one draw: (n, K)."""
    joint = np.log(pi)[None] + component_logp(x, mean_z, sd_z)
    return np.exp(joint - special.logsumexp(joint, axis=1, keepdims=True))


def basins(log_densities, tol: float = BASIN_TOL, atol: float = BASIN_ATOL) -> pd.DataFrame:
    """Restarts grouped by the log density they converged to: one row per basin, best first.

    Restarts within `max(atol, tol |value|)` of a basin's best value share the
    basin. Label-switched copies of one solution have equal values and count
    as one basin.
    """
    values = np.sort(np.asarray([v for v in log_densities if np.isfinite(v)], dtype=float))[::-1]
    rows = []
    for value in values:
        if rows and abs(rows[-1]["log_density"] - value) <= max(atol, tol * abs(value)):
            rows[-1]["restarts"] += 1
        else:
            rows.append({"log_density": float(value), "restarts": 1})
    failed = sum(1 for v in log_densities if not np.isfinite(v))
    if failed:
        rows.append({"log_density": float("-inf"), "restarts": failed})
    return pd.DataFrame(rows, columns=["log_density", "restarts"])


# ---------------------------------------------------------------------- estimator
class PCMixture(Estimator):
    """Prediction-constrained Gaussian mixture with (partly) labeled items (seed 003).

    Parameters
    ----------
    components : K, the number of clusters.
    lam : the weight lambda >= 0 of sum_{labeled} log p(y | x) in the PC objective (1 = joint model).
    restarts : random restarts of the MAP (k-means plus random starts; the best objective wins, >= 1).
    sd_floor : lower bound of every sd on the standardized scale (0.001 as in the paper).
    mean_prior_sd : sd of the Normal(0, .) prior on the standardized cluster means.
    sd_prior_rate : rate of the Gamma(2, .) prior on sd - sd_floor.
    concentration : Dirichlet / Beta concentration of pi and rho (1.01 as in eq. 25).
    method : "map" (PC training) or "nuts" (the generalized posterior, chains started at the MAP).
    draws, tune, chains, seed, backend, target_accept, precision : NUTS settings; `seed` also seeds the restarts.
    model_file, model_settings : a variant file (see `models/`) whose `build_model(data, **settings)`
        replaces the default, and its own settings.

    After `fit(data)`: `idata_` with `pi[component]`, `mean` and `sd[component, feature]` (data units),
    `rho[component]` (or `rho[component, class]`), `data_loglik`, `label_loglik`; `model_`.
    """

    model_name = "pcmix"
    data_class = LabeledItems
    required_attrs = ("model", "method", "settings", "classes")
    required_groups = ("posterior", "observed_data", "constant_data")
    attr_kinds = {"classes": ("a list of class names", is_labels), "n_labeled": ("a whole number >= 0", is_count),
                  "warm_starts": ("a whole number >= 0", is_count)}
    bounds = {"pi": (0.0, 1.0), "rho": (0.0, 1.0), "sd": (0.0, float("inf")), "sd_excess": (0.0, float("inf"))}
    estimands = ["pi", "mean", "sd", "rho"]
    internal_variables = ("mean_z", "sd_excess", "data_loglik", "label_loglik")
    laplace_coverage = (0.77, 0.90, "its 14 SBC quantities (the sorted components' weights, means and sds covered "
                                    "0.55-0.80; 40 simulations, lam = 1)")
    unit_dims = ("item",)
    Settings = PCMixSettings

    # ------------------------------------------------------------------ settings
    @property
    def priors(self) -> Priors:
        return priors_from(self.sd_floor, self.mean_prior_sd, self.sd_prior_rate, self.concentration)

    # ------------------------------------------------------------------ hooks
    def fit(self, data: LabeledItems, *, start: dict | list[dict] | None = None):
        """PC training (MAP, `restarts` starts) and, with method="nuts", the generalized posterior.

        start : extra starting points on the constrained scale (for example another fit's
            `map_point_`), tried before the random restarts; the best objective still wins.
        """
        self._extra_starts = [] if start is None else ([start] if isinstance(start, dict) else list(start))
        self._map_point = None
        return super().fit(data)

    def data_messages(self, data: LabeledItems) -> list[str]:
        """Labels of one class only (they cannot tell the components apart) and constant features (every
        component's sd on them shrinks to its floor), before the fit."""
        from bayes_wsc.diagnostics import GAUSSIAN_ON_CONSTANT, constant_features_message, one_class_message

        labels = data.y[data.y >= 0]
        found = [one_class_message(labels, data.classes, "labelled item",
                                   "the labels cannot tell one component from another, so the label term "
                                   "(lam) only pushes every component's rho to that class, and the fit is an "
                                   "unsupervised mixture of x. Label items of at least two classes."),
                 constant_features_message(data.x, data.features, "", GAUSSIAN_ON_CONSTANT)]
        return [m for m in found if m]

    def build_model(self, data: LabeledItems) -> pm.Model:
        return build_model(data, **self.build_settings())

    def model_inputs(self, data: LabeledItems):
        settings = self.build_settings()
        return model_coords(data, settings["components"]), model_data(data, settings["lam"])

    def initial_values(self, data: LabeledItems) -> list[dict]:
        """Extra starts (warm starts) first, then k-means and random starts from `random_starts`."""
        extra = [dict(s) for s in getattr(self, "_extra_starts", [])]
        starts = random_starts(data, int(self.components), int(self.restarts), self.seed)
        return extra + [params_to_point(p, float(self.sd_floor)) for p in starts]

    def data_groups(self, data: LabeledItems) -> dict:
        attrs = {
            "data_settings": {**data.settings, "features": list(data.features)},
            "classes": list(data.classes),
            "n_labeled": data.n_labeled,
            "warm_starts": len(getattr(self, "_extra_starts", [])),
        }
        if getattr(self, "_map_point", None) is not None:
            attrs["map_point"] = {k: np.asarray(v).tolist() for k, v in self._map_point.items()}
        return {
            "observed_data": {"x": data.x_raw, "y": data.y},
            "constant_data": {"center": data.center, "scale": data.scale},
            "dims": {"x": ["item", "feature"], "y": ["item"], "center": ["feature"], "scale": ["feature"]},
            "attrs": attrs,
        }

    def order_clusters(self, draws, dims: dict, data: LabeledItems) -> None:
        """The MAP's components in the canonical order: the largest first (by the items'
        memberships), near-equal weights by the mean of the first feature."""
        if int(self.components) == 1:
            return
        point = {k: v[0, 0] for k, v in draws.posterior.items()}
        perm = canonical_permutation(_memberships_of(point, data.x_raw), data.x_raw[:, 0])
        permute_clusters(draws.posterior, cluster_axes(dims, "component"), perm)

    def align_draws(self, draws, map_draws, data: LabeledItems, *, free: list[str], dims: dict) -> list[str]:
        """Relabel every draw against the best MAP's memberships (Hungarian), then warn about
        chains that sit in a different partition."""
        reference_point = {k: np.asarray(v[0, 0]) for k, v in map_draws.posterior.items()}
        self._map_point = {k: v for k, v in reference_point.items() if k in free}
        if int(self.components) == 1:
            return []
        x = data.x_raw
        if data.n_items > RELABEL_ITEMS:
            x = x[np.sort(np.random.default_rng(0).choice(data.n_items, RELABEL_ITEMS, replace=False))]
        axes = cluster_axes(dims, "component")
        out, perms, agreement = relabel_draws(draws.posterior, axes, lambda draw: _memberships_of(draw, x),
                                              _memberships_of(reference_point, x))
        draws.posterior.update(out)
        identity = np.arange(int(self.components))
        draws.info["relabeled_draws"] = int(np.any(perms != identity, axis=-1).sum())
        draws.info["chain_agreement"] = [float(a) for a in agreement]
        return mode_messages(agreement)

    def model_checks(self, idata) -> list[str]:
        attrs = inference.get_attrs(idata)
        messages = []
        lam = float(self.lam)
        if attrs.get("n_labeled", 1) == 0 and lam > 0:
            messages.append(no_labels_message(lam))
        restart_values = attrs.get("fit_info", {}).get("map", {}).get("restart_log_densities")
        if restart_values and len(restart_values) >= 3:
            table = basins(restart_values)
            if table["restarts"].iloc[0] == 1 and len(table) > 1:
                messages.append(
                    f"only 1 of {len(restart_values)} restarts reached the best log density "
                    f"({table['log_density'].iloc[0]:.2f}); the next basin ({table['log_density'].iloc[1]:.2f}) "
                    f"was reached by {table['restarts'].iloc[1]}. The objective has several local optima: "
                    "raise restarts to be surer that the best one was found."
                )
        post = idata.posterior
        if "sd" in post:  # a variant may lack what a check reads: that check is skipped
            sd_z = post["sd"].mean(("chain", "draw")).values / idata.constant_data["scale"].values
            if (sd_z < 2 * float(self.sd_floor)).any():
                k, j = np.argwhere(sd_z < 2 * float(self.sd_floor))[0]
                messages.append(f"the sd of component {k} on feature {str(post['feature'].values[j])!r} sits at its "
                                f"floor ({self.sd_floor} standardized units): the component has collapsed onto "
                                "(nearly) one value. Use fewer components or check for repeated values.")
        n_items = idata.observed_data.sizes["item"]
        if "pi" in post:
            pi = post["pi"].mean(("chain", "draw")).values
            if (pi * n_items < 1).any() and int(self.components) > 1:
                k = int(np.argmin(pi))
                messages.append(f"component {k} has weight {pi[k]:.2g}, less than one of the {n_items} items: "
                                "it explains no data. Use fewer components.")
        return messages

    # ------------------------------------------------------------------ fitted values
    @property
    def classes_(self) -> list[str]:
        self._check_fitted()
        return [str(c) for c in inference.get_attrs(self._fitted())["classes"]]

    @property
    def features_(self) -> list[str]:
        self._check_fitted()
        return [str(f) for f in self._fitted().posterior["feature"].values]

    @property
    def map_point_(self) -> dict:
        """The best MAP's free variables (constrained scale): a warm start for another fit."""
        self._check_fitted()
        attrs = inference.get_attrs(self._fitted())
        if attrs["method"] == "map":
            free = attrs.get("fit_info", {}).get("free_variables", ["pi", "mean_z", "sd_excess", "rho"])
            return {k: self._fitted().posterior[k].values[0, 0] for k in free}
        return {k: np.asarray(v) for k, v in attrs["map_point"].items()}

    @property
    def restart_basins_(self) -> pd.DataFrame:
        """The MAP's restarts grouped by the log density they reached (one row per basin)."""
        self._check_fitted()
        info = inference.get_attrs(self._fitted()).get("fit_info", {}).get("map", {})
        values = info.get("restart_log_densities", [info.get("log_density", float("nan"))])
        return basins(values)

    def data_from_fit(self) -> LabeledItems:
        """The items the fit saw, rebuilt from the saved fit (for reports and scores)."""
        self._check_fitted()
        obs, const = self._fitted().observed_data, self._fitted().constant_data
        attrs = inference.get_attrs(self._fitted())
        center, scale = const["center"].values, const["scale"].values
        return LabeledItems((obs["x"].values - center) / scale, obs["y"].values, self.features_, self.classes_,
                            center, scale, obs["item"].values, dict(attrs.get("data_settings", {})))

    def _draws(self):
        """pi, mean and sd on the standardized scale, and rho as (draws, K, C), from the reported
        estimands (which every variant built from the blocks has)."""
        const = self._fitted().constant_data
        center, scale = const["center"].values, const["scale"].values
        pi = stacked(self._fitted(), "pi")
        mean_z = (stacked(self._fitted(), "mean") - center) / scale
        sd_z = stacked(self._fitted(), "sd") / scale
        rho = stacked(self._fitted(), "rho")
        if rho.ndim == 2:
            rho = np.stack([1 - rho, rho], axis=-1)
        return pi, mean_z, sd_z, rho

    def objective_terms(self) -> pd.DataFrame:
        """Per draw: the data term sum log p(x), the label term sum log p(y | x), the PC objective."""
        self._check_fitted()
        data_term = stacked(self._fitted(), "data_loglik")
        label_term = stacked(self._fitted(), "label_loglik")
        return pd.DataFrame({"data_loglik": data_term, "label_loglik": label_term,
                             "objective": data_term + float(self.lam) * label_term})

    # ------------------------------------------------------------------ predictions
    def predict_arrays(self, x_std: np.ndarray, ci: float = DEFAULT_CI,
                       classes: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Posterior mean and HDI of P(y = c | x) and the mean of p(z = k | x) for standardized items.

        Returns "label_mean", "label_low", "label_high" (m, C) and "cluster_mean" (m, K); nothing
        per draw is kept (computed in chunks of items). `classes` (codes): the label columns of these
        classes only, in this order (`predict` of two classes reports the positive one: half the work).
        """
        self._check_fitted()
        pi, mean_z, sd_z, rho = self._draws()
        n_draws, components = pi.shape[0], pi.shape[1]
        chosen = np.arange(rho.shape[2]) if classes is None else np.asarray(classes, dtype=np.int64)
        n_classes = chosen.size
        m = x_std.shape[0]
        cluster_mean = np.empty((m, components))
        log_pi = np.log(pi)

        def rows_of(rows):  # the label rows (item * C + class), each item's draws contiguous for its interval
            items, label = np.divmod(rows, n_classes)
            unique, inverse = np.unique(items, return_inverse=True)
            resp = component_logp_rows(x_std[unique], mean_z, sd_z, log_pi)  # (K, m', S); each step below in place
            labels = np.empty((unique.size, n_classes, n_draws))
            if components == 2:  # P(z = 1 | x) = 1 / (1 + exp(l0 - l1)): one exp per item and draw, and no sum
                second = np.subtract(resp[0], resp[1], out=resp[1])
                with np.errstate(over="ignore"):  # exp overflows to inf where P(z = 1 | x) is 0
                    np.exp(second, out=second)
                second += 1.0
                np.reciprocal(second, out=second)
                cluster_mean[unique, 1] = second.mean(axis=1)
                cluster_mean[unique, 0] = 1.0 - cluster_mean[unique, 1]
                for j, c in enumerate(chosen):  # rho_0c + P(z = 1 | x) (rho_1c - rho_0c)
                    np.multiply(second, rho[:, 1, c] - rho[:, 0, c], out=labels[:, j])
                    labels[:, j] += rho[:, 0, c]
            else:
                top = resp.max(axis=0)
                resp -= top
                np.exp(resp, out=resp)
                total = resp.sum(axis=0, out=top)
                resp *= np.reciprocal(total, out=total)  # one division per item and draw, not per component
                cluster_mean[unique] = resp.mean(axis=2).T
                for j, c in enumerate(chosen):
                    block = labels[:, j]
                    np.multiply(resp[0], rho[:, 0, c], out=block)
                    for k in range(1, components):
                        block += resp[k] * rho[:, k, c]
            labels = labels.reshape(-1, n_draws)  # rows item * C + class of the chunk's items
            whole = rows.size == labels.shape[0] and rows[0] == unique[0] * n_classes
            return labels if whole else labels[inverse * n_classes + label]  # (len(rows), S)

        stats = summarize_rows(m * n_classes, rows_of, n_draws, ci)
        mean, low, high = (v.reshape(m, n_classes) for v in stats)
        return {"label_mean": mean, "label_low": low, "label_high": high, "cluster_mean": cluster_mean}

    def predict(self, items: pd.DataFrame, *, ci: float = DEFAULT_CI) -> pd.DataFrame:
        """Every input column plus the label probabilities and the clusters of new items.

        Two classes: `prob` (posterior mean of P(y = positive | x)), `prob_low`, `prob_high` (HDI at
        `ci`); more classes: `prob_<class>`, `prob_<class>_low`, `prob_<class>_high`. Then `cluster`
        (the most probable) and `cluster_prob_<k>` (posterior mean of p(z = k | x)). After a MAP fit
        the interval cells are empty (NaN): the mode is a single point, with no interval.
        """
        self._check_fitted()
        const = self._fitted().constant_data
        x_std = standardize(items, self.features_, const["center"].values, const["scale"].values, "items")
        classes = self.classes_
        result = self.predict_arrays(x_std, ci, classes=[1] if len(classes) == 2 else None)
        out = {}
        if len(classes) == 2:
            out["prob"], out["prob_low"], out["prob_high"] = (result[f"label_{s}"][:, 0] for s in ("mean", "low", "high"))
        else:
            for c, name in enumerate(classes):
                out[f"prob_{name}"] = result["label_mean"][:, c]
                out[f"prob_{name}_low"] = result["label_low"][:, c]
                out[f"prob_{name}_high"] = result["label_high"][:, c]
        components = [int(k) for k in self._fitted().posterior["component"].values]
        out["cluster"] = np.asarray(components)[result["cluster_mean"].argmax(axis=1)]
        for k, name in enumerate(components):
            out[f"cluster_prob_{name}"] = result["cluster_mean"][:, k]
        return append_predictions(items, out)

    def scores(self, data: LabeledItems | None = None, y: np.ndarray | None = None) -> dict[str, float]:
        """How the fit explains x and predicts y on `data` (default: the training items).

        data_nll_per_item: -sum log p(x) / N in the data's units (posterior mean of the per-draw value);
        error_rate: share of items with a label (or a code in `y`) whose most probable class
        (by the posterior mean of P(y | x)) is wrong; label_nll_per_label: -mean log p(y | x)
        at the posterior mean prediction.
        """
        self._check_fitted()
        if data is None:
            data = self.data_from_fit()
            data_loglik = stacked(self._fitted(), "data_loglik")  # sum log p(x) per draw, kept by the fit
        else:
            pi, mean_z, sd_z, _ = self._draws()
            data_loglik = np.array([special.logsumexp(np.log(pi[s])[None] + component_logp(data.x, mean_z[s], sd_z[s]),
                                              axis=1).sum() for s in range(pi.shape[0])])
        codes = data.y if y is None else np.asarray(y)
        # the model sees standardized features: log p(x) in the data's units is lower by sum_j log scale_j
        out = {"data_nll_per_item": float(-data_loglik.mean() / data.n_items + np.log(data.scale).sum())}
        known = codes >= 0
        if known.any():
            proba = self.predict_arrays(data.x[known], 0.9)["label_mean"]
            picked = proba[np.arange(known.sum()), codes[known]]
            out["error_rate"] = float(np.mean(proba.argmax(axis=1) != codes[known]))
            out["label_nll_per_label"] = float(-np.mean(np.log(np.maximum(picked, 1e-300))))
        else:
            out["error_rate"] = out["label_nll_per_label"] = float("nan")
        return out

    # ------------------------------------------------------------------ lambda path
    def fit_path(self, data: LabeledItems, lams, *, warm_start: bool = True) -> PCPath:
        """Fit a grid of lam in increasing order with this estimator's other settings (Sec. 4.1).

        warm_start : each fit also starts from the previous lam's MAP, besides its own
            `restarts` random starts; the best objective wins, so the path can still jump to a
            new basin (the paper warns that a warm start alone may not escape the old one).
        """
        self.check_data_type(data)
        grid = parse_lams(lams)
        fits, previous = [], None
        for lam in grid:
            est = type(self)(**{**self.get_params(), "lam": lam})
            est.fit(data, start=previous if warm_start else None)
            previous = est.map_point_
            fits.append(est)
        return PCPath(grid, fits, bool(warm_start))

    # ------------------------------------------------------------------ reporting
    def write_report(self, out_dir, **kwargs) -> Path:
        """Write `out_dir/report.html`: the fitted clusters, estimands, restarts and diagnostics."""
        from bayes_wsc.models.pcmix.report import write_report

        return write_report(self, out_dir, **kwargs)

    def plot_clusters(self, **kwargs):
        """The fitted clusters over the data (Fig. 2 / Fig. 3 style), a matplotlib Figure."""
        from bayes_wsc.models.pcmix.report import plot_clusters

        return plot_clusters(self, **kwargs)


def _memberships_of(point: dict, x_raw: np.ndarray) -> np.ndarray:
    """p(z = k | x) of items in the data's units at one point (pi, mean, sd in data units)."""
    return memberships(x_raw, point["pi"], point["mean"], point["sd"])


def no_labels_message(lam: float) -> str:
    return (f"no item has a label, so lam = {lam_text(lam)} has nothing to weigh: the fit is the unsupervised "
            "mixture and rho stays at its prior")


def parse_lams(lams) -> list[float]:
    """A sorted list of distinct lam values >= 0 from a sequence or a text like '1,4,16'."""
    if isinstance(lams, str):
        parts = [p.strip() for p in lams.split(",") if p.strip()]
    else:
        try:
            parts = list(lams)
        except TypeError:
            raise InputError(f"lams must be a list of numbers, got {lams!r}") from None
    if not parts:
        raise InputError("give at least one lam")
    values = sorted({check_lam(p) for p in parts})
    return values


# ---------------------------------------------------------------------- the lambda path
@dataclass
class PCPath:
    """Fits of one data set along a grid of lam (`PCMixture.fit_path`)."""

    lams: list[float]
    fits: list[PCMixture]
    warm_start: bool = True

    def table(self, y: np.ndarray | None = None) -> pd.DataFrame:
        """One row per lam: PC objective, its terms, the best log density and its basin count,
        error rate and -log p(x)/N. `y` (label codes, -1 = unknown) scores the error on other
        labels than the training ones (a simulation's full truth)."""
        rows = []
        for lam, est in zip(self.lams, self.fits):
            terms = est.objective_terms().mean()
            table = est.restart_basins_
            attrs = inference.get_attrs(est.idata_)
            info = attrs.get("fit_info", {}).get("map", {})
            warm = int(attrs.get("warm_starts", 0))
            best = info.get("best_restart", 0)
            scores = est.scores(y=y)
            rows.append({
                "lam": lam,
                "objective": float(terms["objective"]),
                "data_loglik": float(terms["data_loglik"]),
                "label_loglik": float(terms["label_loglik"]),
                "log_density": float(info.get("log_density", np.nan)),
                "basins": int(len(table)),
                "restarts_at_best": int(table["restarts"].iloc[0]),
                "best_start": "warm start" if best < warm else ("k-means" if best == warm else f"random {best - warm}"),
                **scores,
            })
        return pd.DataFrame(rows)

    def plot_tradeoff(self, **kwargs):
        from bayes_wsc.models.pcmix.report import plot_tradeoff

        return plot_tradeoff(self, **kwargs)

    def plot_clusters(self, **kwargs):
        from bayes_wsc.models.pcmix.report import plot_path_clusters

        return plot_path_clusters(self, **kwargs)

    def report(self, out_dir, **kwargs) -> Path:
        from bayes_wsc.models.pcmix.report import write_path_report

        return write_path_report(self, out_dir, **kwargs)

    def save(self, out_dir) -> Path:
        """One netCDF fit per lam (lam_<value>.nc) and path.csv with the table."""
        from bayes_wsc import outputs

        out_dir = Path(out_dir)
        names = []
        for lam, est in zip(self.lams, self.fits):
            name = f"lam_{lam_text(lam)}.nc"
            est.save(out_dir / name)
            names.append(name)
        outputs.write_csv(self.table().assign(file=names), out_dir / "path.csv", "path table")
        return out_dir

    @classmethod
    def load(cls, out_dir) -> PCPath:
        from bayes_wsc.estimator import load

        out_dir = Path(out_dir)
        index = out_dir / "path.csv"
        if not index.exists():
            raise InputError(f"{str(out_dir)!r} holds no path.csv: it is not a saved lam path")
        table = pd.read_csv(index)
        fits = [load(out_dir / name) for name in table["file"]]
        warm = [int(inference.get_attrs(f.idata_).get("warm_starts", 0)) for f in fits]
        return cls([float(v) for v in table["lam"]], fits, any(warm))
