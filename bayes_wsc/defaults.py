"""Defaults shared by the API, the reports and the command line (importable without anything heavy).

`DEFAULT_CI` is the credible level of every interval a user sees without asking for another: `summary`
(`est.summary()`, `bayes-wsc summary`), every report and its figures, `predict` and the per-item tables
(`memberships`, `expert_table`, `class_probability`, ...). 0.9, the level of the papers' error bars
(EM +- 1.64 SE) and of every coverage study in benchmarks/; `--ci` (or `ci=`, `hdi_prob=`) sets another.
"""

DEFAULT_CI = 0.9
