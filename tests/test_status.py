"""The status line: every report and `bayes-wsc summary` open with "No problems found" or each problem in one
sentence, linked to its section; one credible level for summary, predict and the reports."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from bayes_wsc import inference
from bayes_wsc.criticism import pareto_row, plural, unit_label
from bayes_wsc.cli import build_parser, main
from bayes_wsc.data.pairwise import PairwiseConstraints
from bayes_wsc.defaults import DEFAULT_CI
from bayes_wsc.errors import FitWarning
from bayes_wsc.models.experts import NoisyExperts
from bayes_wsc.models.wsc import WSC
from bayes_wsc.report.basic import write_report as basic_report
from bayes_wsc.report.wsc import write_report
from bayes_wsc.simulate import simulate_wsc
from bayes_wsc.simulate.experts import simulate_experts_model
from bayes_wsc.status import CONVERGENCE, DIAGNOSTICS, LAPLACE_CAVEAT, first_sentence, problems_of

RHAT = ["R-hat of {} is 1.0{}0 (above 1.01): the chains disagree. Run more tuning and draws, and check whether "
        "chains sit in different modes.".format(name, i + 2) for i, name in enumerate(("rho", "pi", "w0", "w1"))]
#: a warning of a kind the status line has never heard of, as another part of the package may add
NEW_KIND = ("the optimizer's gradient norm at the mode is 3.2 (above 1e-3): the MAP may sit on a plateau. "
            "Refit with more iterations.")


def quietly(est, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return est.fit(data)


def status_block(page: str) -> str:
    match = re.search(r'<div class="status[^"]*" id="status">(.*?)</div>', page, re.S)
    assert match, "the page has no status line"
    return match.group(1)


def opens_with_status(page: str) -> bool:
    """The status line comes before the first figure and the first table."""
    status = page.index('id="status"')
    return all(status < page.index(tag) for tag in ("<img", "<table") if tag in page)


@pytest.fixture(scope="module")
def wsc_data():
    data, _ = simulate_wsc(n_groups=40, items_per_group=20, n_bins=4, seed=0)
    return data


@pytest.fixture(scope="module")
def clean_map(wsc_data):
    return quietly(WSC(method="map"), wsc_data)


@pytest.fixture(scope="module")
def laplace_fit(wsc_data):
    return quietly(WSC(method="laplace", draws=200), wsc_data)


# ---------------------------------------------------------------------- the sentences
def test_rhat_warnings_are_one_sentence_and_any_other_warning_is_kept():
    problems = problems_of([*RHAT, NEW_KIND], "nuts")
    assert problems[0].section == CONVERGENCE
    assert problems[0].sentence.startswith("R-hat is above 1.01 for 4 estimands, rho (1.020), pi (1.030), w0 (1.040)")
    assert problems[1].section == DIAGNOSTICS
    assert problems[1].sentence == ("The optimizer's gradient norm at the mode is 3.2 (above 1e-3): the MAP may sit "
                                    "on a plateau.")
    assert len(problems) == 2
    assert problems_of([], "laplace")[0].sentence == LAPLACE_CAVEAT
    assert problems_of([], "nuts") == []
    assert first_sentence("check a: x (p = 0.003. Odd) y. Next one.") == "Check a: x (p = 0.003. Odd) y."


def test_plural_of_check_nouns():
    assert [plural(n) for n in ("class", "bin", "group and class")] == ["classes", "bins", "group-class pairs"]


# ---------------------------------------------------------------------- reports
def test_a_report_opens_with_a_stored_warning_of_any_kind(wsc_data, tmp_path):
    est = quietly(WSC(method="map"), wsc_data)
    inference.set_attrs(est._fitted(), {"diagnostics": [*RHAT, NEW_KIND]})
    for write in (lambda out: write_report(est, out, half_sampling_reps=2), lambda out: basic_report(est, out)):
        page = write(tmp_path / "out").read_text()
        status = status_block(page)
        assert opens_with_status(page)
        assert "Status: 2 problems" in status
        assert "R-hat is above 1.01 for 4 estimands" in status
        assert "The optimizer&#x27;s gradient norm at the mode is 3.2" in status
        assert '<a href="#diagnostics">' in status  # linked to the section that gives it whole
        assert 'id="diagnostics"' in page
        for message in RHAT:
            assert message.replace("'", "&#x27;") in page


def test_a_clean_fit_says_no_problems_found(clean_map, tmp_path):
    assert clean_map.diagnostics_ == []
    page = write_report(clean_map, tmp_path, half_sampling_reps=2).read_text()
    assert "Status: No problems found." in status_block(page)
    assert opens_with_status(page)


def test_summary_and_report_show_the_same_default_level(laplace_fit, tmp_path, capsys):
    path = laplace_fit.save(tmp_path / "fit.nc")
    for command in ("summary", "report", "predict"):
        args = [command, str(path)] + {"summary": [], "report": ["--out", "x"],
                                       "predict": ["--items", "i.csv", "--out", "p.csv"]}[command]
        assert build_parser().parse_args(args).ci == DEFAULT_CI
    low, high = f"hdi_{(1 - DEFAULT_CI) / 2:.0%}", f"hdi_{1 - (1 - DEFAULT_CI) / 2:.0%}"
    assert main(["summary", str(path)]) == 0
    printed = capsys.readouterr().out
    assert low in printed and high in printed
    assert printed.splitlines()[0].startswith("Status: 1 problem")  # the Laplace caveat, first
    assert "Laplace approximation" in printed.splitlines()[1]
    assert main(["report", str(path), "--out", str(tmp_path / "report")]) == 0
    page = (tmp_path / "report" / "report.html").read_text()
    assert f"{DEFAULT_CI:.0%} highest-density intervals" in page and "94%" not in page
    assert "Laplace approximation" in status_block(page)
    assert main(["summary", str(path), "--ci", "0.8"]) == 0
    assert "hdi_10%" in capsys.readouterr().out
    assert main(["report", str(path), "--out", str(tmp_path / "r80"), "--ci", "0.8"]) == 0
    assert "80% highest-density intervals" in (tmp_path / "r80" / "report.html").read_text()


def test_fit_help_shows_the_nuts_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["fit", "wsc", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in ("per chain; laplace: draws (default 1000)", "tuning steps per chain (default 1000)",
                  "NUTS chains (default 4)"):
        assert words in text


# ---------------------------------------------------------------------- experts: pairs by the user's ids
def test_the_experts_report_names_a_pair_by_its_items_ids(tmp_path, monkeypatch):
    items, constraints, _ = simulate_experts_model(n_items=60, n_features=2, n_clusters=2, alpha=(0.9, 0.8),
                                                   beta=(0.9, 0.8), pairs_per_expert=80, separation=3.0, seed=3)
    data = PairwiseConstraints.from_frames(items, constraints)
    est = quietly(NoisyExperts(n_clusters=2, restarts=2, method="laplace", draws=200), data)
    idata = est.idata_
    first, second = (int(idata.constant_data[n].values[5]) for n in ("pair_first", "pair_second"))
    ids = list(items["id"])  # the user's ids ("item13"), not the pair's position
    assert unit_label(idata, "5") == f"({ids[first]}, {ids[second]})"
    row = pareto_row(inference.loo(idata), "pair", idata)
    assert re.search(r"at pair \(item\d+, item\d+\)", row.message), row.message
    calls, memberships = [], NoisyExperts.memberships
    monkeypatch.setattr(NoisyExperts, "memberships", lambda self, *a, **k: calls.append(a) or memberships(self, *a, **k))
    page = est.report(tmp_path, baselines=False).read_text()
    assert len(calls) == 1  # the memberships over every draw, once: the clusters' plot is handed them
    assert re.search(r"at pair \(item\d+, item\d+\)", page)
    assert not re.search(r"at pair \d", page)
    assert opens_with_status(page) and "Laplace approximation" in status_block(page)
    assert "Laplace: " in page and "this fit:" not in page


# ---------------------------------------------------------------------- a variant's report describes the variant
VARIANT = '''"""Variant: the default model, with a setting of its own that it ignores.

More words that the report leaves out.
"""

from bayes_wsc.models.wsc import build_model as default_build_model


def build_model(data, *, wh=10.0, mu_prior="hierarchical", w_concentration=1.0, scale=1.0):
    return default_build_model(data, wh=wh, mu_prior=mu_prior, w_concentration=w_concentration)
'''


def test_a_variant_report_describes_the_variant_not_the_default_model(wsc_data, clean_map, tmp_path):
    path = tmp_path / "my_variant.py"
    path.write_text(VARIANT)
    est = quietly(WSC(model_file=str(path), model_settings={"scale": 3}), wsc_data)
    page = write_report(est, tmp_path / "variant", half_sampling_reps=2).read_text()
    assert "the variant file my_variant.py: the default model, with a setting of its own that it ignores." in page
    assert "its own settings (--set) scale=3" in page and "More words" not in page
    assert "Its free variables: " in page and "mu_scale" in page
    assert "HE is mu plus normal noise" not in page  # the default model's prose
    default = write_report(clean_map, tmp_path / "default", half_sampling_reps=2).read_text()
    assert "HE is mu plus normal noise" in default and "variant file" not in default
    assert "variant file my_variant.py" in basic_report(est, tmp_path / "basic").read_text()


# ---------------------------------------------------------------------- two classes; W's settled signs
def test_two_classes_are_shown_one_against_the_other(tmp_path):
    from bayes_wsc.models.proportions import ProportionsClassifier
    from bayes_wsc.report.criticism import second_of_two_classes
    from bayes_wsc.report.proportions import plot_classes, plot_group_fit
    from bayes_wsc.simulate.proportions import simulate_proportions

    data, _ = simulate_proportions("logistic", n_groups=12, group_size=6, n_classes=2, n_features=2, seed=2)
    est = quietly(ProportionsClassifier(), data)
    first, second = est.classes_
    ax = plot_classes(est).axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [f"class {second}"]
    assert f"class {second} against class {first}" in ax.get_xlabel()
    assert [t.get_text() for t in plot_group_fit(est).axes[0].get_legend().get_texts()] == [f"class {second}"]
    ppc = second_of_two_classes(est.posterior_predictive(draws=20))
    assert f"group_class_share[{second}]" in ppc.posterior_predictive.data_vars
    assert "class" not in ppc.observed_data[f"group_class_share[{second}]"].dims
    inference.set_attrs(est._fitted(), {"diagnostics": [NEW_KIND]})  # and its report opens with a stored warning
    page = est.report(tmp_path).read_text()
    assert opens_with_status(page) and "gradient norm at the mode is 3.2" in status_block(page)


def test_the_perception_heat_map_marks_the_weights_whose_interval_excludes_zero(tmp_path):
    from bayes_wsc.models.perception import PerceptionClustering
    from bayes_wsc.report.perception import TOP_FEATURES, plot_weights, weights_away_from_zero
    from bayes_wsc.simulate.perception import simulate_study

    data = simulate_study(n_items=150, seed=6).data()
    est = quietly(PerceptionClustering(method="laplace", draws=100, restarts=1), data)
    W = est.idata_.posterior["W"]
    assert weights_away_from_zero(est).shape == W.shape[2:]
    noise = 0.1 * np.random.default_rng(0).standard_normal(W.shape)
    W.values[...] = np.where(np.arange(W.shape[-1]) % 2 == 0, 1.0, 0.0) + noise  # even columns settled
    settled = weights_away_from_zero(est)
    assert settled[:, ::2].all() and not settled[:, 1::2].any()
    dots = plot_weights(est).axes[0].collections[-1].get_offsets()
    assert len(dots) == min(TOP_FEATURES, W.shape[2]) * len(range(0, W.shape[-1], 2))
    page = est.report(tmp_path).read_text()
    assert opens_with_status(page) and "Laplace approximation" in status_block(page)
    assert f"Each dot marks an entry whose {DEFAULT_CI:.0%} HDI excludes zero" in page


def test_the_pcmix_report_opens_with_its_status(tmp_path):
    from bayes_wsc.models.pcmix import PCMixture
    from bayes_wsc.simulate import simulate_intervals, toy_items

    frame, _ = simulate_intervals(seed=0)
    est = quietly(PCMixture(components=2, lam=4.0, restarts=2), toy_items(frame))
    inference.set_attrs(est._fitted(), {"diagnostics": [*est.diagnostics_, NEW_KIND]})
    page = est.report(tmp_path).read_text()
    assert opens_with_status(page) and "gradient norm at the mode is 3.2" in status_block(page)
    assert "MAP: " in page and "lam = 4: " not in page  # a report of one fit labels it by its method


def test_set_of_a_model_setting_names_its_option(wsc_data, tmp_path):
    from bayes_wsc.errors import InputError

    path = tmp_path / "my_variant.py"
    path.write_text(VARIANT)
    with pytest.raises(InputError, match="give it with --wh on the command line, or as the estimator's wh="):
        WSC(model_file=str(path), model_settings={"wh": 3}).fit(wsc_data)
    with pytest.raises(InputError, match="--mu-prior on the command line"):
        WSC(model_file=str(path), model_settings={"mu_prior": "flat"}).fit(wsc_data)
    from bayes_wsc.settings import option_of

    assert option_of(NoisyExperts.Settings, "n_clusters") == "clusters"


# ---------------------------------------------------------------------- chains that have not mixed
def sampled(values: np.ndarray, step_size: float) -> inference.Groups:
    """A fit of one variable `rho` with (chain, draw, 3) draws and NUTS's sample stats."""
    import xarray as xr

    chains, draws = values.shape[:2]
    coords = {"chain": np.arange(chains), "draw": np.arange(draws)}
    return inference.Groups(
        posterior=xr.Dataset({"rho": (("chain", "draw", "bin"), values)}, coords=coords),
        sample_stats=xr.Dataset({"step_size": (("chain", "draw"), np.full((chains, draws), step_size)),
                                 "diverging": (("chain", "draw"), np.zeros((chains, draws), bool))}, coords=coords))


def stuck_chains(seed=0) -> np.ndarray:
    """Four chains that each barely move, at four different places (as chains started at a collapsed scale)."""
    rng = np.random.default_rng(seed)
    values = 0.5 + 1e-9 * rng.normal(size=(4, 200, 3))
    values[:, :, 0] += np.arange(4)[:, None] * 0.1
    return values


def test_chains_that_never_mixed_say_so_in_one_sentence_with_the_cause():
    from bayes_wsc.diagnostics import nuts_messages

    stuck = nuts_messages(sampled(stuck_chains(), 1e-7), ["rho"])
    assert stuck[0].startswith("The chains have not mixed at all after tuning: for rho each chain stayed")
    assert "step size of 4 of 4 chains collapsed to 1e-07" in stuck[0]
    [problem] = [p for p in problems_of(stuck) if "not mixed" in p.sentence]
    assert problem.sentence == stuck[0] and problem.section == CONVERGENCE  # one sentence, whole
    apart = nuts_messages(sampled(stuck_chains() + np.random.default_rng(1).normal(size=(4, 200, 3)) * 0.01, 0.3),
                          ["rho"])
    assert "separate modes" in apart[0]
    mixed = np.random.default_rng(2).normal(size=(4, 200, 3))
    assert not any("not mixed" in m for m in nuts_messages(sampled(mixed, 0.3), ["rho"]))


def test_the_status_and_the_table_print_one_r_hat():
    """The fit-time R-hat (the status line's) is the summary table's, even where chains are stuck and R-hat is
    huge and sensitive to rounding."""
    from bayes_wsc.diagnostics import nuts_messages

    fit = sampled(stuck_chains(), 1e-7)
    worst = inference.summary(fit, ["rho"])["r_hat"].max()
    assert inference.convergence(fit, ["rho"])["rho"]["rhat"] == worst
    [rhat] = [p.sentence for p in problems_of(nuts_messages(fit, ["rho"])) if p.sentence.startswith("R-hat")]
    assert f"rho ({worst:.3f})" in rhat


def test_summary_prints_the_status_first(laplace_fit, tmp_path, capsys):
    """`bayes-wsc summary FIT.nc | head -1` is the status line; what the fit is follows it."""
    path = laplace_fit.save(tmp_path / "fit.nc")
    capsys.readouterr()
    assert main(["summary", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Status: ")
    heading = next(i for i, line in enumerate(lines) if line.startswith("model: wsc  method: laplace"))
    assert all(line.startswith(("Status: ", "  ! ")) for line in lines[:heading])


def test_the_check_table_says_how_a_row_is_flagged(capsys):
    """Effect over tolerance AND p-value below ALPHA; a row over its tolerance but with a large p-value is
    named as not flagged, with why (issue 38: effect 5.91 over 5.0, p = 0.98)."""
    import pandas as pd

    from bayes_wsc.cli import _print_checks

    table = pd.DataFrame({"check": ["group_misfit", "class_collapse"], "statistic": [1.0, 2.0],
                          "reference": [1.0, 2.0], "p_value": [0.98, 0.001], "flagged": [False, True],
                          "message": ["fine", "collapsed"], "effect": [5.91, 0.5], "tolerance": [5.0, 0.2]})
    _print_checks(table)
    out = capsys.readouterr().out
    assert "flagged when its effect exceeds its tolerance AND its p-value is below 0.01" in out
    assert "group_misfit: effect 5.91 over tolerance 5, but p = 0.98: not flagged" in out
    assert "class_collapse: effect" not in out and "  - class_collapse: collapsed" in out


def fitted_with_summary(table):
    """A stand-in NUTS fit whose summary is `table`, with no diagnostics, checks or notes, for `print_fit`."""
    import pandas as pd

    class Fitted:
        diagnostics_, checks_, method = [], pd.DataFrame(), "nuts"

        def summary(self, hdi_prob):
            return table

        def summary_notes(self):
            return []

        def log_likelihood_notes(self):
            return []

    return Fitted()


def test_a_long_estimands_table_is_shortened_and_says_so(capsys):
    """A perception fit's weights (features x clusters, 120 rows in issue 38) are not all printed."""
    import pandas as pd

    from bayes_wsc.commands.common import SUMMARY_ROWS, print_fit

    print_fit(fitted_with_summary(pd.DataFrame({"mean": np.arange(120.0)}, index=[f"W[x{i}]" for i in range(120)])))
    out = capsys.readouterr().out
    assert f"(120 rows, {SUMMARY_ROWS} shown" in out and "W[x0]" in out and "W[x119]" in out and "W[x60]" not in out


def test_a_value_fixed_by_the_model_is_named_beside_its_undefined_mcse(capsys):
    """Issue 38: a variable the model fixes (pcmix's pi with one component) printed MCSE 0.000 or NaN and
    R-hat NaN with no word of why."""
    import pandas as pd

    from bayes_wsc.commands.common import fixed_value_notes, print_fit

    table = pd.DataFrame({"mean": [1.0, 0.3], "sd": [0.0, 0.1], "mcse_mean": [0.0, 0.01], "mcse_sd": [np.nan, 0.01],
                          "r_hat": [np.nan, 1.0]}, index=["pi[0]", "mean[0, x]"])

    print_fit(fitted_with_summary(table))
    out = capsys.readouterr().out
    assert "Note: pi[0] takes one value in every draw (fixed by the model, not estimated)" in out
    assert "mean[0, x]" not in out.split("Note:")[1]
    assert fixed_value_notes(table.drop(columns=["mcse_mean", "mcse_sd", "r_hat"])) == []  # a MAP or Laplace table
    many = pd.DataFrame({"sd": np.zeros(8), "mcse_mean": np.zeros(8)}, index=[f"w[{i}]" for i in range(8)])
    assert "w[0], w[1], w[2], w[3], w[4], w[5] and 2 more take one value" in fixed_value_notes(many)[0]
