"""A real git repository in a temp dir for the code-anchor and git-time tests, with deterministic commits.

`isolated_git(monkeypatch)` points git at no user or system config and fixes author and committer,
so `git commit` behaves the same on every machine (no signing hooks, no template, no pager); chronomem's
own git calls inherit the same environment. Each commit takes its date explicitly.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

IDENTITY = {
    "GIT_AUTHOR_NAME": "Ada Tester",
    "GIT_AUTHOR_EMAIL": "ada@example.invalid",
    "GIT_COMMITTER_NAME": "Ada Tester",
    "GIT_COMMITTER_EMAIL": "ada@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def isolated_git(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for key, value in IDENTITY.items():
        monkeypatch.setenv(key, value)
    for key in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(key, raising=False)
    return dict(IDENTITY)


class GitRepo:
    """A working tree at `root` with helpers to write files, commit at a given date and tag."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, date: str | None = None) -> str:
        env = {**os.environ, **IDENTITY}
        if date is not None:
            env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
        out = subprocess.run(["git", *args], cwd=self.root, env=env, capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, f"git {' '.join(args)} failed: {out.stderr}"
        return out.stdout.strip()

    def write(self, path: str, text: str) -> Path:
        full = self.root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)
        return full

    def commit(self, message: str, date: str) -> str:
        """Stage everything and commit at `date` (ISO 8601); return the new HEAD sha."""
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message, date=date)
        return self.head()

    def tag(self, name: str, annotated: bool = False, date: str | None = None) -> None:
        if annotated:
            self.git("tag", "-a", name, "-m", f"release {name}", date=date)
        else:
            self.git("tag", name)

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")

    def blob(self, path: str) -> str:
        """What `git hash-object` says the file's blob id is."""
        return self.git("hash-object", path)
