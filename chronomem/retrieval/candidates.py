"""Gathering the candidate pool for a query: dense and full-text neighbours in one time slice.

The only I/O of the read path. Ranking the pool (`rank.py`) is pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from chronomem.records import MemoryRecord
from chronomem.storage import Filter, MemoryStore

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
    slot_cosine: float | None = None  # a stated fact: its slot phrase's cosine to the query (search.attach_slot_cosines)
    terms: frozenset[str] | None = None  # the query's terms its text contains, when the store could tell at once


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    va, vb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if va.shape != vb.shape:
        raise ValueError(f"vectors of different lengths: {va.shape} and {vb.shape}")
    na, nb = float(np.linalg.norm(va)), float(np.linalg.norm(vb))
    return float(va @ vb) / (na * nb) if na and nb else 0.0


def gather(
    store: MemoryStore, query_text: str, query_vector: Sequence[float], flt: Filter, pool: int = CANDIDATE_POOL
) -> list[Candidate]:
    """Union of the dense and full-text top-`pool` rows passing `flt`.

    Dense candidates carry their vectors (ranking compares them); reading vectors for the
    full-text ones as well would cost more than it changes.
    """
    dense, lexical, contains = store.hybrid_search(query_vector, query_text, flt, pool)
    found: dict[str, Candidate] = {}
    for rank, (record, score) in enumerate(dense, start=1):
        found[record.id] = Candidate(record, score, dense_rank=rank)
    for rank, (record, score) in enumerate(lexical, start=1):
        candidate = found.get(record.id)
        if candidate is None:
            candidate = found[record.id] = Candidate(record, None)
        candidate.lexical = score
        candidate.lexical_rank = rank
    if contains is not None:
        for candidate in found.values():
            candidate.terms = contains.get(candidate.record.id)
    return list(found.values())
