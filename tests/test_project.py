"""Project identity from real git repositories in temp dirs: every worktree and every clone of one
repository gets one key, unrelated repositories get different keys, and the fallbacks (no commits,
no repository) are keyed by what they have."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from chronomem.project import (
    clear_cache,
    detect_project,
    display_name,
    identify,
    key_suffix,
    normalize_remote,
)
from chronomem.service import MemoryService
from chronomem.tools import recall, remember
from tests.gitrepo import IDENTITY

GIT_ENV = {**IDENTITY, "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z"}


@pytest.fixture(autouse=True)
def _fresh_cache(monkeypatch: pytest.MonkeyPatch):
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)
    clear_cache()
    yield
    clear_cache()


def git(cwd: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **GIT_ENV},
    )
    return out.stdout.strip()


def make_repo(path: Path, message: str = "first") -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q")
    (path / "README.md").write_text(f"{message}\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", message)
    return path


def test_worktree_and_clone_share_the_key(tmp_path: Path) -> None:
    main = make_repo(tmp_path / "alpha")
    root = git(main, "rev-list", "--max-parents=0", "HEAD")
    (main / "src").mkdir()
    git(main, "worktree", "add", "-q", "-b", "feature", str(tmp_path / "alpha-feature"))
    git(tmp_path, "clone", "-q", str(main), str(tmp_path / "somewhere-else"))
    clone = tmp_path / "somewhere-else"
    (clone / "more.txt").write_text("x\n")
    git(clone, "add", "more.txt")
    git(clone, "commit", "-q", "-m", "clone's own work")

    keys = {
        "main": detect_project(str(main)),
        "subdir": detect_project(str(main / "src")),
        "worktree": detect_project(str(tmp_path / "alpha-feature")),
        "clone": detect_project(str(clone)),
    }
    assert len(set(keys.values())) == 1, keys
    key = keys["main"]
    assert key == f"alpha-{root[:8]}"
    assert display_name(key) == "alpha"
    assert identify(str(clone)).basis == "root-commit"


def test_clone_of_a_clone_joins_the_stored_key(tmp_path: Path, svc: MemoryService, embedder) -> None:
    """A clone whose origin has another name derives another name part, but the store's key wins."""
    main = make_repo(tmp_path / "alpha")
    git(tmp_path, "clone", "-q", str(main), str(tmp_path / "beta"))
    git(tmp_path, "clone", "-q", str(tmp_path / "beta"), str(tmp_path / "gamma"))
    gamma = tmp_path / "gamma"
    main_key, gamma_key = detect_project(str(main)), detect_project(str(gamma))
    assert gamma_key != main_key and key_suffix(gamma_key) == key_suffix(main_key)  # named after origin "beta"

    saved = remember(svc, "The alpha service listens on port 7000", project=str(main))
    assert saved.project == main_key
    assert svc.project(str(gamma)) == main_key  # the same server process
    assert svc.workdir(str(gamma)) == str(gamma)

    other_process = MemoryService(svc.settings, embedder=embedder)  # another server on the same store
    assert other_process.project(str(gamma)) == main_key
    found = recall(other_process, "which port does the alpha service use", project=str(gamma))
    assert found.projects == [main_key] and saved.id in [r.id for r in found.results]


def test_unrelated_repositories_differ(tmp_path: Path) -> None:
    one = make_repo(tmp_path / "one" / "app", "one")
    two = make_repo(tmp_path / "two" / "app", "two")
    assert detect_project(str(one)) != detect_project(str(two))
    assert display_name(detect_project(str(one))) == display_name(detect_project(str(two))) == "app"


def test_several_roots_give_one_deterministic_key(tmp_path: Path) -> None:
    main = make_repo(tmp_path / "multi")
    first_root = git(main, "rev-parse", "HEAD")
    git(main, "checkout", "-q", "--orphan", "other")
    (main / "other.txt").write_text("other\n")
    git(main, "add", "other.txt")
    git(main, "commit", "-q", "-m", "unrelated history")
    git(main, "checkout", "-q", "main")
    git(main, "merge", "-q", "--allow-unrelated-histories", "-m", "merge", "other")
    assert len(git(main, "rev-list", "--max-parents=0", "HEAD").split()) == 2
    key = detect_project(str(main))
    assert key == f"multi-{first_root[:8]}"  # the first-parent root: the repository's own beginning
    git(tmp_path, "clone", "-q", str(main), str(tmp_path / "multi-clone"))
    assert detect_project(str(tmp_path / "multi-clone")) == key


def test_repository_without_commits(tmp_path: Path) -> None:
    bare = tmp_path / "empty"
    bare.mkdir()
    git(bare, "init", "-q")
    ident = identify(str(bare))
    assert ident.basis == "repo-path" and ident.key.startswith("empty-")
    assert detect_project(str(bare)) == ident.key  # stable

    remote = tmp_path / "with-remote"
    remote.mkdir()
    git(remote, "init", "-q")
    git(remote, "remote", "add", "origin", "https://user:secret@github.com/Acme/Widget.git")
    ident = identify(str(remote))
    assert ident.basis == "remote" and ident.name == "widget"
    twin = tmp_path / "twin"
    twin.mkdir()
    git(twin, "init", "-q")
    git(twin, "remote", "add", "origin", "git@github.com:acme/widget")
    assert detect_project(str(twin)) == ident.key


def test_named_after_origin_when_there_is_one(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "checkout-dir")
    git(repo, "remote", "add", "origin", "git@github.com:acme/Rocket.git")
    assert detect_project(str(repo)).startswith("rocket-")


def test_not_a_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain dir"
    plain.mkdir()
    ident = identify(str(plain))
    assert ident.basis == "path" and ident.key.startswith("plain-dir-")
    assert detect_project(str(plain)) == ident.key
    assert detect_project(str(tmp_path)) != ident.key


def test_inherited_git_dir_does_not_redirect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server started from a git hook inherits GIT_DIR; the directory asked about still decides."""
    one = make_repo(tmp_path / "one")
    two = make_repo(tmp_path / "two", "two")
    monkeypatch.setenv("GIT_DIR", str(one / ".git"))
    assert detect_project(str(two)) != detect_project(str(one))


@pytest.mark.parametrize(
    ("url", "normal"),
    [
        ("https://user:token@GitHub.com:443/Acme/Widget.git/", "github.com/acme/widget"),
        ("ssh://git@github.com:22/acme/widget.git", "github.com/acme/widget"),
        ("git@github.com:acme/widget.git", "github.com/acme/widget"),
        ("http://gitlab.example.com/group/sub/proj", "gitlab.example.com/group/sub/proj"),
        ("file:///srv/git/proj.git", "/srv/git/proj"),
        ("/srv/git/proj/.git", "/srv/git/proj"),
        ("", None),
    ],
)
def test_normalize_remote(url: str, normal: str | None) -> None:
    assert normalize_remote(url) == normal
