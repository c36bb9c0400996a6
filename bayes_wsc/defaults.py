"""Defaults shared by the API, the reports and the command line (importable without anything heavy).

`DEFAULT_CI` is the credible level of every interval a user sees without asking for another: `summary`
(`est.summary()`, `bayes-wsc summary`), every report and its figures, `predict` and the per-item tables
(`memberships`, `expert_table`, `class_probability`, ...). 0.9, the level of the papers' error bars
(EM +- 1.64 SE) and of every coverage study in benchmarks/; `--ci` (or `ci=`, `hdi_prob=`) sets another.
`LOG_ZERO` is the package's log of "impossible" (the likelihood blocks, the exact-counts recursion's layout).
"""

DEFAULT_CI = 0.9
#: log of "impossible", finite so that gradients through log-sum-exp never meet inf - inf
LOG_ZERO = -1e30
