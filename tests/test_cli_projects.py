"""`chronomem projects`: every project key of the store with its name and counts, from one scan;
and, from a real shell, the memories of a repository and of its clone landing in one project."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chronomem.project import detect_project
from chronomem.service import MemoryService
from chronomem.storage.filters import Filter
from chronomem.tools import forget, remember
from tests.conftest import model_dir
from tests.gitrepo import IDENTITY

GIT_ENV = IDENTITY  # a fixed author and no user/system git config: see tests/gitrepo.py


def test_project_stats_counts_live_rows_and_history(svc: MemoryService, clock) -> None:
    remember(svc, "We run tests with pytest", valid_from="2024-01-10",
             facts=[{"subject": "proj", "predicate": "test_command", "object": "pytest"}])
    clock.advance(hours=1)
    remember(svc, "Tests now run with nox -s tests", valid_from="2024-03-01",
             facts=[{"subject": "proj", "predicate": "test_command", "object": "nox -s tests"}])
    clock.advance(hours=1)
    gone = remember(svc, "The old prototype used SQLite", project="other")
    remember(svc, "The prototype's UI is in Svelte", project="other")
    clock.advance(hours=1)
    forget(svc, gone.id, "it never shipped")
    remember(svc, "I prefer tabs to spaces", project="global")
    newest = clock.now

    stats = svc.store.project_stats(svc.now())
    assert set(stats) == {"proj", "other", "global"}
    now = svc.now()
    for project, row in stats.items():
        only = Filter().projects([project])
        assert row["rows"] == svc.store.count(only)
        assert row["live_chunks"] == svc.store.count(only.live(now, now).kinds(["chunk"]))
        assert row["live_facts"] == svc.store.count(only.live(now, now).kinds(["fact"]))
    assert stats["proj"]["live_facts"] == 1  # nox; pytest is history
    assert stats["proj"]["rows"] > stats["proj"]["live_facts"] + stats["proj"]["live_chunks"]
    assert (stats["other"]["live_chunks"], stats["other"]["live_facts"]) == (1, 0)
    assert stats["other"]["rows"] >= 3  # the forgotten chunk stays, closed
    assert stats["global"] == {"rows": 1, "live_chunks": 1, "live_facts": 0, "newest": newest}


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **GIT_ENV})


def chronomem(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOMEM_")}
    env.update(CHRONOMEM_MODEL_PATH=str(model_dir()), HF_HUB_OFFLINE="1", **GIT_ENV)
    return subprocess.run([sys.executable, "-m", "chronomem", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.slow
def test_projects_command_from_a_repository_and_its_clone(tmp_path: Path) -> None:
    store = ["--store", str(tmp_path / "store")]
    empty = chronomem("projects", *store, cwd=tmp_path)
    assert empty.returncode == 0 and "no projects" in empty.stdout
    assert json.loads(chronomem("projects", "--json", *store, cwd=tmp_path).stdout) == []

    repo = tmp_path / "shop"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "README.md").write_text("shop\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "first")
    git(tmp_path, "clone", "-q", str(repo), str(tmp_path / "shop-copy"))
    clone = tmp_path / "shop-copy"

    for cwd, text in ((repo, "The shop's API listens on 8080"), (clone, "The shop deploys with fly deploy")):
        out = chronomem("remember", text, *store, cwd=cwd)
        assert out.returncode == 0, out.stderr
    out = chronomem("remember", "Tabs, not spaces", "--project", "global", *store, cwd=tmp_path)
    assert out.returncode == 0, out.stderr

    listed = chronomem("projects", "--json", *store, cwd=clone)
    assert listed.returncode == 0, listed.stderr
    rows = {row["project"]: row for row in json.loads(listed.stdout)}
    key = detect_project(str(repo))
    assert set(rows) == {key, "global"}
    assert rows[key]["name"] == "shop" and rows[key]["current"] is True
    assert rows[key]["live_chunks"] == 2
    assert rows[key]["rows"] >= 2 and rows[key]["newest"]
    assert rows["global"]["current"] is False and rows["global"]["live_chunks"] == 1

    human = chronomem("projects", *store, cwd=repo)
    assert human.returncode == 0, human.stderr
    lines = human.stdout.strip().splitlines()
    assert lines[0].split() == ["PROJECT", "NAME", "CHUNKS", "FACTS", "ROWS", "NEWEST"]
    [mine] = [line for line in lines if key in line]
    assert mine.startswith("*") and " shop " in mine
