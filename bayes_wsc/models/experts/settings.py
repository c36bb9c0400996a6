"""The experts model's settings, declared once (`bayes_wsc.settings`): `NoisyExperts`'s keywords, their checks
and the plain options of `bayes-wsc fit experts`."""

from __future__ import annotations

from dataclasses import dataclass

from bayes_wsc.settings import BOOLEAN, POSITIVE, setting, whole


@dataclass(frozen=True)
class ExpertsSettings:
    """n_clusters : K; prior_sd, intercept_sd : the priors' sds of W and b; accuracy_a, accuracy_b : alpha, beta ~
    0.5 + 0.5 Beta(a, b); restarts : the MAP's starts; kmeans_start : the first of them at k-means' clustering
    (`--clusters` and `--accuracy-prior A,B` are written by hand in the command: their names are declared as each
    setting's `option`)."""

    n_clusters: int = setting(2, whole(2), label="the number of clusters K", option="clusters")
    prior_sd: float = setting(1.0, POSITIVE, help="sd of the Gaussian prior on W (the paper's lambda = 1 / (2 sd^2)); "
                                                  "default 1")
    intercept_sd: float = setting(2.0, POSITIVE, help="sd of the prior on b (default 2)")
    accuracy_a: float = setting(2.0, POSITIVE, option="accuracy-prior")
    accuracy_b: float = setting(2.0, POSITIVE, option="accuracy-prior")
    restarts: int = setting(20, whole(1), build=False, help="random restarts of the MAP (default 20)")
    kmeans_start: bool = setting(True, BOOLEAN, build=False, help=(
        "the first MAP start at k-means' clustering of the features (the others random; default True)"))
