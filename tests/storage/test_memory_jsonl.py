"""Import of the reference MCP memory server's `memory.jsonl` (entities, relations, observations) into a real
store with the real model: counts, facts through the resolve path, recall, bad lines, and a no-op re-import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chronomem.importers.memory_jsonl import TAG, import_memory_jsonl, looks_like_memory_jsonl, parse
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.tools import history, recall, remember
from tests.conftest import model_dir

#: Written the way the reference server's saveGraph writes it: entities first, then relations.
GRAPH = [
    {"type": "entity", "name": "John_Smith", "entityType": "person",
     "observations": ["Speaks fluent Spanish", "Prefers tabs over spaces in Go code"]},
    {"type": "entity", "name": "Anthropic", "entityType": "organization", "observations": ["Builds Claude"]},
    {"type": "entity", "name": "billing-service", "entityType": "service",
     "observations": ["Deploys with `make deploy-billing` from the ops repo"]},
    {"type": "entity", "name": "checkout-service", "entityType": "service", "observations": []},
    {"type": "relation", "from": "John_Smith", "to": "Anthropic", "relationType": "works_at"},
    {"type": "relation", "from": "John_Smith", "to": "billing-service", "relationType": "maintains"},
    {"type": "relation", "from": "John_Smith", "to": "checkout-service", "relationType": "maintains"},
]


def write_sample(path: Path, bad: bool = True) -> Path:
    lines = [json.dumps(obj) for obj in GRAPH]
    if bad:
        lines.insert(2, '{"type": "entity", "name": "Broken", "observations": [')  # line 3: cut off mid-write
        lines.append(json.dumps({"type": "relation", "from": "John_Smith", "relationType": "knows"}))  # no "to"
        lines.append(json.dumps({"type": "note", "text": "not a graph item"}))
        lines.append("")  # blank lines are fine
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def live_rows(svc: MemoryService, kind: str) -> list:
    now = svc.now()
    return svc.store.find(Filter().projects([svc.project()]).kinds([kind]).live(now, now))


def test_parse_names_bad_lines_and_keeps_the_rest(tmp_path: Path) -> None:
    lines = write_sample(tmp_path / "memory.jsonl").read_text().splitlines()
    assert looks_like_memory_jsonl(lines)
    parsed = parse(lines)
    assert (parsed.entities, parsed.relations) == (4, 3)
    assert [(b.line, b.error.split(" (")[0]) for b in parsed.bad] == [
        (3, "not JSON"), (9, "to is missing"), (10, "type must be entity or relation")
    ]
    texts = [i.text for i in parsed.items]
    assert "John_Smith (person): Speaks fluent Spanish" in texts
    assert "checkout-service is a service." in texts  # an entity without observations is kept
    assert "John_Smith works at Anthropic." in texts
    assert [i.fact for i in parsed.items if i.fact] == [
        ("John_Smith", "works_at", "Anthropic"), ("John_Smith", "maintains", "billing-service"),
        ("John_Smith", "maintains", "checkout-service"),
    ]
    assert not looks_like_memory_jsonl(['{"id": "01J", "kind": "chunk", "content": "x"}'])


def test_import_makes_chunks_and_facts_and_recall_finds_them(svc: MemoryService, tmp_path: Path) -> None:
    lines = write_sample(tmp_path / "memory.jsonl").read_text().splitlines()
    ticks: list[int] = []
    report = import_memory_jsonl(svc, lines, progress=ticks.append, batch_size=3)

    # 4 observations + 1 entity without any + 3 relations = 8 chunks; one fact per relation.
    assert (report.entities, report.relations, report.chunks, report.facts) == (4, 3, 8, 3), report.as_dict()
    assert [b.line for b in report.bad_lines] == [3, 9, 10]
    assert ticks == [3, 3, 2]  # one tick per batch
    chunks, facts = live_rows(svc, "chunk"), live_rows(svc, "fact")
    assert len(chunks) == 8 and len(facts) == 3
    assert all(r.source == "import" and TAG in r.tags for r in chunks + facts)
    slots = {(f.subject, f.predicate, f.object) for f in facts}
    # Relations are multi-valued: the second `maintains` does not supersede the first.
    assert slots == {("john_smith", "works_at", "Anthropic"), ("john_smith", "maintains", "billing-service"),
                     ("john_smith", "maintains", "checkout-service")}
    chain = history(svc, subject="john_smith", predicate="maintains")
    assert len(chain.entries) == 2 and all(e.status == "current" for e in chain.entries)
    # Every fact points at the chunk that states it.
    chunk_ids = {c.id: c.content for c in chunks}
    works = next(f for f in facts if f.predicate == "works_at")
    assert chunk_ids[works.source_ids[0]] == "John_Smith works at Anthropic."

    found = recall(svc, "who speaks Spanish")
    assert found.results and found.results[0].text == "John_Smith (person): Speaks fluent Spanish"
    style = recall(svc, "tabs or spaces in Go")
    assert style.results[0].text == "John_Smith (person): Prefers tabs over spaces in Go code"
    deploy = recall(svc, "how is the billing service deployed")
    assert any("make deploy-billing" in r.text for r in deploy.results[:3])


def test_reimport_is_a_no_op_and_known_facts_are_reinforced(svc: MemoryService, tmp_path: Path, clock) -> None:
    path = write_sample(tmp_path / "memory.jsonl", bad=False)
    first = import_memory_jsonl(svc, path.read_text().splitlines())
    rows_before = svc.store.count()
    clock.advance(minutes=5)

    again = import_memory_jsonl(svc, path.read_text().splitlines())
    assert (again.chunks, again.facts, again.reinforced, again.skipped) == (0, 0, 0, first.chunks)
    assert svc.store.count() == rows_before

    # A relation already stated through `remember` (another chunk text) reinforces the fact, no second fact.
    remember(svc, "Ana is on the platform team.", facts=[{"subject": "Ana", "predicate": "member_of", "object": "platform"}])
    extra = tmp_path / "more.jsonl"
    extra.write_text(json.dumps({"type": "relation", "from": "Ana", "to": "platform", "relationType": "member_of"}) + "\n")
    more = import_memory_jsonl(svc, extra.read_text().splitlines())
    assert (more.chunks, more.facts, more.reinforced) == (1, 0, 1)
    member = [f for f in live_rows(svc, "fact") if f.predicate == "member_of"]
    assert len(member) == 1 and member[0].salience > 1.0


@pytest.mark.slow
def test_cli_import_autodetects_reports_bad_lines_and_reimports_nothing(tmp_path: Path) -> None:
    path = write_sample(tmp_path / "memory.jsonl")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOMEM_")}
    env.update({"CHRONOMEM_MODEL_PATH": str(model_dir()), "HF_HUB_OFFLINE": "1"})
    args = [sys.executable, "-m", "chronomem", "import", str(path), "--store", str(tmp_path / "s"), "--project", "people"]

    def run(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([*args, *extra], capture_output=True, text=True, env=env, timeout=180)

    first = run("--json")
    assert first.returncode == 0, first.stderr
    out = json.loads(first.stdout)
    assert (out["project"], out["chunks"], out["facts"]) == ("people", 8, 3)
    assert [b["line"] for b in out["bad_lines"]] == [3, 9, 10]
    assert "line 3: not JSON" in first.stderr and "Traceback" not in first.stderr
    assert "importing" not in first.stderr  # no progress bar when stderr is not a terminal

    second = run()
    assert second.returncode == 0, second.stderr
    assert "0 chunks, 0 facts" in second.stdout and "8 items already in the store" in second.stdout

    recalled = subprocess.run(
        [sys.executable, "-m", "chronomem", "recall", "who works at Anthropic", "--json", "--store", str(tmp_path / "s"),
         "--project", "people"], capture_output=True, text=True, env=env, timeout=120,
    )
    assert recalled.returncode == 0, recalled.stderr
    assert any("Anthropic" in r["text"] for r in json.loads(recalled.stdout)["results"][:3])

    # The chronomem export format still goes through the old path (an empty store is required there).
    forced = run("--from", "chronomem")
    assert forced.returncode == 2 and "line 1: unknown column" in forced.stderr
    # A file with no graph item at all is an error, not a silent "imported 0".
    junk = tmp_path / "junk.jsonl"
    junk.write_text("hello\n[1, 2]\n")
    wrong = subprocess.run([*args[:4], str(junk), *args[5:], "--from", "memory-jsonl"], capture_output=True, text=True,
                           env=env, timeout=120)
    assert wrong.returncode == 2
    assert wrong.stderr.strip() == f"error: {junk} holds no entity or relation: 2 bad lines, the first line 1: not JSON (Expecting value)"


def test_secrets_in_the_graph_are_redacted_before_storing(svc: MemoryService, tmp_path: Path) -> None:
    token = "ghp_" + "q7Lm2Xv9Rt4Kp8Wz3Nc6Hb1Ys5Df0Ga2Ue7J"  # a fake classic GitHub token: ghp_ + 36
    path = tmp_path / "memory.jsonl"
    path.write_text(json.dumps({"type": "entity", "name": "ci", "entityType": "system",
                                "observations": [f"The CI bot pushes with token {token}"]}) + "\n")
    report = import_memory_jsonl(svc, path.read_text().splitlines())
    assert report.chunks == 1 and report.redacted == {"github-token": 1}
    (chunk,) = live_rows(svc, "chunk")
    assert token not in chunk.content and "[REDACTED:github-token]" in chunk.content
