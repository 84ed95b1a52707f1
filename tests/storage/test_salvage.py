"""Orphan salvage (issue 27, nothing lost silently): a deleted manifest leaves the data files of the writes it
committed on disk; `doctor --repair` reads them back (storage/salvage.py), never a row purged on purpose, and
names by id what still does not read. Real stores in temp dirs, damaged on disk."""

from __future__ import annotations

import pytest

from chronomem.service import MemoryService
from chronomem.storage import salvage
from chronomem.storage.doctor import check, repair
from chronomem.tools import forget, remember
from tests.storage.test_doctor import cli
from tests.storage.test_integrity import N, fill, manifests_newest_first, reopen


def newest_data_file(store):
    return max((store / "memories.lance" / "data").glob("*.lance"), key=lambda p: p.stat().st_mtime_ns)


@pytest.mark.slow
def test_deleted_newest_manifest_loses_nothing(svc: MemoryService) -> None:
    ids = fill(svc)
    store = svc.store.path
    manifests_newest_first(store)[0].unlink()
    assert not check(store).ok

    fixed = repair(store)
    assert fixed.ok and fixed.rows == N, fixed.text()
    assert any("recovered 1 memory from" in a and ids[-1] in a for a in fixed.actions), fixed.text()
    assert not any("could not be recovered" in a for a in fixed.actions), fixed.text()
    assert reopen(svc).store.ids_exist(ids) == set(ids)
    assert check(store).ok


@pytest.mark.slow
def test_deleted_middle_manifests_lose_nothing(svc: MemoryService) -> None:
    ids = fill(svc)
    store = svc.store.path
    for manifest in manifests_newest_first(store)[:-1]:  # all but the oldest (the empty table)
        manifest.unlink()
    assert check(store).rows == 0

    fixed = repair(store)
    assert fixed.ok and fixed.rows == N, fixed.text()
    assert any(f"recovered {N} memories from {N} data files" in a for a in fixed.actions), fixed.text()
    kept = reopen(svc).store
    assert kept.ids_exist(ids) == set(ids)
    assert kept.get(ids[3]).content.startswith("Note 3:")


def test_the_latest_state_of_a_salvaged_row_wins(svc: MemoryService) -> None:
    ids = fill(svc, 4)
    forget(svc, ids[1], "moved to S3")  # an update: the row's old state stays in an older data file
    store = svc.store.path
    for manifest in manifests_newest_first(store)[:-1]:
        manifest.unlink()

    fixed = repair(store)
    assert fixed.ok, fixed.text()
    kept = reopen(svc).store
    assert kept.ids_exist(ids) == set(ids)
    row = kept.get(ids[1])
    assert row.expired_at is not None or row.invalid_at is not None


@pytest.mark.slow
def test_a_purged_project_never_comes_back(svc: MemoryService) -> None:
    from dataclasses import replace

    secret = MemoryService(replace(svc.settings, project="secret"), embedder=svc.embedder, clock=svc.clock)
    gone = [remember(secret, f"Secret {i}: the vault code is {1000 + i}.").id for i in range(3)]
    kept_ids = fill(svc, 3)
    store = svc.store.path
    stale = {p.name: p.read_bytes() for p in (store / "memories.lance" / "data").glob("*.lance")}
    out = cli("purge", "--project", "secret", "--yes", "--store", str(store))
    assert out.returncode == 0, out.stderr
    assert set(gone) <= salvage.dropped_ids(store)
    # the purge's clean-up deleted the old files; put them back as if it had failed, then lose the manifests
    for name, data in stale.items():
        (store / "memories.lance" / "data" / name).write_bytes(data)
    later = fill(svc, 2, start=10)
    for manifest in manifests_newest_first(store)[:-1]:
        manifest.unlink()

    fixed = repair(store)
    assert fixed.ok, fixed.text()
    assert any("purged or restored-away" in a for a in fixed.actions), fixed.text()
    assert not any("could not be recovered" in a for a in fixed.actions), fixed.text()
    after = reopen(svc).store
    assert after.ids_exist(gone) == set()
    assert after.ids_exist(kept_ids + later) == set(kept_ids + later)


@pytest.mark.slow
def test_a_truncated_orphan_file_names_what_it_held(svc: MemoryService) -> None:
    ids = fill(svc)
    store = svc.store.path
    for manifest in manifests_newest_first(store)[:-1]:
        manifest.unlink()
    damaged = newest_data_file(store)  # the last write's file
    damaged.write_bytes(damaged.read_bytes()[:100])

    fixed = repair(store)
    assert fixed.ok and fixed.rows == N - 1, fixed.text()
    assert any(f"the data file {damaged.name}" in a and "does not read" in a for a in fixed.actions), fixed.text()
    assert any(f"1 acknowledged memory could not be recovered: {ids[-1]}" in a for a in fixed.actions), fixed.text()
    assert reopen(svc).store.ids_exist(ids) == set(ids[:-1])


def test_a_healthy_store_has_nothing_to_salvage(svc: MemoryService) -> None:
    fill(svc, 3)
    store = svc.store.path
    table = svc.store._table
    assert salvage.orphan_files(store, int(table.version)) == []
    assert repair(store).ok and not repair(store).actions


@pytest.mark.slow
def test_rows_a_restore_left_out_do_not_come_back(svc: MemoryService) -> None:
    from chronomem.storage.backup import take_backup

    ids = fill(svc, 3)
    made = take_backup(svc.store)
    extra = fill(svc, 2, start=10)
    out = cli("restore", str(made.path), "--replace", "--store", str(svc.store.path))
    assert out.returncode == 0, out.stderr
    assert set(extra) <= salvage.dropped_ids(svc.store.path)
    store = svc.store.path
    later = fill(reopen(svc), 1, start=20)
    manifests_newest_first(store)[0].unlink()  # the write after the restore: its file is an orphan

    fixed = repair(store)
    assert fixed.ok, fixed.text()
    after = reopen(svc).store
    assert after.ids_exist(ids + later) == set(ids + later)
    assert after.ids_exist(extra) == set()


def test_every_manifest_deleted_loses_nothing(svc: MemoryService) -> None:
    ids = fill(svc, 5)
    forget(svc, ids[2], "moved to S3")
    store = svc.store.path
    for manifest in manifests_newest_first(store):
        manifest.unlink()
    assert not check(store).ok

    fixed = repair(store)
    assert fixed.ok, fixed.text()
    assert any("no manifest was left" in a for a in fixed.actions), fixed.text()
    assert list((store / "quarantine").glob("*/memories.lance/data/*.lance"))  # moved aside, not deleted
    kept = reopen(svc).store
    assert kept.ids_exist(ids) == set(ids)
    row = kept.get(ids[2])
    assert row.expired_at is not None or row.invalid_at is not None
