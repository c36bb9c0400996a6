"""The proportions model's settings, declared once (`bayes_wsc.settings`): `ProportionsClassifier`'s keywords,
their checks and the plain options of `bayes-wsc fit proportions`."""

from __future__ import annotations

from dataclasses import dataclass

from bayes_wsc.settings import POSITIVE, one_of, or_none, setting, whole

EMISSIONS = ("gaussian", "categorical", "logistic")
#: what the logistic emission's softmax reads: the features, or random Fourier features of them
FEATURE_MAPS = ("linear", "rff")
BAG_LIKELIHOODS = ("independent", "exact-counts")
#: the defaults, chosen by held-out accuracy on seed 001's Sec. 4 experiment (README, benchmarks/RESULTS.md)
DEFAULT_EMISSION = "logistic"
#: exact-counts when the data hold whole class counts and the proportions are known exactly, else independent
DEFAULT_BAG_LIKELIHOOD = "auto"


def _optional_float(value):
    return None if value is None else float(value)


@dataclass(frozen=True)
class ProportionsSettings:
    """The emission, the bag likelihood ("auto" resolved against the data by `settings_for`), the proportions'
    noise, the emissions' priors and the MAP's starts (see `ProportionsClassifier`)."""

    emission: str = setting(DEFAULT_EMISSION, one_of(("logistic", "gaussian", "categorical"),
                                                     words=f"one of {EMISSIONS!r}"),
                            help=f"how features depend on the class (default: {DEFAULT_EMISSION})")
    bag_likelihood: str = setting(DEFAULT_BAG_LIKELIHOOD, one_of((*BAG_LIKELIHOODS, "auto")), help=(
        "items' classes independent given the group's shares, or the group's counts known exactly; auto (the "
        "default): exact-counts when the proportions are whole counts and no --concentration is given, "
        "independent otherwise"))
    concentration: float | None = setting(None, or_none(POSITIVE, "proportions known exactly"),
                                          as_built=_optional_float, metavar="C", help=(
        "noisy proportions: theta_i ~ Dirichlet(C Pi_i + 1) (independent bag likelihood)"))
    mean_prior_sd: float = setting(3.0, POSITIVE, as_built=float,
                                   help="gaussian: sd of the Normal prior on standardized class means (default 3)")
    sd_prior_rate: float = setting(1.0, POSITIVE, as_built=float,
                                   help="gaussian: rate of the Gamma(2, rate) prior on standardized class sds "
                                        "(default 1)")
    w_concentration: float = setting(1.0, POSITIVE, as_built=float, help=(
        "categorical: Dirichlet concentration of each class's bin probabilities (default 1)"))
    prior_sd: float = setting(1.0, POSITIVE, as_built=float, help=(
        "logistic: sd of the Normal prior on the weights of standardized features (default 1)"))
    intercept_sd: float = setting(2.0, POSITIVE, as_built=float)
    feature_map: str = setting("linear", one_of(FEATURE_MAPS, words=f"one of {FEATURE_MAPS!r}"), help=(
        "logistic: the softmax on the standardized features (linear, the default) or on random Fourier features "
        "of them (rff: a fixed random basis, a non-linear class boundary)"))
    n_basis: int = setting(256, whole(1), as_built=int, help="logistic with --feature-map rff: the basis's size "
                                                            "(default 256)")
    restarts: int | None = setting(None, or_none(whole(1), "the emission's default"), build=False, help=(
        "MAP starts: the soft-label one, then random ones; the best wins (default 4 for logistic, 1 for the "
        "others)"))
