"""DevMem (dev split): coding-agent memory with changing facts, replayed through the real tools.

Protocol (../shared/data/devmem/README.md): one store for all six projects; writes
replayed in time order with `remember(content, valid_from=t, project)`; each query
answered once every write with `t <= t_query` is in (queries interleaved by
`t_query`); `as_of` queries go to `as_of(query, at=as_of)`, history queries to `history(query=…)` (the intent
comes from the tool an agent calls), the rest to `recall(limit=10)`, all scoped to the query's project. Results are mapped back to
note ids (a fact or a revision row counts as the note it came from) and scored with
every metric the README lists. The ablation rankers (eval/ablation.py) answer the
same queries over the same slices.

Agent mode (`--agent-facts`) plays an agent handing `remember` perfect facts:
subject = project, predicate = slot, object = the note's value in slots.jsonl (notes
whose value is null, such as bug reports and fixes, carry no fact). A retraction
note first `forget`s (retract=True) the note it retracts — the previous value note of
its slot — then is remembered itself, with the corrected value as its fact if it has one.

`--agent-style noisy` plays a realistic model instead (eval/agent_style.py): facts skipped on 30% of
notes, subjects and predicates named among aliases and paraphrases, 20% of objects decorated, all
deterministic from `--seed`. Its results go to `<split>-agent-noisy.{json,md}`.

    python -m eval.devmem --data ../shared/data/devmem [--agent-facts [--agent-style noisy --seed 0]]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from datetime import datetime
from pathlib import Path
from typing import Any, get_args

from chronomem.records import normalize_object, normalize_predicate, normalize_subject
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.timeparse import parse_time
from chronomem.tools import as_of, forget, history, recall, remember
from chronomem.tools.results import RecallResult, UpdateBasis
from eval.agent_style import NoisyAgent
from eval.ablation import RANKERS, PipelineRanker, QueryContext, Ranker, load_rankers, run_rankers, slice_filter
from eval.common import (
    RESULTS_DIR,
    Ranked,
    Upkeep,
    make_embedder,
    median_ms,
    p95_ms,
    read_jsonl,
    resolve_data_dir,
    temp_service,
)
from eval.metrics import (
    abstention_scores,
    all_in_top_k,
    dedupe,
    hit_at_k,
    kendall_tau,
    mean,
    recall_at_k,
    reciprocal_rank,
    stale_leak_rate,
    top1_in,
)
from eval.report import env_lines, environment, fmt, md_table, write_results

TYPES = ("current", "as_of", "history", "identifier", "paraphrase", "multi_hop", "abstain", "isolation")
ANSWERABLE = tuple(t for t in TYPES if t != "abstain")
LIMIT = 10
SYSTEM = "chronomem recall/as_of"
#: Cosine floors for the gate sweep: "abstain when the best dense match is below this".
GATE_THRESHOLDS = (0.45, 0.50, 0.55, 0.60, 0.65, 0.70)
#: The README's headline columns: (label, metric key).
HEADLINE = (
    ("current hit@1", "current_hit@1"),
    ("stale-leak (changed)", "stale_leak_changed"),
    ("as_of acc", "as_of_accuracy"),
    ("paraphrase", "paraphrase_hit@1"),
    ("multi-hop both@5", "multi_hop_both@5"),
    ("abstain R", "abstain_recall"),
    ("abstain P", "abstain_precision"),
    ("iso error", "isolation_error"),
    ("macro hit@1", "macro_hit@1"),
)
#: The README's naive baselines (time-blind, project-scoped, text mode), in HEADLINE's columns.
REFERENCE = {
    name: dict(zip((key for _, key in HEADLINE), row, strict=True))
    for name, row in {
        "BM25": (0.42, 0.45, 0.21, 0.29, 0.17, 0.0, None, 0.37, 0.46),
        "dense MiniLM": (0.35, 0.27, 0.21, 0.21, 0.07, 0.0, None, 0.03, 0.37),
        "dense, abstain below cos 0.60": (0.35, 0.27, 0.21, 0.21, 0.07, 0.50, 0.22, 0.03, 0.37),
    }.items()
}


@dataclass(frozen=True)
class Write:
    id: str
    project: str
    t: str
    content: str
    slot: str | None
    kind: str


@dataclass(frozen=True)
class Query:
    qid: str
    project: str
    type: str
    query: str
    t_query: str
    as_of: str | None
    gold_ids: tuple[str, ...]
    stale_ids: tuple[str, ...]
    gold_order: tuple[str, ...]
    trap_ids: tuple[str, ...]
    slot: str | None
    subtype: str | None

    @classmethod
    def of(cls, row: dict[str, Any]) -> Query:
        return cls(
            qid=row["qid"],
            project=row["project"],
            type=row["type"],
            query=row["query"],
            t_query=row["t_query"],
            as_of=row.get("as_of"),
            gold_ids=tuple(row.get("gold_ids") or ()),
            stale_ids=tuple(row.get("stale_ids") or ()),
            gold_order=tuple(row.get("gold_order") or ()),
            trap_ids=tuple(row.get("trap_ids") or ()),
            slot=row.get("slot"),
            subtype=row.get("subtype"),
        )


@dataclass(frozen=True)
class AgentStep:
    """What a perfect agent does with one note: the fact it states, and the note it retracts."""

    value: str | None
    retracts: str | None = None


def agent_steps(slots: Sequence[dict[str, Any]]) -> dict[str, AgentStep]:
    """Per note id, from each slot's chain of (note, role, value)."""
    steps: dict[str, AgentStep] = {}
    for chain in slots:
        standing: str | None = None  # the latest note whose value still stands
        for note, role, value in zip(chain["note_ids"], chain["roles"], chain["values"], strict=True):
            retracts = standing if role.startswith("retract") else None
            steps[note] = AgentStep(value, retracts)
            standing = note if value is not None else (None if retracts else standing)
    return steps


def timeline(writes: Sequence[Write], queries: Sequence[Query]) -> Iterator[Write | Query]:
    """Writes and queries in time order; a write at the same instant as a query comes first."""
    events: list[tuple[datetime, int, int, Write | Query]] = [
        (_time(w.t), 0, i, w) for i, w in enumerate(writes)
    ] + [(_time(q.t_query), 1, i, q) for i, q in enumerate(queries)]
    for _, _, _, event in sorted(events, key=lambda e: e[:3]):
        yield event


def _time(text: str) -> datetime:
    return parse_time(text, datetime.now().astimezone(), field="t")


class NoteIds:
    """Maps memory ids (chunks, facts, and the revision rows that restate them) to DevMem note ids."""

    def __init__(self, svc: MemoryService) -> None:
        self._svc = svc
        self._note: dict[str, str] = {}
        self.unmapped = 0

    def bind(self, memory_id: str, note_id: str) -> None:
        self._note.setdefault(memory_id, note_id)

    def of(self, memory_id: str, revision_of: str | None, source_ids: Sequence[str], count: bool = True) -> str | None:
        """The note a result row came from; one that maps to none is counted in `unmapped` (unless not `count`)."""
        note = self._note.get(memory_id)
        if note is None and revision_of:
            note = self.resolve(revision_of, count)
        if note is None:
            note = next((self._note[s] for s in source_ids if s in self._note), None)
        if note is None:
            self.unmapped += 1 if count else 0
        else:
            self._note[memory_id] = note
        return note

    def resolve(self, memory_id: str, count: bool = True) -> str | None:
        """The note a memory came from, looked up in the store when it is not bound: a fact the consolidator
        made (rules, a restatement) is bound through the note it was read from. `count`: as in `of`."""
        if memory_id in self._note:
            return self._note[memory_id]
        record = self._svc.store.get(memory_id)
        return None if record is None else self.of(record.id, record.revision_of, record.source_ids, count)

    def ranking(self, rows: Sequence[Any]) -> list[str]:
        """Note ids for result items or records, best first, each note once."""
        notes = (self.of(r.id, r.revision_of, r.source_ids) for r in rows)
        return dedupe(n for n in notes if n is not None)


#: The probable updates (by `basis`) an agent of `--confirm-updates` confirms: every one, or only those the reply
#: calls seldom wrong (tools/results.UpdateBasis).
CONFIRMED_BASES: dict[str, frozenset[str]] = {
    "all": frozenset(get_args(UpdateBasis)),
    "strong": frozenset({"old value named", "same slot by meaning"}),
}


class Replay:
    """Drives one store through the timeline in text or agent mode, answering queries as they come."""

    def __init__(
        self,
        svc: MemoryService,
        agent: bool,
        steps: dict[str, AgentStep],
        rankers: list[Ranker | PipelineRanker],
        upkeep: Upkeep,
        noisy: NoisyAgent | None = None,
        confirm: Collection[str] = frozenset(),
    ) -> None:
        self.svc = svc
        self.agent = agent
        self.noisy = noisy
        self.confirm = confirm
        self.slot_of: dict[str, str | None] = {}  # note id -> its slot (ground truth, to score probable updates)
        self.steps = steps
        self.rankers = rankers
        self.upkeep = upkeep
        self.notes = NoteIds(svc)
        self.memories: dict[str, list[str]] = {}  # note id -> [chunk id, fact ids...]
        self.actions: Counter[str] = Counter()
        self.write_seconds: list[float] = []
        self.query_seconds: list[float] = []
        self.answers: dict[str, dict[str, Ranked]] = {SYSTEM: {}, **{r.name: {} for r in rankers}}
        self.best_dense: dict[str, float | None] = {}

    def write(self, w: Write) -> None:
        self.slot_of[w.id] = w.slot
        start = time.perf_counter()
        step = self.steps.get(w.id) if self.agent else None
        if step is not None and step.retracts is not None:
            self._retract(step.retracts, by=w.id)
        facts = None
        if step is not None and step.value is not None and w.slot is not None:
            if self.noisy is None:
                facts = [{"subject": w.project, "predicate": w.slot, "object": step.value}]
            else:
                named = self.noisy.fact(w.id, w.project, w.slot, step.value)
                facts = None if named is None else [{"subject": named.subject, "predicate": named.predicate, "object": named.object}]
                self.actions["noisy: no facts" if named is None else "noisy: fact passed"] += 1
        result = remember(self.svc, w.content, valid_from=w.t, project=w.project, facts=facts)
        for update in result.probable_updates:  # right when the memory it names holds a value of this note's slot
            named = self.notes.resolve(update.id, count=False)  # not a result row: `unmapped` counts those
            right = w.slot is not None and named is not None and self.slot_of.get(named) == w.slot
            self.actions[f"probable update: {'same slot' if right else 'other slot or none'}"] += 1
            self.actions[f"probable update ({update.basis}): {'same slot' if right else 'other slot or none'}"] += 1
        if self.confirm:  # the agent takes the reply's word: each probable update it lists on a basis it trusts is
            for update in result.probable_updates:  # ended at this note
                if update.basis not in self.confirm:
                    continue
                outcome = forget(self.svc, update.id, f"updated by note {w.id} ({update.reason})", superseded_by=result.id)
                self.actions[f"confirmed update {outcome.action}"] += 1
                self.actions["confirmed update: facts carried"] += len(outcome.carried)
        self.write_seconds.append(time.perf_counter() - start)
        self.notes.bind(result.id, w.id)
        self.memories[w.id] = [result.id]
        for fact in result.facts:
            self.actions[f"fact {fact.action}"] += 1
            if fact.action != "reinforced":
                self.notes.bind(fact.id, w.id)
                self.memories[w.id].append(fact.id)
        self.upkeep.after_write()

    def play(self, writes: Sequence[Write], queries: Sequence[Query], started: float) -> None:
        """Every write and query in time order, with progress on stderr every 500 events."""
        for i, event in enumerate(timeline(writes, queries), start=1):
            if isinstance(event, Write):
                self.write(event)
            else:
                self.answer(event)
            if i % 500 == 0:
                print(f"{i} events, {time.perf_counter() - started:.0f} s", file=sys.stderr)

    def _retract(self, note_id: str, by: str) -> None:
        chunk_id, *fact_ids = self.memories[note_id]
        reason = f"retracted by note {by}"
        outcome = forget(self.svc, chunk_id, reason, retract=True)
        self.actions[f"forget chunk {outcome.action}"] += 1
        for fact_id in fact_ids:
            if fact_id not in outcome.also:
                self.actions[f"forget fact {forget(self.svc, fact_id, reason, retract=True).action}"] += 1
            else:
                self.actions["forget fact with its chunk"] += 1

    def answer(self, q: Query) -> None:
        start = time.perf_counter()
        if q.type == "history":  # an agent asks how something changed by calling `history`, not `recall`
            told = history(self.svc, query=q.query, project=q.project, limit=LIMIT)
            rows = [SimpleNamespace(id=e.id, revision_of=e.revision_of, source_ids=()) for e in told.entries]
            self.query_seconds.append(time.perf_counter() - start)
            self.answers[SYSTEM][q.qid] = Ranked(self.notes.ranking(rows), not rows)
        else:
            if q.type == "as_of":
                assert q.as_of is not None
                result: RecallResult = as_of(self.svc, q.query, at=q.as_of, project=q.project, limit=LIMIT)
            else:
                result = recall(self.svc, q.query, project=q.project, limit=LIMIT)
            self.query_seconds.append(time.perf_counter() - start)
            self.answers[SYSTEM][q.qid] = Ranked(self.notes.ranking(result.results), result.abstained or not result.results)

        if not self.rankers:
            return
        now = self.svc.now()
        at = _time(q.as_of) if q.type == "as_of" and q.as_of else now
        ctx = QueryContext(self.svc, q.query, slice_filter(self.svc, at, now, q.project), project=q.project)
        for name, records in run_rankers(ctx, self.rankers, LIMIT).items():
            self.answers[name][q.qid] = Ranked(self.notes.ranking(records), not records)
        self.best_dense[q.qid] = max((cosine for _, cosine in ctx.dense), default=None)


def audit_slots(svc: MemoryService, slots: Sequence[dict[str, Any]], writes: dict[str, Write]) -> dict[str, Any]:
    """Agent mode: is the live fact of each slot, at each value note's time and now, the value it should be?"""
    now = svc.now()
    checked = 0
    wrong: list[dict[str, Any]] = []
    for chain in slots:
        notes = list(zip(chain["note_ids"], chain["roles"], chain["values"], strict=True))
        if all(value is None for _, _, value in notes):
            continue
        subject, predicate = normalize_subject(chain["project"]), normalize_predicate(chain["slot"])
        base = Filter().projects([chain["project"]]).slot(subject, predicate)
        expected_now: str | None = None
        for i, (note, role, value) in enumerate(notes):
            retracted_later = i + 1 < len(notes) and notes[i + 1][1].startswith("retract")
            expected = None if retracted_later else value
            if role.startswith("retract") or value is not None:
                expected_now = value
            if value is None and not role.startswith("retract"):
                continue
            checked += 1
            _compare(svc, base.live(_time(writes[note].t), now), expected, chain, f"at {note}", wrong)
        checked += 1
        _compare(svc, base.live(now, now), expected_now, chain, "now", wrong)
    return {"checked": checked, "wrong": len(wrong), "examples": wrong[:20]}


def _compare(
    svc: MemoryService, flt: Filter, expected: str | None, chain: dict[str, Any], when: str, wrong: list[dict[str, Any]]
) -> None:
    live = sorted(r.object or "" for r in svc.store.find(flt))
    want = [] if expected is None else [expected]
    if [normalize_object(o) for o in live] != [normalize_object(o) for o in want]:
        wrong.append({"project": chain["project"], "slot": chain["slot"], "when": when, "expected": want, "live": live})


def isolation_error(ranked: Sequence[str], q: Query, project_of: dict[str, str]) -> float:
    """1.0 when the top-1 is another project's note or one of the query's traps (0.0 for no result)."""
    if not ranked:
        return 0.0
    return 1.0 if project_of.get(ranked[0]) != q.project or ranked[0] in q.trap_ids else 0.0


def score(queries: Sequence[Query], answers: dict[str, Ranked], project_of: dict[str, str]) -> dict[str, Any]:
    """Every metric of the DevMem README for one system's answers."""
    by_type = {t: [q for q in queries if q.type == t and q.qid in answers] for t in TYPES}
    per_type: dict[str, dict[str, Any]] = {}
    for t in ANSWERABLE:
        group = by_type[t]
        per_type[t] = {
            "n": len(group),
            "hit@1": mean(hit_at_k(answers[q.qid].ids, q.gold_ids, 1) for q in group),
            "recall@5": mean(recall_at_k(answers[q.qid].ids, q.gold_ids, 5) for q in group),
            "mrr": mean(reciprocal_rank(answers[q.qid].ids, q.gold_ids) for q in group),
            "abstained": mean(float(answers[q.qid].abstained) for q in group),
        }
    per_type["abstain"] = {
        "n": len(by_type["abstain"]),
        "abstained": mean(float(answers[q.qid].abstained) for q in by_type["abstain"]),
    }

    current = by_type["current"]
    history = by_type["history"]
    taus = [kendall_tau(answers[q.qid].ids[:LIMIT], q.gold_order) for q in history]
    abstention = abstention_scores((answers[q.qid].abstained, q.type != "abstain") for t in TYPES for q in by_type[t])
    subtypes: dict[str, list[Query]] = {}
    for q in current:
        subtypes.setdefault(q.subtype or "", []).append(q)
    return {
        "current_hit@1": per_type["current"]["hit@1"],
        "stale_leak": stale_leak_rate((answers[q.qid].ids, q.stale_ids) for q in current),
        "stale_leak_changed": stale_leak_rate((answers[q.qid].ids, q.stale_ids) for q in current if q.stale_ids),
        "as_of_accuracy": per_type["as_of"]["hit@1"],
        "history_recall@10": mean(recall_at_k(answers[q.qid].ids, q.gold_ids, 10) for q in history),
        "history_kendall_tau": mean(taus),
        "history_tau_defined": sum(t is not None for t in taus),
        "multi_hop_both@5": mean(all_in_top_k(answers[q.qid].ids, q.gold_ids, 5) for q in by_type["multi_hop"]),
        "abstain_recall": abstention.recall,
        "abstain_precision": abstention.precision,
        "false_abstention": abstention.false_rate,
        "abstentions": abstention.abstained,
        "isolation_error": mean(isolation_error(answers[q.qid].ids, q, project_of) for q in by_type["isolation"]),
        "paraphrase_hit@1": per_type["paraphrase"]["hit@1"],
        "identifier_hit@1": per_type["identifier"]["hit@1"],
        "macro_hit@1": mean(per_type[t]["hit@1"] for t in ANSWERABLE),
        "per_type": per_type,
        "current_by_subtype": {
            name: {
                "n": len(group),
                "hit@1": mean(hit_at_k(answers[q.qid].ids, q.gold_ids, 1) for q in group),
                "stale_top1": mean(float(top1_in(answers[q.qid].ids, q.stale_ids)) for q in group),
            }
            for name, group in sorted(subtypes.items())
        },
    }


def gate_sweep(queries: Sequence[Query], best_dense: dict[str, float | None]) -> dict[str, Any]:
    """Abstention recall / precision if one abstained whenever the best dense cosine fell below a floor."""
    def best(q: Query) -> float:
        return best_dense.get(q.qid) or 0.0

    answerable = sorted(best(q) for q in queries if q.type != "abstain")
    unanswerable = sorted(best(q) for q in queries if q.type == "abstain")
    rows = []
    for floor in GATE_THRESHOLDS:
        scores = abstention_scores((best(q) < floor, q.type != "abstain") for q in queries)
        rows.append(
            {"floor": floor, "recall": scores.recall, "precision": scores.precision, "false_rate": scores.false_rate}
        )
    return {
        "median_best_cosine_answerable": statistics.median(answerable) if answerable else None,
        "median_best_cosine_unanswerable": statistics.median(unanswerable) if unanswerable else None,
        "sweep": rows,
    }


def render(payload: dict[str, Any]) -> str:
    mode = payload["mode"]
    system = payload["system"]
    parts = [
        f"# DevMem ({Path(payload['args']['data']).name}), {mode} mode",
        "",
        env_lines(payload["environment"]),
        "",
        f"{payload['data']['writes']} writes, {payload['data']['queries']} queries, "
        f"{payload['data']['projects']} projects in one store. "
        "Queries answered after every write with t <= t_query; as_of queries through `as_of`, the rest through "
        f"`recall(limit={LIMIT})`.",
        "",
        "## Headline (README columns)",
        "",
    ]
    rows = [[f"ours: {SYSTEM}", *(system[key] for _, key in HEADLINE)]]
    rows += [[f"ours: {name}", *(table[key] for _, key in HEADLINE)] for name, table in payload["ablation"].items()]
    rows += [[f"README (text mode): {name}", *(ref[key] for _, key in HEADLINE)] for name, ref in REFERENCE.items()]
    parts += [md_table(["system", *(label for label, _ in HEADLINE)], rows), ""]
    parts += [
        f"## All metrics, {SYSTEM}",
        "",
        md_table(
            ["metric", "value"],
            [
                ["current hit@1", system["current_hit@1"]],
                ["stale-leak (all current)", system["stale_leak"]],
                ["stale-leak (changed slots)", system["stale_leak_changed"]],
                ["as_of accuracy", system["as_of_accuracy"]],
                ["history recall@10", system["history_recall@10"]],
                [
                    f"history Kendall tau (over {system['history_tau_defined']} with ≥2 found)",
                    system["history_kendall_tau"],
                ],
                ["multi-hop both@5", system["multi_hop_both@5"]],
                ["abstention recall", system["abstain_recall"]],
                ["abstention precision", system["abstain_precision"]],
                ["false-abstention rate (answerable)", system["false_abstention"]],
                ["isolation error", system["isolation_error"]],
                ["paraphrase hit@1", system["paraphrase_hit@1"]],
                ["identifier hit@1", system["identifier_hit@1"]],
                ["macro hit@1", system["macro_hit@1"]],
            ],
        ),
        "",
        "## By query type",
        "",
        md_table(
            ["type", "n", "hit@1", "recall@5", "MRR", "abstained"],
            [
                [t, row["n"], row.get("hit@1"), row.get("recall@5"), row.get("mrr"), row["abstained"]]
                for t, row in system["per_type"].items()
            ],
        ),
        "",
        "## current queries by subtype",
        "",
        md_table(
            ["subtype", "n", "hit@1", "top-1 stale"],
            [[s, row["n"], row["hit@1"], row["stale_top1"]] for s, row in system["current_by_subtype"].items()],
        ),
        "",
    ]
    gate = payload["gate"]
    parts += [
        "## Abstention gate diagnostics (information)",
        "",
        f"Best dense cosine in the searched slice: median {fmt(gate['median_best_cosine_answerable'])} on answerable "
        f"queries, {fmt(gate['median_best_cosine_unanswerable'])} on abstain queries. "
        "Abstaining below a floor would give:",
        "",
        md_table(
            ["cosine floor", "abstain R", "abstain P", "false-abstention"],
            [[row["floor"], row["recall"], row["precision"], row["false_rate"]] for row in gate["sweep"]],
        ),
        "",
    ]
    if payload.get("agent"):
        agent = payload["agent"]
        audit = agent["audit"]
        parts += [
            "## Agent mode: what the tools did",
            "",
            md_table(["action", "count"], sorted(agent["actions"].items())),
            "",
        ]
        if audit is not None:
            parts += [
                f"Slot audit: {audit['checked']} checks of the live fact (at each value note's time, and now); "
                f"{audit['wrong']} differ from slots.jsonl.",
                "",
            ]
    speed = payload["speed"]
    parts += [
        "## Speed (in-process, this machine)",
        "",
        f"- writes: median {fmt(speed['write_median_ms'], 1)} ms, p95 {fmt(speed['write_p95_ms'], 1)} ms "
        f"({speed['write_seconds']:.1f} s in all)",
        f"- queries (recall / as_of): median {fmt(speed['query_median_ms'], 1)} ms, "
        f"p95 {fmt(speed['query_p95_ms'], 1)} ms",
        f"- consolidator: {speed['upkeep']['steps']} index-upkeep steps, {speed['upkeep']['seconds']} s",
        f"- total run time {payload['run_seconds']:.0f} s",
        "",
        "## Notes",
        "",
        *(f"- {note}" for note in payload["notes"]),
    ]
    return "\n".join(parts)


def notes(agent: bool, unmapped: int) -> list[str]:
    """How the run was scored, for the results files."""
    out = [
        "Scoring maps every result to a note id (facts through their source chunk, revision rows through "
        f"`revision_of`) and keeps each note once; {unmapped} result rows could not be mapped.",
        "stale-leak (changed slots) counts current queries with non-empty stale_ids; isolation error counts "
        "a top-1 from another project or in trap_ids; macro hit@1 averages hit@1 over the seven answerable types; "
        "an abstention is `abstained` or an empty result.",
        "History Kendall tau compares the order in which the returned list ranks the gold notes (recall ranks by "
        "relevance, not time) with gold_order, over queries with at least two gold notes in the top 10.",
        "Upkeep: after every write the harness gives chronomem's consolidator one step (`Consolidator.step`), "
        "as the server does between an agent's calls; it refreshes the indexes once 50 rows are unindexed.",
        "Run-to-run noise: once a table has been optimized, LanceDB returns equal BM25 scores in a varying order "
        "(even between two identical calls), and recall's "
        "fusion breaks ties by channel rank, so repeated runs differ by one or two queries per type (up to 0.03 on "
        "a type's figure, under 0.01 on macro hit@1).",
        "Ablation rankers search the same slice (same Filter) as recall / as_of, without recall's dated-phrase "
        "narrowing; the first three fuse with chronomem's `rrf`, the rest are recall's own read path "
        "(`retrieval.pipeline.ranked_hits`) with the later signals switched off; none abstains. README baselines are "
        "time-blind, so their as_of column is not comparable with ours.",
    ]
    if agent:
        out.append(
            "Agent mode: notes with a null value in slots.jsonl (bug, fix, regress, a pure retraction) carry no "
            "fact; a retraction note first forgets (retract=True) the chunk of the note it retracts (and its fact), "
            "then is remembered itself so its text stays searchable (it is gold for some current/history queries)."
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.devmem", description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data/devmem", help="folder holding writes/queries/slots.jsonl")
    parser.add_argument("--agent-facts", action="store_true", help="agent mode: structured facts and forget calls")
    parser.add_argument(
        "--agent-style", choices=("ideal", "noisy"), default="ideal",
        help="agent mode's naming: ideal (one name per slot, every fact) or noisy (a realistic model, eval/agent_style.py)",
    )
    parser.add_argument("--seed", type=int, default=0, help="the noisy agent's seed")
    parser.add_argument(
        "--confirm-updates", nargs="?", const="all", choices=sorted(CONFIRMED_BASES), default=None,
        help="the agent confirms the probable updates a reply lists (forget, superseded by the note), as remember asks: "
        "all of them, or (strong) only those whose basis the reply calls seldom wrong",
    )
    parser.add_argument("--out", type=Path, default=None, help="results folder (default eval/results)")
    parser.add_argument("--projects", nargs="*", help="only these projects (quick runs)")
    parser.add_argument("--no-upkeep", action="store_true", help="no consolidator steps (rows stay unindexed: slow)")
    parser.add_argument("--no-ablation", action="store_true", help="only recall/as_of, no ablation rankers (quick runs)")
    parser.add_argument(
        "--rankers", metavar="MODULE:NAME", help="compare this list of rankers instead of the ablation's (variants)"
    )
    args = parser.parse_args(argv)

    started = time.perf_counter()
    data_dir = resolve_data_dir(args.data)
    fields = ("id", "project", "t", "content", "slot", "kind")
    writes = [Write(**{k: row[k] for k in fields}) for row in read_jsonl(data_dir / "writes.jsonl")]
    queries = [Query.of(row) for row in read_jsonl(data_dir / "queries.jsonl")]
    slots = read_jsonl(data_dir / "slots.jsonl")
    if args.projects:
        keep = set(args.projects)
        writes = [w for w in writes if w.project in keep]
        queries = [q for q in queries if q.project in keep]
        slots = [s for s in slots if s["project"] in keep]
    noisy = NoisyAgent(args.seed) if args.agent_facts and args.agent_style == "noisy" else None
    mode = ("agent-noisy" if noisy else "agent") if args.agent_facts else "text"
    if args.confirm_updates:
        mode += "-confirming" + ("-strong" if args.confirm_updates == "strong" else "")
    project_of = {w.id: w.project for w in writes}
    embedder = make_embedder()
    rankers = load_rankers(args.rankers) if args.rankers else [] if args.no_ablation else RANKERS

    with temp_service("devmem", embedder) as svc:
        upkeep = Upkeep(svc, enabled=not args.no_upkeep)
        confirm = CONFIRMED_BASES[args.confirm_updates] if args.confirm_updates else frozenset()
        replay = Replay(svc, args.agent_facts, agent_steps(slots), rankers, upkeep, noisy, confirm)
        replay.play(writes, queries, started)
        # the audit reads each slot under the ideal agent's names; a noisy agent's slots are named its own ways
        audit = audit_slots(svc, slots, {w.id: w for w in writes}) if args.agent_facts and noisy is None else None

    payload: dict[str, Any] = {
        "benchmark": "devmem",
        "mode": mode,
        "environment": environment(),
        "args": {
            "data": str(data_dir), "upkeep": not args.no_upkeep, "limit": LIMIT, "projects": args.projects,
            "agent_style": args.agent_style if args.agent_facts else None, "seed": args.seed if noisy else None,
            "confirm_updates": args.confirm_updates,
        },
        "data": {
            "writes": len(writes),
            "queries": len(queries),
            "slots": len(slots),
            "projects": len(set(project_of.values())),
        },
        "system": score(queries, replay.answers[SYSTEM], project_of),
        "ablation": {r.name: score(queries, replay.answers[r.name], project_of) for r in rankers},
        "reference": {"source": "../shared/data/devmem/README.md (text mode, time-blind)", "baselines": REFERENCE},
        "gate": gate_sweep(queries, replay.best_dense),
        "agent": {"actions": dict(replay.actions), "audit": audit} if args.agent_facts else None,
        "speed": {
            "write_seconds": round(sum(replay.write_seconds), 2),
            "write_median_ms": median_ms(replay.write_seconds),
            "write_p95_ms": p95_ms(replay.write_seconds),
            "query_median_ms": median_ms(replay.query_seconds),
            "query_p95_ms": p95_ms(replay.query_seconds),
            "upkeep": upkeep.summary(),
        },
        "notes": notes(args.agent_facts, replay.notes.unmapped),
        "queries": [
            {"qid": q.qid, "type": q.type, "top10": a.ids, "abstained": a.abstained}
            for q, a in ((q, replay.answers[SYSTEM][q.qid]) for q in queries)
        ],
    }
    if args.rankers:  # a variants run: each variant's answers too, to read where two of them part
        payload["ranker_queries"] = {r.name: {q.qid: replay.answers[r.name][q.qid].ids for q in queries} for r in rankers}
    payload["run_seconds"] = round(time.perf_counter() - started, 1)
    markdown = render(payload)
    split = Path(args.data).resolve().name  # devmem, devmem_validation: one results file per split
    json_path, md_path = write_results(f"{split}-{mode}", payload, markdown, args.out or RESULTS_DIR)
    print(markdown)
    print(f"\nwrote {json_path} and {md_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
