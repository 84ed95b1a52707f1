"""LoCoMo evidence retrieval: does `recall` bring back the dialogue turns a question rests on?

Protocol (../shared/data/locomo/README.md): per conversation a fresh store; one
memory per dialogue turn through the real `remember` tool, written as
`[8 May 2023] Caroline: <text>` (plus ` [image: <caption>]`) and valid from the
session's date; every question of categories 1-4 goes to `recall(limit=10)` and is
scored on its evidence turns (recall@1/5/10, hit@5, MRR, per category and overall).
Category 5 (adversarial) questions report how often `recall` abstains.
The same questions also run through the ablation rankers (eval/ablation.py).

    python -m eval.locomo --data ../shared/data/locomo
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from chronomem.records import UTC
from chronomem.timeparse import iso
from chronomem.tools import recall, remember
from eval.ablation import RANKERS, PipelineRanker, QueryContext, Ranker, load_rankers, run_rankers, slice_filter
from eval.common import RESULTS_DIR, Ranked, Upkeep, make_embedder, median_ms, p95_ms, resolve_data_dir, temp_service
from eval.metrics import hit_at_k, mean, recall_at_k, reciprocal_rank
from eval.report import env_lines, environment, fmt, md_table, write_results

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
SCORED = (1, 2, 3, 4)
LIMIT = 10
SYSTEM = "chronomem recall"
#: README figures on these five files (760 questions): evidence recall@10 / hit@5 / MRR.
REFERENCE = {
    "BM25": {"recall@10": 0.550, "hit@5": 0.520, "mrr": 0.385},
    "dense MiniLM": {"recall@10": 0.507, "hit@5": 0.467, "mrr": 0.330},
    "RRF (k=60)": {"recall@10": 0.602, "hit@5": 0.559, "mrr": 0.400},
}
_DIA = re.compile(r"^D:?(\d+):(\d+)$")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    caption: str | None
    when: datetime

    def content(self) -> str:
        day = f"{self.when.day} {self.when:%B} {self.when.year}"
        image = f" [image: {self.caption}]" if self.caption else ""
        return f"[{day}] {self.speaker}: {self.text}{image}"


@dataclass(frozen=True)
class Question:
    qid: str
    text: str
    category: int
    evidence: tuple[str, ...]
    dropped: tuple[str, ...] = ()


@dataclass
class Conversation:
    conv_id: str
    turns: list[Turn]
    questions: list[Question]
    unscorable: list[str] = field(default_factory=list)  # categories 1-4 without any known evidence turn


def parse_session_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' as an aware UTC datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def normalize_evidence(raw: Sequence[str], known: set[str]) -> tuple[list[str], list[str]]:
    """Evidence ids split on ';' / ',' and repaired ('D:11:26' → 'D11:26'); unknown ids are dropped."""
    kept: list[str] = []
    dropped: list[str] = []
    for entry in raw:
        for part in re.split(r"[;,\s]+", entry.strip()):
            if not part:
                continue
            match = _DIA.match(part)
            dia = f"D{match.group(1)}:{match.group(2)}" if match else part
            if dia in known and dia not in kept:
                kept.append(dia)
            elif dia not in known:
                dropped.append(part)
    return kept, dropped


def load_conversation(path: Path) -> Conversation:
    data = json.loads(path.read_text(encoding="utf-8"))
    conv_id = f"conv-{path.stem}"
    sessions = sorted(int(m.group(1)) for key in data if (m := re.fullmatch(r"session_(\d+)", key)))
    turns = []
    for number in sessions:
        when = parse_session_date(data[f"session_{number}_date_time"])
        for turn in data[f"session_{number}"]:
            turns.append(Turn(turn["dia_id"], turn["speaker"], turn["text"], turn.get("blip_caption"), when))
    known = {t.dia_id for t in turns}
    questions = []
    unscorable = []
    for index, qa in enumerate(data["qa"], start=1):
        qid = f"{conv_id}-q{index:03d}"
        kept, dropped = normalize_evidence(qa.get("evidence") or [], known)
        if qa["category"] in SCORED and not kept:
            unscorable.append(qid)
            continue
        questions.append(Question(qid, qa["question"], qa["category"], tuple(kept), tuple(dropped)))
    return Conversation(conv_id, turns, questions, unscorable)


@dataclass
class ConvRun:
    conv_id: str
    turns: int
    ingest_seconds: float
    remember_seconds: list[float]
    recall_seconds: list[float]
    upkeep: dict[str, Any]
    outcomes: dict[str, dict[str, Ranked]]


def run_conversation(conv: Conversation, embedder: Any, rankers: list[Ranker | PipelineRanker], upkeep_on: bool) -> ConvRun:
    """Ingest one conversation into a fresh store and answer its questions with every system."""
    outcomes: dict[str, dict[str, Ranked]] = {SYSTEM: {}, **{r.name: {} for r in rankers}}
    with temp_service(conv.conv_id, embedder) as svc:
        upkeep = Upkeep(svc, enabled=upkeep_on)
        dia_of: dict[str, str] = {}
        remember_seconds = []
        start = time.perf_counter()
        for turn in conv.turns:
            t0 = time.perf_counter()
            result = remember(svc, turn.content(), valid_from=iso(turn.when), project=conv.conv_id)
            remember_seconds.append(time.perf_counter() - t0)
            dia_of[result.id] = turn.dia_id
            upkeep.after_write()
        ingest_seconds = time.perf_counter() - start

        recall_seconds = []
        for q in conv.questions:
            t0 = time.perf_counter()
            result = recall(svc, q.text, project=conv.conv_id, limit=LIMIT)
            recall_seconds.append(time.perf_counter() - t0)
            abstained = result.abstained or not result.results
            outcomes[SYSTEM][q.qid] = Ranked([dia_of[item.id] for item in result.results], abstained)
            if q.category not in SCORED:
                continue
            now = svc.now()
            ctx = QueryContext(svc, q.text, slice_filter(svc, now, now, conv.conv_id), project=conv.conv_id)
            for name, records in run_rankers(ctx, rankers, LIMIT).items():
                outcomes[name][q.qid] = Ranked([dia_of[r.id] for r in records], not records)
    return ConvRun(
        conv_id=conv.conv_id,
        turns=len(conv.turns),
        ingest_seconds=ingest_seconds,
        remember_seconds=remember_seconds,
        recall_seconds=recall_seconds,
        upkeep=upkeep.summary(),
        outcomes=outcomes,
    )


def score(questions: Sequence[Question], answers: dict[str, Ranked]) -> dict[str, dict[str, Any]]:
    """Evidence metrics per category of 1-4 and overall (questions without an answer are skipped)."""
    groups: dict[str, list[Question]] = {CATEGORIES[c]: [] for c in SCORED}
    for q in questions:
        if q.category in SCORED and q.qid in answers:
            groups[CATEGORIES[q.category]].append(q)
    groups["overall"] = [q for c in SCORED for q in groups[CATEGORIES[c]]]
    table = {}
    for name, group in groups.items():
        rows = [(answers[q.qid], q.evidence) for q in group]
        table[name] = {
            "n": len(group),
            "recall@1": mean(recall_at_k(a.ids, ev, 1) for a, ev in rows),
            "recall@5": mean(recall_at_k(a.ids, ev, 5) for a, ev in rows),
            "recall@10": mean(recall_at_k(a.ids, ev, 10) for a, ev in rows),
            "hit@5": mean(hit_at_k(a.ids, ev, 5) for a, ev in rows),
            "mrr": mean(reciprocal_rank(a.ids, ev) for a, ev in rows),
            "abstained": mean(float(a.abstained) for a, _ in rows),
        }
    return table


def abstention_rate(questions: Sequence[Question], answers: dict[str, Ranked], category: int) -> dict[str, Any]:
    chosen = [answers[q.qid].abstained for q in questions if q.category == category]
    return {"n": len(chosen), "abstained": sum(chosen), "rate": mean(float(a) for a in chosen)}


METRIC_COLUMNS = ("recall@1", "recall@5", "recall@10", "hit@5", "mrr")
PLAIN_CHANNELS = ("dense only", "fused (RRF k=60)")  # ablation rankers recall must not fall below (issue 45)
CHANNEL_COLUMNS = ("recall@10", "hit@5", "mrr")


def channel_margins(payload: dict[str, Any]) -> list[list[Any]]:
    """Per category and metric: recall's figure, each plain channel's, and recall's margin over the best of them
    (negative where recall ranks below a channel it contains). Empty when the run had no ablation."""
    channels = [name for name in PLAIN_CHANNELS if name in payload["ablation"]]
    if not channels:
        return []
    rows = []
    for category, ours in payload["system"]["by_category"].items():
        for metric in CHANNEL_COLUMNS:
            theirs = [payload["ablation"][name][category][metric] for name in channels]
            rows.append([category, metric, ours[metric], *theirs, ours[metric] - max(theirs)])
    return rows


def render(payload: dict[str, Any]) -> str:
    sys_table = payload["system"]["by_category"]
    parts = [
        "# LoCoMo evidence retrieval",
        "",
        env_lines(payload["environment"]),
        "",
        f"{payload['data']['conversations']} conversations, {payload['data']['turns']} turns, "
        f"{sys_table['overall']['n']} questions in categories 1-4 (README: 760), "
        f"{payload['system']['category_5']['n']} adversarial. One memory per turn via `remember`; "
        f"`recall(limit={LIMIT})`.",
        "",
        f"## {SYSTEM}, by category",
        "",
        md_table(
            ["category", "n", *METRIC_COLUMNS, "abstained"],
            [[name, row["n"], *(row[m] for m in METRIC_COLUMNS), row["abstained"]] for name, row in sys_table.items()],
        ),
        "",
        "## Ablation (overall, categories 1-4) beside the README reference",
        "",
    ]
    columns = ("recall@10", "hit@5", "mrr", "recall@1", "recall@5")
    ours = {**payload["ablation"], SYSTEM: sys_table}
    rows = [[f"ours: {name}", *(table["overall"][m] for m in columns)] for name, table in ours.items()]
    rows += [[f"README: {name}", *(ref.get(m) for m in columns)] for name, ref in REFERENCE.items()]
    parts += [md_table(["system", "recall@10", "hit@5", "MRR", "recall@1", "recall@5"], rows), ""]
    margins = channel_margins(payload)
    if margins:
        channels = [name for name in PLAIN_CHANNELS if name in payload["ablation"]]
        below = [f"{row[0]} {row[1]}" for row in margins if row[-1] < 0]
        parts += [
            "## By category beside the plain channels recall contains",
            "",
            md_table(["category", "metric", SYSTEM, *channels, "margin over the best"], margins),
            "",
            f"Below a plain channel: {', '.join(below)}." if below else "At or above every plain channel in every category.",
            "",
        ]
    cat5 = payload["system"]["category_5"]
    speed = payload["speed"]
    parts += [
        "## Abstention",
        "",
        f"- category 5 (adversarial): recall abstained on {cat5['abstained']} of {cat5['n']} ({fmt(cat5['rate'])}); "
        "information only, these questions have evidence turns nearby.",
        f"- categories 1-4: recall abstained on {fmt(sys_table['overall']['abstained'])} of answerable questions.",
        "",
        "## Speed (in-process, this machine)",
        "",
        f"- ingestion: {speed['turns']} `remember` calls in {speed['ingest_seconds']:.1f} s "
        f"(median {fmt(speed['remember_median_ms'], 1)} ms, p95 {fmt(speed['remember_p95_ms'], 1)} ms per call)",
        f"- recall latency on {speed['latency_conversation']}: median {fmt(speed['recall_median_ms'], 1)} ms, "
        f"p95 {fmt(speed['recall_p95_ms'], 1)} ms over {speed['latency_questions']} questions "
        f"({'with' if payload['args']['upkeep'] else 'without'} consolidator steps)",
        "- recall median per conversation (ms): "
        + ", ".join(f"{c} {fmt(v, 1)}" for c, v in speed["recall_median_ms_by_conversation"].items()),
        f"- total run time {payload['run_seconds']:.0f} s",
        "",
        "## Notes",
        "",
        *(f"- {note}" for note in payload["notes"]),
    ]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.locomo", description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data/locomo", help="folder of LoCoMo conversation files")
    parser.add_argument("--out", type=Path, default=None, help="results folder (default eval/results)")
    parser.add_argument("--conversations", nargs="*", help="only these files' stems, e.g. 26 30")
    parser.add_argument("--latency-conversation", default=None, help="stem whose recall latency is reported")
    parser.add_argument("--no-upkeep", action="store_true", help="no consolidator steps (rows stay unindexed: slow)")
    parser.add_argument("--no-ablation", action="store_true", help="only recall, no ablation rankers (quick runs)")
    parser.add_argument(
        "--rankers", metavar="MODULE:NAME", help="compare this list of rankers instead of the ablation's (variants)"
    )
    args = parser.parse_args(argv)

    started = time.perf_counter()
    data_dir = resolve_data_dir(args.data)
    files = sorted(data_dir.glob("*.json"), key=lambda p: (len(p.stem), p.stem))
    if args.conversations:
        files = [p for p in files if p.stem in set(args.conversations)]
    if not files:
        raise SystemExit(f"no conversation files in {data_dir}")
    latency_stem = args.latency_conversation or files[0].stem
    conversations = [load_conversation(p) for p in files]
    embedder = make_embedder()
    rankers = load_rankers(args.rankers) if args.rankers else [] if args.no_ablation else RANKERS

    runs: list[ConvRun] = []
    for conv in conversations:
        run = run_conversation(conv, embedder, rankers, not args.no_upkeep)
        runs.append(run)
        print(
            f"{conv.conv_id}: {run.turns} turns in {run.ingest_seconds:.1f} s, {len(conv.questions)} questions, "
            f"recall median {median_ms(run.recall_seconds)} ms",
            file=sys.stderr,
        )

    questions = [q for conv in conversations for q in conv.questions]
    merged: dict[str, dict[str, Ranked]] = {}
    for run in runs:
        for system, answers in run.outcomes.items():
            merged.setdefault(system, {}).update(answers)
    latency_run = next(r for r in runs if r.conv_id == f"conv-{latency_stem}")
    dropped = {q.qid: list(q.dropped) for q in questions if q.dropped}
    payload: dict[str, Any] = {
        "benchmark": "locomo",
        "environment": environment(),
        "args": {"data": str(data_dir), "upkeep": not args.no_upkeep, "limit": LIMIT},
        "data": {
            "conversations": len(conversations),
            "turns": sum(len(c.turns) for c in conversations),
            "questions": len(questions),
            "unscorable_no_evidence": [qid for c in conversations for qid in c.unscorable],
            "evidence_ids_dropped": dropped,
        },
        "system": {
            "name": SYSTEM,
            "by_category": score(questions, merged[SYSTEM]),
            "category_5": abstention_rate(questions, merged[SYSTEM], 5),
        },
        "ablation": {r.name: score(questions, merged[r.name]) for r in rankers},
        "reference": {"source": "../shared/data/locomo/README.md", "overall": REFERENCE},
        "speed": {
            "turns": sum(r.turns for r in runs),
            "ingest_seconds": round(sum(r.ingest_seconds for r in runs), 2),
            "remember_median_ms": median_ms([s for r in runs for s in r.remember_seconds]),
            "remember_p95_ms": p95_ms([s for r in runs for s in r.remember_seconds]),
            "latency_conversation": latency_run.conv_id,
            "latency_questions": len(latency_run.recall_seconds),
            "recall_median_ms": median_ms(latency_run.recall_seconds),
            "recall_p95_ms": p95_ms(latency_run.recall_seconds),
            "recall_median_ms_by_conversation": {r.conv_id: median_ms(r.recall_seconds) for r in runs},
            "upkeep": {r.conv_id: r.upkeep for r in runs},
        },
        "notes": [
            "Memories are written with the real `chronomem.tools.remember`, one call per turn (no batched path).",
            "Upkeep: after every `remember` the harness gives chronomem's consolidator one step "
            "(`Consolidator.step`), as the server does between an agent's calls; it refreshes the indexes once 50 "
            "rows are unindexed. Rankings do not depend on it except the order of equal BM25 scores.",
            "Evidence ids are split on ';' and repaired ('D:11:26' → 'D11:26'); ids naming no turn are dropped "
            f"({sum(len(v) for v in dropped.values())} ids in {len(dropped)} questions); questions of categories 1-4 "
            "with no evidence at all are not scored.",
            "Ablation rankers search the same slice as recall (same Filter, candidate pool 50; no dated-phrase "
            "narrowing); the first three fuse with chronomem's `rrf`, the rest are recall's own read path "
            "(`retrieval.pipeline.ranked_hits`) with the later signals switched off; none abstains.",
        ],
        "questions": [
            {
                "qid": q.qid,
                "category": q.category,
                "evidence": list(q.evidence),
                "top10": merged[SYSTEM][q.qid].ids,
                "abstained": merged[SYSTEM][q.qid].abstained,
            }
            for q in questions
        ],
    }
    payload["run_seconds"] = round(time.perf_counter() - started, 1)
    markdown = render(payload)
    json_path, md_path = write_results("locomo", payload, markdown, args.out or RESULTS_DIR)
    print(markdown)
    print(f"\nwrote {json_path} and {md_path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
