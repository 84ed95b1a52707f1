"""What the search component answers and ranking (retrieval/) reads: a `Candidate` (a memory with each
channel's score), and `Searcher`, the one small interface a query's ranking asks for more rows through.

Pure: no storage, no I/O; `search/engine.py` implements `Searcher` over a store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from chronomem.records import MemoryRecord

#: Candidates each channel contributes before ranking.
CANDIDATE_POOL = 50


@dataclass
class Candidate:
    """A memory that one or both channels found, with its evidence."""

    record: MemoryRecord
    dense: float | None  # cosine similarity to the query, when the dense channel found it
    lexical: float | None = None  # BM25 score when the full-text channel found it
    dense_rank: int | None = None  # 1-based rank in the dense channel, when it found it
    lexical_rank: int | None = None
    adjacent: tuple[str, ...] = ()  # ids of the chunks written next to it, as context (retrieval/context.py)
    slot_cosine: float | None = None  # a stated fact: its slot phrase's cosine to the query (pipeline.attach_slot_cosines)
    terms: frozenset[str] | None = None  # the query's terms its text contains, when the search could tell at once


class Searcher(Protocol):
    """Candidates for one query's slice (a filter fixed when it is made): the read path's only I/O."""

    def candidates(self, text: str, vector: Sequence[float], pool: int = CANDIDATE_POOL) -> list[Candidate]:
        """Union of the dense and lexical top-`pool` rows of the slice, with their scores."""
        ...

    def lexical(self, text: str, limit: int, with_vectors: bool = False) -> list[tuple[MemoryRecord, float]]:
        """Lexical (BM25) matches of `text` in the slice, best first (with their vectors when asked)."""
        ...

    def absent(self, names: Sequence[str], verbatim: dict[str, bool | None]) -> list[str]:
        """The `names` that no row of the slice mentions (a lexical search for each name, then a check of the text)."""
        ...

    def adjacent(self, ids: Sequence[str], gap: timedelta, min_cosine: float) -> dict[str, tuple[str, ...]]:
        """For each chunk among `ids`, the chunks of its project written just before and after it in the slice."""
        ...

    def records(self, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        """The rows with these ids (any slice), by id."""
        ...


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    import numpy as np  # here, not at import: a starting server answers `initialize` before it needs NumPy

    va, vb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if va.shape != vb.shape:
        raise ValueError(f"vectors of different lengths: {va.shape} and {vb.shape}")
    na, nb = float(np.linalg.norm(va)), float(np.linalg.norm(vb))
    return float(va @ vb) / (na * nb) if na and nb else 0.0
