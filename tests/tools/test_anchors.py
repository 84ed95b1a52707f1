"""Code anchors and git-aware time through the tools, on real git repositories in temp dirs, the real store
and the real model: staleness after an edit and a commit, `recall(paths=…)`, `as_of` a tag or commit,
`history` showing the commit of each value, and the same calls without a repository or without git."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from chronomem.config import Settings
from chronomem.errors import InvalidInput
from chronomem.records import UTC
from chronomem.retrieval.pipeline import Hit, demote_stale
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.tools import as_of, forget, history, recall, remember
from tests.conftest import model_dir
from tests.gitrepo import GitRepo, isolated_git

FAB = "deploy/fabfile.py"
DEPLOY_Q = "how do we deploy"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> GitRepo:
    isolated_git(monkeypatch)
    r = GitRepo(tmp_path / "shop")
    r.write(FAB, "def deploy():\n    rsync('build/', 'web1:/srv/shop')\n")
    r.write("src/auth/login.py", "SESSION_TIMEOUT = 30\n")
    r.write("src/auth/tokens.py", "ALGO = 'HS256'\n")
    r.write("src/shop/cart.py", "MAX_ITEMS = 50\n")
    r.write("README.md", "# shop\n")
    r.commit("initial", "2024-05-01T09:00:00Z")
    return r


def service_for(directory: Path, tmp_path: Path, embedder, clock) -> MemoryService:
    """A service whose project is `directory` (as an MCP workspace root or `--project "$PWD"` would be)."""
    settings = Settings(store_path=tmp_path / "store", model_path=model_dir(), project=str(directory))
    return MemoryService(settings, embedder=embedder, clock=clock)


@pytest.fixture
def rsvc(repo: GitRepo, tmp_path: Path, embedder, clock) -> MemoryService:
    return service_for(repo.root, tmp_path, embedder, clock)


def item_of(result, memory_id: str):
    [item] = [i for i in result.results if i.id == memory_id or memory_id in i.source_ids]
    return item


# ---------------------------------------------------------------------------- remember records anchors


def test_remember_records_head_paths_and_blob_ids(rsvc: MemoryService, repo: GitRepo) -> None:
    head = repo.head()
    out = remember(
        rsvc,
        "Deploys run `fab deploy`, which rsyncs the build to web1.",
        paths=[FAB, str(repo.root / "README.md"), "./src/auth/*.py", "docs/runbook.md", "/etc/hostname"],
        tags=["ops"],
    )
    assert out.commit == head
    assert out.paths == [FAB, "README.md", "src/auth/*.py", "docs/runbook.md", "/etc/hostname"]
    assert {a.path: a.blob for a in out.anchors} == {
        FAB: repo.blob(FAB),
        "README.md": repo.blob("README.md"),
        "src/auth/login.py": repo.blob("src/auth/login.py"),
        "src/auth/tokens.py": repo.blob("src/auth/tokens.py"),
    }
    assert f"anchored to 4 files at commit {head[:7]}" in out.message
    assert "docs/runbook.md does not exist (kept without a hash)" in out.message
    assert "/etc/hostname is outside" in out.message

    row = rsvc.store.get(out.id)
    assert row is not None and row.commit == head and row.paths == out.paths
    assert row.anchors == {a.path: a.blob for a in out.anchors}
    shown = item_of(recall(rsvc, "how are deploys run"), out.id)
    assert shown.tags == ["ops"], "anchor marks are internal, never shown as tags"
    assert shown.commit == head and shown.stale is None


# ---------------------------------------------------------------------------- staleness


def test_recall_marks_and_demotes_a_memory_whose_file_changed(rsvc: MemoryService, repo: GitRepo, clock) -> None:
    written_at = repo.head()
    anchored = remember(rsvc, "We deploy with `fab deploy`: deploy/fabfile.py rsyncs the build to web1.", paths=[FAB])
    clock.advance(minutes=1)
    other = remember(rsvc, "Deploys need the office VPN up, or the rsync to web1 hangs.")

    before = recall(rsvc, DEPLOY_Q)
    assert item_of(before, anchored.id).stale is None and "stale" not in before.message
    score_before = item_of(before, anchored.id).score

    repo.write(FAB, "def deploy():\n    kubectl('apply', '-f', 'k8s/')\n")
    repo.commit("deploy with kubectl", "2024-05-10T09:00:00Z")
    after = recall(rsvc, DEPLOY_Q)
    stale = item_of(after, anchored.id)
    assert stale.stale is not None
    assert stale.stale.files == [FAB]
    assert [(c.path, c.status) for c in stale.stale.changes] == [(FAB, "modified")]
    assert stale.stale.since_commit == written_at
    assert stale.score == pytest.approx(score_before * 0.5, rel=1e-3)
    # Demoted where the pure rule puts it, whatever the ranker's scale: below every fresh memory that now outscores it.
    expected = demote_stale([Hit(rsvc.store.get(i.id), i.score) for i in before.results], {anchored.id}, 0.5)
    assert [i.id for i in after.results] == [h.record.id for h in expected]
    assert [i.score for i in after.results] == pytest.approx([h.score for h in expected], rel=1e-3)
    assert "1 stale" in after.message
    assert f"stale: {FAB} changed since commit {written_at[:7]}" in after.text()
    assert item_of(after, other.id).stale is None

    # as_of reads the past: no staleness there
    assert all(i.stale is None for i in as_of(rsvc, DEPLOY_Q, "now").results)

    # the file back as it was: the memory is current again (hashes, not commits, decide)
    repo.git("checkout", "HEAD~1", "--", FAB)
    assert item_of(recall(rsvc, DEPLOY_Q), anchored.id).stale is None


def test_a_stale_memory_falls_below_an_equally_relevant_fresh_one(rsvc: MemoryService, repo: GitRepo, clock) -> None:
    fresh = remember(rsvc, "Release notes are written in CHANGES.md before every tag.")
    clock.advance(minutes=1)
    anchored = remember(rsvc, "Release notes are written in CHANGES.md before each tag.", paths=["README.md"])
    repo.write("README.md", "# shop, renamed\n")
    out = recall(rsvc, "where are release notes written")
    assert [i.id for i in out.results] == [fresh.id, anchored.id]
    assert out.results[1].stale is not None and out.results[0].stale is None


def test_a_deleted_file_makes_its_memories_stale(rsvc: MemoryService, repo: GitRepo) -> None:
    kept = remember(rsvc, "The cart caps orders at 50 items (MAX_ITEMS in src/shop/cart.py).", paths=["src/shop/cart.py"])
    repo.git("rm", "-q", "src/shop/cart.py")
    repo.commit("drop the cart", "2024-05-11T09:00:00Z")
    item = item_of(recall(rsvc, "how many items can an order hold"), kept.id)
    assert item.stale is not None and [(c.path, c.status) for c in item.stale.changes] == [("src/shop/cart.py", "deleted")]
    assert "src/shop/cart.py (deleted)" in item.line()


def test_paths_without_a_hash_never_make_a_memory_stale(rsvc: MemoryService, repo: GitRepo) -> None:
    kept = remember(rsvc, "The runbook for incidents will live in docs/runbook.md.", paths=["docs/runbook.md", "src"])
    assert kept.anchors == [] and kept.paths == ["docs/runbook.md", "src"]
    repo.write("docs/runbook.md", "# runbook\n")
    repo.write("src/new.py", "x = 1\n")
    repo.commit("runbook", "2024-05-12T09:00:00Z")
    assert item_of(recall(rsvc, "where is the incident runbook"), kept.id).stale is None


def test_agent_facts_inherit_the_anchors_and_go_stale_with_the_file(rsvc: MemoryService, repo: GitRepo) -> None:
    out = remember(
        rsvc,
        "Sessions time out after 30 minutes (SESSION_TIMEOUT in src/auth/login.py).",
        paths=["src/auth/login.py"],
        facts=[{"subject": "shop", "predicate": "session_timeout", "object": "30 minutes"}],
    )
    fact = rsvc.store.get(out.facts[0].id)
    assert fact is not None and fact.commit == repo.head() and fact.paths == ["src/auth/login.py"]
    assert fact.anchors == {"src/auth/login.py": repo.blob("src/auth/login.py")}

    repo.write("src/auth/login.py", "SESSION_TIMEOUT = 5\n")
    repo.commit("shorter sessions", "2024-05-13T09:00:00Z")
    top = recall(rsvc, "what is the session timeout").results[0]
    assert top.id == out.facts[0].id and top.stale is not None and top.stale.files == ["src/auth/login.py"]

    # Stated again about the edited file: the same value reinforces the fact, whose anchor is refreshed.
    again = remember(
        rsvc,
        "Still 30 minutes for sessions.",
        paths=["src/auth/login.py"],
        facts=[{"subject": "shop", "predicate": "session_timeout", "object": "30 minutes"}],
    )
    assert again.facts[0].action == "reinforced"
    assert recall(rsvc, "what is the session timeout").results[0].stale is None


def test_extracted_facts_inherit_the_chunks_anchors(rsvc: MemoryService, repo: GitRepo) -> None:
    from chronomem.consolidate.runner import Consolidator

    repo.write("server/main.go", "package main // listens on 8080\n")
    repo.commit("server", "2024-05-14T09:00:00Z")
    chunk = remember(rsvc, "The API server listens on port 8080.", paths=["server/main.go"])
    Consolidator(rsvc).run_to_completion()
    derived = rsvc.store.find(Filter().derived_from([chunk.id]).kinds(["fact"]))
    assert derived, "the rules extractor should read a port from this note"
    for fact in derived:
        assert fact.source == "rules"
        assert fact.anchors == {"server/main.go": repo.blob("server/main.go")}
        assert fact.commit == repo.head() and fact.paths == ["server/main.go"]


# ---------------------------------------------------------------------------- recall(paths=…)


def test_recall_by_paths_returns_what_is_known_about_those_files(rsvc: MemoryService, repo: GitRepo, clock) -> None:
    login = remember(rsvc, "Sessions time out after 30 minutes.", paths=["src/auth/login.py"])
    clock.advance(minutes=1)
    auth = remember(rsvc, "All auth code must go through security review.", paths=["src/auth/*.py"])
    clock.advance(minutes=1)
    readme = remember(rsvc, "The README is generated; edit docs/ instead.", paths=["README.md"])
    clock.advance(minutes=1)
    remember(rsvc, "Sessions are stored in Redis.")  # about no file
    clock.advance(minutes=1)
    gone = remember(rsvc, "Login uses LDAP.", paths=["src/auth/login.py"])
    forget(rsvc, gone.id, "moved to OIDC")

    out = recall(rsvc, paths=["src/auth/login.py"])
    assert [i.id for i in out.results] == [auth.id, login.id], "newest first; the forgotten one is not live"
    assert out.paths == ["src/auth/login.py"] and out.query is None and not out.abstained
    assert all(i.score is None for i in out.results)
    assert out.message.startswith("2 memories about src/auth/login.py in ")

    assert {i.id for i in recall(rsvc, paths=["src/auth"]).results} == {login.id, auth.id}
    assert {i.id for i in recall(rsvc, paths=["src/**"]).results} == {login.id, auth.id}
    assert [i.id for i in recall(rsvc, paths=["src/auth/tokens.py"]).results] == [auth.id]  # via the glob
    assert [i.id for i in recall(rsvc, paths=[str(repo.root / "README.md")]).results] == [readme.id]
    assert [i.id for i in recall(rsvc, paths=["README.md"], kinds=["fact"]).results] == []

    ranked = recall(rsvc, "how long until a session expires", paths=["src/auth/login.py"])
    assert ranked.results[0].id == login.id and ranked.results[0].score is not None
    assert {i.id for i in ranked.results} == {login.id, auth.id}, "the query ranks the files' memories, never drops them"

    nothing = recall(rsvc, paths=["src/shop/cart.py"])
    assert nothing.abstained and nothing.results == []
    assert nothing.message == f"Nothing is stored about src/shop/cart.py in {rsvc.project()}."

    # An edited file: its memories come back marked, after the fresh ones.
    repo.write("src/auth/tokens.py", "ALGO = 'RS256'\n")  # only the glob's memory is about it
    edited = recall(rsvc, paths=["src/auth"])
    assert [i.id for i in edited.results] == [login.id, auth.id]
    assert edited.results[0].stale is None
    assert edited.results[1].stale is not None and edited.results[1].stale.files == ["src/auth/tokens.py"]


def test_recall_needs_a_query_or_paths(rsvc: MemoryService) -> None:
    for bad in ({}, {"query": ""}, {"query": "  ", "paths": []}):
        with pytest.raises(InvalidInput, match="query is (required|empty) .*paths"):
            recall(rsvc, **bad)
    with pytest.raises(InvalidInput):
        recall(rsvc, paths=[""])


# ---------------------------------------------------------------------------- as_of a ref, history with commits


@pytest.fixture
def releases(rsvc: MemoryService, repo: GitRepo, clock) -> dict[str, str]:
    """Three deploy procedures, remembered as they happened, and releases tagged between them."""
    shas = {}
    clock.now = datetime(2024, 5, 2, tzinfo=UTC)
    first = remember(
        rsvc,
        "Deploy procedure: run ./deploy.sh on the bastion host.",
        facts=[{"subject": "shop", "predicate": "deploy_procedure", "object": "./deploy.sh on the bastion"}],
    )
    repo.write("deploy.sh", "#!/bin/sh\n")
    shas["v1.3.0"] = repo.commit("release 1.3.0", "2024-05-03T12:00:00Z")
    repo.tag("v1.3.0")

    clock.now = datetime(2024, 5, 20, tzinfo=UTC)
    second = remember(
        rsvc,
        "Deploy procedure is now: merge to main and ArgoCD syncs the cluster.",
        facts=[{"subject": "shop", "predicate": "deploy_procedure", "object": "merge to main, ArgoCD syncs"}],
    )
    repo.write("argocd.yaml", "app: shop\n")
    shas["v1.4.0"] = repo.commit("release 1.4.0", "2024-05-21T12:00:00Z")
    repo.tag("v1.4.0", annotated=True, date="2024-05-30T00:00:00Z")

    clock.now = datetime(2024, 6, 10, tzinfo=UTC)
    third = remember(
        rsvc,
        "Deploy procedure is now: the GitHub Actions release workflow.",
        facts=[{"subject": "shop", "predicate": "deploy_procedure", "object": "GitHub Actions release workflow"}],
    )
    shas["head"] = repo.commit("workflow", "2024-06-11T12:00:00Z")
    shas.update(first=first.facts[0].id, second=second.facts[0].id, third=third.facts[0].id)
    clock.now = datetime(2024, 6, 12, tzinfo=UTC)
    return shas


def top_fact(result):
    return [i for i in result.results if i.kind == "fact"][0]


def test_as_of_a_tag_a_branch_or_a_commit(rsvc: MemoryService, repo: GitRepo, releases: dict[str, str]) -> None:
    q = "what was our deploy procedure"
    old = as_of(rsvc, q, "v1.3.0")
    assert top_fact(old).object == "./deploy.sh on the bastion"
    assert old.at == "2024-05-03T12:00:00Z"
    assert old.at_ref is not None and old.at_ref.commit == releases["v1.3.0"] and old.at_ref.ref == "v1.3.0"
    assert old.message.startswith(f"at v1.3.0 = commit {releases['v1.3.0'][:7]} (2024-05-03T12:00:00Z). ")

    mid = as_of(rsvc, q, "v1.4.0")  # an annotated tag: its commit's time, not the tag's
    assert top_fact(mid).object == "merge to main, ArgoCD syncs" and mid.at == "2024-05-21T12:00:00Z"
    assert as_of(rsvc, q, releases["v1.4.0"][:10]).at == "2024-05-21T12:00:00Z"
    assert top_fact(as_of(rsvc, q, "main")).object == "GitHub Actions release workflow"
    assert top_fact(as_of(rsvc, q, "HEAD~2")).object == "./deploy.sh on the bastion"

    # known_at a ref: as chronomem knew it when v1.4.0 was cut, long after — still ArgoCD.
    then = as_of(rsvc, q, "2024-06-11", known_at="v1.4.0")
    assert top_fact(then).object == "merge to main, ArgoCD syncs"
    assert then.known_at_ref is not None and then.known_at_ref.ref == "v1.4.0" and then.at_ref is None
    # ISO times and phrases still read as before
    assert top_fact(as_of(rsvc, q, "2024-05-10")).object == "./deploy.sh on the bastion"
    assert as_of(rsvc, q, "3 weeks ago").at_ref is None


def test_a_tag_named_like_a_date_phrase_is_the_tag(rsvc: MemoryService, repo: GitRepo, releases: dict[str, str]) -> None:
    repo.git("tag", "1.4", "v1.4.0^{commit}")
    assert as_of(rsvc, "deploy procedure", "1.4").at == "2024-05-21T12:00:00Z"  # not 2024-01-04


def test_as_of_an_unknown_ref_names_both_readings(rsvc: MemoryService, releases: dict[str, str], tmp_path: Path, embedder, clock) -> None:
    with pytest.raises(InvalidInput) as caught:
        as_of(rsvc, "deploy procedure", "v9.9.9")
    text = str(caught.value)
    assert "\n" not in text
    assert "cannot read at 'v9.9.9'" in text and "neither a time" in text and "nor a commit, tag or branch" in text
    assert "no commit, tag or branch 'v9.9.9'" in text
    with pytest.raises(InvalidInput, match="cannot read known_at 'nope'"):
        as_of(rsvc, "deploy procedure", "now", known_at="nope")
    with pytest.raises(InvalidInput, match="neither a time .* git repository$"):
        as_of(rsvc, "deploy procedure", "the day after never")

    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(InvalidInput, match="not in a git repository"):
        as_of(service_for(plain, tmp_path, embedder, clock), "deploy", "v1.0")


def test_as_of_a_ref_in_a_named_project_says_there_is_no_directory(svc: MemoryService) -> None:
    remember(svc, "The deploy uses fab.")
    with pytest.raises(InvalidInput, match="commit, tag or branch .*no directory"):
        as_of(svc, "deploy", "v1.0")


def test_history_shows_the_commit_of_each_value(rsvc: MemoryService, repo: GitRepo, releases: dict[str, str]) -> None:
    chain = history(rsvc, subject="shop", predicate="deploy_procedure")
    assert [e.object for e in chain.entries] == [
        "./deploy.sh on the bastion",
        "merge to main, ArgoCD syncs",
        "GitHub Actions release workflow",
    ]
    initial = repo.git("rev-list", "--max-parents=0", "HEAD")
    # HEAD when each was remembered: before 1.3.0 was committed, then at 1.3.0, then at 1.4.0.
    assert [e.commit for e in chain.entries] == [initial, releases["v1.3.0"], releases["v1.4.0"]]
    text = chain.text()
    for sha in (initial, releases["v1.3.0"], releases["v1.4.0"]):
        assert f"@{sha[:7]}" in text
    chunk = history(rsvc, rsvc.store.get(releases["first"]).source_ids[0])  # type: ignore[union-attr]
    assert chunk.entries[0].commit == initial


# ---------------------------------------------------------------------------- without a repository, without git


def test_a_plain_directory_gets_anchors_but_no_commit(tmp_path: Path, embedder, clock, monkeypatch: pytest.MonkeyPatch) -> None:
    isolated_git(monkeypatch)
    plain = tmp_path / "notes"
    (plain / "etc").mkdir(parents=True)
    (plain / "etc" / "app.toml").write_text("port = 8080\n")
    psvc = service_for(plain, tmp_path, embedder, clock)
    out = remember(psvc, "The app port is set in etc/app.toml.", paths=["etc/app.toml"])
    assert out.commit is None and [a.path for a in out.anchors] == ["etc/app.toml"]
    assert "(no git commit)" in out.message
    (plain / "etc" / "app.toml").write_text("port = 9090\n")
    item = item_of(recall(psvc, "where is the app port set"), out.id)
    assert item.stale is not None and item.stale.files == ["etc/app.toml"] and item.stale.since_commit is None
    assert "changed since it was remembered" in item.line()
    assert history(psvc, out.id).entries[0].commit is None


def test_without_git_installed_anchors_work_and_refs_fail_clearly(
    rsvc: MemoryService, repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "no-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    out = remember(rsvc, "We deploy with fab (deploy/fabfile.py).", paths=[FAB])
    assert out.commit is None and [a.path for a in out.anchors] == [FAB]
    (repo.root / FAB).write_text("changed\n")
    assert item_of(recall(rsvc, DEPLOY_Q), out.id).stale is not None
    with pytest.raises(InvalidInput, match="git is not installed"):
        as_of(rsvc, DEPLOY_Q, "v1.0")


def test_a_named_project_keeps_paths_as_given(svc: MemoryService) -> None:
    out = remember(svc, "The API listens on 8080.", paths=["server/main.go", "./x/../y.py"])
    assert out.commit is None and out.anchors == [] and out.paths == ["server/main.go", "./x/../y.py"]
    assert [i.id for i in recall(svc, paths=["server/*.go"]).results] == [out.id]


# ---------------------------------------------------------------------------- the command line


@pytest.mark.slow
def test_cli_recall_by_path_and_as_of_a_tag(repo: GitRepo, tmp_path: Path) -> None:
    repo.tag("v1.0")
    env = {**os.environ, "CHRONOMEM_MODEL_PATH": str(model_dir()), "HF_HUB_OFFLINE": "1"}
    env = {k: v for k, v in env.items() if k not in ("CHRONOMEM_PROJECT", "CHRONOMEM_HOME")}
    store = ["--store", str(tmp_path / "cli-store")]

    def run(*args: str) -> dict:
        out = subprocess.run(
            [sys.executable, "-m", "chronomem", *args, *store, "--json"],
            capture_output=True, text=True, env=env, cwd=repo.root / "src", timeout=120,
        )
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    kept = run("remember", "Sessions time out after 30 minutes.", "--path", "auth/login.py", "--valid-from", "2024-01-01")
    assert kept["paths"] == ["src/auth/login.py"] and kept["commit"] == repo.head()  # found beside the working directory
    found = run("recall", "--path", "src/auth/login.py")
    assert [r["id"] for r in found["results"]] == [kept["id"]] and found["results"][0]["stale"] is None
    (repo.root / "src/auth/login.py").write_text("SESSION_TIMEOUT = 5\n")
    found = run("recall", "session timeout", "--path", "src/auth/*")
    assert found["results"][0]["stale"]["files"] == ["src/auth/login.py"]
    past = run("as-of", "session timeout", "--at", "v1.0")
    assert past["at"] == "2024-05-01T09:00:00Z" and past["at_ref"]["commit"] == repo.head()
