"""RESULTS.md's "Reproducing the papers" tables are the ones benchmarks/paper_tables.py builds from the committed
summaries of the benchmark scripts (benchmarks/results/), row for row and cell for cell."""

import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import paper_tables  # noqa: E402

SECTION = "## Reproducing the papers"


def results_table(heading: str) -> list[str]:
    """The lines of the first pipe table after `#### heading` in the "Reproducing the papers" section."""
    text = (ROOT / "benchmarks" / "RESULTS.md").read_text()
    assert text.count(SECTION + "\n") == 1, f"RESULTS.md has no single {SECTION!r} section"
    section = text.split(SECTION + "\n", 1)[1].split("\n## ", 1)[0]
    marker = f"#### {heading}\n"
    assert section.count(marker) == 1, f"the section has no single heading {marker.strip()!r}"
    lines = section.split(marker, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return lines[start:end]


@pytest.mark.parametrize("paper", list(paper_tables.PAPERS))
def test_results_md_holds_the_table_the_summaries_give(paper):
    built = paper_tables.table(paper)
    committed = pd.read_csv(paper_tables.RESULTS / f"reproduction_{paper}.csv", dtype=str, keep_default_na=False)
    pd.testing.assert_frame_equal(committed, built.astype(str))
    assert results_table(paper_tables.PAPERS[paper]) == paper_tables.markdown(built).splitlines()


def test_every_row_has_a_status_and_says_why_when_not_reproduced():
    for paper in paper_tables.PAPERS:
        built = paper_tables.table(paper)
        assert set(built["status"]) <= set(paper_tables.STATUSES)
        assert (built.loc[built["status"] != "reproduced", "what differs, or why not"].str.len() > 0).all()
        assert not built.map(lambda v: "|" in str(v)).any().any(), "a cell holds a pipe"
