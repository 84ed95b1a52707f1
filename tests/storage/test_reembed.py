"""storage/reembed.py on real LanceDB stores: a move to another model (and dimension) rewrites the vectors and
nothing else, resumes after an interruption from what it staged, takes in rows written meanwhile, and can be
undone by restoring the backup it took. The embedding functions here are deterministic stand-ins of two
dimensions (the module takes the function; tests/test_cli_reembed.py moves stores between the real models)."""

from __future__ import annotations

import contextlib
import hashlib
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from chronomem.errors import StoreError
from chronomem.records import UTC, MemoryRecord, new_id
from chronomem.search.engine import open_store
from chronomem.storage import Filter, MemoryStore
from chronomem.storage.backup import list_backups, read_backup
from chronomem.storage.reembed import PART_TEXTS, reembed, staging_dir, survey
from chronomem.storage.schema import stored_model

T0 = datetime(2024, 1, 1, tzinfo=UTC)
CARRIED = [
    "id", "kind", "project", "content", "subject", "predicate", "object", "valid_at", "invalid_at", "created_at",
    "expired_at", "supersedes", "revision_of", "source_ids", "source", "tags", "salience", "confidence", "paths",
    "commit", "reason",
]


def fake(dim: int, salt: str):
    """A stand-in model: a unit vector from the text's hash, `dim`-d; it counts the texts it embeds."""

    def embed(texts: list[str]) -> list[list[float]]:
        embed.texts += len(texts)  # type: ignore[attr-defined]
        out = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(f"{salt}|{text}".encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
            out.append((v / np.linalg.norm(v)).tolist())
        return out

    embed.texts = 0  # type: ignore[attr-defined]
    return embed


old_model, new_model = fake(8, "old"), fake(16, "new")
nolock = contextlib.nullcontext


def make_store(path: Path, n: int = 40, model: str = "old", dim: int = 8) -> list[MemoryRecord]:
    store = open_store(path, dim, model)  # writes need the search component's tokenizer (the rows' terms)
    embed = fake(dim, model)
    records = []
    for i in range(n):
        at = T0 + timedelta(minutes=i)
        if i % 5 == 0:
            r = MemoryRecord(id=new_id(at), kind="fact", project="p", content=f"service {i} listens on port {8000 + i}.",
                             subject=f"service {i}", predicate="port", object=str(8000 + i), valid_at=at, created_at=at,
                             source_ids=["01SRC"], tags=["t"], salience=0.5, paths=["src/a.py"], commit="abc123")
        else:
            r = MemoryRecord(id=new_id(at), kind="chunk", project="q" if i % 2 else "p",
                             content=f"note number {i} about the deploy" if i % 7 else "a repeated note", valid_at=at,
                             created_at=at, invalid_at=at + timedelta(days=1) if i % 3 == 0 else None,
                             expired_at=at + timedelta(days=2) if i % 11 == 0 else None,
                             reason="changed" if i % 3 == 0 else None)
        records.append(r)
    vectors = embed([r.content for r in records])
    records = [r.copy(vector=v, embed_model=model) for r, v in zip(records, vectors, strict=True)]
    store.add(records)
    return records


def rows(path: Path, dim: int, model: str) -> dict[str, dict]:
    table = MemoryStore.open(path, dim, model, read_index_rows=0).table.to_arrow()
    return {row["id"]: row for row in table.to_pylist()}


def test_a_move_to_another_dimension_rewrites_only_the_vectors(tmp_path: Path) -> None:
    path = tmp_path / "s"
    make_store(path)
    before = rows(path, 8, "old")
    seen = survey(path, "new", 16)
    assert (seen.model, seen.dim, seen.rows, seen.stale, seen.staged) == ("old", 8, 40, 40, 0) and not seen.up_to_date

    embed = fake(16, "new")
    report = reembed(path, embed, "new", 16, nolock)
    assert (report.from_model, report.from_dim, report.model, report.dim) == ("old", 8, "new", 16)
    assert report.rows == report.embedded == 40 and report.resumed == report.kept == 0
    distinct = len({r["content"] for r in before.values()})
    assert report.texts == embed.texts == distinct < 40  # a text shared by rows is embedded once

    with pytest.raises(StoreError, match="chronomem reembed"):
        MemoryStore.open(path, 8, "old")
    after = rows(path, 16, "new")
    assert sorted(after) == sorted(before)
    for row_id, row in after.items():
        assert {k: row[k] for k in CARRIED} == {k: before[row_id][k] for k in CARRIED}
        assert row["embed_model"] == "new"
        assert np.allclose(row["vector"], new_model([row["content"]])[0])
    store = MemoryStore.open(path, 16, "new")
    assert stored_model(store.table.schema) == ("new", 16)
    assert store.count(Filter().projects(["p"])) == sum(1 for r in before.values() if r["project"] == "p")

    # the backup taken first holds the old vectors; one of the new state follows it; no staging is left
    backups = list_backups(path)
    assert [stored_model(read_backup(b.path).schema) for b in backups] == [("old", 8), ("new", 16)]
    assert report.backup == str(backups[0].path) and report.after_backup == str(backups[1].path)
    assert not staging_dir(path).exists()

    again = reembed(path, fake(16, "new"), "new", 16, nolock)
    assert again.already and again.embedded == 0 and len(list_backups(path)) == 2


def test_an_interrupted_run_resumes_from_what_it_staged(tmp_path: Path) -> None:
    path = tmp_path / "s"
    make_store(path, n=3 * PART_TEXTS)
    before = rows(path, 8, "old")
    calls = {"n": 0}
    good = fake(16, "new")

    def failing(texts: list[str]) -> list[list[float]]:
        calls["n"] += 1
        if calls["n"] > PART_TEXTS // 64 + 1:  # the first part is written, the second is not
            raise RuntimeError("killed")
        return good(texts)

    with pytest.raises(RuntimeError, match="killed"):
        reembed(path, failing, "new", 16, nolock)
    assert len(list(staging_dir(path).glob("part-*.parquet"))) == 1
    assert rows(path, 8, "old") == before  # the table is untouched until the swap
    seen = survey(path, "new", 16)
    assert PART_TEXTS <= seen.staged < seen.stale == len(before)  # rows sharing a text share its staged vector

    rest = fake(16, "new")
    report = reembed(path, rest, "new", 16, nolock)
    assert report.resumed == seen.staged and report.embedded == len(before) - seen.staged
    assert rest.texts == len({r["content"] for r in before.values()}) - PART_TEXTS
    after = rows(path, 16, "new")
    assert sorted(after) == sorted(before)
    for row in after.values():
        assert np.allclose(row["vector"], new_model([row["content"]])[0])


def test_staged_vectors_of_another_target_are_discarded(tmp_path: Path) -> None:
    path = tmp_path / "s"
    make_store(path, n=2 * PART_TEXTS)
    calls = {"n": 0}
    other = fake(16, "other")

    def failing(texts: list[str]) -> list[list[float]]:
        calls["n"] += 1
        if calls["n"] > PART_TEXTS // 64:
            raise RuntimeError("stop")
        return other(texts)

    with pytest.raises(RuntimeError):
        reembed(path, failing, "other", 16, nolock)
    assert survey(path, "new", 16).staged == 0
    report = reembed(path, fake(16, "new"), "new", 16, nolock)
    assert report.resumed == 0
    for row in rows(path, 16, "new").values():
        assert np.allclose(row["vector"], new_model([row["content"]])[0])


def test_rows_written_while_staging_are_moved_too(tmp_path: Path) -> None:
    """Another process remembers and forgets while the vectors are made: the swap keeps both."""
    path = tmp_path / "s"
    records = make_store(path)
    writer = open_store(path, 8, "old")
    late = MemoryRecord(id=new_id(), kind="chunk", project="p", content="written during the move", valid_at=T0,
                        created_at=T0, vector=old_model(["written during the move"])[0], embed_model="old")
    inner = fake(16, "new")
    done = {"wrote": False}

    def embed(texts: list[str]) -> list[list[float]]:
        if not done["wrote"]:
            done["wrote"] = True
            writer.add([late])
            writer.upsert([MemoryStore.expired(records[1], now=T0 + timedelta(days=9), reason="wrong")])
        return inner(texts)

    report = reembed(path, embed, "new", 16, nolock)
    after = rows(path, 16, "new")
    assert report.rows == 41 and late.id in after
    assert np.allclose(after[late.id]["vector"], new_model([late.content])[0])
    assert after[records[1].id]["expired_at"] == T0 + timedelta(days=9) and after[records[1].id]["reason"] == "wrong"


def test_same_dimension_keeps_vectors_the_target_already_made(tmp_path: Path) -> None:
    path = tmp_path / "s"
    make_store(path, n=10, model="old", dim=8)
    store = open_store(path, 8, "old")
    mine = MemoryRecord(id=new_id(), kind="chunk", project="p", content="already new", valid_at=T0, created_at=T0,
                        vector=fake(8, "same")(["already new"])[0], embed_model="same")
    store.add([mine])
    embed = fake(8, "same")
    report = reembed(path, embed, "same", 8, nolock)
    assert report.kept == 1 and report.embedded == 10 and embed.texts == 10  # ten distinct texts
    assert stored_model(MemoryStore.open(path, 8, "same").table.schema) == ("same", 8)


def test_a_missing_or_foreign_store_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no store at"):
        reembed(tmp_path / "nothing", fake(16, "new"), "new", 16, nolock)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("x")
    with pytest.raises(StoreError, match="is not a chronomem store"):
        survey(tmp_path / "other", "new", 16)
    assert not (tmp_path / "nothing").exists()


def test_restoring_the_backup_taken_first_undoes_the_move(tmp_path: Path) -> None:
    from chronomem.storage.doctor import check, repair, restore_backup

    path = tmp_path / "s"
    make_store(path)
    before = rows(path, 8, "old")
    report = reembed(path, fake(16, "new"), "new", 16, nolock)
    healthy = check(path)
    assert healthy.ok and (healthy.model, healthy.dim, healthy.row_models) == ("new", 16, {"new": 40})
    assert "vectors from new (16-d)" in healthy.text()

    assert report.backup is not None
    restore_backup(path, report.backup, replace=True)
    assert rows(path, 8, "old") == before  # vectors and model as they were
    assert (check(path).model, check(path).dim) == ("old", 8)
    # the newest backup is now the new model's (restore backs the replaced state up): a repair does not merge it
    assert stored_model(read_backup(list_backups(path)[-1].path).schema) == ("new", 16)
    assert repair(path).ok


def test_a_stop_after_the_swap_is_finished_by_the_next_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed between the swap's commit and the clean-up: the store is on the new model already; a rerun embeds
    nothing, takes the backup of the new state and removes the staging folder."""
    import chronomem.storage.reembed as module

    path = tmp_path / "s"
    make_store(path)
    finish = module._finish

    def stop(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(module, "_finish", stop)
    with pytest.raises(KeyboardInterrupt):
        reembed(path, fake(16, "new"), "new", 16, nolock)
    assert staging_dir(path).exists() and survey(path, "new", 16).up_to_date
    monkeypatch.setattr(module, "_finish", finish)

    embed = fake(16, "new")
    report = reembed(path, embed, "new", 16, nolock)
    assert report.already and embed.texts == 0 and report.after_backup is not None
    assert not staging_dir(path).exists()
    assert [stored_model(read_backup(b.path).schema) for b in list_backups(path)] == [("old", 8), ("new", 16)]
