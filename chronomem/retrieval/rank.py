"""Ranking a candidate pool: pure functions, no I/O, testable without a store.

1. **Abstain** when the query names something that appears nowhere in the searched
   slice — an identifier (mixed-case, hyphenated, dotted, with digits, an abbreviation), or plain
   capitalised words when nothing else the query names is there either
   (`never_mentioned`) — or when neither channel found anything close.
2. **Fuse** the channels' scores: a weighted sum of the dense cosine (min-max scaled
   over the pool), the BM25 score (scaled by the pool's best), the share of the
   query's distinctive names a memory contains, and the share of the query's terms it
   contains, each term weighted by how few candidates have it (weights in `RankConfig`,
   chosen on the dev data and shown in the ablation). Reciprocal rank fusion, the usual choice, keeps
   only each channel's order and throws away how far ahead the leader is; on both dev
   sets the score sum did better (see README "How recall ranks"). A fact the agent stated
   also scores by how well its slot (subject, predicate) matches the query, a memory
   that began in the day or month a dated question names gains `period_weight`, and one that
   holds the kind of answer the question asks for (someone for "who", a path for "which folder":
   retrieval/answer_type.py) gains `answer_type_weight`.
3. **Demote** memories that are about another project of the store (they name it, not ours, outside code:
   `uv run pytest` uses a tool that may share a project's name), and those that tell nothing the question
   does not (`tells_nothing`: only its words, no value — a heading such as "- Line length:").
   A chunk also gains from the chunks written next to it, alike in meaning (its conversational
   context: retrieval/context.py).
4. **Let the newer win**: among the leading candidates that are about the same thing
   as the best one (similar vectors, or naming every asked-for name the best one names), nearly
   as relevant to the query (`newer_score_share` of its score) and holding the kind of answer
   asked for if the best one holds it, the one valid latest comes first. A fact on another slot
   is another thing unless the question cannot tell the two slots apart (`alike_to_query`: one
   subject, one kind of value, the slot phrases as close to the question); a memory saying the
   best one's words around other values (`differs_only_in_values`) is the same thing wherever it
   ranks. Oldest first when the query asks for a history (then weak matches count too, if they
   tell what the best one tells of the thing asked), and no reordering
   for a question about an event ("when did we…"). Then the leader's value is followed to its later word: a newer note about the
   same thing that names the value (one the question does not name) beside another of its kind
   leads instead (`successor_of`) — an update is worded unlike the question
   ("Moved translations from calendar-backend into tagging-server"), so it matches it too weakly
   to win by score; what ties it to the old note is the value they share, not a change verb.
5. **Collapse** a chunk into the fact derived from it, and exact duplicates into one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Container, Iterable, Iterator, Set
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache

from chronomem.facts import EXTRACTED_SOURCES, about_other_project, identifiers, record_salience, same_subject
from chronomem.records import MemoryRecord, differs_only_in_values, same_value, value_kind
from chronomem.retrieval.answer_type import AnswerTypes, expected_answer_type
from chronomem.retrieval.context import context_bonus
from chronomem.retrieval.values import value_kinds
from chronomem.search.candidates import Candidate, cosine
from chronomem.search.english import coined_word, common_word
from chronomem.search.terms import STOP_WORDS, holds_name, iter_terms, mentioned, named_things, terms


@dataclass(frozen=True)
class RankConfig:
    """Tunable constants of the read path; defaults chosen on the dev split (see eval/)."""

    dense_weight: float = 0.3  # of the pool-scaled cosine
    lexical_weight: float = 0.7  # of the pool-scaled BM25 score
    entity_weight: float = 0.2  # of the share of the query's distinctive names a memory contains
    fact_boost: float = 1.1  # multiplies a fact's fused score: facts lead at equal evidence
    foreign_penalty: float = 0.5  # multiplies the score of a memory about another project
    group_size: int = 4  # leading candidates considered for "the newer wins"
    history_group_size: int = 8
    same_topic_cosine: float = 0.5  # vectors this close to the best candidate's are about the same thing
    # a newer memory takes the best one's place only if it scores at least this share of the best's: a sibling
    # statement (the same service's other fact, the next module's owner) is close in vector but weaker on the query
    newer_score_share: float = 0.7  # (not for a history question)
    # a history question takes weak matches, but only those that contain this share (by pool IDF) of the query's
    # terms the best one contains besides the names: "audit-svc hosts the audit module" tells nothing of its port
    history_told_share: float = 0.5
    dense_floor: float = 0.30  # below this best cosine, with no lexical match, nothing is relevant
    coverage_slack: float = 0.5  # a similar newer memory must cover the query's terms as well as the best
    entity_coverage_slack: float = 1.0  # ... or, naming the same thing, at most this share less
    distinctive_share: float = 0.2  # a name found in more of the pool than this does not single anything out
    salience_weight: float = 0.05  # of log1p(effective salience): reinforced memories lead, unused ones fade (never vanish)
    # multiplies the score of a note the encoding gate demoted (policy `demote`, consolidate/gate.py): the weight
    # fitted on dev for a note that only mentions a value (0.85 let one lead; that signal, a word list, was deleted
    # 2026-11-30), a note that says nothing the store lacks being as weak evidence as one that asserts nothing
    gate_penalty: float = 0.7
    # multiplies the score of a memory that tells nothing the question does not (`tells_nothing`: "- Line length:"
    # for "what line length limit applied?", a heading whose list follows in other notes): `gate_penalty`'s weight,
    # a memory that cannot hold the answer being no stronger evidence than one that asserts nothing
    told_nothing_penalty: float = 0.7
    stale_penalty: float = 0.5  # multiplies the score of a memory whose anchored files changed since (search.demote_stale)
    second_hop: bool = True  # look for the memory a name in the best match points to (retrieval/bridge.py)
    # Of how well a stated fact's slot (subject and predicate, not the value) matches the query's terms
    # (Dice overlap, `slot_match`): a question names the slot it asks the value of ("what port is
    # inventory-api on" is service_port:inventory-api, not module_service:inventory whose value is
    # inventory-api). As large as the lexical weight: with the agent's own facts, the slot asked about
    # should lead. Only facts the agent stated (or imported): an extracted fact's slot is a guess.
    slot_weight: float = 1.0
    # Of the meaning of a stated fact's slot: the cosine of its slot phrase ("<subject> <predicate words>") to the
    # query, from `slot_sense_floor` (0) to `slot_sense_floor` + `slot_sense_span` (1). Where the words differ
    # ("which team is responsible for catalog" asks `module_owner:catalog`, and shares only `catalog` with
    # `module_path:catalog` too) the Dice overlap cannot tell a thing's slots apart; the meaning can. The floor
    # and span are of the model (all-MiniLM-L6-v2): a question's own slot phrase (without the project's name) has
    # a median cosine of 0.68 to it, the closest other slot of the project 0.42 (DevMem dev).
    slot_sense_weight: float = 0.5
    slot_sense_floor: float = 0.45
    slot_sense_span: float = 0.3
    # Two facts of one subject and one value kind in different slots are one slot to the question when its cosine
    # to their slot phrases differs by less than this: half the model's median gap between a question's own slot
    # and the project's closest other one (0.68 - 0.42, above) (`alike_to_query`).
    slot_same_sense: float = 0.13
    own_name_off: bool = True  # a one-project search drops that project's name from the query (recall.search_text)
    # of the IDF-weighted share of the query's terms a memory contains (IDF over the pool: `term_weights`); BM25
    # sums its matches, so two common words can outscore the one rare word that names what was asked
    coverage_weight: float = 0.2
    # Conversational context (retrieval/context.py): a chunk gains this share of the best score among the chunks
    # written next to it whose vectors are at least `context_cosine` alike; the neighbours of the first
    # `context_top` chunks that the pool missed join at `context_share` of their chunk's score.
    context_weight: float = 0.3
    context_cosine: float = 0.4
    context_share: float = 0.5
    context_top: int = 3
    # A dated question names a day or a month ("what did we ship on 1 May 2022", "in March"): a memory that
    # began within it (valid time) gains this much — it is what happened or was said then, where the rest of
    # the slice is only what still held.
    period_weight: float = 0.3
    # A question's expected answer type (answer_type.py): a "who" question asks for someone, so a memory that
    # names a person or a team besides what the question names ("Owner of webhooks: Growth.") gains this much
    # over its siblings about the same thing ("webhooks code: `libs/webhooks/`"); likewise a path for "which
    # folder", an address for "what URL", a number for "which port".
    answer_type_weight: float = 0.2
    # "the newer wins" follows a value's successors: a later memory about the same thing that names the leader's
    # value (one the question does not name) and gives another of the same kind is the later word on that value
    # ("Moved translations from calendar-backend into tagging-server" after "translations is bundled into the
    # calendar-backend service"), however weakly it matches the query's words
    succession: bool = True
    # recall leaves out what scores under this share of the best hit: it shares next to nothing of what made the
    # best relevant, and only pads the answer (in DevMem's rankings the 8th item scores 0.36 of the best at the
    # median and under 0.1 in 2 of 100 queries)
    padding_share: float = 0.1
    abstain: bool = True  # off, ranking never abstains (the ablation's rankers: what each signal ranks)


DEFAULT_CONFIG = RankConfig()
#: `Ranking.reason` when the searched slice holds nothing at all (so no query could find anything there).
NOTHING_IN_SLICE = "nothing in the slice"
#: How `Ranking.reason` begins when the names gate abstained: names of the query no memory of the slice mentions.
NEVER_MENTIONED = "never mentioned: "


@dataclass
class QueryInfo:
    """What ranking needs to know about the query, beyond its text."""

    text: str
    intent: str = "current"  # "current" | "past" | "event" (temporal.read_time) | "history" (the history tool)
    project_names: tuple[str, ...] = ()  # names of the projects being searched
    other_project_names: tuple[str, ...] = ()  # names of the store's other projects
    missing_entities: tuple[str, ...] = ()  # names in the query found nowhere in the slice
    period: tuple[datetime, datetime] | None = None  # the day or month a dated question names (first, last moment)
    now: datetime | None = None  # when set, salience (reinforcement and decay) adds to the score


@dataclass
class Ranked:
    candidate: Candidate
    score: float
    channels: list[str] = field(default_factory=list)
    foreign: bool = False
    answer_typed: bool = False  # holds the kind of answer the question asks for (answer_type.py)
    note: str | None = None  # a fact's note, verbatim, when its chunk was folded into it (`_collapse`)


@dataclass
class Ranking:
    items: list[Ranked]
    abstained: bool
    reason: str = ""


def query_entities(query: QueryInfo) -> set[str]:
    return set(query_names(query))


def query_names(query: QueryInfo) -> dict[str, bool]:
    """The query's names (not the store's project names), each with whether it is an identifier."""
    return named_things(query.text, ignore=set(query.project_names) | set(query.other_project_names))


#: Markup in a question (`<BOD>`, `</s>`): tags name nothing the store could hold.
_MARKUP = re.compile(r"</?[A-Za-z][^<>]{0,40}>")
#: A lower-case word (no digit, no separator) that may be a rare name: `dashmap`, `pnpm`.
_PLAIN_WORD = re.compile(r"(?<![\w./:-])[a-z]{4,}(?![\w/:-])")
#: An abbreviation: a short all-capital word (`TV`, `GF`, `SLA`) — many stand for common words, so its absence
#: says nothing.
_ABBREVIATION = re.compile(r"[A-Z]{2,5}")


def gate_names(query: QueryInfo) -> dict[str, bool | None]:
    """The names of the question for the names gate, each with what its absence from the slice says:
    True, an identifier (`named_things`): the store holds nothing on the question; False, a capitalised word
    English does not commonly use (`english.common_word`: `Vivaldi`) or a lower-case one it does not use at all
    (`english.coined_word`: `dashmap`): nothing, if no other name is stored either;
    None, a common word, however written (`Melanie`, `TV`, `Golden`): nothing by itself — a memory may say it
    otherwise. Abbreviations (`GF`, `SLA`) and markup (`<BOD>`) name nothing."""
    text = _MARKUP.sub(" ", query.text)
    ignore = {n.lower() for n in (*query.project_names, *query.other_project_names)}
    abbreviations = {a.lower() for a in _ABBREVIATION.findall(text) if re.search(rf"\b{a}\b", text)}
    names: dict[str, bool | None] = {
        name: None if name.isalpha() and common_word(name) else identifier
        for name, identifier in named_things(text, ignore=ignore).items()
        if name not in abbreviations
    }
    for word in _PLAIN_WORD.findall(text):
        if word not in STOP_WORDS and word not in ignore and coined_word(word):
            names.setdefault(word, False)
    return names


def missing_from(names: dict[str, bool | None], pool: Iterable[Candidate]) -> list[str]:
    """The names (name → is an identifier) that no candidate's text mentions (`terms.mentioned`), sorted."""
    blob = "\n".join(c.record.content.lower() for c in pool)
    return [n for n in sorted(names) if not mentioned(n, blob, names[n])]


def never_mentioned(names: dict[str, bool | None], absent: Iterable[str]) -> list[str]:
    """The names whose absence from the slice means the store holds nothing on the query (`gate_names`).

    Every absent identifier counts; an absent rare word only when every other name of the query is absent
    too (a memory may say in other words what "Vivaldi" names, so long as the rest of what the query names is
    stored); a common word never. `names` not in `absent` are taken as present.
    """
    gone = [n for n in absent if n in names]
    if len(gone) == len(names):
        return [n for n in gone if names[n] is not None]
    return [n for n in gone if names[n]]


def rank(query: QueryInfo, pool: list[Candidate], config: RankConfig = DEFAULT_CONFIG) -> Ranking:
    if not pool:
        return Ranking([], True, NOTHING_IN_SLICE)
    if config.abstain:
        if query.missing_entities:
            return Ranking([], True, NEVER_MENTIONED + ", ".join(query.missing_entities))
        best_dense = max((c.dense for c in pool if c.dense is not None), default=0.0)
        lexical_hits = [c for c in pool if c.lexical_rank is not None]
        if best_dense < config.dense_floor and not lexical_hits:
            return Ranking([], True, "no close match")

    wanted = distinctive(query_entities(query), pool, config)
    asked = query_terms(query)
    weights = term_weights(asked, pool)
    projects = project_terms(query)
    known = asked | projects
    items = _fuse(pool, wanted, config, query.now, weights, slot_query_terms(query), projects, query.period)
    kind = expected_answer_type(query.text) if config.answer_type_weight else None
    if kind:
        answers = AnswerTypes((c.record.content for c in pool), known)
        for item in items:
            if answers.holds(item.candidate.record.content, kind):
                item.score += config.answer_type_weight
                item.answer_typed = True
                item.channels.append("answer type")
    _demote_foreign(items, query, config)
    for item in items:
        if item.candidate.record.gate == "demoted":  # the encoding gate found it restated or said little
            item.score *= config.gate_penalty
        if config.told_nothing_penalty != 1.0 and tells_nothing(item.candidate.record.content, known):
            item.score *= config.told_nothing_penalty
    context_bonus(items, config.context_weight)
    items.sort(key=lambda r: (-r.score, r.candidate.record.id))
    items = _newer_wins(items, wanted, asked, query.intent, config, weights)
    if config.succession and query.intent in ("current", "past"):
        items = _follow_successors(items, query, config, weights)
    return Ranking(_collapse(items), False)


def tells_nothing(text: str, known: Set[str]) -> bool:
    """Whether every word of `text` is among `known` (the question's terms, the project names') and it gives no
    value (values.py): it says nothing the question does not, so it cannot be the answer. A note naming only the
    asked-for path ("webhooks is under `crates/webhooks/src/`" for "anything about crates/webhooks/src/?") gives
    a value and is kept."""
    words = iter_terms(text, lazy=True)  # most texts hold a word the question does not: found at once, the rest unread
    first = next(words, None)
    return first is not None and first in known and all(word in known for word in words) and not value_kinds(text)


def distinctive(names: set[str], pool: list[Candidate], config: RankConfig) -> set[str]:
    """The names that single out a few candidates; one most of the pool mentions (a speaker, the
    project itself) says nothing about which memory is meant."""
    limit = most_distinctive(len(pool), config)
    texts = [c.record.content.lower() for c in pool]
    return {n for n in names if sum(holds_name(t, n) for t in texts) <= limit}


def most_distinctive(pool_size: int, config: RankConfig) -> int:
    """The most candidates a name or value may appear in and still single some out (`distinctive_share`)."""
    return max(3, int(pool_size * config.distinctive_share))


def project_terms(query: QueryInfo) -> frozenset[str]:
    """The words of the store's project names (a fact's subject is often one; they say nothing about its slot)."""
    return frozenset(t for n in (*query.project_names, *query.other_project_names) for t in terms(n))


def slot_query_terms(query: QueryInfo) -> set[str]:
    """The query's terms without the words of the store's project names."""
    names = project_terms(query)
    return {t for t in terms(query.text) if t not in names}


def slot_text(record: MemoryRecord) -> str:
    """The words of a fact's slot: its sentence without the value (`proj service port inventory-api` for
    `proj service port:inventory-api: 3060`, keeping the predicate as written), else subject and predicate."""
    content, value = record.content.rstrip(), (record.object or "").strip()
    if value and content.endswith(value):
        key = content[: -len(value)].rstrip(" :")
    else:
        key = f"{record.subject or ''} {(record.predicate or '').replace('_', ' ')}"
    return key.replace(":", " ")


def slot_match(asked: set[str], record: MemoryRecord, ignore: frozenset[str] = frozenset()) -> float:
    """Dice overlap of the query's terms and the words of a fact's slot (without `ignore`, the project
    names): 1 when the query names the slot and nothing else, 0 for a chunk. Both sides count, so a slot
    that shares one generic word with the query (`deploy` of `GitHub deploy token`) scores low."""
    if not asked or record.kind != "fact":
        return 0.0
    key = set(terms(slot_text(record))) - ignore
    return 2 * len(asked & key - _parts_not_asked(asked, record.subject or "")) / (len(asked) + len(key)) if key else 0.0


_JOINED_NAME = re.compile(r"\w[-_./:]+\w")


def _parts_not_asked(asked: set[str], subject: str) -> set[str]:
    """The parts of the joined names of a fact's subject (`refund`, `serv` of `refunds-server`) whose whole name
    the query does not ask: a part of a name is not the name, so "refunds's host service" does not name the
    subject `refunds-server` (`-` and `_` alike: `refunds_server` is `refunds-server`)."""
    wholes = {a.replace("_", "-") for a in asked}
    out: set[str] = set()
    for token in subject.split():
        if _JOINED_NAME.search(token):
            whole, *parts = terms(token) or [""]
            if whole.replace("_", "-") not in wholes:
                out.update(parts)
    return out


@lru_cache(maxsize=4096)  # ~40 queries' candidate pools; a held entry (its text and term set) is ~1 kB
def term_set(text: str) -> frozenset[str]:
    """The set of `terms` of a text (cached: the same memories come back query after query)."""
    return frozenset(terms(text))


def term_weights(asked: set[str], pool: list[Candidate]) -> dict[str, float]:
    """Each query term found in the pool, weighted by its IDF over the pool, log(1 + n / df).

    A term most candidates contain (the kind of thing asked about: "module", "port") says little
    about which one is meant; the rarer one (which module) says more. Terms no candidate contains
    weigh nothing: they cannot tell candidates apart.
    """
    if not asked or not pool:
        return {}
    sets = [contained(c) for c in pool]
    out = {}
    for t in asked:
        df = sum(1 for found in sets if t in found)
        if df:
            out[t] = math.log(1.0 + len(sets) / df)
    return out


def contained(candidate: Candidate) -> frozenset[str]:
    """The terms of a candidate's text to test the query's terms against: those the store found in it (the
    read index's postings: `Candidate.terms`), else all of them (`term_set`). Only for the query's terms."""
    return candidate.terms if candidate.terms is not None else term_set(candidate.record.content)


def weighted_coverage(weights: dict[str, float], found: Collection[str]) -> float:
    """Share of the weight of the query's terms (`term_weights`) among the terms `found` in a text; 0.0 when
    nothing weighs."""
    total = sum(weights.values())
    if not total:
        return 0.0
    return sum(w for t, w in weights.items() if t in found) / total


def _fuse(
    pool: list[Candidate],
    wanted: set[str],
    config: RankConfig,
    now: datetime | None = None,
    weights: dict[str, float] | None = None,
    asked: set[str] = frozenset(),
    ignore: frozenset[str] = frozenset(),
    period: tuple[datetime, datetime] | None = None,
) -> list[Ranked]:
    dense = [c.dense for c in pool if c.dense is not None]
    low, high = (min(dense), max(dense)) if dense else (0.0, 1.0)
    spread = high - low if high > low else 1.0
    best_lexical = max((c.lexical for c in pool if c.lexical is not None and c.lexical > 0), default=1.0)
    out = []
    for c in pool:
        channels = []
        score = 0.0
        if c.dense is not None:
            channels.append("dense")
            score += config.dense_weight * (c.dense - low) / spread
        if c.lexical is not None:
            channels.append("lexical")
            score += config.lexical_weight * max(c.lexical, 0.0) / best_lexical
        if wanted:
            text = c.record.content.lower()
            named = sum(1 for e in wanted if holds_name(text, e))
            if named:
                channels.append("entity")
                score += config.entity_weight * named / len(wanted)
        if weights and config.coverage_weight:
            score += config.coverage_weight * weighted_coverage(weights, contained(c))
        if now is not None and config.salience_weight:
            score += config.salience_weight * math.log1p(record_salience(c.record, now))
        if period is not None and config.period_weight and period[0] <= c.record.valid_at <= period[1]:
            channels.append("dated")
            score += config.period_weight
        if c.record.kind == "fact":
            if config.slot_weight and c.record.source not in EXTRACTED_SOURCES:
                match = slot_match(asked, c.record, ignore)
                if match:
                    channels.append("slot")
                    score += config.slot_weight * match
                if config.slot_sense_weight and c.slot_cosine is not None:
                    sense = min(max((c.slot_cosine - config.slot_sense_floor) / config.slot_sense_span, 0.0), 1.0)
                    if sense:
                        channels.append("slot meaning")
                        score += config.slot_sense_weight * sense
            score *= config.fact_boost
        out.append(Ranked(c, score, channels))
    return out


def _demote_foreign(items: list[Ranked], query: QueryInfo, config: RankConfig) -> None:
    if not query.other_project_names:
        return
    for item in items:
        if about_other_project(item.candidate.record.content, query.project_names, query.other_project_names):
            item.foreign = True
            item.score *= config.foreign_penalty


def _newer_wins(
    items: list[Ranked], wanted: set[str], asked: set[str], intent: str, config: RankConfig,
    weights: dict[str, float] | None = None,
) -> list[Ranked]:
    if len(items) < 2 or intent == "event":
        return items
    top = items[0].candidate
    top_vector = top.record.vector
    top_text = top.record.content.lower()
    top_names = {e for e in wanted if holds_name(top_text, e)}
    told = _told_of(top, wanted, weights or {}) if intent == "history" else {}
    size = config.history_group_size if intent == "history" else config.group_size
    top_cover = coverage(asked, top)
    # a history lists every value, the weakly matching old ones too
    weakest = 0.0 if intent == "history" else config.newer_score_share * items[0].score
    fact_of = _facts(items)
    slot_of = {memory_id: (c.record.subject, c.record.predicate) for memory_id, c in fact_of.items()}
    top_slot = slot_of.get(top.record.id)
    group = [items[0]]
    # the same words around other values ("Upgrade certifi to 2023.7.22") are one chain however far down they rank
    said = [top.record.content, *(i.candidate.record.content for i in items if i.candidate.record.id in top.record.source_ids)]

    def chained(text: str) -> bool:  # a fact's own note has the words a model wrote the fact from
        members = (member.candidate.record.content for member in group[1:])
        return any(differs_only_in_values(own, text) for own in (*said, *members))

    def ruled_out(item: Ranked) -> bool:
        # the best holds the kind of answer asked for (a port's number); a restatement would too
        return item.foreign or (items[0].answer_typed and not item.answer_typed)

    def candidates() -> Iterator[tuple[Ranked, bool]]:
        for item in items[1:size]:
            if not ruled_out(item):
                yield item, chained(item.candidate.record.content)
        for item in items[size:]:  # later, once the leaders joined: a chain links from any of its members
            if not ruled_out(item) and chained(item.candidate.record.content):
                yield item, True

    for item, in_chain in candidates():
        c = item.candidate
        if item.score < weakest and not in_chain:
            continue
        slot = slot_of.get(c.record.id)
        renamed = top_slot is not None and slot is not None and slot != top_slot
        if renamed and not alike_to_query(fact_of[top.record.id], fact_of[c.record.id], config):
            continue  # the consolidator told these apart (different slots), and so does the question
        content = c.record.content.lower()
        names = {e for e in wanted if holds_name(content, e)}
        if top_names - names:
            continue  # the best match names what was asked and this one does not, or only part of it
        if renamed or in_chain:
            group.append(item)  # one attribute named another way, or the best one's words around another value
            continue
        if told and weighted_coverage(told, contained(c)) < config.history_told_share:
            continue  # a history takes weak matches: only those telling what the best tells of the thing asked
        cover = coverage(asked, c)
        if top_names and names & top_names and cover >= top_cover - config.entity_coverage_slack:
            group.append(item)  # the same named thing, and still about what was asked of it
            continue
        similar = (
            top_vector is not None
            and c.record.vector is not None
            and cosine(top_vector, c.record.vector) >= config.same_topic_cosine
        )
        if similar and cover >= top_cover - config.coverage_slack:
            group.append(item)
    if len(group) < 2:
        return items
    ordered = sorted(group, key=lambda r: r.candidate.record.valid_at, reverse=intent != "history")
    members = {id(r) for r in group}
    return ordered + [r for r in items if id(r) not in members]


def _heaviest_term(candidate: Candidate, weights: dict[str, float]) -> str | None:
    """The query term of most weight (pool IDF, `term_weights`) that a candidate contains: what it is about."""
    found = contained(candidate)
    held = [t for t in weights if t in found]
    return max(held, key=lambda t: (weights[t], t)) if held else None


def alike_to_query(best: Candidate, other: Candidate, config: RankConfig) -> bool:
    """Whether two facts the consolidator filed under different slots are one slot as far as the question can
    tell: both stated, about one subject (`same_subject`: `audit-svc` and `the audit-svc service`), holding values
    of one kind (`value_kind`, not free text: two integers, two paths), with predicates naming the same
    identifiers (`service_port:api` and `service_port:web` are two things), and the question's meaning as close to
    `other`'s slot as to `best`'s (`slot_same_sense`). A model names one attribute many ways ("listens on",
    "http port") and their phrases can be less alike than two attributes' ("owned by", "reviewed by"); the
    question asked picks between the latter and not between the former."""
    a, b = best.record, other.record
    if a.kind != "fact" or b.kind != "fact" or not (a.subject and b.subject and a.object and b.object):
        return False
    if best.slot_cosine is None or other.slot_cosine is None:
        return False
    kind = value_kind(a.object)
    if kind == "text" or value_kind(b.object) != kind or not same_subject(a.subject, b.subject, a.project):
        return False
    if identifiers(a.predicate or "") != identifiers(b.predicate or ""):
        return False  # `dependency_version:go-redis` and `go_version`: the thing is named in the predicate
    return other.slot_cosine >= best.slot_cosine - config.slot_same_sense


def successor_of(
    lead: MemoryRecord, later: MemoryRecord, known: str, subject: str | None = None, common: Container[str] = ()
) -> bool:
    """Whether `later` (valid after `lead`) is the later word on a value `lead` gives about `subject`.

    It names one of `lead`'s values that `known` (the question, the project names: lower case) does not, and
    gives another value of that kind (an update: "from A to B", "A → B", "B, not A"). `subject`, when given,
    is a term `later` must contain outside the values it shares with `lead`: the thing "dispatch-jobs" names is
    not "dispatch", but "the reporting code is now in `crates/` (was src/reporting/)" still speaks of reporting.
    Values in `common` (ones much of the pool gives: a year, a speaker's name) single out nothing and are not shared.
    A fact's object is its value whatever its shape (`pnpm build` in "we moved from `pnpm build` to `tsc -b`"),
    compared as a value (`same_value`: the object `:8445` is the 8445 of "rebound from port 8445 to 5720").
    """
    if later.valid_at <= lead.valid_at:
        return False
    own, theirs = value_kinds(lead.content), value_kinds(later.content)
    if lead.kind == "fact" and lead.object:  # compared as values: `:8445` is the 8445 of "from port 8445 to 5720"
        said = {kind: frozenset(v for v in values if same_value(v, lead.object)) for kind, values in theirs.items()}
        own = {**own, **{kind: own.get(kind, frozenset()) | found for kind, found in said.items() if found}}
    shared: set[str] = set()
    for kind, values in own.items():
        both = {v for v in values & theirs.get(kind, frozenset()) if v not in known and v not in common}
        if both and theirs[kind] - values:
            shared |= both
    if not shared:
        return False
    if subject is None:
        return True
    rest = later.content.lower()
    for value in shared:
        rest = rest.replace(value, " ")
    return subject in term_set(rest)


def _successors(
    lead: Ranked, items: list[Ranked], known: str, common: Container[str], config: RankConfig,
    weights: dict[str, float], skip: set[int],
) -> list[Ranked]:
    """The items (not in `skip`) that are a later word on `lead`'s value (`successor_of`): about the same thing
    (vectors at least `same_topic_cosine` alike, holding `lead`'s heaviest query term by pool IDF), not
    foreign."""
    vector = lead.candidate.record.vector
    if vector is None:
        return []
    subject = _heaviest_term(lead.candidate, weights)
    return [  # the cheap tests first: most of a pool is older than the leader or shares none of its values
        item for item in items
        if id(item) not in skip and not item.foreign
        and item.candidate.record.vector is not None
        and item.candidate.record.valid_at > lead.candidate.record.valid_at
        and cosine(vector, item.candidate.record.vector) >= config.same_topic_cosine
        and successor_of(lead.candidate.record, item.candidate.record, known, subject, common)
    ]


class _CommonValues:
    """The values more of the pool gives than `limit` (`distinctive_share`: the date stamp's year, a speaker): they
    single out nothing. Counted for a value only when asked (`in`): reading every candidate's values for the few a
    later word shares was most of a recall's ranking time."""

    def __init__(self, texts: list[str], limit: int) -> None:
        # each word of a value is in its memory's lower-cased text, so a text without one cannot give it; the test
        # is made on ASCII texts only (elsewhere a letter lower-cased alone can differ from it lower-cased in a word)
        self._texts = [(text, text.lower() if text.isascii() else None) for text in texts]
        self._limit = limit
        self._known: dict[str, bool] = {}

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, str):
            return False
        if value not in self._known:
            words, count = value.split(), 0
            for text, lowered in self._texts:
                if lowered is None or all(word in lowered for word in words):
                    count += sum(value in found for found in value_kinds(text).values())
                    if count > self._limit:
                        break
            self._known[value] = count > self._limit
        return self._known[value]


def _follow_successors(items: list[Ranked], query: QueryInfo, config: RankConfig, weights: dict[str, float]) -> list[Ranked]:
    """Put first the last of the chain of successors (`_successors`) that starts at the leader."""
    known = " ".join((query.text, *query.project_names, *query.other_project_names)).lower()  # not its values
    lead = items[0]
    common = _CommonValues([item.candidate.record.content for item in items], most_distinctive(len(items), config))
    seen = {id(lead)}
    while after := _successors(lead, items, known, common, config, weights, seen):
        lead = max(after, key=lambda r: r.candidate.record.valid_at)
        seen.add(id(lead))
    if lead is items[0]:
        return items
    lead.channels.append("later word")  # why it leads though it scored lower: recall shows the channels
    return [lead] + [r for r in items if r is not lead]


def _told_of(top: Candidate, wanted: set[str], weights: dict[str, float]) -> dict[str, float]:
    """The query's terms the best candidate contains other than the asked-for names, with their pool IDF
    weights (`term_weights`): what it tells of the thing asked ("port" of "Port for audit-svc is 6010")."""
    names = {t for name in wanted for t in terms(name)}
    found = contained(top)
    return {t: w for t, w in weights.items() if t in found and t not in names}


def _facts(items: list[Ranked]) -> dict[str, Candidate]:
    """Each fact of `items` by its id, and by the id of each chunk it was derived from: the fact (and its
    (subject, predicate) slot) a chunk was made precise into."""
    out: dict[str, Candidate] = {}
    for item in items:
        record = item.candidate.record
        if record.kind == "fact" and record.subject and record.predicate:
            out[record.id] = item.candidate
            for source in record.source_ids:
                out.setdefault(source, item.candidate)
    return out


def query_terms(query: QueryInfo) -> set[str]:
    ignore = set(query.project_names) | set(query.other_project_names)
    return {t for t in terms(query.text) if t not in ignore}


def coverage(asked: set[str], candidate: Candidate) -> float:
    """Share of the query's terms that the candidate's text contains."""
    if not asked:
        return 1.0
    return len(asked & contained(candidate)) / len(asked)


def _collapse(items: list[Ranked]) -> list[Ranked]:
    """Fold each chunk into the facts derived from it, and repeats of the same text into one.

    The facts take the better of their own place and their chunk's: a fact is the chunk's
    statement made precise, so it leads wherever the evidence put either of them.
    """
    facts_of: dict[str, list[Ranked]] = {}
    for item in items:
        record = item.candidate.record
        if record.kind == "fact":
            for source in record.source_ids:
                facts_of.setdefault(source, []).append(item)
    out: list[Ranked] = []
    placed: set[int] = set()
    seen_text: set[str] = set()

    def place(item: Ranked) -> None:
        key = " ".join(item.candidate.record.content.lower().split())
        if id(item) in placed or key in seen_text:
            return
        placed.add(id(item))
        seen_text.add(key)
        out.append(item)

    for item in items:
        record = item.candidate.record
        derived = facts_of.get(record.id) or (facts_of.get(record.revision_of) if record.revision_of else None)
        if record.kind == "chunk" and derived:
            for fact in derived:
                if id(fact) not in placed:  # it stands where its chunk's evidence put it
                    fact.score = max(fact.score, item.score)
                    fact.channels = sorted(set(fact.channels) | set(item.channels))
                fact.note = fact.note or record.content
                place(fact)
            seen_text.add(" ".join(record.content.lower().split()))
            continue
        place(item)
    return out
