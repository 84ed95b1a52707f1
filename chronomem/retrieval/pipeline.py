"""The read path's ranking over one time slice: ask the search component (a `Searcher`) for candidates,
check what the query names, rank, add the best chunks' context (context.py) and the second hop
(bridge.py), adjust, budget. Every row comes through the `Searcher`; nothing here reads storage.

The optional `adjust` step sees the ranked hits before `limit` and the token budget apply; recall
uses it to demote memories whose anchored files changed (`demote_stale`, pure).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace

from chronomem.facts import EXTRACTED_SOURCES, slot_phrase
from chronomem.records import MemoryRecord
from chronomem.retrieval.bridge import BRIDGE_POSITION, bridge_search, placed
from chronomem.search.candidates import Candidate, Searcher, cosine
from chronomem.retrieval.context import (
    CONTEXT_GAP,
    context_additions,
    missing_neighbours,
)
from chronomem.retrieval.fusion import estimate_tokens
from chronomem.retrieval.rank import (
    DEFAULT_CONFIG,
    QueryInfo,
    RankConfig,
    missing_from,
    never_mentioned,
    gate_names,
    rank,
)

#: Embeds short phrases, cached: `SlotMatcher.embed_phrases`.
PhraseVectors = Callable[[Sequence[str]], dict[str, list[float]]]

#: At most this many unmatched names are double-checked against the whole slice.
MAX_ENTITY_CHECKS = 2


@dataclass
class Hit:
    """A ranked memory with the evidence behind its rank."""

    record: MemoryRecord
    score: float
    channels: list[str] = field(default_factory=list)
    dense: float | None = None
    lexical: float | None = None
    note: str | None = None  # for a fact derived from a note: the note's own text (`with_notes`)
    note_record: MemoryRecord | None = None  # ... and the note itself (its encoding-gate signals are the fact's)


@dataclass
class SearchOutcome:
    hits: list[Hit]
    abstained: bool
    tokens: int
    truncated: bool
    reason: str = ""


def hybrid_search(
    searcher: Searcher,
    query: QueryInfo,
    query_vector: Sequence[float],
    limit: int,
    budget_tokens: int | None = None,
    config: RankConfig = DEFAULT_CONFIG,
    cost: Callable[[Hit], int] | None = None,
    adjust: Callable[[list[Hit]], list[Hit]] | None = None,
    slot_vectors: PhraseVectors | None = None,
) -> SearchOutcome:
    """Rank the searcher's rows for the query; abstain when nothing relevant is stored.

    `cost` is what one hit spends of `budget_tokens` (default: the estimate of its text);
    recall passes the estimate of the line it renders, so the whole answer fits.
    `adjust`, when given, may rescore and reorder the ranked hits before `limit` and the budget apply.
    `slot_vectors`, when given, embeds slot phrases (cached) so stated facts rank by their slot's meaning too.
    """
    hits, reason = ranked_hits(searcher, query, query_vector, config, slot_vectors)
    if reason is not None:
        return SearchOutcome([], True, 0, False, reason)
    if adjust is not None:
        hits = adjust(hits)
    best = max((h.score for h in hits), default=0.0)
    hits = [h for h in hits if h.score >= config.padding_share * best]
    # the notes of the facts that may be shown (a hit over the budget is skipped, so a few past `limit`)
    shown = 2 * limit
    return within_budget(with_notes(searcher, hits[:shown]) + hits[shown:], limit, budget_tokens, cost)


def with_notes(searcher: Searcher, hits: list[Hit]) -> list[Hit]:
    """`hits` with each fact derived from a note carrying that note's own text: a fact is the note made
    precise ("staging database: Postgres 16"), and the note says the rest ("… on db-staging.internal:5433")."""
    wanted = {h.record.source_ids[0] for h in hits if h.record.kind == "fact" and h.note is None and h.record.source_ids}
    if not wanted:
        return hits
    notes = searcher.records(sorted(wanted))
    out = []
    for h in hits:
        note = notes.get(h.record.source_ids[0]) if h.record.kind == "fact" and h.note is None and h.record.source_ids else None
        out.append(replace(h, note=note.content, note_record=note) if note is not None else h)
    return out


def ranked_hits(
    searcher: Searcher,
    query: QueryInfo,
    query_vector: Sequence[float],
    config: RankConfig = DEFAULT_CONFIG,
    slot_vectors: PhraseVectors | None = None,
) -> tuple[list[Hit], str | None]:
    """The read path up to its adjust step: gather, slot meaning, neighbours, the names gate, rank, context,
    second hop — each signal as `config` sets it. Returns the hits best first, or no hits and why it abstained
    (never with `config.abstain` off: the ablation's rankers)."""
    pool = searcher.candidates(query.text, query_vector)
    if slot_vectors is not None and config.slot_sense_weight:
        attach_slot_cosines(pool, query_vector, slot_vectors, (*query.project_names, *query.other_project_names))
    adjacent = attach_adjacent(searcher, pool, config)
    if config.abstain:
        names = gate_names(query)
        unmatched = sorted(missing_from(names, pool), key=lambda n: names[n] is None)  # common words last
        if unmatched:
            absent = searcher.absent(unmatched[:MAX_ENTITY_CHECKS], names)
            query = replace(query, missing_entities=tuple(never_mentioned(names, absent)))  # the caller's stays as is
    ranking = rank(query, pool, config)
    if ranking.abstained:
        return [], ranking.reason
    hits = [
        Hit(r.candidate.record, r.score, r.channels, r.candidate.dense, r.candidate.lexical, r.note)
        for r in ranking.items
    ]
    if config.context_share and adjacent:
        hits = with_context(searcher, hits, adjacent, config)
    if config.second_hop:
        hits = _second_hop(searcher, query, hits, query_vector, slot_vectors)
    return hits, None


def attach_slot_cosines(
    pool: list[Candidate], query_vector: Sequence[float], vectors: PhraseVectors, project_names: Collection[str] = ()
) -> None:
    """Give each fact the agent stated (or imported) the cosine of its slot phrase to the query.

    The phrase is the slot matcher's (`slot_phrase`: subject and predicate words) without a subject that is a
    project's name: the query was embedded without it (recall.search_text), and with it every slot of the
    project would look alike. An extracted fact's slot is a guess (rank.slot_match ignores those too).
    """
    stated = [
        c for c in pool
        if c.record.kind == "fact" and c.record.source not in EXTRACTED_SOURCES and c.record.subject and c.record.predicate
    ]
    if not stated:
        return
    names = {n.lower() for n in project_names}

    def phrase(record: MemoryRecord) -> str:
        subject = record.subject or ""
        return slot_phrase("" if subject.lower() in names else subject, record.predicate or "")

    phrases = {id(c): phrase(c.record) for c in stated}
    embedded = vectors(list(dict.fromkeys(phrases.values())))
    for c in stated:
        c.slot_cosine = cosine(query_vector, embedded[phrases[id(c)]])


def attach_adjacent(searcher: Searcher, pool: list[Candidate], config: RankConfig) -> dict[str, tuple[str, ...]]:
    """The conversational neighbours of the pool's chunks (retrieval/context.py), also set on each candidate."""
    if not (config.context_weight or config.context_share):
        return {}
    chunks = [c.record.id for c in pool if c.record.kind == "chunk"]
    adjacent = searcher.adjacent(chunks, CONTEXT_GAP, config.context_cosine) if chunks else {}
    for candidate in pool:
        candidate.adjacent = adjacent.get(candidate.record.id, ())
    return adjacent


def with_context(
    searcher: Searcher, hits: list[Hit], adjacent: dict[str, tuple[str, ...]], config: RankConfig
) -> list[Hit]:
    """`hits` with the neighbours of the first chunks that the pool missed, each below its chunk."""
    missing = missing_neighbours(
        hits, adjacent, config.context_top, lambda h: h.record.id, lambda h: h.record.kind == "chunk"
    )
    sources = {s for h in hits for s in h.record.source_ids}  # a chunk folded into its fact is shown already
    missing = [(source, n) for source, n in missing if n not in sources]
    if not missing:
        return hits
    records = searcher.records([n for _, n in missing])
    score = {h.record.id: h.score for h in hits}
    additions = [
        (source, Hit(records[n], score[source] * config.context_share, ["context"]))
        for source, n in missing
        if n in records
    ]
    return context_additions(hits, additions, lambda h: h.record.id, lambda h: h.score)


def _second_hop(
    searcher: Searcher,
    query: QueryInfo,
    hits: list[Hit],
    query_vector: Sequence[float],
    phrase_vectors: PhraseVectors | None,
) -> list[Hit]:
    """`hits` with the memory the best one points to among the first five (bridge.py), when there is one; the
    uncovered words it is chosen by are embedded by `phrase_vectors` (without it, the whole query's vector)."""

    def meaning(phrase: str) -> Sequence[float]:
        return phrase_vectors([phrase])[phrase] if phrase_vectors is not None else query_vector

    found = bridge_search(searcher, query, [h.record for h in hits], meaning)
    if found is None:
        return hits
    earlier = next((h for h in hits if h.record.id == found.record.id), None)
    displaced = hits[min(BRIDGE_POSITION, len(hits) - 1)].score
    if earlier is not None:
        hop = replace(earlier, score=max(earlier.score, displaced), channels=[*earlier.channels, "bridge"])
    else:
        hop = Hit(found.record, displaced, ["lexical", "bridge"], None, found.lexical)
    return placed(hits, hop, lambda h: h.record.id)


def demote_stale(hits: Sequence[Hit], stale: Collection[str], penalty: float = DEFAULT_CONFIG.stale_penalty) -> list[Hit]:
    """`hits` with each one whose id is in `stale` scored ×`penalty` and moved down past the following
    fresh hits that now outscore it — never up; fresh hits keep their order (which "the newer wins"
    may have set against the scores). Pure: the demoted hits are new objects."""
    fresh = [h for h in hits if h.record.id not in stale]
    slots: list[list[Hit]] = [[] for _ in range(len(fresh) + 1)]
    fresh_before = 0
    for hit in hits:
        if hit.record.id not in stale:
            fresh_before += 1
            continue
        demoted = replace(hit, score=hit.score * penalty)
        j = fresh_before
        while j < len(fresh) and fresh[j].score > demoted.score:
            j += 1
        slots[j].append(demoted)
    out: list[Hit] = []
    for j, waiting in enumerate(slots):
        out.extend(sorted(waiting, key=lambda h: -h.score))
        if j < len(fresh):
            out.append(fresh[j])
    return out


def within_budget(
    hits: list[Hit], limit: int, budget_tokens: int | None, cost_of: Callable[[Hit], int] | None = None
) -> SearchOutcome:
    """The first `limit` hits that fit in `budget_tokens` (a hit costing more than what is left is skipped)."""
    chosen: list[Hit] = []
    tokens = 0
    truncated = False
    for hit in hits:
        if len(chosen) >= limit:
            break
        cost = cost_of(hit) if cost_of is not None else estimate_tokens(hit.record.content)
        if budget_tokens is not None and tokens + cost > budget_tokens:
            truncated = True
            continue
        chosen.append(hit)
        tokens += cost
    return SearchOutcome(chosen, False, tokens, truncated)
