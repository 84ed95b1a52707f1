"""Aggregate questions (count / latest / max) answered by entity views and by ranking alone (issue 26).

    python -m eval.entities      # ~30 s: eval/results/entities.md and .json

A stream written for this benchmark (not taken from ../shared/data): one project's half year of flaky-test
reports, dependency bumps, latency measurements and incidents, each `remember`ed with the structured fact an
agent would pass, among status chatter. Each question is asked two ways:

- `entity` (the view's value: a count, the latest value, the maximum), read exactly;
- `recall` with the question's words (and `as_of` for a question about the past), read as generously as an agent
  reading the results could: a count is the number of distinct results among the first 10 that name the entity
  and the event; latest / max is the value the first result states.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from typing import Any

from eval.common import RESULTS_DIR, Upkeep, make_embedder, temp_service

PROJECT = "kestrel"
RETRY, UPLOAD, LOGIN = "tests/test_sync.py::test_retry_backoff", "tests/test_files.py::test_upload_resume", "tests/test_auth.py::test_login_redirect"

#: (day, text, subject, predicate, object); object None = chatter without a fact.
STREAM: list[tuple[str, str, str | None, str | None, str | None]] = [
    ("2024-01-08", "Bumped fastapi to 0.109.0 for the lifespan fix.", "fastapi", "version", "0.109.0"),
    ("2024-01-09", "Upgraded pydantic to 2.5.3.", "pydantic", "version", "2.5.3"),
    ("2024-01-15", "p95 latency of checkout-svc measured at 380 ms after the cache warmup change.", "checkout-svc", "p95_latency", "380 ms"),
    ("2024-01-22", "Looking at the dashboards again, nothing new.", None, None, None),
    ("2024-02-02", "Incident on checkout-svc: payment webhooks timed out for 12 minutes.", "checkout-svc", "incident", "webhook timeouts"),
    ("2024-02-05", "Bumped sqlalchemy to 2.0.25.", "sqlalchemy", "version", "2.0.25"),
    ("2024-02-12", "checkout-svc p95 is 455 ms this week.", "checkout-svc", "p95_latency", "455 ms"),
    ("2024-02-20", f"{LOGIN} failed once on CI run 702 and passed on rerun.", LOGIN, "flaky", "CI run 702"),
    ("2024-03-01", "fastapi upgraded to 0.110.1.", "fastapi", "version", "0.110.1"),
    ("2024-03-04", f"{RETRY} flaked on CI run 881 (timeout in the backoff loop).", RETRY, "flaky", "CI run 881"),
    ("2024-03-07", "Incident: search-svc returned empty results after the index rebuild.", "search-svc", "incident", "empty results"),
    ("2024-03-11", f"Flaky again: {RETRY} on CI run 902.", RETRY, "flaky", "CI run 902"),
    ("2024-03-14", "Measured p95 for checkout-svc: 910 ms during the sale.", "checkout-svc", "p95_latency", "910 ms"),
    ("2024-03-18", f"{UPLOAD} flaked on CI run 915, the resume offset was off by one chunk.", UPLOAD, "flaky", "CI run 915"),
    ("2024-03-22", "Running the full suite now.", None, None, None),
    ("2024-03-26", f"{RETRY} failed intermittently on CI run 933.", RETRY, "flaky", "CI run 933"),
    ("2024-04-02", "pydantic bumped to 2.6.1.", "pydantic", "version", "2.6.1"),
    ("2024-04-03", "checkout-svc incident: 502s from the payment gateway for 20 minutes.", "checkout-svc", "incident", "502s"),
    ("2024-04-09", f"CI run 951: {RETRY} flaked.", RETRY, "flaky", "CI run 951"),
    ("2024-04-10", "p95 of checkout-svc back to 510 ms.", "checkout-svc", "p95_latency", "510 ms"),
    ("2024-04-15", "Bumped fastapi to 0.111.0.", "fastapi", "version", "0.111.0"),
    ("2024-04-17", f"{UPLOAD} flaky on CI run 960.", UPLOAD, "flaky", "CI run 960"),
    ("2024-04-22", f"{RETRY} flaked on CI run 968 again; quarantining is being discussed.", RETRY, "flaky", "CI run 968"),
    ("2024-04-25", "Incident on search-svc: stale results for an hour after a deploy.", "search-svc", "incident", "stale results"),
    ("2024-04-29", "Reviewed the open pull requests.", None, None, None),
    ("2024-05-03", f"{RETRY} flaked on CI run 990.", RETRY, "flaky", "CI run 990"),
    ("2024-05-06", "sqlalchemy upgraded to 2.0.29.", "sqlalchemy", "version", "2.0.29"),
    ("2024-05-08", "Incident: checkout-svc double-charged 3 orders (idempotency key missing).", "checkout-svc", "incident", "double charge"),
    ("2024-05-13", "checkout-svc p95 measured at 640 ms.", "checkout-svc", "p95_latency", "640 ms"),
    ("2024-05-16", f"{RETRY} flaked on CI run 1011.", RETRY, "flaky", "CI run 1011"),
    ("2024-05-20", "pydantic upgraded to 2.7.4.", "pydantic", "version", "2.7.4"),
    ("2024-05-22", f"{UPLOAD} flaked on CI run 1019.", UPLOAD, "flaky", "CI run 1019"),
    ("2024-05-28", "Bumped fastapi to 0.112.2.", "fastapi", "version", "0.112.2"),
    ("2024-06-03", "Incident on checkout-svc: the cart page 500ed for 5 minutes after a config push.", "checkout-svc", "incident", "cart 500s"),
    ("2024-06-05", "checkout-svc p95 is 470 ms after the query fix.", "checkout-svc", "p95_latency", "470 ms"),
    ("2024-06-10", "All green today.", None, None, None),
]


@dataclass(frozen=True)
class Question:
    text: str
    operator: str  # count | latest | max
    entity: str
    view: str
    event: str  # a word a result must hold to count as a report of this event (for recall's count)
    at: str | None = None

    def gold(self) -> Any:
        facts = [(day, obj) for day, _, subject, predicate, obj in STREAM
                 if subject == self.entity and predicate == VIEW_PREDICATE[self.view] and (self.at is None or day <= self.at)]
        if self.operator == "count":
            return len(facts)
        if self.operator == "latest":
            return max(facts)[1]
        return max(facts, key=lambda f: float(f[1].split()[0]))[1]


VIEW_PREDICATE = {"flaky": "flaky", "incidents": "incident", "version": "version", "p95_max": "p95_latency"}
QUESTIONS = [
    Question(f"How many times was {RETRY} reported flaky?", "count", RETRY, "flaky", "flak"),
    Question(f"How many times did {UPLOAD} flake?", "count", UPLOAD, "flaky", "flak"),
    Question("How many incidents has checkout-svc had?", "count", "checkout-svc", "incidents", "incident"),
    Question("How many incidents did search-svc have?", "count", "search-svc", "incidents", "incident"),
    Question("What version of fastapi are we on?", "latest", "fastapi", "version", ""),
    Question("Which pydantic version do we use?", "latest", "pydantic", "version", ""),
    Question("What version of fastapi were we on in April?", "latest", "fastapi", "version", "", at="2024-04-20"),
    Question("What is the highest p95 latency ever measured for checkout-svc?", "max", "checkout-svc", "p95_max", ""),
]


def ranking_answer(question: Question, results: list[Any]) -> Any:
    """What an agent reading recall's results would answer (see the module)."""
    if question.operator == "count":
        seen = set()
        for item in results[:10]:
            text = (item.note or item.text).lower()
            if question.entity.lower() in text and question.event in text:
                seen.add(item.source_ids[0] if item.kind == "fact" and item.source_ids else item.id)
        return len(seen)
    if not results:
        return None
    top = results[0].note or results[0].text
    values = sorted({obj for _, _, s, p, obj in STREAM if s == question.entity and p == VIEW_PREDICATE[question.view] and obj},
                    key=len, reverse=True)
    return next((v for v in values if v in top), None)


def main(argv: list[str] | None = None) -> int:
    import argparse
    from pathlib import Path

    from chronomem.tools import as_of, entity, recall, remember

    parser = argparse.ArgumentParser(prog="python -m eval.entities", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results folder (default eval/results)")
    out = parser.parse_args(argv).out

    embedder = make_embedder()
    rows: list[dict[str, Any]] = []
    with temp_service(PROJECT, embedder) as svc:
        (svc.settings.store_path / "entities.toml").write_text(
            '[views.p95_max]\npredicate = "p95_latency"\noperator = "max"\ndescription = "worst p95 measured"\n'
        )
        upkeep = Upkeep(svc)
        for day, text, subject, predicate, obj in STREAM:
            facts = [{"subject": subject, "predicate": predicate, "object": obj}] if obj else None
            remember(svc, text, valid_from=day, facts=facts)
            upkeep.after_write()
        for q in QUESTIONS:
            view = entity(svc, q.entity, view=q.view, as_of=q.at)
            value = view.views[0] if view.views else None
            by_view = None if value is None else (value.count if q.operator == "count" else value.value)
            found = as_of(svc, q.text, at=q.at).results if q.at else recall(svc, q.text).results
            by_rank = ranking_answer(q, found)
            gold = q.gold()
            rows.append({
                "question": q.text, "operator": q.operator, "gold": gold, "entity": by_view, "entity_ok": by_view == gold,
                "fact_ids": [] if value is None else value.fact_ids, "recall": by_rank, "recall_ok": by_rank == gold,
                "recall_top1": (found[0].note or found[0].text) if found else None,
            })
    payload = {"benchmark": "entities", "writes": len(STREAM), "questions": rows,
               "entity_exact": sum(r["entity_ok"] for r in rows) / len(rows),
               "recall_exact": sum(r["recall_ok"] for r in rows) / len(rows)}
    lines = ["# Aggregate questions: entity views vs ranking alone", "",
             f"A stream of {len(STREAM)} notes written for this benchmark (eval/entities.py), one project, Jan–Jun 2024. "
             "`recall` is read generously: a count is the number of distinct results among the first 10 naming the "
             "entity and the event; latest / max is the value the first result states.", "",
             f"Exact answers: entity views {payload['entity_exact']:.2f}, recall's results {payload['recall_exact']:.2f}.", "",
             "| question | gold | entity | recall (ranking alone) | recall's top result |", "|---|---|---|---|---|"]
    for r in rows:
        top = re.sub(r"\s+", " ", r["recall_top1"] or "–")[:90]
        mark = lambda ok: "✓" if ok else "✗"  # noqa: E731
        lines.append(f"| {r['question']} | {r['gold']} | {r['entity']} {mark(r['entity_ok'])} | {r['recall']} {mark(r['recall_ok'])} | {top} |")
    markdown = "\n".join(lines) + "\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / "entities.json").write_text(json.dumps(payload, indent=1))
    (out / "entities.md").write_text(markdown)
    print(markdown)
    print(f"wrote {out / 'entities.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
