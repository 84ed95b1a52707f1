"""Export, import and purge on real stores: the byte-identical round trip through the real CLI, and a purge
that leaves no byte of the purged text anywhere in the store directory (old versions and indexes included)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chronomem.errors import InvalidInput, StoreError
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.storage.portable import EXPORT_COLUMNS, erase, export_lines, import_records, plan_purge, read_export
from chronomem.tools import forget, history, recall, remember
from tests.conftest import model_dir

MARKER = "zebracornquartz"  # one token, so it would also show in a full-text index's term list


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOMEM_")}
    env.update({"CHRONOMEM_MODEL_PATH": str(model_dir()), "HF_HUB_OFFLINE": "1"})
    return subprocess.run(
        [sys.executable, "-m", "chronomem", *args], capture_output=True, text=True, env=env, input=stdin, timeout=180
    )


def store_holds(path: Path, needle: str) -> list[str]:
    """Files under `path` whose raw bytes contain `needle` (what `grep -r` would find)."""
    data = needle.encode()
    return [str(p.relative_to(path)) for p in path.rglob("*") if p.is_file() and data in p.read_bytes()]


def build_history(svc: MemoryService, clock) -> dict[str, str]:
    """A store with supersession, a forgotten memory, a backfilled value and provenance links."""
    a = remember(svc, "Tests ran with pytest.", valid_from="2024-01-10",
                 facts=[{"subject": "proj", "predicate": "test_command", "object": "pytest"}], tags=["ci"])
    clock.advance(days=1)
    b = remember(svc, "Tests now run with nox -s tests.", valid_from="2024-03-01",
                 facts=[{"subject": "proj", "predicate": "test_command", "object": "nox -s tests"}], paths=["noxfile.py"])
    clock.advance(days=1)
    c = remember(svc, "Staging listens on port 8443.", facts=[{"subject": "staging", "predicate": "port", "object": "8443"}])
    clock.advance(hours=2)
    forget(svc, c.id, "staging was shut down")
    clock.advance(hours=1)
    d = remember(svc, f"The {MARKER} signing secret lives in vault under ci/signing.",
                 facts=[{"subject": "proj", "predicate": "signing_secret_path", "object": f"vault ci/signing {MARKER}"}])
    clock.advance(hours=1)
    e = remember(svc, "Signing moved to the KMS key alias/release.",
                 facts=[{"subject": "proj", "predicate": "signing_secret_path", "object": "kms alias/release"}])
    return {"a": a.id, "b": b.id, "c": c.id, "d": d.id, "d_fact": d.facts[0].id, "e_fact": e.facts[0].id}


def test_export_lines_are_stable_complete_and_vector_free(svc: MemoryService, clock) -> None:
    build_history(svc, clock)
    lines = list(export_lines(svc.store))
    assert lines == list(export_lines(svc.store))
    rows = [json.loads(line) for line in lines]
    assert len(rows) == svc.store.count()
    assert [r["id"] for r in rows] == sorted(r["id"] for r in rows)
    assert all(list(r) == EXPORT_COLUMNS and "vector" not in r for r in rows)
    assert any(r["supersedes"] for r in rows) and any(r["revision_of"] for r in rows) and any(r["expired_at"] for r in rows)
    assert all(r["valid_at"].endswith("Z") and len(r["valid_at"]) == 27 for r in rows)


def test_import_needs_an_empty_store_and_a_real_export(svc: MemoryService, clock) -> None:
    build_history(svc, clock)
    records = read_export(export_lines(svc.store))
    with pytest.raises(StoreError, match="import needs an empty store"):
        import_records(svc.store, records, svc.embedder.embed)
    with pytest.raises(InvalidInput, match="line 2: not JSON"):
        read_export(["", "not json"])
    with pytest.raises(InvalidInput, match="unknown column 'color'"):
        read_export([json.dumps({"color": "red"})])
    line = next(iter(export_lines(svc.store)))
    with pytest.raises(InvalidInput, match="appears twice"):
        read_export([line, line])


@pytest.mark.slow
def test_cli_export_import_export_is_byte_identical(tmp_path: Path, svc: MemoryService, clock) -> None:
    ids = build_history(svc, clock)
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    out = cli("export", "--store", str(svc.store.path), "--out", str(first))
    assert out.returncode == 0, out.stderr
    copy = tmp_path / "copy"
    done = cli("import", str(first), "--store", str(copy))
    assert done.returncode == 0, done.stderr
    assert "imported" in done.stdout and "100%" not in done.stderr  # no progress bar when stderr is not a terminal
    again = cli("export", "--store", str(copy), "--out", str(second))
    assert again.returncode == 0, again.stderr
    assert first.read_bytes() == second.read_bytes()
    assert len(first.read_text().splitlines()) == svc.store.count()

    # The copy answers like the original: current value, past value, chain and provenance.
    twin = MemoryService(svc.settings.__class__(store_path=copy, model_path=model_dir(), project="proj"),
                         embedder=svc.embedder, clock=svc.clock)
    chain = history(twin, subject="proj", predicate="test_command")
    assert [e.object for e in chain.entries] == ["pytest", "nox -s tests"]
    assert chain.entries[1].supersedes == history(svc, subject="proj", predicate="test_command").entries[1].supersedes
    now = recall(twin, "how do we run the tests")
    assert now.results[0].object == "nox -s tests" and now.results[0].source_ids == [ids["b"]]
    assert twin.store.get(ids["c"]).expired_at is not None

    busy = cli("import", str(first), "--store", str(copy))
    assert busy.returncode == 2 and busy.stderr.startswith("error: import needs an empty store")


def test_purge_erases_the_text_from_every_file(svc: MemoryService, clock) -> None:
    ids = build_history(svc, clock)
    svc.store.optimize()  # a full-text index segment and a compacted version that hold the text
    remember(svc, "An unrelated later note about linting with ruff.")
    path = svc.store.path
    assert store_holds(path, MARKER), "the marker should be on disk before the purge"

    with svc.writing():
        plan = plan_purge(svc.store, query=MARKER.upper())
        assert ids["d"] in plan.ids and ids["d_fact"] in plan.ids
        # The fact that superseded the purged one survives; its predecessor's revision quoted the purged
        # value in its `reason`, which is blanked rather than deleted.
        assert ids["e_fact"] not in plan.ids
        report = erase(svc.store, plan)
    assert report.removed == len(plan.ids) and report.kept == svc.store.count()

    assert store_holds(path, MARKER) == []
    assert store_holds(path, "signing secret lives in vault") == []
    assert svc.store.find(Filter().ids(plan.ids)) == []
    # Everything else is intact and searchable (the indexes were rebuilt).
    assert recall(svc, "how do we run the tests").results[0].object == "nox -s tests"
    assert recall(svc, "linting with ruff").results[0].text == "An unrelated later note about linting with ruff."
    assert [e.object for e in history(svc, subject="proj", predicate="signing_secret_path").entries] == ["kms alias/release"]


@pytest.mark.slow
def test_cli_purge_asks_first_and_erases(svc: MemoryService, clock) -> None:
    ids = build_history(svc, clock)
    store = str(svc.store.path)
    refused = cli("purge", "--id", ids["d"], "--store", store, stdin="")
    assert refused.returncode == 2 and "pass --yes" in refused.stderr and "\n" not in refused.stderr.strip()
    assert store_holds(svc.store.path, MARKER)

    nothing = cli("purge", "--store", store)
    assert nothing.returncode == 2 and "say what to purge" in nothing.stderr

    done = cli("purge", "--id", ids["d"], "--store", store, "--yes", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert ids["d"] in out["ids"] and ids["d_fact"] in out["ids"]
    assert store_holds(svc.store.path, MARKER) == []

    project = cli("purge", "--project", "proj", "--store", store, "--yes")
    assert project.returncode == 0, project.stderr
    assert svc.store.count() == 0 and store_holds(svc.store.path, "nox -s tests") == []


def test_export_carries_anchors_conflicts_and_usage_and_reads_a_schema_1_export(svc: MemoryService, tmp_path: Path, embedder, clock) -> None:
    from chronomem.config import Settings
    from chronomem.consolidate.runner import Consolidator
    from chronomem.storage.migrate import convert_rows

    agent = remember(svc, "API port settled.", valid_from="2024-01-01", facts=[{"subject": "api", "predicate": "port", "object": "8080"}])
    remember(svc, "The api listens on port 9090.", valid_from="2024-02-01")
    note = remember(svc, "The release checklist lives in docs/release.md.", tags=["release"])
    runner = Consolidator(svc, llm=None)
    runner.run_to_completion()
    clock.advance(minutes=1)
    runner.record_hits([note.id])
    runner.run_to_completion()
    lines = list(export_lines(svc.store))
    rows = {r["id"]: r for r in map(json.loads, lines)}
    [fact] = [r for r in rows.values() if r["id"] == agent.facts[0].id]
    assert fact["conflicts_with"], "the other end of the conflict (its usage) is exported as a column"
    assert rows[note.id]["last_seen"] is not None and rows[note.id]["salience"] > 1.0
    assert all(not t.startswith("cm:") for r in rows.values() for t in r["tags"])

    fresh = MemoryService(Settings(store_path=tmp_path / "again", model_path=model_dir(), project="proj"), embedder=embedder, clock=clock)
    import_records(fresh.store, read_export(lines), fresh.embedder.embed_many)
    assert list(export_lines(fresh.store)) == lines, "a round trip keeps usage too"

    # A schema-1 export carried the marks as `cm:` tags: they come back as columns and usage.
    old = dict(rows[note.id], tags=["release", "cm:seen:2024-06-01T12:05:00Z", "cm:anchor:deploy/a=b.py=abc"])
    del old["anchors"], old["conflicts_with"], old["last_seen"]
    [record] = read_export([json.dumps(old)])
    assert record.tags == ["release"] and record.anchors == {"deploy/a=b.py": "abc"}
    assert record.usage is not None and record.usage.seen_at is not None and record.usage.seen_at.hour == 12
    assert convert_rows([{"id": "x", "tags": ["cm:conflict:y", "u"]}])[0][0]["conflicts_with"] == ["y"]
