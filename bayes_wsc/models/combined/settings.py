"""The combined model's settings, declared once (`bayes_wsc.settings`): `CombinedClassifier`'s keywords, their
checks and the options of `bayes-wsc fit combined`."""

from __future__ import annotations

from dataclasses import dataclass

from bayes_wsc.settings import BOOLEAN, POSITIVE, setting, whole


@dataclass(frozen=True)
class CombinedSettings:
    """The priors (`build_model`'s settings), the MAP's starts and the conflict check (see `CombinedClassifier`)."""

    prior_sd: float = setting(1.0, POSITIVE, help="sd of the prior on W (default 1)")
    intercept_sd: float = setting(2.0, POSITIVE, help="sd of the prior on b (default 2)")
    vote_diagonal: float = setting(4.0, POSITIVE, help="Dirichlet weight of the true class in each confusion row "
                                                       "(default 4; the others 1)")
    accuracy_a: float = setting(2.0, POSITIVE)
    accuracy_b: float = setting(2.0, POSITIVE)
    wh: float = setting(10.0, POSITIVE, help="precision of the groups' averages on the logit scale (default 10)")
    pair_weighting: bool = setting(False, BOOLEAN, help=(
        "weight each pair's term by (1/n_i + 1/n_j)/2, n_i the pairs item i is in (a tempered composite likelihood)"))
    restarts: int = setting(2, whole(1), build=False, help="MAP starts (default 2)")
    conflict_check: bool = setting(False, BOOLEAN, build=False, help=(
        "hold each source out in turn, refit on the rest and say whether it contradicts them (one Laplace fit per "
        "source)"))
