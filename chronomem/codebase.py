"""The project's files and git repository: what code anchors and git-aware time read from disk.

Everything chronomem does with files or `git` lives here; the tools only call it.

**Where the files are.** A call's project directory comes from `MemoryService.workdir`. Its
*base* (`Codebase.root`) is the top level of the git repository holding it, or — when the
directory is not in a repository — the directory itself. Without `git` installed, the base is
the nearest parent holding a `.git` entry, else the directory. A project with no directory on
this machine (a plain name such as `myproj`) has no `Codebase`: paths are then kept as given,
with no hashes and no commit.

**Paths.** Paths are stored relative to the base, POSIX style (`src/app.py`). A relative path is
read against the base; if nothing is there but the project directory (a sub-directory of the
repository) has it, it is read against the directory. A path that leaves the base (absolute
elsewhere, or `../x`) is kept as a normalised absolute path with no hash — anchors are about
the project's own files, and the server reads nothing outside it. A path naming nothing yet,
or a directory, is kept with no hash; neither is an error. A path a memory is about that is
deleted later makes it stale.

**Globs** (`*`, `?`, `[…]`, `**` for any depth) are expanded against the base: in a repository
by `git ls-files` over tracked and untracked-but-not-ignored files (so `.gitignore`d files are
left out), otherwise by a bounded walk (at most `MAX_WALK_ENTRIES` entries, never into `.git`).
The glob itself is what is stored in `paths`; the files it matched are what is hashed. At most
`MAX_ANCHORED_FILES` files are hashed per memory (in path order) and the result says when
more matched.

**Hashes** are git blob ids of the working-tree bytes — sha1 of ``b"blob <len>\\0" + data``,
what `git hash-object` computes for a file without clean filters or end-of-line conversion —
computed in Python, with no subprocess per file (always the SHA-1 form: anchors are only ever
compared with each other, so a SHA-256 repository works the same). A symbolic link hashes its target path, as
git stores it (the link is never followed). Files larger than `MAX_HASHED_BYTES` and anything
that is not a regular file get no hash. Hashes are cached by the file's stat signature
(device, inode, size, mtime, ctime) for files not modified in the last `RACY_SECONDS`, so a
recall does not re-read unchanged files; a recently modified file is always re-read.

**Commits and refs** come from `git` itself with a `GIT_TIMEOUT` second timeout. `resolve_ref`
turns a commit, tag (lightweight or annotated: peeled to its commit) or branch into the
commit's committer time. When `git` is missing, times out or the directory is no repository,
commits are None and refs fail with `NotARef` saying why.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from chronomem.records import UTC

log = logging.getLogger(__name__)

#: Seconds any one `git` command may take before it is abandoned (as if git were missing).
GIT_TIMEOUT = 5.0
#: Most files whose hashes one memory records (a glob matching more is cut, and the result says so).
MAX_ANCHORED_FILES = 50
#: Files larger than this are anchored by path only (hashing them would stall a tool call).
MAX_HASHED_BYTES = 64 * 1024 * 1024
#: Most directory entries the walk that expands a glob outside a git repository visits.
MAX_WALK_ENTRIES = 20_000
#: A file modified less than this long ago is re-hashed on every look (its stat may not show the next edit).
RACY_SECONDS = 2.0
#: Entries of the stat → hash cache before it is cleared.
MAX_CACHED_HASHES = 10_000

_GLOB_CHARS = re.compile(r"[*?\[]")
_HEX = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


# ---------------------------------------------------------------------------- hashing


def blob_sha(data: bytes) -> str:
    """The git blob id of `data` (`git hash-object` without filters)."""
    h = hashlib.sha1(b"blob %d\0" % len(data))  # noqa: S324 - git's object id, not a security hash
    h.update(data)
    return h.hexdigest()


EMPTY_BLOB = blob_sha(b"")

_cache: dict[str, tuple[tuple[int, ...], str]] = {}
_cache_lock = threading.Lock()


def _signature(st: os.stat_result) -> tuple[int, ...]:
    """What tells one version of a file from the next without reading it."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _settled(signature: tuple[int, ...]) -> bool:
    """The file behind `signature` last changed more than `RACY_SECONDS` ago: its next change will show in a
    new signature (a change within the filesystem's timestamp tick might not)."""
    return time.time() - max(signature[3], signature[4]) / 1e9 > RACY_SECONDS


def _keep(cache: dict[Any, Any], key: Any, value: Any, limit: int) -> None:
    """Store in one of this module's bounded caches (cleared when full)."""
    with _cache_lock:
        if len(cache) >= limit:
            cache.clear()
        cache[key] = value


def hash_file(path: str | os.PathLike[str]) -> str | None:
    """The blob id of the file at `path` now, or None if it is missing, not a regular file or link, or too large."""
    name = os.fspath(path)
    try:
        st = os.lstat(name)
    except (OSError, ValueError):
        return None
    if stat.S_ISLNK(st.st_mode):
        try:
            return blob_sha(os.fsencode(os.readlink(name)))
        except OSError:
            return None
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_HASHED_BYTES:
        return None
    if st.st_size == 0:
        return EMPTY_BLOB
    signature = _signature(st)
    cached = _cache.get(name)
    if cached is not None and cached[0] == signature:
        return cached[1]
    try:
        with open(name, "rb") as fh:
            data = fh.read(MAX_HASHED_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_HASHED_BYTES:
        return None
    sha = blob_sha(data)
    if _settled(signature):
        _keep(_cache, name, (signature, sha), MAX_CACHED_HASHES)
    return sha


# ---------------------------------------------------------------------------- git


class NotARef(Exception):
    """A text that does not name a commit of the project's repository; `reason` says why, in a few words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class GitUnavailable(Exception):
    """`git` is not installed, or did not answer within `GIT_TIMEOUT` seconds."""


def git(args: list[str], cwd: str | os.PathLike[str]) -> subprocess.CompletedProcess[bytes]:
    """Run `git <args>` in `cwd` (no prompts, no optional locks); raise GitUnavailable when it cannot run."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
    try:
        proc = subprocess.Popen(
            ["git", *args], cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env, start_new_session=os.name == "posix",
        )
    except (OSError, ValueError) as exc:
        log.debug("git cannot run: %s", exc)
        raise GitUnavailable("git is not installed") from None
    try:
        out, err = proc.communicate(timeout=GIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        # git and anything it started (a hook, a credential helper) go together: they share its session.
        try:
            if os.name == "posix":
                os.killpg(proc.pid, signal.SIGKILL)
            else:  # pragma: no cover
                proc.kill()
        except OSError:
            pass
        proc.communicate()
        log.warning("git %s timed out after %.1f s in %s", args[0] if args else "", GIT_TIMEOUT, cwd)
        raise GitUnavailable(f"git did not answer within {GIT_TIMEOUT:g} s") from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _dotgit_parent(start: Path) -> Path | None:
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


# Each `git rev-parse` is a process start (~1.5 ms), and remember asked twice per call (the repository, then
# HEAD). Both answers are kept while the files they come from have the same signature.
_codebases: dict[Path, tuple[tuple[object, ...], Codebase]] = {}
_heads: dict[Path, tuple[tuple[object, ...], str]] = {}
#: Entries of each of those caches before it is cleared.
MAX_CACHED_REPOS = 256


def _file_signature(path: Path) -> tuple[int, ...] | None:
    """`_signature` of the file at `path` now; None when it is missing."""
    try:
        return _signature(os.stat(path))
    except FileNotFoundError:
        return None


@dataclass(frozen=True)
class RefTime:
    """A ref resolved in the project's repository: the commit it names and that commit's committer time."""

    ref: str
    commit: str
    time: datetime


@dataclass(frozen=True)
class Anchoring:
    """What `Codebase.anchor` made of the paths given to `remember`."""

    paths: list[str]  # as stored: base-relative POSIX (globs kept as globs), or absolute outside the base
    anchors: dict[str, str]  # base-relative file → blob id at write time
    notes: list[str] = field(default_factory=list)  # one short clause per path not anchored, or a glob cut


@dataclass(frozen=True)
class Codebase:
    """The files and repository behind one project directory."""

    workdir: Path
    root: Path  # the repository's top level, or the directory when it is not in a repository
    is_repo: bool
    git_missing: bool = False
    git_dir: Path | None = None  # this worktree's git directory (HEAD lives here)
    common_dir: Path | None = None  # the repository's shared git directory (refs, packed-refs)

    @classmethod
    def at(cls, workdir: str | os.PathLike[str] | None) -> Codebase | None:
        """The codebase of directory `workdir`, or None when there is no such directory."""
        if workdir is None:
            return None
        try:
            here = Path(os.path.realpath(workdir))
        except (OSError, ValueError):
            return None
        if not here.is_dir():
            return None
        dotgit = _dotgit_parent(here)
        try:  # the answer holds while the nearest .git is the same entry (a `git init` makes a new one)
            key: tuple[object, ...] | None = (dotgit, _file_signature(dotgit / ".git") if dotgit else None)
        except OSError:
            key = None
        if key is not None:
            known = _codebases.get(here)
            if known is not None and known[0] == key:
                return known[1]
        found, answered = cls._look(here, dotgit)
        if key is not None and answered:  # git missing or timing out is not kept: it may answer next time
            _keep(_codebases, here, (key, found), MAX_CACHED_REPOS)
        return found

    @classmethod
    def _look(cls, here: Path, dotgit: Path | None) -> tuple[Codebase, bool]:
        """The codebase at `here`, and whether git answered."""
        try:
            out = git(["rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir"], here)
        except GitUnavailable as exc:
            missing = str(exc) == "git is not installed"
            return cls(here, dotgit or here, is_repo=False, git_missing=missing), False
        lines = out.stdout.decode(errors="surrogateescape").splitlines() if out.returncode == 0 else []
        if len(lines) >= 3 and lines[0].strip():
            git_dir = Path(lines[1].strip())
            common = Path(lines[2].strip())
            common = common if common.is_absolute() else here / common
            return cls(here, Path(os.path.realpath(lines[0].strip())), is_repo=True, git_dir=git_dir,
                       common_dir=Path(os.path.realpath(common))), True
        return cls(here, here, is_repo=False), True

    # ------------------------------------------------------------------ git
    def head(self) -> str | None:
        """The commit HEAD names now (full sha), or None: no repository, no commit yet, or no git."""
        if not self.is_repo:
            return None
        key = self._head_key()
        if key is not None:
            known = _heads.get(self.root)
            if known is not None and known[0] == key:
                return known[1]
        try:
            out = git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], self.root)
        except GitUnavailable:
            return None
        sha = out.stdout.decode(errors="replace").strip()
        if out.returncode != 0 or not _HEX.match(sha):
            return None
        if key is not None:
            _keep(_heads, self.root, (key, sha), MAX_CACHED_REPOS)
        return sha

    def _head_key(self) -> tuple[object, ...] | None:
        """What HEAD's commit depends on: HEAD's text and the files of the ref it names (each replaced, never
        edited in place, by git). None — ask git — when a file changed within `RACY_SECONDS` (coarse
        timestamps), under the reftable format, or when anything cannot be read."""
        if self.git_dir is None or self.common_dir is None or (self.common_dir / "reftable").exists():
            return None
        head = self.git_dir / "HEAD"
        try:
            text = head.read_text(errors="surrogateescape")
            files = [head]
            if text.startswith("ref:"):
                files += [self.common_dir / text[4:].strip(), self.common_dir / "packed-refs"]
            keys = [_file_signature(f) for f in files]
        except OSError:
            return None
        if not all(k is None or _settled(k) for k in keys):
            return None
        return (text, *keys)

    def resolve_ref(self, ref: str) -> RefTime:
        """The commit `ref` names (a sha or its prefix, tag, branch, `HEAD~2`…) and its committer time."""
        text = ref.strip()
        if not looks_like_ref(text):
            raise NotARef("not a ref name")
        if not self.is_repo:
            if self.git_missing:
                raise NotARef("git is not installed")
            raise NotARef(f"{self.workdir} is not in a git repository")
        try:
            out = git(["rev-parse", "--verify", "--quiet", f"{text}^{{commit}}"], self.root)
            sha = out.stdout.decode(errors="replace").strip()
            if out.returncode != 0 or not _HEX.match(sha):
                raise NotARef(f"no commit, tag or branch {text!r} in {self.root}")
            shown = git(["show", "-s", "--format=%ct", sha], self.root)
        except GitUnavailable as exc:
            raise NotARef(str(exc)) from None
        try:
            seconds = int(shown.stdout.decode().strip().splitlines()[0])
        except (ValueError, IndexError, UnicodeDecodeError):
            raise NotARef(f"git could not read the time of commit {sha[:12]}") from None
        return RefTime(text, sha, datetime.fromtimestamp(seconds, UTC))

    # ------------------------------------------------------------------ paths
    def relative(self, given: str) -> tuple[str, Path | None]:
        """`given` as stored (base-relative POSIX, or absolute outside the base) and its location inside the base."""
        raw = given.strip()
        if os.path.isabs(raw):
            full = os.path.normpath(raw)
        else:
            full = os.path.normpath(os.path.join(self.root, raw))
            if not _GLOB_CHARS.search(raw) and not os.path.lexists(full) and self.workdir != self.root:
                beside = os.path.normpath(os.path.join(self.workdir, raw))
                if os.path.lexists(beside):
                    full = beside
        inside = self._inside(full)
        if inside is None:
            return Path(full).as_posix(), None
        return inside, self.root / inside if inside != "." else self.root

    def _inside(self, full: str) -> str | None:
        """`full` relative to the base (POSIX), or None when it is outside it."""
        candidates = [full]
        try:  # the path may spell the base through a symlink (/tmp vs /private/tmp): try its resolved parent too
            candidates.append(os.path.join(os.path.realpath(os.path.dirname(full)), os.path.basename(full)))
        except (OSError, ValueError):
            pass
        for candidate in candidates:
            try:
                rel = os.path.relpath(candidate, self.root)
            except ValueError:  # another drive on Windows
                continue
            if rel != ".." and not rel.startswith(".." + os.sep):
                return Path(rel).as_posix()
        return None

    def expand(self, pattern: str, limit: int = MAX_ANCHORED_FILES) -> tuple[list[str], int]:
        """Base-relative files matching glob `pattern` (base-relative), sorted: the first `limit`, and how many matched."""
        matched = self._ls_files(pattern) if self.is_repo else None
        if matched is None:
            matched = self._walk(pattern)
        matched = sorted(set(matched))
        return matched[:limit], len(matched)

    def _ls_files(self, pattern: str) -> list[str] | None:
        try:
            out = git(
                ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", f":(glob){pattern}"], self.root
            )
        except GitUnavailable:
            return None
        if out.returncode != 0:
            return None
        names = [n.decode(errors="surrogateescape") for n in out.stdout.split(b"\0") if n]
        return [n for n in names if os.path.lexists(self.root / n)]  # deleted but still in the index: no file to anchor

    def _walk(self, pattern: str) -> list[str]:
        regex = glob_regex(pattern)
        depth = None if "**" in pattern else pattern.count("/") + 1
        found: list[str] = []
        visited = 0
        for top, dirs, files in os.walk(self.root):
            rel_top = os.path.relpath(top, self.root)
            level = 0 if rel_top == "." else rel_top.count(os.sep) + 1
            dirs[:] = sorted(d for d in dirs if d != ".git") if depth is None or level + 1 < depth else []
            for name in sorted(files):
                visited += 1
                rel = name if rel_top == "." else Path(rel_top, name).as_posix()
                if regex.match(rel):
                    found.append(rel)
            visited += len(dirs)
            if visited >= MAX_WALK_ENTRIES:
                log.info("glob %r: stopped after %d entries under %s", pattern, visited, self.root)
                break
        return found

    def anchor(self, given: Iterable[str], limit: int = MAX_ANCHORED_FILES) -> Anchoring:
        """Store form of each path given to `remember`, and the blob ids of the files they name (at most `limit`)."""
        paths: list[str] = []
        anchors: dict[str, str] = {}
        notes: list[str] = []
        for raw in given:
            stored, location = self.relative(raw)
            paths.append(stored)
            if location is None:
                notes.append(f"{raw} is outside {self.root} (kept without a hash)")
                continue
            if _GLOB_CHARS.search(stored):
                room = limit - len(anchors)
                files, total = self.expand(stored, max(room, 0))
                if total == 0:
                    notes.append(f"{stored} matches no file (kept without a hash)")
                for rel in files:
                    sha = hash_file(self.root / rel)
                    if sha is not None:
                        anchors.setdefault(rel, sha)
                if total > len(files):
                    notes.append(f"{stored} matches {total} files; hashed {len(files)} (at most {limit} per memory)")
                continue
            if stored in anchors:
                continue
            if len(anchors) >= limit:
                notes.append(f"{stored} not hashed (at most {limit} files per memory)")
                continue
            sha = hash_file(location)
            if sha is None:
                if not os.path.lexists(location):
                    what = "does not exist"
                elif location.is_dir():
                    what = "is a directory"
                else:
                    what = "is not a regular file or is too large"
                notes.append(f"{stored} {what} (kept without a hash)")
            else:
                anchors[stored] = sha
        return Anchoring(list(dict.fromkeys(paths)), anchors, notes)

    def current(self, rel: str) -> str | None:
        """The blob id of base-relative file `rel` now (None: gone)."""
        return hash_file(self.root / rel)


def looks_like_ref(text: str) -> bool:
    """Could `text` be a git revision? (One token, printable, not an option.)"""
    return (
        0 < len(text) <= 256
        and not text.startswith("-")
        and not any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in text)
    )


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A regex for a glob over POSIX paths: `*` and `?` stay within a segment, `**` spans directories."""
    out = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "]") else i + 1)
            if end == -1:
                out.append(re.escape(c))
                i += 1
                continue
            body = pattern[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z")


# ---------------------------------------------------------------------------- matching and staleness


def path_matches(stored: str, given: str) -> bool:
    """Does a memory's path `stored` concern `given`? Equal, either a glob matching the other (fnmatch, so `*`
    also crosses `/`), or either a directory holding the other."""
    s, g = stored.rstrip("/"), given.rstrip("/")
    if not s or not g:
        return False
    return (
        s == g
        or fnmatchcase(s, g)
        or fnmatchcase(g, s)
        or s.startswith(g + "/")
        or g.startswith(s + "/")
    )


def normalise_query_path(given: str, codebase: Codebase | None) -> str:
    """A path given to `recall(paths=…)` in the form memories store it."""
    if codebase is None:
        return given.strip()
    stored, _ = codebase.relative(given)
    return stored


@dataclass(frozen=True)
class Change:
    path: str
    status: str  # "modified" or "deleted"


def changes(anchors: Mapping[str, str], current: Mapping[str, str | None]) -> list[Change]:
    """The anchored files whose blob id now (`current`; None = gone) differs from the one recorded. Pure."""
    out = []
    for path, recorded in sorted(anchors.items()):
        if path not in current:
            continue
        now = current[path]
        if now is None:
            out.append(Change(path, "deleted"))
        elif now != recorded:
            out.append(Change(path, "modified"))
    return out


class StalenessCheck:
    """Compares anchored memories with the files on disk, hashing each file at most once per check (one call)."""

    def __init__(self, codebase: Codebase | None) -> None:
        self.codebase = codebase
        self._now: dict[str, str | None] = {}

    def __call__(self, anchors: Mapping[str, str]) -> list[Change]:
        if self.codebase is None or not anchors:
            return []
        for path in anchors:
            if path not in self._now:
                self._now[path] = self.codebase.current(path)
        return changes(anchors, self._now)


def short(sha: str | None) -> str | None:
    """The abbreviation shown to people (7 hex digits, git's default)."""
    return sha[:7] if sha else None
