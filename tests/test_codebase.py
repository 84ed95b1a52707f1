"""chronomem/codebase.py against real git repositories in temp dirs: blob ids, repo-relative paths, globs,
refs and their commit times, and what happens without a repository or without git."""

from __future__ import annotations

import os
import time
from datetime import datetime
from pathlib import Path

import pytest

from chronomem import codebase
from chronomem.codebase import (
    Change,
    Codebase,
    NotARef,
    StalenessCheck,
    blob_sha,
    changes,
    glob_regex,
    hash_file,
    path_matches,
)
from chronomem.records import UTC
from tests.gitrepo import GitRepo, isolated_git


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> GitRepo:
    isolated_git(monkeypatch)
    r = GitRepo(tmp_path / "repo")
    r.write("src/app.py", "print('hello')\n")
    r.write("src/util/strings.py", "def up(s):\n    return s.upper()\n")
    r.write("README.md", "# demo\n")
    r.write(".gitignore", "build/\n")
    r.write("build/out.py", "generated = True\n")
    r.commit("first", "2024-04-01T09:00:00Z")
    return r


def no_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    monkeypatch.setenv("PATH", str(empty))


# ---------------------------------------------------------------------------- hashes


def test_blob_ids_are_what_git_hash_object_says(repo: GitRepo) -> None:
    repo.write("bin.dat", "")
    (repo.root / "bin.dat").write_bytes(bytes(range(256)) * 3)
    repo.write("empty", "")
    for name in ("src/app.py", "README.md", "bin.dat", "empty"):
        assert hash_file(repo.root / name) == repo.blob(name), name
    assert blob_sha(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


def test_a_symlink_hashes_its_target_path_like_git(repo: GitRepo) -> None:
    os.symlink("src/app.py", repo.root / "link.py")
    repo.commit("link", "2024-04-02T09:00:00Z")
    assert hash_file(repo.root / "link.py") == repo.git("rev-parse", "HEAD:link.py")


def test_hash_of_missing_directory_or_oversized_file_is_none(repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    assert hash_file(repo.root / "nope.py") is None
    assert hash_file(repo.root / "src") is None
    monkeypatch.setattr(codebase, "MAX_HASHED_BYTES", 4)
    assert hash_file(repo.root / "README.md") is None


def test_an_edit_is_seen_even_right_after_hashing(repo: GitRepo) -> None:
    path = repo.root / "src/app.py"
    before = hash_file(path)
    path.write_text("print('HELLO')\n")  # same size, same second: the stat cache must not hide it
    assert hash_file(path) != before
    assert hash_file(path) == repo.blob("src/app.py")


# ---------------------------------------------------------------------------- where, and paths


def test_codebase_of_a_subdirectory_is_the_repository(repo: GitRepo) -> None:
    cb = Codebase.at(repo.root / "src")
    assert cb is not None and cb.is_repo and cb.root == repo.root.resolve()
    assert cb.head() == repo.head()
    assert Codebase.at(None) is None
    assert Codebase.at(repo.root / "does-not-exist") is None


def test_paths_are_stored_repo_relative_posix(repo: GitRepo) -> None:
    cb = Codebase.at(repo.root / "src")
    assert cb is not None
    assert cb.relative("src/app.py")[0] == "src/app.py"
    assert cb.relative("./src//util/../app.py")[0] == "src/app.py"
    assert cb.relative(str(repo.root / "README.md"))[0] == "README.md"
    assert cb.relative("app.py")[0] == "src/app.py"  # not at the top: found beside the project directory
    outside, where = cb.relative("/etc/hostname")
    assert outside == "/etc/hostname" and where is None
    assert cb.relative("../elsewhere.txt") == ((repo.root.parent / "elsewhere.txt").resolve().as_posix(), None)


def test_anchor_hashes_files_and_keeps_every_path(repo: GitRepo) -> None:
    cb = Codebase.at(repo.root)
    assert cb is not None
    got = cb.anchor(["src/app.py", "src/**/*.py", "docs/later.md", "src", "/etc/hostname", "build/*.py"])
    assert got.paths == ["src/app.py", "src/**/*.py", "docs/later.md", "src", "/etc/hostname", "build/*.py"]
    assert got.anchors == {"src/app.py": repo.blob("src/app.py"), "src/util/strings.py": repo.blob("src/util/strings.py")}
    notes = " | ".join(got.notes)
    assert "docs/later.md does not exist" in notes
    assert "src is a directory" in notes
    assert "/etc/hostname is outside" in notes
    assert "build/*.py matches no file" in notes  # ignored by .gitignore: globs only see the project's files


def test_a_glob_is_cut_at_the_cap_and_says_so(repo: GitRepo) -> None:
    for i in range(7):
        repo.write(f"gen/m{i}.py", f"x = {i}\n")
    cb = Codebase.at(repo.root)
    assert cb is not None
    got = cb.anchor(["gen/*.py"], limit=5)
    assert sorted(got.anchors) == [f"gen/m{i}.py" for i in range(5)]  # untracked files count too
    assert any("matches 7 files; hashed 5 (at most 5 per memory)" in n for n in got.notes)
    assert Codebase.at(repo.root).anchor(["src/app.py", "README.md"], limit=1).notes == [  # type: ignore[union-attr]
        "README.md not hashed (at most 1 files per memory)"
    ]


def test_outside_a_repository_paths_are_relative_to_the_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolated_git(monkeypatch)
    plain = tmp_path / "plain"
    (plain / "lib").mkdir(parents=True)
    (plain / "lib" / "a.py").write_text("a = 1\n")
    (plain / "lib" / "b.txt").write_text("b\n")
    cb = Codebase.at(plain)
    assert cb is not None and not cb.is_repo and cb.root == plain.resolve()
    assert cb.head() is None
    got = cb.anchor(["lib/*.py"])
    assert got.anchors == {"lib/a.py": blob_sha(b"a = 1\n")}
    with pytest.raises(NotARef, match="not in a git repository"):
        cb.resolve_ref("v1.0")


def test_without_git_hashes_still_work_and_refs_say_git_is_missing(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_git(monkeypatch, tmp_path)
    cb = Codebase.at(repo.root / "src")
    assert cb is not None and not cb.is_repo and cb.git_missing
    assert cb.root == repo.root.resolve()  # found by its .git entry
    assert cb.head() is None
    assert cb.anchor(["src/**/*.py"]).anchors == {
        "src/app.py": hash_file(repo.root / "src/app.py"),
        "src/util/strings.py": hash_file(repo.root / "src/util/strings.py"),
    }
    with pytest.raises(NotARef, match="git is not installed"):
        cb.resolve_ref("main")


def test_a_git_that_hangs_is_abandoned(repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "slow-bin"
    fake.mkdir()
    (fake / "git").write_text("#!/bin/sh\nsleep 30\necho done\n")  # a child of git holding its pipes
    (fake / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(codebase, "GIT_TIMEOUT", 0.3)
    cb = Codebase.at(repo.root)
    assert cb is not None and not cb.is_repo and not cb.git_missing and cb.head() is None
    assert cb.root == repo.root.resolve()  # found by its .git entry


# ---------------------------------------------------------------------------- refs


def test_refs_resolve_to_their_commit_time(repo: GitRepo) -> None:
    first = repo.head()
    repo.tag("v1.0")
    repo.write("src/app.py", "print('v1.1')\n")
    second = repo.commit("second", "2024-05-02T15:30:00+02:00")
    repo.tag("v1.1", annotated=True, date="2024-06-01T00:00:00Z")  # the tag's own date is not the commit's
    repo.git("branch", "old", first)
    cb = Codebase.at(repo.root)
    assert cb is not None

    v10 = cb.resolve_ref("v1.0")
    assert (v10.commit, v10.time) == (first, datetime(2024, 4, 1, 9, 0, tzinfo=UTC))
    v11 = cb.resolve_ref("v1.1")
    assert (v11.commit, v11.time) == (second, datetime(2024, 5, 2, 13, 30, tzinfo=UTC))
    assert cb.resolve_ref("old").commit == first
    assert cb.resolve_ref("main").commit == second
    assert cb.resolve_ref(first[:9]).commit == first
    assert cb.resolve_ref("HEAD~1").commit == first
    for bad in ("nope", "--help", "v1.0 v1.1", "x" * 300):
        with pytest.raises(NotARef):
            cb.resolve_ref(bad)


# ---------------------------------------------------------------------------- matching, staleness, tags


def test_glob_regex_keeps_star_within_a_segment() -> None:
    assert glob_regex("src/*.py").match("src/a.py")
    assert not glob_regex("src/*.py").match("src/x/a.py")
    assert glob_regex("src/**/*.py").match("src/a.py") and glob_regex("src/**/*.py").match("src/x/y/a.py")
    assert glob_regex("**").match("a/b/c")
    assert glob_regex("a?[bc].md").match("axc.md") and not glob_regex("a?[!bc].md").match("axc.md")


def test_path_matches_either_way() -> None:
    assert path_matches("src/app.py", "src/app.py")
    assert path_matches("src/app.py", "src/*.py") and path_matches("src/*.py", "src/app.py")
    assert path_matches("src/util/strings.py", "src")  # a directory asked about
    assert path_matches("src", "src/util/strings.py")  # a memory about a directory
    assert path_matches("src/util/strings.py", "src/*")  # fnmatch: * crosses /
    assert not path_matches("src/app.py", "lib/app.py")
    assert not path_matches("src/app.py", "src/app")
    assert not path_matches("", "src")


def test_changes_are_modified_or_deleted_and_checked_once(repo: GitRepo) -> None:
    assert changes({"a": "1", "b": "2", "c": "3"}, {"a": "1", "b": "9", "c": None}) == [
        Change("b", "modified"),
        Change("c", "deleted"),
    ]
    cb = Codebase.at(repo.root)
    check = StalenessCheck(cb)
    anchors = {"src/app.py": repo.blob("src/app.py"), "README.md": "0" * 40}
    assert check(anchors) == [Change("README.md", "modified")]
    (repo.root / "src/app.py").unlink()
    assert check(anchors) == [Change("README.md", "modified")], "hashed once per check: a recall sees one state"
    assert StalenessCheck(cb)(anchors) == [Change("README.md", "modified"), Change("src/app.py", "deleted")]
    assert StalenessCheck(None)(anchors) == []


# ---------------------------------------------------------------------------- git answers kept


def counting_git(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Record each `git` command chronomem runs (they still run)."""
    calls: list[list[str]] = []
    real = codebase.git

    def counted(args: list[str], cwd: str | os.PathLike[str]) -> object:
        calls.append(args)
        return real(args, cwd)

    monkeypatch.setattr(codebase, "git", counted)
    return calls


def wait_out_racy_window() -> None:
    """Let the files git just wrote age past the racy window (shortened by the test): a change within
    it might not show in their stat, so HEAD's answer is only kept after it."""
    time.sleep(codebase.RACY_SECONDS + 0.1)


def test_the_repository_and_head_are_asked_of_git_once_while_nothing_moves(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = counting_git(monkeypatch)
    monkeypatch.setattr(codebase, "RACY_SECONDS", 0.2)
    wait_out_racy_window()
    first = Codebase.at(repo.root / "src")
    assert first is not None and first.is_repo and first.head() == repo.head()
    asked = len(calls)
    again = Codebase.at(repo.root / "src")
    assert again == first and again.head() == repo.head()
    assert len(calls) == asked, "no git process for an unchanged repository"

    moved = repo.commit("second", "2024-04-02T09:00:00Z")  # HEAD's branch now names another commit
    assert Codebase.at(repo.root / "src").head() == moved
    wait_out_racy_window()
    assert Codebase.at(repo.root / "src").head() == moved
    repo.git("checkout", "-q", "--detach", "HEAD~1")
    wait_out_racy_window()
    assert Codebase.at(repo.root / "src").head() != moved


def test_a_directory_that_becomes_a_repository_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolated_git(monkeypatch)
    plain = tmp_path / "later"
    plain.mkdir()
    before = Codebase.at(plain)
    assert before is not None and not before.is_repo
    GitRepo(plain)
    after = Codebase.at(plain)
    assert after is not None and after.is_repo and after.root == plain.resolve()


def test_git_missing_is_not_kept(repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = os.environ["PATH"]
    no_git(monkeypatch, tmp_path)
    missing = Codebase.at(repo.root)
    assert missing is not None and missing.git_missing and not missing.is_repo
    monkeypatch.setenv("PATH", path)  # git installed meanwhile
    found = Codebase.at(repo.root)
    assert found is not None and found.is_repo and found.head() == repo.head()
