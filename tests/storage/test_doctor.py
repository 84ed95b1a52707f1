"""A damaged or foreign store directory: one-line errors that name the recovery command, and
`chronomem doctor [--repair]` checking and rolling back real LanceDB stores damaged on disk."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from chronomem.config import DEFAULT_MODEL_DIM
from chronomem.errors import StoreError
from chronomem.service import MemoryService
from chronomem.storage import MemoryStore
from chronomem.storage.doctor import check, repair
from chronomem.tools import recall, remember
from tests.conftest import model_dir


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOMEM_")}
    env.update({"CHRONOMEM_MODEL_PATH": str(model_dir()), "HF_HUB_OFFLINE": "1"})
    return subprocess.run([sys.executable, "-m", "chronomem", *args], capture_output=True, text=True, env=env, timeout=120)


def one_error_line(out: subprocess.CompletedProcess) -> str:
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in out.stderr, out.stderr
    return lines[0]


def fill(svc: MemoryService, n: int = 3) -> list[str]:
    return [remember(svc, f"Note {i}: the build cache lives in /var/cache/build-{i}.").id for i in range(n)]


def newest_manifest(store: Path) -> Path:
    versions = store / "memories.lance" / "_versions"
    return min(versions.glob("*.manifest"), key=lambda p: int(p.stem))  # V2 naming: u64::MAX - version


def newest_data_file(store: Path) -> Path:
    return max((store / "memories.lance" / "data").glob("*.lance"), key=lambda p: p.stat().st_mtime_ns)


def test_foreign_directory_is_refused_in_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "notes.txt").write_text("my own files")
    with pytest.raises(StoreError, match="is not a chronomem store"):
        MemoryStore.open(home, DEFAULT_MODEL_DIM, "m")
    assert not (home / "memories.lance").exists(), "nothing may be created in someone else's directory"
    line = one_error_line(cli("recall", "anything", "--store", str(home)))
    assert "is not a chronomem store (it holds notes.txt)" in line
    assert check(home).ok is False
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert "is a file, not a directory" in one_error_line(cli("recall", "anything", "--store", str(a_file)))


@pytest.mark.slow
def test_truncated_manifest_then_doctor_repair(svc: MemoryService) -> None:
    ids = fill(svc)
    store = svc.store.path
    manifest = newest_manifest(store)
    manifest.write_bytes(manifest.read_bytes()[:40])

    line = one_error_line(cli("recall", "build cache", "--store", str(store)))
    assert f"run `chronomem doctor --store {store} --repair`" in line and ".rs:" not in line

    checked = cli("doctor", "--store", str(store))
    assert checked.returncode == 1 and "DAMAGED" in checked.stdout and "does not open" in checked.stdout

    fixed = cli("doctor", "--repair", "--store", str(store))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "healthy" in fixed.stdout and "moved unreadable manifest" in fixed.stdout
    assert list((store / "quarantine").rglob("*.manifest")), "the damaged manifest is kept aside, not deleted"

    reopened = MemoryService(svc.settings, embedder=svc.embedder, clock=svc.clock)
    assert reopened.store.ids_exist(ids[:-1]) == set(ids[:-1])  # only the last commit is lost
    assert recall(reopened, "where is the build cache").results


@pytest.mark.slow
def test_unreadable_data_file_is_reported_and_salvaged(svc: MemoryService) -> None:
    ids = fill(svc)
    store = svc.store.path
    newest_data_file(store).write_bytes(b"\x00garbage" * 8)

    line = one_error_line(cli("recall", "build cache", "--store", str(store)))
    assert line.startswith(f"error: the store at {store} is damaged") and "chronomem doctor" in line

    report = repair(store)
    assert report.ok and any("salvaged 2 rows" in a for a in report.actions), report.text()
    assert any(f"could not be recovered: {ids[-1]}" in a for a in report.actions), report.text()
    reopened = MemoryService(svc.settings, embedder=svc.embedder, clock=svc.clock)
    assert reopened.store.ids_exist(ids[:-1]) == set(ids[:-1])
    assert check(store).ok
