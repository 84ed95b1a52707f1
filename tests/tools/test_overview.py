"""tools/overview.py: the page's project counts, on a real store over a real git repository (stale anchors)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronomem import tools
from chronomem.config import Settings
from chronomem.service import MemoryService
from chronomem.tools.overview import projects_overview
from tests.conftest import model_dir
from tests.gitrepo import GitRepo, isolated_git


def test_counts_per_project_with_stale_anchors_for_the_current_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     embedder, clock) -> None:
    isolated_git(monkeypatch)
    repo = GitRepo(tmp_path / "shop")
    repo.write("deploy/fabfile.py", "rsync('build/', 'web1')\n")
    repo.commit("initial", "2024-05-01T09:00:00Z")
    svc = MemoryService(Settings(store_path=tmp_path / "store", model_path=model_dir(), project=str(repo.root)),
                        embedder=embedder, clock=clock)
    tools.remember(svc, "We deploy with fab deploy", paths=["deploy/fabfile.py"], valid_from="2024-05-02")
    tools.remember(svc, "The port is 8080", facts=[{"subject": "api", "predicate": "port", "object": "8080"}],
                   valid_from="2024-05-03")
    clock.advance(days=1)
    tools.remember(svc, "The port is 9090", facts=[{"subject": "api", "predicate": "port", "object": "9090"}])
    tools.remember(svc, "Prefer tabs", project="global")

    own = projects_overview(svc).projects
    mine = next(p for p in own if p.current)
    assert (mine.current_facts, mine.superseded, mine.stale_anchors) == (1, 1, 0)
    assert mine.first_valid.startswith("2024-05-02")
    other = next(p for p in own if p.project == "global")
    assert (other.memories, other.stale_anchors, other.current) == (1, None, False)

    repo.write("deploy/fabfile.py", "kubectl('apply')\n")  # the anchored file changes: one stale memory
    assert next(p for p in projects_overview(svc).projects if p.current).stale_anchors == 1
