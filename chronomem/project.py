"""Which project a memory belongs to: the scope key every read and write carries.

Order: an explicit name (argument, `--project`, `CHRONOMEM_PROJECT`); else the git
common directory of the working directory, so every worktree of one repository
shares one memory; else the working directory itself. `global` is the developer's
cross-project scope.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from functools import lru_cache
from pathlib import Path

from chronomem.errors import InvalidInput

GLOBAL = "global"
MAX_PROJECT_CHARS = 200
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def validate_project(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput("project must be a non-empty string")
    name = name.strip()
    if len(name) > MAX_PROJECT_CHARS:
        raise InvalidInput(f"project name is {len(name)} characters; the limit is {MAX_PROJECT_CHARS}")
    if _CONTROL.search(name):
        raise InvalidInput("project name contains control characters")
    return name


def display_name(key: str) -> str:
    """The name a person writes for a project key: the derived `-<8 hex>` suffix dropped, lower-cased."""
    return re.sub(r"-[0-9a-f]{8}$", "", key).lower()


@lru_cache(maxsize=32)
def detect_project(cwd: str) -> str:
    """A stable key for the repository (or directory) at `cwd`: `<name>-<8 hex of its path>`."""
    root = _git_common_dir(cwd)
    if root is not None:
        anchor = root.parent if root.name == ".git" else root
    else:
        anchor = Path(cwd).resolve()
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", anchor.name or "root").strip("-") or "root"
    digest = hashlib.sha1(str(anchor).encode()).hexdigest()[:8]
    return f"{name}-{digest}"


def _git_common_dir(cwd: str) -> Path | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None
    return Path(out.stdout.strip()).resolve()
