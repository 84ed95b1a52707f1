"""Where `doctor --repair` cannot help, doctor names what does (issue 46): a store whose table folder is gone
while a backup exists is brought back by `chronomem restore` of that backup — the command doctor prints, run as
printed — and a store path that is a file is said to be one, with what to point `--store` at. Real stores in temp
dirs, the real command through its `main()`."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from chronomem.cli import main
from chronomem.service import MemoryService
from chronomem.storage.backup import take_backup
from chronomem.storage.doctor import Checkup
from chronomem.tools import remember
from tests.conftest import model_dir


@pytest.fixture(autouse=True)
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CHRONOMEM_PROJECT", "CHRONOMEM_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CHRONOMEM_MODEL_PATH", str(model_dir()))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # the client-config check reads no real home
    monkeypatch.chdir(tmp_path)


def doctor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["doctor", *args])
    return code, capsys.readouterr().out


def test_a_store_without_its_table_folder_names_restore_and_the_restore_works(
    svc: MemoryService, capsys: pytest.CaptureFixture[str]
) -> None:
    kept = remember(svc, "The API listens on port 8080.", project="shop")
    backup = take_backup(svc.store)
    store = svc.store.path
    shutil.rmtree(store / "memories.lance")

    code, out = doctor(capsys, "--repair", "--store", str(store))
    assert code == 1
    [step] = [line for line in out.splitlines() if line.startswith("  next: ")]
    assert "doctor --store" not in step and "run `chronomem doctor" not in out  # no longer sent round in a circle
    command = re.search(r"`(chronomem restore [^`]+)`", step)
    assert command is not None and str(backup.path) in command.group(1), step
    assert "1 row" in step and f"version {backup.version}" in step

    assert main(["recall", "which port?", "--store", str(store), "--project", "shop"]) == 2
    assert "chronomem restore --store" in capsys.readouterr().err  # a read's error names it too

    argv = shlex.split(command.group(1))[1:]
    assert main(argv) == 0, capsys.readouterr()
    capsys.readouterr()
    code, out = doctor(capsys, "--store", str(store))
    assert f"store {store}: healthy" in out, out
    assert main(["recall", "which port does the API listen on?", "--store", str(store), "--project", "shop"]) == 0
    assert kept.id in capsys.readouterr().out


def test_a_store_path_that_is_a_file_is_said_plainly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a store")
    code, out = doctor(capsys, "--repair", "--store", str(a_file))
    assert code == 1
    assert f"store {a_file}: NOT A STORE" in out and "is a file, not a directory" in out
    [step] = [line for line in out.splitlines() if line.startswith("  next: ")]
    assert "must name a directory" in step and "cannot make a file a store" in step
    assert "run `chronomem doctor" not in out


def test_a_backup_file_given_as_the_store_is_pointed_at_restore(
    svc: MemoryService, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    remember(svc, "The API listens on port 8080.", project="shop")
    backup = take_backup(svc.store)
    code, out = doctor(capsys, "--store", str(backup.path))
    assert code == 1 and "NOT A STORE" in out
    assert f"`chronomem restore --store DIR {backup.path}`" in out


def test_a_repair_that_did_not_do_it_names_restore_replace_of_the_newest_backup() -> None:
    report = Checkup("/s", backup="/s/backups/backup-x-v3.parquet", actions=["salvaged 0 rows"])
    report.fail("version 4 does not read")
    assert "next: `chronomem restore --store /s --replace /s/backups/backup-x-v3.parquet`" in report.text()
    bare = Checkup("/s", actions=["salvaged 0 rows"])
    bare.fail("version 4 does not read")
    assert "chronomem restore" not in bare.text()  # no backup: nothing to restore from
