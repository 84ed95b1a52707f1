"""Which project a memory belongs to: the scope key every read and write carries.

The project of a call is, in order:

1. an explicit name: the tool's `project` argument, `--project`, `CHRONOMEM_PROJECT`
   (an absolute directory path is keyed like a working directory, below);
2. the MCP client's workspace: the first `file://` root it lists (`roots/list`), when it
   offers roots (see `chronomem.server.roots`);
3. the git repository of the working directory;
4. the working directory itself.

`global` is the developer's own cross-project scope; `recall(scope="both")` reads both.

The key of a directory is `<name>-<8 hex>`, built from data every worktree and clone of
one repository shares:

- the 8 hex: in a git repository with commits, the start of its root commit — the one
  reached from HEAD by first parents (`git rev-list --first-parent --max-parents=0 HEAD`),
  so a history with several roots still gives one, and every worktree and every clone,
  wherever it sits on disk, gives the same. In a repository without commits, the SHA-1 of
  its normalised `origin` URL (no credentials, scheme, port or `.git`; `git@host:a/b` and
  `https://host/a/b` agree); without an origin, the SHA-1 of the main worktree's path.
  Outside git, the SHA-1 of the directory's resolved path.
- the name: the repository name of `origin` (`git@github.com:acme/Widget.git` → `widget`),
  else the directory name of the main worktree (a linked worktree's own directory name is
  never used).

A clone whose origin is named differently from the store's existing key (a clone of a clone,
a renamed fork) still joins it: `MemoryService.project` reuses a key the store already holds
with the same 8 hex. Two consequences to know: a fork shares its upstream's root commit and so
its memory, and a shallow clone's "root" is its shallow boundary — pass `--project` to choose.

`detect_project` runs at most two git subprocesses (`rev-parse`, `rev-list`; the origin is read
from the repository's config file), each with a timeout, and caches its answer per directory.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from chronomem.errors import InvalidInput

log = logging.getLogger(__name__)

GLOBAL = "global"
MAX_PROJECT_CHARS = 200
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: The derived part of a detected key: `-` and 8 lower-case hex digits at the end.
KEY_SUFFIX = re.compile(r"-([0-9a-f]{8})$")
#: Seconds the git calls may take; past that the key falls back (and says so in the log).
REV_PARSE_TIMEOUT = 5.0
ROOT_COMMIT_TIMEOUT = 15.0
#: How long an answer not anchored on a root commit (no commits yet, not a repository) is reused:
#: the directory may get its first commit, and then its key should become the shared one.
FALLBACK_TTL = 60.0
#: Variables that would point git at another repository than the directory asked about.
_GIT_LOCATION_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
)


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
    return KEY_SUFFIX.sub("", key).lower()


def key_suffix(key: str) -> str | None:
    """The `-<8 hex>` a detected key ends with (`widget-3fa2c1d0` → `-3fa2c1d0`), else None."""
    match = KEY_SUFFIX.search(key)
    return match.group(0) if match else None


#: Most projects `empty_project_message` names (the ones with the most rows); `chronomem projects` lists all.
MAX_NAMED_PROJECTS = 12


def empty_project_message(name: str, counts: dict[str, int], limited: bool = False) -> str:
    """What a read says of project `name`, which holds no memories, given the rows per project the caller may see
    (`limited`: not every project of the store, a team client's own).

    Names the projects that hold memories (most rows first, at most `MAX_NAMED_PROJECTS`), and first a key
    whose name is `name` (`shop` → `shop-3fa2c1d0`: the detected key of a repository), when there is one."""
    held = [k for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if n > 0 and k != name]
    if not held and limited:
        return f"Project {name!r} has no memories, nor has any other project you may read."
    if not held:
        return f"Project {name!r} has no memories: this store holds none yet (`remember` creates a project)."
    wanted = display_name(name)
    close = [k for k in held if display_name(k) == wanted]
    shown = ", ".join(held[:MAX_NAMED_PROJECTS])
    more = f" and {len(held) - MAX_NAMED_PROJECTS} more" if len(held) > MAX_NAMED_PROJECTS else ""
    guess = f" Did you mean {' or '.join(close[:3])}?" if close else ""
    return f"Project {name!r} has no memories.{guess} Projects with memories: {shown}{more}."


@dataclass(frozen=True)
class Identity:
    """How a directory's key was made: `basis` is `root-commit`, `remote`, `repo-path` or `path`."""

    key: str
    name: str
    digest: str
    basis: str
    anchor: str  # the main worktree (or bare repository) for git, else the directory


_cache: dict[str, tuple[float, Identity]] = {}
_cache_lock = threading.Lock()


def detect_project(cwd: str) -> str:
    """A stable key for the repository (or directory) at `cwd`: `<name>-<8 hex>` (see the module doc)."""
    return identify(cwd).key


def identify(cwd: str) -> Identity:
    """`detect_project` with its reasons; cached per directory (root-commit answers for the process)."""
    now = time.monotonic()
    with _cache_lock:
        hit = _cache.get(cwd)
    if hit is not None and (hit[1].basis == "root-commit" or now - hit[0] < FALLBACK_TTL):
        return hit[1]
    ident = _identify(cwd)
    with _cache_lock:
        if len(_cache) > 256:
            _cache.clear()
        _cache[cwd] = (now, ident)
    return ident


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()


def _identify(cwd: str) -> Identity:
    common = _git_common_dir(cwd)
    if common is None:
        anchor = Path(cwd).resolve()
        return _make(anchor.name, _sha8(str(anchor)), "path", anchor)
    bare = common.name != ".git"
    anchor = common if bare else common.parent
    local_name = anchor.name[:-4] if bare and anchor.name.endswith(".git") else anchor.name
    remote = normalize_remote(_origin_url(common) or "", base=anchor)
    name = remote.rstrip("/").rsplit("/", 1)[-1] if remote else local_name
    root = _root_commit(cwd)
    if root:
        return _make(name, root[:8].lower(), "root-commit", anchor)
    if remote:
        return _make(name, _sha8("remote:" + remote), "remote", anchor)
    return _make(name, _sha8(str(anchor)), "repo-path", anchor)


def _make(name: str, digest: str, basis: str, anchor: Path) -> Identity:
    clean = re.sub(r"[^A-Za-z0-9._-]+", "-", name or "root").strip("-.") or "root"
    clean = clean[: MAX_PROJECT_CHARS - 9]
    return Identity(key=f"{clean}-{digest}", name=clean, digest=digest, basis=basis, anchor=str(anchor))


def _sha8(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogateescape")).hexdigest()[:8]


def _git(cwd: str, args: list[str], timeout: float) -> str | None:
    """stdout of `git <args>` in `cwd`, or None when git is missing, fails or times out."""
    env = {k: v for k, v in os.environ.items() if k not in _GIT_LOCATION_VARS}
    env.update(GIT_OPTIONAL_LOCKS="0", LC_ALL="C", GIT_TERMINAL_PROMPT="0")
    try:
        out = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        log.warning("git %s in %s took over %.0f s; the project key falls back: pass --project", args[0], cwd, timeout)
        return None
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        log.debug("git %s in %s failed: %s", args[0], cwd, exc)
        return None
    if out.returncode != 0:
        log.debug("git %s in %s: exit %s: %s", args[0], cwd, out.returncode, out.stderr.strip()[:200])
        return None
    return out.stdout


def _git_common_dir(cwd: str) -> Path | None:
    out = _git(cwd, ["rev-parse", "--path-format=absolute", "--git-common-dir"], REV_PARSE_TIMEOUT)
    # The last line: git before 2.31 echoes the option it does not know, then prints a relative path.
    line = out.strip().splitlines()[-1] if out and out.strip() else ""
    return (Path(cwd) / line).resolve() if line else None


def _root_commit(cwd: str) -> str | None:
    """HEAD's first-parent root commit, or None (no commits yet, or git failed)."""
    out = _git(cwd, ["rev-list", "--first-parent", "--max-parents=0", "HEAD", "--"], ROOT_COMMIT_TIMEOUT)
    lines = (out or "").split()
    found = sorted(line for line in lines if re.fullmatch(r"[0-9a-fA-F]{40,64}", line))
    return found[0] if found else None


_SECTION = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]')


def _origin_url(common_dir: Path) -> str | None:
    """`remote.origin.url` from the repository's own config file (no subprocess; includes are not followed)."""
    try:
        text = (common_dir / "config").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    section: tuple[str, str | None] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            match = _SECTION.match(line)
            if match is None:
                section = None
                continue
            head, sub = match.group(1).lower(), match.group(2)
            if sub is None and head.startswith("remote."):  # the old `[remote.origin]` spelling
                head, sub = "remote", head.split(".", 1)[1]
            section = (head, sub)
            line = line[match.end() :].strip()
            if not line:
                continue
        if section != ("remote", "origin"):
            continue
        key, sep, value = line.partition("=")
        if sep and key.strip().lower() == "url":
            value = value.strip()
            if value.startswith('"') and value.endswith('"') and len(value) >= 2:
                value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
            else:
                value = re.split(r"\s[#;]", value, maxsplit=1)[0].strip()
            return value or None
    return None


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$", re.S)
_SCP = re.compile(r"^(?:[^@/]+@)?([^:/]+):(.*)$", re.S)


def normalize_remote(url: str, base: Path | None = None) -> str | None:
    """A remote URL without what varies between clones of one repository.

    `https://user:token@GitHub.com:443/Acme/Widget.git/`, `ssh://git@github.com/acme/widget` and
    `git@github.com:acme/widget.git` all become `github.com/acme/widget`. A local path (or
    `file://` URL) becomes its resolved absolute path, relative ones resolved against `base`.
    """
    url = url.strip()
    if not url:
        return None
    match = _SCHEME.match(url)
    if match:
        scheme, rest = match.group(1).lower(), match.group(2)
        if scheme == "file":
            return _local(rest[rest.find("/") :] if not rest.startswith("/") else rest, base)
        authority, _, path = rest.partition("/")
        host = authority.rsplit("@", 1)[-1]
        host = host[: host.index("]") + 1] if host.startswith("[") and "]" in host else host.split(":", 1)[0]
        return _tidy(f"{host}/{path}").lower()
    if not re.match(r"^[A-Za-z]:[\\/]", url) and not url.startswith(("/", ".", "~")):
        scp = _SCP.match(url)
        if scp:
            return _tidy(f"{scp.group(1)}/{scp.group(2)}").lower()
    return _local(url, base)


def _tidy(path: str) -> str:
    path = re.sub(r"/{2,}", "/", path).strip("/")
    while path.endswith(".git") or path.endswith("/"):
        path = path[:-4] if path.endswith(".git") else path[:-1]
    return path


def _local(path: str, base: Path | None) -> str | None:
    p = Path(path).expanduser()
    if not p.is_absolute() and base is not None:
        p = base / p
    try:
        resolved = str(p.resolve())
    except (OSError, RuntimeError):
        resolved = str(p)
    if resolved.endswith("/.git"):
        resolved = resolved[:-5]
    tidy = _tidy(resolved)
    if resolved.startswith("/"):
        tidy = "/" + tidy
    return tidy or None
