"""The crowd model's settings, declared once (`bayes_wsc.settings`): `CrowdClassifier`'s keywords, their checks
and the options of `bayes-wsc fit crowd`."""

from __future__ import annotations

from dataclasses import dataclass

from bayes_wsc.settings import POSITIVE, setting, whole


@dataclass(frozen=True)
class CrowdSettings:
    """The priors (`build_model`'s settings) and the MAP's starts (see `CrowdClassifier`)."""

    vote_diagonal: float = setting(4.0, POSITIVE, help="Dirichlet weight of the true class in each confusion row "
                                                       "(default 4; the others 1)")
    class_concentration: float = setting(1.0, POSITIVE, help="Dirichlet concentration of the class prior pi "
                                                             "(default 1)")
    restarts: int = setting(2, whole(1), build=False, help="MAP starts (default 2)")
