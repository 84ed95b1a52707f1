"""Slot matching: a new fact whose slot is named differently from an existing live slot of its project.

`test_cmd`, `test command` and `the test command` are one slot to a reader; so are `payments`,
`payments-svc` and `the payments service`. When a new fact's exact slot (project, subject,
predicate) holds nothing:

1. its *normal form* (`subject_form`, `predicate_form`: case, quotes, `-`/`_`/spaces, a leading
   article, a trailing `service`, the project's own name with `repo`/`project`) equal to an existing
   slot's files it under that slot;
2. else subject and predicate are compared each on its own by the model (a whole phrase is dominated
   by its subject: `webhooks module owned by` / `webhooks module lives in` are 0.96 alike):
   both at or above `SAME_SUBJECT` / `SAME_PREDICATE` (0.80 / 0.75) is the same slot (the fact takes
   that slot's names, so history shows one chain); a predicate in [`NEAR_PREDICATE` 0.60, 0.75) is a
   near miss: a judge (the LLM, when one is configured and the caller is the background
   consolidator) decides, and without one it is never merged: it is reported (`SlotMatch.near`, the
   reply's `possibly_same_as`) and, where the values differ, both facts are flagged as conflicting.
   Two subjects are also one when their notes say them alike (`grounded_subject`: `the gift cards
   feature` of a note that says "gift cards"), and one attribute's values keep their kind
   (`records.value_kind`: a port stays an integer, a host a dotted name): for one subject with values
   of one kind other than free text the predicate's bar is `SAME_KIND_PREDICATE` (0.50), so `port` /
   `http port`, `service` / `served by`, `flag` / `feature flag` are one slot. Last, a slot of the same
   subject whose value when the fact begins the fact's note names apart from the new value is that slot
   ("rebound from port 6210 to 6025" files `listens on` under `http port`): the note ties
   the namings, not their words; only a slot of the fact's value kind, or whose predicate is a near miss, is
   asked;
3. slots whose identifier-like tokens differ (`checkout-api` / `checkout-worker`, `payments` /
   `payments-db`, `service_port:a` / `service_port:b`) are distinct whatever the similarity.

The thresholds come from `python -m eval.fit_slots` (every naming the noisy agent of eval/agent_style.py
gives each slot, paired): at (0.80, 0.75) no two different slots merge among 6.9M pairs on dev, 7.0M on
devmem_validation and 4.5k on agentfiles_validation, and 23% / 23% / 65% of same-slot pairs merge;
(0.80, 0.70) merges 65 different pairs on dev. `classify` keeps the whole-phrase bands (`SAME_SLOT`,
`AMBIGUOUS_SLOT`) that the rule extractor's stage compares phrases by.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from chronomem.consolidate.resolve import MULTI_VALUED_PREDICATES
from chronomem.embed import Embedder
from chronomem.facts import ARTICLES, phrase_words, identifiers, slot_phrase, subject_form
from chronomem.records import MemoryRecord, fact_sentence, names_value, same_value, value_kind
from chronomem.search.engine import vector_search
from chronomem.service import MemoryService
from chronomem.storage import Filter, MemoryStore

if TYPE_CHECKING:
    import numpy as np

#: Subject and predicate similarities at or above which two namings are one slot, each compared on its own
#: (the subject dominates a whole phrase: `webhooks module owned by` / `webhooks module lives in` are 0.96
#: alike). Fitted by eval/fit_slots.py on dev: the lowest pair with no two different slots merged among
#: 6.9M pairs of the noisy agent's namings (0.80, 0.75); none merged on either validation split either.
SAME_SUBJECT = 0.80
SAME_PREDICATE = 0.75
#: The predicate's bar when the subjects are one and the values of one kind (`port` / `http port` 0.75,
#: `feature flag` / `flag` 0.63, `service` / `served by` 0.54): eval.fit_slots' kind rule, the lowest floor at
#: which no two different slots merge on dev (0.4 merges 108 pairs: `preferred editor` / `preferred language`,
#: both names); none merge at 0.5 on devmem_validation or agentfiles_validation either, and same-slot pairs
#: merged rise from 23% to 45% (dev), 23% to 51% (validation), 65% to 68% (agentfiles).
SAME_KIND_PREDICATE = 0.50
#: Below those, down to these, a naming is a near miss: reported to the agent ("possibly the same as"), not merged.
NEAR_SUBJECT = 0.80
NEAR_PREDICATE = 0.60
#: Slot-phrase similarity at or above which two slot names mean the same attribute (`classify`, whole phrases).
SAME_SLOT = 0.90
#: Lower edge of the ambiguous band (below: distinct slots).
AMBIGUOUS_SLOT = 0.80
#: Nearest live facts looked at when a project has too many slots not embedded yet to compare them all.
CANDIDATES = 20
#: Most slot phrases embedded for one match (the rest of a large project is searched instead).
MAX_NEW_PHRASES = 64
#: How long a project's slot list is reused before it is read again.
SLOT_CACHE_SECONDS = 5.0

#: Decides whether `new` belongs to the slot of `existing`: True, False, or None (could not tell).
Judge = Callable[[MemoryRecord, MemoryRecord], "bool | None"]

_NOTE_WORDS = re.compile(r"\w+")


def grounded_subject(subject: str, note: str, project: str) -> str:
    """`subject_form` less the words its note does not say: what a model adds around a name (`the gift cards
    feature` for a note about "gift cards", `Mobile team` for "Lead for Mobile") is not part of the name. A
    subject none of whose words the note says is kept whole."""
    form = subject_form(subject, project)
    said = set(_NOTE_WORDS.findall(note.lower()))
    kept = [w for w in form.split() if all(part in said for part in _NOTE_WORDS.findall(w))]
    return " ".join(kept) if kept else form


def subject_words(subject: str) -> str:
    """A subject's words as the model reads them (`-`/`_` as spaces, so `payments-db` reads `payments db`)."""
    return " ".join(phrase_words(subject))


def predicate_words(predicate: str) -> str:
    """A predicate's words as the model reads them: `test_cmd` reads `test cmd`."""
    return " ".join(phrase_words(predicate))


def predicate_form(predicate: str) -> str:
    """A predicate as compared across namings: case, quotes, `-`/`_`/spaces and a leading article do not count."""
    words = phrase_words(predicate)
    while len(words) > 1 and words[0] in ARTICLES:
        words = words[1:]
    return " ".join(words)


def classify(similarity: float, new_phrase: str, old_phrase: str) -> str:
    """`same`, `ambiguous` or `distinct` for two slot phrases with this embedding similarity."""
    if identifiers(new_phrase) != identifiers(old_phrase):
        return "distinct"
    if similarity >= SAME_SLOT:
        return "same"
    if similarity >= AMBIGUOUS_SLOT:
        return "ambiguous"
    return "distinct"


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


@dataclass
class SlotMatch:
    """The fact to resolve (renamed onto an equivalent slot, or as given), live facts it conflicts with, and
    the slots it came close to without being merged (`near`: slot and score, best first)."""

    fact: MemoryRecord
    matched: tuple[str, str] | None = None
    similarity: float | None = None
    conflicts: list[str] = field(default_factory=list)
    near: list[tuple[tuple[str, str], float]] = field(default_factory=list)


def slot_verdict(subject_similarity: float, predicate_similarity: float, same_kind: bool = False) -> str:
    """`same`, `ambiguous` (a near miss: reported, never merged) or `distinct`, from the model's similarity of
    the two subjects and, separately, of the two predicates (1.0 where their normal forms are equal).
    `same_kind`: the subjects are one (by normal form or as grounded in their notes) and the values are of one
    kind other than free text (`records.value_kind`), which lowers the predicate's bar to `SAME_KIND_PREDICATE`."""
    if subject_similarity >= SAME_SUBJECT and predicate_similarity >= SAME_PREDICATE:
        return "same"
    if same_kind and predicate_similarity >= SAME_KIND_PREDICATE:
        return "same"
    if subject_similarity >= NEAR_SUBJECT and predicate_similarity >= NEAR_PREDICATE:
        return "ambiguous"
    return "distinct"


def _cosines(vectors: Mapping[str, Sequence[float]], texts: Sequence[str]) -> np.ndarray:
    """The cosine of texts[0] with each of texts[1:]."""
    import numpy as np  # here, not at import: a starting server answers `initialize` before it needs NumPy

    matrix = np.asarray([vectors[t] for t in texts], dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True) + 1e-12
    return matrix[1:] @ matrix[0]


class SlotMatcher:
    """Finds the live slot a new fact semantically belongs to.

    Keeps, per project, the set of slots that hold facts (refreshed after `SLOT_CACHE_SECONDS`,
    or by `forget_slots`) and the embeddings of slot phrases, so a match is an in-memory
    comparison, not a search. A stale slot list can only miss a rename, never misfile a fact:
    resolution itself always reads the slot from the store.
    """

    def __init__(self, store: MemoryStore, embedder: Embedder, judge: Judge | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.judge = judge
        #: Off while the caller holds the write lock: decisions made earlier are reused, none is asked for.
        self.judging = True
        self._decisions: dict[tuple[str, str, str, str, str], bool] = {}
        self._vectors: dict[str, list[float]] = {}
        self._slots: dict[str, tuple[float, set[tuple[str, str]]]] = {}
        #: (project, subject, predicate) → (its subject grounded in its note, the kind of its values)
        self._grounding: dict[tuple[str, str, str], tuple[str, str]] = {}
        self._lock = threading.Lock()

    def embed_phrases(self, phrases: Sequence[str]) -> dict[str, list[float]]:
        """Embeddings of slot phrases (or any short texts), cached for the process."""
        with self._lock:
            missing = [p for p in dict.fromkeys(phrases) if p not in self._vectors]
        if missing:
            vectors = self.embedder.embed(missing)
            with self._lock:
                if len(self._vectors) > 50_000:
                    self._vectors.clear()
                self._vectors.update(zip(missing, vectors, strict=True))
        with self._lock:
            return {p: self._vectors[p] for p in phrases}

    def forget_slots(self) -> None:
        """Read every project's slot list again at the next match."""
        with self._lock:
            self._slots.clear()

    def note_written(self, rows: Iterable[MemoryRecord]) -> None:
        """Add the slots of facts just committed to the cached slot lists (and what grounds them)."""
        rows = list(rows)
        notes = {r.id: r.content for r in rows if r.kind == "chunk"}
        with self._lock:
            for row in rows:
                if row.kind != "fact" or not row.subject or not row.predicate:
                    continue
                cached = self._slots.get(row.project)
                if cached is not None:
                    cached[1].add((row.subject, row.predicate))
                key = (row.project, row.subject, row.predicate)
                if key not in self._grounding and row.source_ids and row.source_ids[0] in notes:
                    self._grounding[key] = self._ground(row, notes[row.source_ids[0]])

    @staticmethod
    def _ground(row: MemoryRecord, note: str | None) -> tuple[str, str]:
        assert row.subject is not None
        subject = grounded_subject(row.subject, note, row.project) if note else subject_form(row.subject, row.project)
        return subject, value_kind(row.object or "")

    def groundings(self, project: str, keys: Iterable[tuple[str, str]], now: datetime) -> dict[tuple[str, str], tuple[str, str]]:
        """Each slot's grounded subject and value kind, read from the store once for the slots not seen yet."""
        keys = list(keys)
        with self._lock:
            missing = [k for k in keys if (project, *k) not in self._grounding]
        if missing:
            facts = self.store.find(Filter().projects([project]).kinds(["fact"]).known(now))
            first = {(f.subject, f.predicate): f for f in sorted(facts, key=lambda f: f.id) if f.subject and f.predicate}
            note_ids = sorted({f.source_ids[0] for f in first.values() if f.source_ids})
            notes = {c.id: c.content for c in self.store.find(Filter().ids(note_ids))} if note_ids else {}
            with self._lock:
                for key, fact in first.items():
                    note = notes.get(fact.source_ids[0]) if fact.source_ids else None
                    self._grounding.setdefault((project, *key), self._ground(fact, note))
        with self._lock:
            return {k: self._grounding.get((project, *k), (subject_form(k[0], project), "text")) for k in keys}

    def project_slots(self, project: str, now: datetime) -> set[tuple[str, str]]:
        """The (subject, predicate) of every fact the project holds, from the cached list (see the class)."""
        with self._lock:
            cached = self._slots.get(project)
            if cached is not None and time.monotonic() - cached[0] < SLOT_CACHE_SECONDS:
                return set(cached[1])
        slots = self.store.slot_keys(Filter().projects([project]).kinds(["fact"]).known(now))
        with self._lock:
            self._slots[project] = (time.monotonic(), slots)
            return set(slots)

    def _candidates(self, fact: MemoryRecord, phrase: str, slots: set[tuple[str, str]], now: datetime) -> list[tuple[str, str]]:
        """The slots worth comparing: all of the project's, or (when many are not embedded yet) the nearest."""
        with self._lock:  # what match embeds of a slot: its subject's words and its predicate's
            unseen = len({t for key in slots for t in (subject_words(key[0]), predicate_words(key[1])) if t not in self._vectors})
        if unseen <= MAX_NEW_PHRASES:
            return sorted(slots)
        vector = self.embed_phrases([phrase])[phrase]
        base = Filter().projects([fact.project]).kinds(["fact"]).known(now)
        near = vector_search(self.store, vector, base, CANDIDATES)
        return sorted({(r.subject, r.predicate) for r, _ in near if r.subject and r.predicate})

    def match(self, fact: MemoryRecord, now: datetime, pending: Mapping[str, MemoryRecord] | None = None) -> SlotMatch:
        """Where `fact` resolves. `pending` holds rows written in the same commit (seen as stored)."""
        assert fact.subject is not None and fact.predicate is not None
        pending = pending or {}
        new_rows = [r for r in pending.values() if r.kind == "fact" and r.expired_at is None and r.project == fact.project]
        slots = self.project_slots(fact.project, now) | {(r.subject or "", r.predicate or "") for r in new_rows}
        own = (fact.subject, fact.predicate)
        if own in slots:
            return SlotMatch(fact)  # the exact slot exists: cheap match first
        form = (subject_form(own[0], fact.project), predicate_form(own[1]))
        for key in sorted(slots):
            if key != own and (subject_form(key[0], fact.project), predicate_form(key[1])) == form:
                return SlotMatch(self._rename(fact, key), matched=key, similarity=1.0)
        phrase = slot_phrase(*own)
        keys = [k for k in self._candidates(fact, phrase, slots, now) if k != own]
        if not keys:
            return SlotMatch(fact)
        note = pending.get(fact.source_ids[0]) if fact.source_ids else None
        if note is None and fact.source_ids:
            note = self.store.get(fact.source_ids[0])
        mine = self._ground(fact, note.content if note is not None else None)
        grounding = self.groundings(fact.project, keys, now)
        subject_texts = [subject_words(own[0]), *(subject_words(k[0]) for k in keys)]
        predicate_texts = [predicate_words(own[1]), *(predicate_words(k[1]) for k in keys)]
        vectors = self.embed_phrases([*subject_texts, *predicate_texts])
        s_sims = _cosines(vectors, subject_texts)
        p_sims = _cosines(vectors, predicate_texts)
        scored: list[tuple[float, str, tuple[str, str]]] = []
        same_subject: list[tuple[float, tuple[str, str]]] = []
        for index, key in enumerate(keys):
            s_equal = subject_form(key[0], fact.project) == form[0] or grounding[key][0] == mine[0]
            p_equal = predicate_form(key[1]) == form[1]
            if not s_equal and identifiers(own[0]) != identifiers(key[0]):
                continue  # `checkout-api` / `checkout-worker`, `payments` / `payments-db`: never one slot
            if not p_equal and identifiers(own[1]) != identifiers(key[1]):
                continue  # `service_port:checkout-api` / `service_port:checkout-worker`: the same
            s_sim = 1.0 if s_equal else float(s_sims[index])
            p_sim = 1.0 if p_equal else float(p_sims[index])
            kind_alike = grounding[key][1] == mine[1]
            # a slot the note may say it changes: of the fact's kind, or a near miss ("loyalty left src/loyalty/ for
            # a service of its own, loyalty-jobs" names one attribute's value and gives another's)
            if s_sim >= SAME_SUBJECT and (p_sim >= NEAR_PREDICATE or kind_alike):
                same_subject.append((p_sim, key))
            verdict = slot_verdict(s_sim, p_sim, same_kind=s_equal and kind_alike and mine[1] != "text")
            if verdict != "distinct":
                scored.append((min(s_sim, p_sim), verdict, key))
        near: list[tuple[tuple[str, str], float]] = []
        for similarity, verdict, key in sorted(scored, key=lambda item: (-item[0], item[2])):
            if verdict == "ambiguous" and self.judge is not None:
                rows = self._slot_rows(fact, [key], now, new_rows)
                decided = self._judged(fact, key, rows[0]) if rows else None
                if decided is not None:
                    verdict = "same" if decided else "distinct"
                if decided is False:  # the judge told them apart: no note's wording joins them again
                    same_subject = [(s, k) for s, k in same_subject if k != key]
            if verdict == "same":
                return SlotMatch(self._rename(fact, key), matched=key, similarity=similarity, near=near)
            if verdict == "ambiguous":
                near.append((key, similarity))
        if note is not None and same_subject:
            held: dict[tuple[str, str], list[str]] = {}  # each slot's values when the fact begins
            for row in self._slot_rows(fact, [key for _, key in same_subject], now, new_rows):
                if row.is_valid_at(fact.valid_at):
                    held.setdefault((row.subject or "", row.predicate or ""), []).append(row.object or "")
            new = fact.object or ""
            for similarity, key in sorted(same_subject, key=lambda item: (-item[0], item[1])):
                # named apart from the new value: "+ pnpm check:tsgo" names `pnpm check:tsgo` as a part of itself
                values = held.get(key, [])
                if any(names_value(note.content, v) and not same_value(v, new) and not names_value(new, v) for v in values):
                    return SlotMatch(self._rename(fact, key), matched=key, similarity=similarity, near=near)
        conflicts: list[str] = []
        if near and fact.predicate not in MULTI_VALUED_PREDICATES:
            key, similarity = near[0]
            if key[1] not in MULTI_VALUED_PREDICATES:
                conflicts = [
                    r.id for r in self._slot_rows(fact, [key], now, new_rows)
                    if r.is_valid_at(fact.valid_at) and not same_value(r.object or "", fact.object or "")
                ]
            return SlotMatch(fact, similarity=similarity, conflicts=conflicts, near=near)
        return SlotMatch(fact)

    def _slot_rows(
        self, fact: MemoryRecord, keys: list[tuple[str, str]], now: datetime, new_rows: list[MemoryRecord]
    ) -> list[MemoryRecord]:
        """The unexpired rows of the slots `keys` of the fact's project, this commit's pending rows as stored."""
        wanted = set(keys)
        stored = self.store.find(Filter().projects([fact.project]).slots(keys).known(now))
        pending = {r.id: r for r in new_rows if (r.subject, r.predicate) in wanted}
        rows = [pending.pop(r.id, r) for r in stored] + list(pending.values())
        return [r for r in rows if r.expired_at is None]

    def prejudge(self, facts: Sequence[MemoryRecord], now: datetime) -> None:
        """Ask the judge about ambiguous slots now, before the caller takes the write lock (answers are kept)."""
        if self.judge is None:
            return
        earlier: dict[str, MemoryRecord] = {}
        for fact in facts:  # in order, each seeing the ones before it, as the commit will
            fact = self.match(fact, now, earlier).fact
            earlier[fact.id] = fact

    def _judged(self, fact: MemoryRecord, key: tuple[str, str], existing: MemoryRecord) -> bool | None:
        assert self.judge is not None and fact.subject is not None and fact.predicate is not None
        pair = (fact.project, fact.subject, fact.predicate, key[0], key[1])
        if pair not in self._decisions:
            if not self.judging:
                return None
            decided = self.judge(fact, existing)
            if decided is None:
                return None
            self._decisions[pair] = decided
        return self._decisions[pair]

    def _rename(self, fact: MemoryRecord, key: tuple[str, str]) -> MemoryRecord:
        subject, predicate = key
        sentence = fact_sentence(subject, predicate, fact.object or "")
        vector = self.embedder.embed([sentence])[0]
        return fact.copy(subject=subject, predicate=predicate, content=sentence, vector=vector)


def slot_matcher(svc: MemoryService) -> SlotMatcher:
    """The service's store's semantic slot matcher, kept on the service so its phrase embeddings are reused."""
    matcher = svc.slot_matcher_cache
    if matcher is None or matcher.store is not svc.store:
        matcher = svc.slot_matcher_cache = SlotMatcher(svc.store, svc.embedder)
    return matcher
