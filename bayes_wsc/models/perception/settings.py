"""The perception models' settings, declared once (`bayes_wsc.settings`): the keywords of
`PerceptionClustering` and `PerceptionMixture`, their checks and the plain options of `bayes-wsc fit
perception`."""

from __future__ import annotations

from dataclasses import dataclass

from bayes_wsc.settings import POSITIVE, Rule, at_least, is_real, one_of, setting, whole

#: the overlap rule's default: every cluster with at least this posterior mean probability
OVERLAP_THRESHOLD = 0.3
#: how the mixture's MAP restarts are compared: by the seeds' log score under the memberships of each
#: optimum ("seeds", the default: a collapsed mode, whose cluster holds its seeds and little else,
#: loses), or by the posterior density ("density"); benchmarks/RESULTS.md measures both
RESTART_RULES = ("seeds", "density")
#: groups of the features' own structure, by default (benchmarks/RESULTS.md: 3 lost a data set in each
#: simulated study to the dominant structure, 5 none)
DEFAULT_GROUPS = 5
#: a membership threshold: a number in (0, 1]
THRESHOLD = Rule("a number in (0, 1]", lambda v: is_real(v) and 0 < v <= 1)


@dataclass(frozen=True)
class PerceptionSettings:
    """The conditional model's priors (`build_model`'s settings), the overlap rule of its memberships and the
    MAP's starts (`--overlap-threshold` is written by hand in the command: its default is the fit's)."""

    weight_scale: float = setting(3.0, POSITIVE, help="prior sd of W's entries is this / sqrt(features) (default 3)")
    intercept_sd: float = setting(1.0, POSITIVE, help="prior sd of b (default 1)")
    overlap_threshold: float = setting(OVERLAP_THRESHOLD, THRESHOLD, build=False)
    restarts: int = setting(3, whole(1), build=False, help="MAP starts (default 3)")


@dataclass(frozen=True)
class MixtureSettings:
    """The seeded mixture's groups and PC weight (`build_mixture_model`'s settings), the overlap rule, and the
    MAP's starts and how they are compared (`--groups` and `--seed-weight` are written by hand in the command:
    they are the mixture's among both formulations' options)."""

    groups: int = setting(DEFAULT_GROUPS, whole(1))
    seed_weight: float = setting(1.0, at_least(1))
    overlap_threshold: float = setting(OVERLAP_THRESHOLD, THRESHOLD, build=False)
    restarts: int = setting(3, whole(1), build=False)
    restart_rule: str = setting("seeds", one_of(RESTART_RULES), build=False)
