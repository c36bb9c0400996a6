"""The HTML report: one self-contained file with the rho(k) figure, baselines, truth table and diagnostics."""

from __future__ import annotations

import re
import warnings

import matplotlib
import numpy as np
import pandas as pd
import pytest

from bayes_wsc.baselines.wsc import moments_rho
from bayes_wsc.data.grouped import BehaviorBins, GroupedCounts
from bayes_wsc.errors import FitWarning, InputError
from bayes_wsc.models.wsc import WSC
from bayes_wsc.report.html import Section, figure_to_data_uri, new_figure, write_html
from bayes_wsc.report.wsc import coverage, crossed_layout, rmse, write_report
from bayes_wsc.simulate import counts_to_clicks, simulate_wsc

PNG = "data:image/png;base64,"


def quiet_fit(est, data):
    """Tiny data and short chains make the diagnostics warn; the report shows those warnings instead."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return est.fit(data)


@pytest.fixture(scope="module")
def simulated():
    return simulate_wsc(n_groups=60, items_per_group=30, n_bins=5, seed=0)


@pytest.fixture(scope="module")
def fits(simulated):
    data, _ = simulated
    return {
        "MAP": quiet_fit(WSC(method="map"), data),
        "NUTS": quiet_fit(WSC(method="nuts", draws=100, tune=100, chains=2, seed=1, progressbar=False), data),
    }


@pytest.fixture(scope="module")
def crossed_data():
    """Six simulated bins split into two behavior columns: level (3 levels) x colour (2 levels)."""
    data, _ = simulate_wsc(n_groups=60, items_per_group=25, n_bins=6, seed=3)
    clicks, groups = counts_to_clicks(data)
    k = clicks["behavior"].str[1:].astype(int) - 1
    clicks = pd.DataFrame({"group": clicks["group"], "level": k // 2 + 1,
                           "colour": np.where(k % 2 == 1, "red", "blue")})
    return GroupedCounts.from_frames(clicks, groups)


@pytest.fixture(scope="module")
def crossed_fit(crossed_data):
    return quiet_fit(WSC(method="map"), crossed_data)


def test_report_of_map_and_nuts_with_truth(tmp_path, simulated, fits):
    data, truth = simulated
    backend = matplotlib.get_backend()
    path = write_report(fits, tmp_path / "out", truth_rho=truth.rho, truth_pi=truth.pi)

    assert path == tmp_path / "out" / "report.html"
    assert [p.name for p in path.parent.iterdir()] == ["report.html"]  # one file, no temporary left over
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert page.count(PNG) >= 3
    assert not re.search(r'(src|href)="(?!data:|#)', page)  # nothing loaded from outside the file
    assert "half-sampling" in page
    assert "RMSE of rho against truth" in page
    for row in ("MAP", "NUTS", "naive (eq. 3.1)", "method of moments (eq. 3.3)", "EM (Sec. 4, WH = 10)"):
        assert f"<td>{row}</td>" in page
    assert "90% highest-density intervals of the posterior (credible intervals)" in page
    outside = int(np.sum((moments_rho(data) < 0) | (moments_rho(data) > 1)))
    assert outside > 0, "this seed is chosen so that the method of moments leaves [0, 1]"
    assert f"{outside} of 5 method-of-moments values fall outside [0, 1]" in page
    for message in fits["NUTS"].diagnostics_:
        assert f"NUTS: {message}" in page
    assert "MAP: No problems found." in page
    assert "no intervals" in page
    assert matplotlib.get_backend() == backend  # the report never switches the user's backend


def test_single_fit_without_truth(tmp_path, fits):
    page = write_report(fits["MAP"], tmp_path, half_sampling_reps=5, title="A <small> study").read_text()
    assert "<h1>A &lt;small&gt; study</h1>" in page
    assert "RMSE" not in page
    assert "MAP: No problems found." in page
    assert page.count(PNG) >= 3


def test_crossed_behavior_renders_like_fig6(tmp_path, crossed_fit):
    page = write_report(crossed_fit, tmp_path, half_sampling_reps=5).read_text()
    assert page.count(PNG) >= 3
    assert "Fig. 6 of the paper" in page
    assert "&#x27;level&#x27; (the column with the most levels) on the x-axis" in page
    assert "6 behavior bins, the crossing of" in page


def test_crossed_layout_puts_the_longest_column_on_the_x_axis():
    bins = BehaviorBins(("colour", "level"), (("blue", "red"), ("1", "2", "3")))
    layout = crossed_layout(bins)
    assert layout.x_column == "level"
    assert [label for label, _ in layout.lines] == ["colour=blue", "colour=red"]
    labels = np.array(bins.labels)
    assert list(labels[layout.lines[1][1]]) == ["colour=red, level=1", "colour=red, level=2", "colour=red, level=3"]


def test_rmse_and_coverage():
    truth = np.array([0.1, 0.5, 0.9, 0.3])
    assert rmse(truth + 0.1, truth) == pytest.approx(0.1)
    interval = np.array([[0.0, 0.2], [0.6, 0.7], [0.85, 0.9], [0.3, 0.3]])
    assert coverage(interval, truth) == pytest.approx(0.75)


def test_bad_inputs_are_named(tmp_path, fits, crossed_fit):
    with pytest.raises(InputError, match="ci"):
        write_report(fits, tmp_path, ci=1.5)
    with pytest.raises(InputError, match="truth_rho has 3 values"):
        write_report(fits, tmp_path, truth_rho=[0.1, 0.2, 0.3])
    with pytest.raises(InputError, match="not a fitted WSC"):
        write_report(WSC(), tmp_path)
    with pytest.raises(InputError, match="empty"):
        write_report({}, tmp_path)
    with pytest.raises(InputError, match="different data"):
        write_report({"a": fits["MAP"], "b": crossed_fit}, tmp_path)
    assert not any(tmp_path.iterdir())


def test_write_html_escapes_and_embeds(tmp_path):
    fig, axes = new_figure()
    axes[0, 0].plot([0, 1], [1, 0])
    table = pd.DataFrame({"name": ["<b>x</b>"], "value": [0.5]})
    section = Section("Odd <heading>", paragraphs=["a & b"], figures=[(fig, "cap <1>")],
                      tables=[table], warnings=["watch <out>"])
    path = write_html(tmp_path / "sub" / "page.html", "T", "intro <i>", [section])
    page = path.read_text()
    assert page.count(PNG) == 1
    for raw in ("<heading>", "<b>x</b>", "<out>", "<i>", "cap <1>"):
        assert raw not in page
    assert "a &amp; b" in page and "watch &lt;out&gt;" in page
    assert [p.name for p in path.parent.iterdir()] == ["page.html"]


def test_figure_to_data_uri_is_a_png():
    import base64

    fig, axes = new_figure()
    axes[0, 0].plot([0, 1])
    uri = figure_to_data_uri(fig)
    assert uri.startswith(PNG)
    assert base64.b64decode(uri[len(PNG):])[:8] == b"\x89PNG\r\n\x1a\n"
    assert not fig.axes  # freed


def section_of(page: str, heading: str) -> str:
    start = page.index(f"{heading}</h2>")  # the section, not its entry in the contents
    end = page.find("<h2", start)
    return page[start:end if end > 0 else None]


def test_a_map_report_has_no_empty_pi_panel_nor_posterior_mean_captions(tmp_path, fits):
    """A MAP's pi is a number in words (its panel was an empty axes with two lines); its mu figure is of the
    posterior mode."""
    page = write_report(fits["MAP"], tmp_path, half_sampling_reps=5).read_text()
    pi = section_of(page, "pi: the overall share of class 1")
    assert PNG not in pi and "MAP: posterior mode 0." in pi and "EM: 0." in pi
    mu = section_of(page, "Human evaluation against posterior group quality")
    assert "the posterior mode (MAP) of its quality mu" in mu and "posterior mean" not in mu


def test_the_fit_intervals_are_drawn_above_the_baselines():
    """NUTS's credible bars and means lie above EM's markers (zorder 4), which hid them (issue 38)."""
    from bayes_wsc.report.wsc import _draw_fit

    fig, axes = new_figure()
    ax = axes[0, 0]
    _draw_fit(ax, np.arange(3), np.full(3, 0.5), np.tile([0.4, 0.6], (3, 1)), "C0", "NUTS", 0.9)
    assert min(artist.get_zorder() for artist in [*ax.collections, *ax.lines]) > 4
