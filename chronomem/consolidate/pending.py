"""Shared pieces of the extraction stages: which chunks are pending, loading them, building fact rows, finding facts.

Plain functions over the store. The stages (stage_rules.py, stage_llm.py) decide what to
extract; this module knows how to read the candidates and write facts the way
`remember` writes agent facts.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from chronomem.consolidate.resolve import MULTI_VALUED_PREDICATES
from chronomem.consolidate.slots import slot_phrase
from chronomem.consolidate.watermark import StageMark
from chronomem.records import MemoryRecord, differs_only_in_values, fact_sentence, new_id, normalize_object, normalize_predicate, normalize_subject
from chronomem.search.engine import text_search, vector_search
from chronomem.storage import Filter, MemoryStore

#: How sure we are of a fact, by who stated it (agent facts keep the default 1.0).
CONFIDENCE = {"rules": 0.8, "llm": 0.7, "structure": 0.8}


def pending(store: MemoryStore, mark: StageMark, limit: int) -> list[tuple[str, datetime]]:
    """(id, created_at) of the oldest `limit` original chunks the stage has not processed, oldest first."""
    flt = Filter().kinds(["chunk"]).originals()
    start = mark.window_start()
    if start is not None:
        flt = flt.created_since(start)
    todo = sorted((t, i) for i, t in store.keys(flt) if not mark.is_done(i, t))
    return [(i, t) for t, i in todo[:limit]]


def load_chunks(
    store: MemoryStore, keys: Sequence[tuple[str, datetime]], with_vectors: bool = False
) -> list[MemoryRecord]:
    """The chunk rows for `keys`, in the order given."""
    ids = [i for i, _ in keys]
    rows = {r.id: r for r in store.find(Filter().ids(ids), with_vectors=with_vectors)} if keys else {}
    return [rows[i] for i, _ in keys if i in rows]


def sources_of_facts(store: MemoryStore, chunk_ids: Sequence[str]) -> dict[str, set[str]]:
    """For each chunk, the sources (agent, rules, llm, …) of facts already derived from it."""
    out: dict[str, set[str]] = {c: set() for c in chunk_ids}
    if not chunk_ids:
        return out
    for fact in store.find(Filter().derived_from(chunk_ids).kinds(["fact"])):
        for cid in fact.source_ids:
            if cid in out:
                out[cid].add(fact.source)
    return out


def fact_row(
    chunk: MemoryRecord,
    subject: str,
    predicate: str,
    obj: str,
    *,
    valid_at: datetime,
    now: datetime,
    vector: list[float],
    embed_model: str,
    source: str,
) -> MemoryRecord:
    """A fact derived from `chunk`, shaped like the facts `remember` writes (provenance to the chunk).

    It inherits the chunk's user tags, paths, code anchors and commit: a fact read from a note about
    a file goes stale when that file changes, like the note.
    """
    subj, pred = normalize_subject(subject), normalize_predicate(predicate)
    return MemoryRecord(
        id=new_id(now),
        kind="fact",
        project=chunk.project,
        content=fact_sentence(subj, pred, obj),
        subject=subj,
        predicate=pred,
        object=obj,
        valid_at=valid_at,
        created_at=now,
        vector=vector,
        embed_model=embed_model,
        source=source,
        source_ids=[chunk.id],
        tags=list(chunk.tags),
        anchors=dict(chunk.anchors),
        paths=list(chunk.paths),
        commit=chunk.commit,
        confidence=CONFIDENCE.get(source, 1.0),
    )


def live_facts_near(
    store: MemoryStore,
    project: str,
    vector: Sequence[float],
    text: str,
    *,
    at: datetime,
    now: datetime,
    limit: int = 20,
) -> list[MemoryRecord]:
    """Facts of `project` valid at `at` and not retracted, nearest to the query by meaning or words.

    Dense and full-text candidates are merged by reciprocal rank (this is the consolidator's
    own small hybrid search; the read path has its own).
    """
    flt = Filter().projects([project]).kinds(["fact"]).live(at, now)
    dense = [r for r, _ in vector_search(store, vector, flt, limit)]
    lexical = [r for r, _ in text_search(store, text, flt, limit)] if text.strip() else []
    score: dict[str, float] = {}
    rows: dict[str, MemoryRecord] = {}
    for ranking in (dense, lexical):
        for rank, row in enumerate(ranking, start=1):
            rows[row.id] = row
            score[row.id] = score.get(row.id, 0.0) + 1.0 / (60 + rank)
    return [rows[i] for i in sorted(score, key=lambda i: (-score[i], i))][:limit]


def facts_of_edited_notes(
    store: MemoryStore, project: str, text: str, *, at: datetime, now: datetime, limit: int = 10
) -> list[MemoryRecord]:
    """Facts valid at `at` derived from the notes of `project` that say `text`'s words around other values
    (`differs_only_in_values`: "* Use `mage check` when you're done." for "* Use `./check.sh` when you're done.").

    Found by the words the two notes share (a full-text search of the notes), not by the facts' meaning: a fact
    names its slot in its writer's words ("final verification command"), which an edited line need not share."""
    if not text.strip():
        return []
    notes = Filter().projects([project]).kinds(["chunk"]).live(at, now)
    edited = [r.id for r, _ in text_search(store, text, notes, limit) if differs_only_in_values(r.content, text)]
    if not edited:
        return []
    return store.find(Filter().projects([project]).kinds(["fact"]).live(at, now).derived_from(edited))


def value_matches(stated: str, stored: str) -> bool:
    """True when a stated value names a stored one: equal after normalizing, or one contains the other as words."""
    a, b = normalize_object(stated), normalize_object(stored)
    if not a or not b:
        return False
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    if len(short) < 3:
        return False
    padded = f" {long} "
    return f" {short} " in padded or long.startswith(short + " ") or long.endswith(" " + short)


def facts_with_value(
    store: MemoryStore, project: str, value: str, vector: Sequence[float], *, at: datetime, now: datetime
) -> list[MemoryRecord]:
    """Live single-valued facts of `project` whose object names `value` (`value_matches`)."""
    near = live_facts_near(store, project, vector, value, at=at, now=now, limit=30)
    return [f for f in near if value_matches(value, f.object or "") and f.predicate not in MULTI_VALUED_PREDICATES]


def phrase_of(fact: MemoryRecord) -> str:
    return slot_phrase(fact.subject or "", fact.predicate or "")
