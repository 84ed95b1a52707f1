"""`chronomem restore --replace` says what it leaves out (issue 46): the memories written after the backup — ids and
first words, at most ten listed, all counted — and where the replaced state (which still holds them) was backed
up; without --replace the refusal already counts and names them. Real store in a temp dir, the real command
through its `main()`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from chronomem.cli import main
from chronomem.service import MemoryService
from chronomem.storage.backup import take_backup
from chronomem.storage.doctor import MAX_LEFT_OUT_LISTED
from chronomem.tools import forget, remember
from tests.conftest import model_dir


@pytest.fixture(autouse=True)
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CHRONOMEM_PROJECT", "CHRONOMEM_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CHRONOMEM_MODEL_PATH", str(model_dir()))
    monkeypatch.chdir(tmp_path)


def test_restore_names_what_was_written_after_the_backup(svc: MemoryService, clock, capsys) -> None:
    old = remember(svc, "The API listens on port 8080.", project="shop")
    backup = take_backup(svc.store)
    clock.advance(hours=1)
    note = remember(svc, "Deploys go out on Tuesdays, after the weekly review of the release notes by the on-call "
                         "engineer and the product owner together.", project="shop")
    clock.advance(hours=1)
    fact = remember(svc, "The API moved to port 9090.", project="shop",
                    facts=[{"subject": "api", "predicate": "port", "object": "9090"}])
    clock.advance(hours=1)
    forget(svc, old.id, "moved")  # a change to a memory the backup holds: counted, not listed
    store = ["--store", str(svc.store.path)]

    assert main(["restore", *store]) == 2
    refusal = capsys.readouterr().err
    assert "it would leave out 2 notes and 1 fact written after the backup" in refusal
    assert note.id in refusal and fact.id in refusal and len(refusal.strip().splitlines()) == 1

    assert main(["restore", "--replace", *store]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"restored 1 rows from {backup.path}")
    assert out[1] == "left out 2 notes and 1 fact written after the backup, and 1 later change to older memories (forgets, ended facts):"
    listed = out[2:5]
    assert listed[0] == f"  {fact.id} note [shop] The API moved to port 9090."  # newest note first, facts after
    assert listed[1].startswith(f"  {note.id} note [shop] Deploys go out on Tuesdays, after the weekly") and listed[1].endswith("…")
    assert len(listed[1]) < 140
    assert re.fullmatch(rf"  {fact.facts[0].id} fact \[shop\] .*9090.*", listed[2]), listed[2]
    kept = re.search(r"is kept in (\S+) ", out[5])
    assert kept is not None, out

    capsys.readouterr()
    assert main(["recall", "when do deploys go out?", "--project", "shop", *store]) == 0
    assert note.id not in capsys.readouterr().out  # gone from the store, as listed
    assert main(["restore", "--replace", kept.group(1), *store, "--json"]) == 0  # the undo the output names
    undone = json.loads(capsys.readouterr().out)
    assert undone["left_out"]["notes"] == 0 and undone["left_out"]["facts"] == 0
    assert main(["recall", "when do deploys go out?", "--project", "shop", *store]) == 0
    assert note.id in capsys.readouterr().out


def test_the_list_is_bounded_and_counted(svc: MemoryService, clock, capsys) -> None:
    remember(svc, "The API listens on port 8080.", project="shop")
    take_backup(svc.store)
    written = []
    for i in range(MAX_LEFT_OUT_LISTED + 3):
        clock.advance(minutes=1)
        written.append(remember(svc, f"Build {i} of the nightly job failed on runner {i}.", project="shop").id)
    assert main(["restore", "--replace", "--store", str(svc.store.path), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["left_out"]["notes"] == MAX_LEFT_OUT_LISTED + 3
    assert [m["id"] for m in said["left_out"]["listed"]] == written[::-1][:MAX_LEFT_OUT_LISTED]
    assert said["replaced_backup"]

    take_backup(svc.store)  # nothing written since: a restore leaves nothing out and says nothing of it
    assert main(["restore", "--replace", "--store", str(svc.store.path)]) == 0
    assert capsys.readouterr().out.count("\n") == 1
