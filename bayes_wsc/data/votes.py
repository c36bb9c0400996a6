"""A votes table, read once for every model that takes votes (the crowd model, the combined model).

Rows `item, source, vote` from annotators or labelling rules: one row per source and item it was asked
about; an empty `vote` is an abstention (kept and counted, carrying no likelihood). Every failure is a
one-line `InputError` naming the table, column, row and value.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayes_wsc.data.tables import key_column, key_text, require_columns, require_rows, text_column
from bayes_wsc.errors import InputError

VOTE_COLUMNS = ("item", "source", "vote")


class VoteViews:
    """What every container of votes answers from its `classes`, `source_names` and `vote` (-1: abstention)
    arrays (the crowd and combined models' containers)."""

    @property
    def n_classes(self) -> int:
        return self.classes.size

    @property
    def n_sources(self) -> int:
        return self.source_names.size

    @property
    def cast(self) -> np.ndarray:
        """The votes that are not abstentions (a boolean mask over the vote rows)."""
        return self.vote >= 0


def read_votes(frame: pd.DataFrame, items: pd.Index | None = None, what: str = "votes"):
    """(item position, source names, vote text) per row, the votes as text (missing: an abstention).

    items : the known item ids; a vote on another item is refused. None: the items are those the votes
        name, in order of first appearance (returned as the fourth element, an `Index`)."""
    require_rows(frame, what)
    require_columns(frame, VOTE_COLUMNS, what)
    ids = key_column(frame, "item", what)
    known = pd.Index(pd.unique(text_column(ids, "item", what))) if items is None else items
    pos = known.get_indexer(ids)
    if (pos < 0).any():
        row = int(np.flatnonzero(pos < 0)[0])
        raise InputError(f"{what} column 'item' has item id {ids.iloc[row]!r} (row {row + 1}), which is not in items")
    sources = text_column(key_column(frame, "source", what), "source", what).astype(str).to_numpy()
    repeated = pd.DataFrame({"i": pos, "s": sources}).duplicated().to_numpy()
    if repeated.any():
        row = int(np.flatnonzero(repeated)[0])
        raise InputError(f"{what}: source {sources[row]!r} votes on item {ids.iloc[row]!r} twice (row {row + 1}); "
                         "keep one row per source and item")
    votes = text_column(key_text(frame["vote"]), "vote", what)
    out = (pos.astype(np.int64), sources, votes)
    return out if items is not None else (*out, known)


def class_codes(text: pd.Series, classes: pd.Index) -> np.ndarray:
    """Each name's index in `classes`, -1 for a missing one (an abstention, no label)."""
    codes = np.full(len(text), -1, dtype=np.int64)
    present = text.notna().to_numpy()
    codes[present] = classes.get_indexer(text[present].astype(str))
    return codes


def vote_classes(named, classes=None) -> np.ndarray:
    """The classes: `classes` given (each once, naming every class the supervision names), else the names
    `named` sorted."""
    if classes is None:
        return np.array(sorted(named), dtype=str)
    class_names = np.asarray([str(c) for c in classes], dtype=str)
    index = pd.Index(class_names)
    if index.has_duplicates:
        raise InputError(f"classes lists {index[index.duplicated()][0]!r} twice")
    unknown = sorted(set(named) - set(class_names))
    if unknown:
        raise InputError(f"the supervision names class {unknown[0]!r}, which is not among the classes "
                         f"given ({', '.join(class_names)})")
    return class_names


__all__ = ["VOTE_COLUMNS", "VoteViews", "read_votes", "class_codes", "vote_classes"]
