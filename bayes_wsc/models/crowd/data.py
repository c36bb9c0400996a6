"""`CrowdVotes`: items, sources (annotators or labelling rules) and their votes, from one long votes table.

The table has rows `item, source, vote`, one per source and item it was asked about (read by
`data/votes.py`, as the combined model reads its votes); an empty `vote` is an abstention, kept and
counted, carrying no likelihood. The items are those the table names, in order of first appearance; an
item on which every source abstained is kept (its class is then the class prior alone). The classes are
the `classes` given, else those the votes name, sorted. Every failure is one `InputError` line naming the
table, column, row and value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from bayes_wsc.data.tables import index_array
from bayes_wsc.data.votes import VOTE_COLUMNS, VoteViews, class_codes, read_votes, vote_classes
from bayes_wsc.errors import InputError


@dataclass
class CrowdVotes(VoteViews):
    """item_ids (n,), classes (K,), source_names (S,); vote_item, vote_source, vote (V,): every row of the
    votes table as indices into those, vote -1 an abstention."""

    item_ids: np.ndarray
    classes: np.ndarray
    source_names: np.ndarray
    vote_item: np.ndarray
    vote_source: np.ndarray
    vote: np.ndarray
    settings: dict = field(default_factory=dict)

    def __post_init__(self):
        self.item_ids = np.asarray(self.item_ids).astype(str)
        self.classes = np.asarray(self.classes).astype(str)
        self.source_names = np.asarray(self.source_names).astype(str)
        for what, names in (("item", self.item_ids), ("class", self.classes), ("source", self.source_names)):
            index = pd.Index(names)
            if index.has_duplicates:
                raise InputError(f"{what} {index[index.duplicated()][0]!r} is named twice")
        if "item" in set(self.source_names):
            raise InputError("a source is named 'item', the name of the items' column in the table predict reads; "
                             "rename the source")
        if self.n_classes < 2:
            raise InputError(f"the votes name {self.n_classes} class(es); the crowd model needs at least 2 "
                             "(give classes=, or votes of two classes or more)")
        if self.n_items < 2:
            raise InputError(f"the votes name {self.n_items} item(s); the crowd model needs at least 2")
        self.vote_item = _indices(self.vote_item, None, self.n_items, "vote_item")
        self.vote_source = _indices(self.vote_source, self.vote_item.size, self.n_sources, "vote_source")
        self.vote = _indices(self.vote, self.vote_item.size, self.n_classes, "vote", allow_abstention=True)
        if not self.cast.any():
            raise InputError("every vote is an abstention: there is nothing to learn the classes from")
        repeated = pd.DataFrame({"i": self.vote_item, "s": self.vote_source}).duplicated().to_numpy()
        if repeated.any():
            row = int(np.flatnonzero(repeated)[0])
            raise InputError(f"source {self.source_names[self.vote_source[row]]!r} votes on item "
                             f"{self.item_ids[self.vote_item[row]]!r} twice (row {row + 1})")

    @classmethod
    def from_frame(cls, votes: pd.DataFrame, *, classes: Sequence[str] | None = None) -> CrowdVotes:
        """Validate the votes table once (`data/votes.py`); `classes` fixes the classes and their order."""
        items, sources, text, item_ids = read_votes(votes)
        class_names = vote_classes(set(text.dropna()), classes)
        source_names = np.asarray(pd.unique(sources), dtype=str)
        return cls(np.asarray(item_ids), class_names, source_names, items,
                   pd.Index(source_names).get_indexer(sources), class_codes(text, pd.Index(class_names)),
                   {"classes": None if classes is None else [str(c) for c in classes]})

    # ------------------------------------------------------------------ views
    @property
    def n_items(self) -> int:
        return self.item_ids.size

    def voted_items(self) -> np.ndarray:
        """Items with at least one cast vote: the units of the likelihood (the others carry none)."""
        return np.unique(self.vote_item[self.cast])

    def wide(self) -> pd.DataFrame:
        """The votes as one row per item and one column per source (class names; missing: abstained or not
        asked): the table `predict` reads."""
        cells = np.full((self.n_items, self.n_sources), None, dtype=object)
        cast = self.cast
        cells[self.vote_item[cast], self.vote_source[cast]] = self.classes[self.vote[cast]]
        table = pd.DataFrame(cells, columns=list(self.source_names))
        table.insert(0, "item", self.item_ids.astype(object))
        return table

    @property
    def coords(self) -> dict[str, list]:
        return {"item": list(self.item_ids), "class": list(self.classes), "source": list(self.source_names),
                "vote": list(self.classes)}


def _indices(values, size: int | None, bound: int, what: str, allow_abstention: bool = False) -> np.ndarray:
    """Whole-number indices below `bound` (-1 too for an abstention), `size` of them when given."""
    out = index_array(values, what).reshape(-1)
    if size is not None and out.size != size:
        raise InputError(f"{what} must hold {size} entries, got {out.size}")
    low = -1 if allow_abstention else 0
    bad = np.flatnonzero((out < low) | (out >= bound))
    if bad.size:
        raise InputError(f"{what} holds {out[bad[0]]} at position {bad[0]}, outside {low}..{bound - 1}")
    return out


__all__ = ["CrowdVotes", "VOTE_COLUMNS"]
