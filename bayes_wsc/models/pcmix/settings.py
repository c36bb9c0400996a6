"""The pcmix model's settings, declared once (`bayes_wsc.settings`): `PCMixture`'s keywords, their checks and
the plain options of `bayes-wsc fit pcmix` and `bayes-wsc path pcmix`."""

from __future__ import annotations

from dataclasses import dataclass

from bayes_wsc.settings import POSITIVE, at_least, real, setting, whole


@dataclass(frozen=True)
class PCMixSettings:
    """components : K; lam : the PC weight (given as a number or text, kept as a float; `--lam` and `--lams` are
    written by hand in the command); restarts : MAP starts; the priors (`maths.pcmix.Priors`)."""

    components: int = setting(2, whole(1), label="components (K)", as_built=int, required=True, metavar="K",
                              help="number of clusters K")
    lam: float = setting(1.0, parse=real, as_built=float)
    restarts: int = setting(10, whole(1), build=False,
                            help="MAP starts (k-means, then random); the best objective wins (default 10)")
    sd_floor: float = setting(0.001, POSITIVE, as_built=float,
                              help="lower bound of every sd, standardized units (default 0.001, the paper's)")
    mean_prior_sd: float = setting(3.0, POSITIVE, as_built=float,
                                   help="sd of the Normal prior on standardized means (default 3)")
    sd_prior_rate: float = setting(1.0, POSITIVE, as_built=float,
                                   help="rate of the Gamma(2, rate) prior on sd - floor (default 1)")
    concentration: float = setting(1.01, at_least(1, "(1.01 in the paper)"), as_built=float,
                                   help="Dirichlet/Beta concentration of pi and rho (default 1.01, eq. 25)")
