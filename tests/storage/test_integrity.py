"""Nothing lost silently (issue 27): real stores damaged on disk the ways sync tools, disks and hands do it.

A lost newest manifest, lost middle manifests and a truncated data file are each detected against the
acknowledgement ledger; repair keeps every row that still reads (what the newest backup holds, and the rows
of data files no surviving manifest references: test_salvage.py) and names by id what it could not recover; a write is acknowledged only once it reads back; a backup
restores every acknowledged write up to it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from chronomem.errors import StoreError
from chronomem.service import MemoryService
from chronomem.storage import ledger
from chronomem.storage.backup import latest_backup, list_backups, take_backup
from chronomem.storage.doctor import check, repair
from chronomem.tools import forget, remember
from tests.storage.test_doctor import cli, one_error_line

N = 30


def fill(svc: MemoryService, n: int = N, start: int = 0) -> list[str]:
    return [remember(svc, f"Note {i}: the build cache of job {i} lives in /var/cache/build-{i}.").id
            for i in range(start, start + n)]


def manifests_newest_first(store: Path) -> list[Path]:
    return sorted((store / "memories.lance" / "_versions").glob("*.manifest"), key=lambda p: int(p.stem))


def oldest_data_file(store: Path) -> Path:
    return min((store / "memories.lance" / "data").glob("*.lance"), key=lambda p: p.stat().st_mtime_ns)


def reopen(svc: MemoryService) -> MemoryService:
    return MemoryService(svc.settings, embedder=svc.embedder, clock=svc.clock)


def test_every_acknowledged_write_is_in_the_ledger(svc: MemoryService) -> None:
    ids = fill(svc, 3)
    acked = ledger.read(svc.store.path)
    assert acked is not None and acked.version == svc.store._table.version and acked.rows == 3
    assert acked.recent_ids() == ids


@pytest.mark.slow
def test_deleted_newest_manifest_is_a_named_regression(svc: MemoryService) -> None:
    ids = fill(svc)
    store = svc.store.path
    manifests_newest_first(store)[0].unlink()

    report = check(store)
    assert not report.ok and report.rows == N - 1, report.text()
    (problem,) = report.problems
    assert "but version" in problem and "was acknowledged: 1 memory missing" in problem and ids[-1] in problem
    with pytest.raises(StoreError, match="has lost acknowledged writes"):
        reopen(svc).store  # every start checks, and refuses to go on silently
    line = one_error_line(cli("recall", "build cache", "--store", str(store)))
    assert "1 memory missing" in line and "doctor" in line

    fixed = repair(store)  # the last write's data file is still on disk: it is read back (storage/salvage.py)
    assert fixed.ok and fixed.rows == N, fixed.text()
    assert any(f"recovered 1 memory from 1 data file no surviving manifest references (1 acknowledged: {ids[-1]})" in a
               for a in fixed.actions), fixed.text()
    assert reopen(svc).store.ids_exist(ids) == set(ids)
    assert "could not recover" not in check(store).text()


def test_deleted_middle_manifests_with_a_backup_keep_everything(svc: MemoryService) -> None:
    ids = fill(svc)
    store = svc.store.path
    take_backup(svc.store)
    later = fill(svc, 2, start=N)
    for manifest in manifests_newest_first(store)[:-1]:  # all but the oldest
        manifest.unlink()

    report = check(store)
    assert not report.ok and f"{N + 2} rows) was acknowledged" in report.problems[0], report.text()
    fixed = repair(store)  # up to the backup from it, the two writes after it from their orphaned data files
    assert fixed.ok and fixed.rows == N + 2, fixed.text()
    assert any(f"{N} from the backup" in a and "2 from data files no manifest references" in a for a in fixed.actions)
    assert any(f"(2 acknowledged: {', '.join(later)})" in a for a in fixed.actions), fixed.text()
    assert not any("could not be recovered" in a for a in fixed.actions), fixed.text()
    assert reopen(svc).store.ids_exist(ids + later) == set(ids + later)


@pytest.mark.slow
def test_damaged_oldest_data_file_keeps_every_row_that_reads(svc: MemoryService) -> None:
    ids = fill(svc)
    store = svc.store.path
    first = oldest_data_file(store)
    first.write_bytes(first.read_bytes()[:100])  # truncated

    report = check(store)
    assert not report.ok and "does not read" in report.problems[0]
    assert f"{N - 1} of {N} rows still read" in report.text()
    fixed = repair(store)
    assert fixed.ok and fixed.rows == N - 1, fixed.text()
    assert any(f"could not be recovered: {ids[0]}" in a for a in fixed.actions), fixed.text()
    assert reopen(svc).store.ids_exist(ids) == set(ids[1:])


def test_a_write_into_a_damaged_store_is_kept_by_repair(svc: MemoryService) -> None:
    ids = fill(svc, 5)
    store = svc.store.path
    first = oldest_data_file(store)
    first.write_bytes(b"\x00garbage" * 8)
    late = remember(svc, "Written after the damage: the release train leaves on Thursdays.").id
    assert svc.store.ids_exist([late]) == {late}  # acknowledged only because it read back

    fixed = repair(store)
    assert fixed.ok
    assert reopen(svc).store.ids_exist(ids + [late]) == set(ids[1:] + [late])


def test_repair_keeps_the_latest_state_of_each_row(svc: MemoryService) -> None:
    ids = fill(svc, 4)
    take_backup(svc.store)  # the backup still has ids[1] live
    forget(svc, ids[1], "moved to S3")
    store = svc.store.path
    first = oldest_data_file(store)
    first.write_bytes(first.read_bytes()[:100])

    fixed = repair(store)
    assert fixed.ok, fixed.text()
    kept = reopen(svc).store
    assert kept.ids_exist(ids) == set(ids)  # ids[0] comes back from the backup
    assert kept.get(ids[1]).expired_at is not None or kept.get(ids[1]).invalid_at is not None


@pytest.mark.slow
def test_restore_gives_back_every_write_up_to_the_backup(svc: MemoryService, tmp_path: Path) -> None:
    ids = fill(svc, 6)
    made = take_backup(svc.store)
    assert latest_backup(svc.store.path) == made and made.rows == 6
    target = tmp_path / "restored"
    out = cli("restore", str(made.path), "--store", str(target))
    assert out.returncode == 0, out.stderr
    assert reopen(svc).store.ids_exist(ids) == set(ids)
    from dataclasses import replace

    moved = MemoryService(replace(svc.settings, store_path=target), embedder=svc.embedder, clock=svc.clock)
    assert moved.store.ids_exist(ids) == set(ids) and moved.store.count() == 6
    assert "memory" in moved.store.get(ids[0]).content or moved.store.get(ids[0]).content.startswith("Note 0")

    # A store that holds memories is replaced only when asked, and its state is backed up first.
    held = cli("restore", "--store", str(svc.store.path))
    assert "pass --replace" in one_error_line(held)
    fill(svc, 1, start=99)
    assert cli("restore", "--replace", "--store", str(svc.store.path)).returncode == 0
    assert reopen(svc).store.count() == 6 and len(list_backups(svc.store.path)) == 2
    assert check(svc.store.path).ok


@pytest.mark.slow
def test_doctor_reports_the_age_of_the_last_backup(svc: MemoryService) -> None:
    fill(svc, 2)
    assert "no backup yet" in check(svc.store.path).text()
    out = cli("backup", "--store", str(svc.store.path))
    assert out.returncode == 0 and "backed up 2 rows" in out.stdout, out.stderr
    assert "last backup 0 s ago" in check(svc.store.path).text() or "s ago (version" in check(svc.store.path).text()


def test_the_consolidator_takes_a_backup_when_idle(svc: MemoryService) -> None:
    import time

    from chronomem.consolidate.runner import Consolidator

    fill(svc, 2)
    runner = Consolidator(svc, idle_seconds=0.05, llm=None)
    runner.call_started()
    runner.call_finished()
    deadline = time.monotonic() + 60
    while not runner.backups and time.monotonic() < deadline:
        time.sleep(0.05)
    runner.stop()
    assert runner.backups and runner.backups[0].rows == 2 and "backup" not in [s.did for s in runner.steps]


def test_a_scheduled_backup_waits_while_calls_flow_and_is_abandoned_when_the_server_stops(
    svc: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backup reads and writes the whole table; at 1M rows that took the cores from the calls (latency.md):
    it goes a batch at a time and pauses between batches while a call is in flight."""
    import threading

    from chronomem.consolidate.runner import Consolidator
    from chronomem.storage import backup

    monkeypatch.setattr(backup, "BACKUP_BATCH_ROWS", 2)  # several batches from a few rows
    ids = fill(svc, 5)
    runner = Consolidator(svc, idle_seconds=0.05, llm=None)
    runner.call_started()  # a call in flight: the backup may start its file but writes no batch
    taking = threading.Thread(target=runner._scheduled_backup)
    taking.start()
    taking.join(timeout=1.0)
    assert taking.is_alive() and not list_backups(svc.store.path)
    runner.call_finished(wake=False)
    taking.join(timeout=60)
    assert not taking.is_alive() and len(runner.backups) == 1
    made = runner.backups[0]
    assert made.rows == 5 and sorted(backup.read_backup(made.path).column("id").to_pylist()) == sorted(ids)

    fill(svc, 1, start=5)
    runner = Consolidator(svc, idle_seconds=0.05, llm=None, backup_interval=backup.timedelta(0))
    runner.call_started()
    taking = threading.Thread(target=runner._scheduled_backup)
    taking.start()
    taking.join(timeout=1.0)
    runner.stop()  # the server stops while the backup waits: abandoned, no half-written file left
    taking.join(timeout=60)
    assert not taking.is_alive() and not runner.backups
    assert [b.path for b in list_backups(svc.store.path)] == [made.path]
    assert not [p for p in backup.backup_dir(svc.store.path).iterdir() if p.name.endswith(".tmp")]


@pytest.mark.slow
def test_purge_drops_backups_holding_the_text(svc: MemoryService) -> None:
    # personal data a user wants gone (a secret would already be redacted on the way in)
    remember(svc, "The customer's home address is 12 Quillfeather Row.")
    fill(svc, 2)
    take_backup(svc.store)
    out = cli("purge", "--query", "Quillfeather", "--yes", "--store", str(svc.store.path))
    assert out.returncode == 0, out.stderr
    for path in svc.store.path.rglob("*"):
        if path.is_file():
            assert b"quillfeather" not in path.read_bytes().lower(), path
    assert check(svc.store.path).ok and latest_backup(svc.store.path).rows == 2


def test_a_store_copied_without_its_ledger_still_opens(svc: MemoryService, tmp_path: Path) -> None:
    fill(svc, 2)
    copy = tmp_path / "copy"
    shutil.copytree(svc.store.path, copy)
    (copy / ledger.LEDGER_NAME).unlink()
    assert check(copy).ok
