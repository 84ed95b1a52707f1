"""`chronomem install claude-code|cursor`: the MCP client config entry that runs `chronomem serve`.

Where each client reads its stdio servers (the clients' own documented conventions):

| client | scope | file | entry |
|---|---|---|---|
| Claude Code | project | `<repo root>/.mcp.json` | `mcpServers.chronomem = {type: stdio, command, args, env}` |
| Claude Code | user | `~/.claude.json` (top-level `mcpServers`, as `claude mcp add --scope user` writes) | same |
| Cursor | project | `<repo root>/.cursor/mcp.json` | `mcpServers.chronomem = {command, args, env}` |
| Cursor | user | `~/.cursor/mcp.json` | same |

In a project file (`.mcp.json`, `.cursor/mcp.json`: shared through git) the command is plain
`chronomem`, which works for every clone whose PATH has it (pipx, `uv tool install`, an activated
venv), and `env` carries no path of this machine. In a user file the command is the absolute
path of the `chronomem` script of the running installation (the one beside this interpreter, else
the one on PATH, else `python -m chronomem`), so the client starts the same chronomem whatever its
PATH, with the store and model folders as set. `--uninstall` removes the entry and nothing else. Cursor entries pass `--project ${workspaceFolder}`:
Cursor substitutes the open workspace there, and `serve --project <absolute dir>` scopes memory
to that directory's repository. Claude Code starts project servers in the project directory,
which chronomem detects by itself. `env` carries only chronomem's own location settings
(store, model) when the installer has them set: never tokens or API keys.

Writing merges: other servers and every other key of the file are kept, an identical entry
is left alone (idempotent), and the new file replaces the old one atomically with its mode
kept. A file that is not valid JSON is refused, never overwritten. Home-directory paths come
from `Path.home()`, which honours `$HOME`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chronomem.errors import InvalidInput

CLIENTS = ("claude-code", "cursor")
SCOPES = ("project", "user")
SERVER_NAME = "chronomem"
#: Settings passed to the server through the client's `env` (locations only, nothing secret).
ENV_KEYS = ("CHRONOMEM_HOME", "CHRONOMEM_MODEL_PATH", "CHRONOMEM_MODEL")
#: Settings whose values are paths: made absolute, as the client starts the server elsewhere.
_PATH_KEYS = ("CHRONOMEM_HOME", "CHRONOMEM_MODEL_PATH")
#: Cursor's variable for the open workspace folder in mcp.json.
CURSOR_WORKSPACE = "${workspaceFolder}"


@dataclass(frozen=True)
class Target:
    """One client config file and the scope it stands for."""

    client: str
    scope: str
    path: Path


@dataclass(frozen=True)
class InstallResult:
    """What `write_entry` did: `added`, `updated` or `unchanged`."""

    target: Target
    action: str
    entry: dict[str, Any]


def project_root(cwd: str | os.PathLike[str] | None = None) -> Path:
    """The top of the git work tree holding `cwd` (where clients look for project config), else `cwd`."""
    here = Path(cwd or os.getcwd()).resolve()
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=here, capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return here
    top = out.stdout.strip()
    return Path(top) if out.returncode == 0 and top else here


def config_path(client: str, scope: str, root: Path | None = None, home: Path | None = None) -> Path:
    """The config file `client` reads its `scope` servers from."""
    _check(client, scope)
    home = home if home is not None else Path.home()
    if scope == "project":
        base = root if root is not None else project_root()
        return base / ".mcp.json" if client == "claude-code" else base / ".cursor" / "mcp.json"
    return home / ".claude.json" if client == "claude-code" else home / ".cursor" / "mcp.json"


def all_targets(root: Path | None = None, home: Path | None = None) -> list[Target]:
    """Every (client, scope) config file, project scope first."""
    root = root if root is not None else project_root()
    return [Target(c, s, config_path(c, s, root, home)) for s in SCOPES for c in CLIENTS]


def server_command(
    which: Callable[[str], str | None] = shutil.which, executable: str | None = None
) -> list[str]:
    """How a client starts this chronomem: its script's absolute path, else `python -m chronomem`.

    The script installed beside the running interpreter comes first (the same installation,
    even when its bin directory is not on PATH), then `chronomem` on PATH.
    """
    python = executable or sys.executable
    names = ("chronomem.exe", "chronomem") if os.name == "nt" else ("chronomem",)
    for name in names:
        sibling = Path(python).parent / name
        if sibling.is_file() and os.access(sibling, os.X_OK):
            return [os.path.abspath(sibling)]
    found = which("chronomem")
    if found:
        return [os.path.abspath(found)]
    return [os.path.abspath(python), "-m", "chronomem"]


def portable_command() -> list[str]:
    """The command written into shared project files: `chronomem`, found on each teammate's PATH (pipx, uv tool, a
    venv on PATH). Machine-specific paths (this venv's binary, a model folder) belong in user-scope files only."""
    return ["chronomem"]


def server_env(environ: Mapping[str, str] | None = None, store: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """The chronomem settings the installer has set, for the client to pass on (paths made absolute)."""
    env = os.environ if environ is None else environ
    out: dict[str, str] = {}
    for key in ENV_KEYS:
        value = (env.get(key) or "").strip()
        if value:
            out[key] = _absolute(value) if key in _PATH_KEYS else value
    if store:
        out["CHRONOMEM_HOME"] = _absolute(str(store))
    return out


def _absolute(value: str) -> str:
    """A local path made absolute; a store URI (`s3://…`, config.parse_store) kept as it is."""
    from chronomem.config import is_remote, parse_store

    return value if is_remote(parse_store(value, {})) else os.path.abspath(os.path.expanduser(value))


def build_entry(
    client: str,
    scope: str,
    command: list[str],
    env: Mapping[str, str],
    project: str | None = None,
) -> dict[str, Any]:
    """The `mcpServers.chronomem` object for `client` (a pure function of its inputs)."""
    _check(client, scope)
    args = [*command[1:], "serve"]
    if project:
        args += ["--project", project]
    elif client == "cursor":
        args += ["--project", CURSOR_WORKSPACE]
    entry: dict[str, Any] = {"type": "stdio"} if client == "claude-code" else {}
    entry.update({"command": command[0], "args": args, "env": dict(env)})
    return entry


def snippet(entry: Mapping[str, Any], name: str = SERVER_NAME) -> dict[str, Any]:
    """The JSON to merge into a client config: `{"mcpServers": {name: entry}}`."""
    return {"mcpServers": {name: dict(entry)}}


def read_config(path: Path) -> dict[str, Any]:
    """A client config file as a dict (empty when missing); InvalidInput when it is not a JSON object."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read {path}: {exc}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); fix it first, nothing was written"
        ) from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} holds a JSON {type(data).__name__}, not an object; nothing was written")
    servers = data.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise InvalidInput(f"{path}: mcpServers is not an object; nothing was written")
    return data


def merged(config: Mapping[str, Any], entry: Mapping[str, Any], name: str = SERVER_NAME) -> dict[str, Any]:
    """`config` with `mcpServers[name]` set to `entry`, every other key and server kept in place."""
    out = dict(config)
    servers = dict(out.get("mcpServers") or {})
    servers[name] = dict(entry)
    out["mcpServers"] = servers
    return out


def remove_entry(target: Target, name: str = SERVER_NAME) -> str:
    """Remove `mcpServers[name]` from the target file, keeping everything else: `removed` or `absent`.

    A file left holding nothing but an empty `mcpServers` (one `install` created) is deleted, with a
    `.cursor` folder it leaves empty."""
    config = read_config(target.path)
    servers = dict(config.get("mcpServers") or {})
    if name not in servers:
        return "absent"
    del servers[name]
    rest = {k: v for k, v in config.items() if k != "mcpServers"}
    if not servers and not rest:
        target.path.unlink()
        if target.path.parent.name == ".cursor" and not any(target.path.parent.iterdir()):
            target.path.parent.rmdir()
        return "removed"
    _write_json_atomic(target.path, {**config, "mcpServers": servers})
    return "removed"


def write_entry(target: Target, entry: Mapping[str, Any], name: str = SERVER_NAME) -> InstallResult:
    """Merge `entry` into the target file; write only when it changes, atomically, keeping the file's mode."""
    config = read_config(target.path)
    existing = (config.get("mcpServers") or {}).get(name)
    if existing == dict(entry):
        return InstallResult(target, "unchanged", dict(entry))
    _write_json_atomic(target.path, merged(config, entry, name))
    return InstallResult(target, "added" if existing is None else "updated", dict(entry))


def _write_json_atomic(path: Path, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            json.dump(data, handle, indent=2, ensure_ascii=False)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        else:
            os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _check(client: str, scope: str) -> None:
    if client not in CLIENTS:
        raise InvalidInput(f"client must be one of {', '.join(CLIENTS)} (got {client!r})")
    if scope not in SCOPES:
        raise InvalidInput(f"scope must be one of {', '.join(SCOPES)} (got {scope!r})")


# ---------------------------------------------------------------------------- command line


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register `chronomem install` on the sub-command parser."""
    p = sub.add_parser(
        "install",
        parents=[common],
        help="add chronomem to an MCP client's config (Claude Code, Cursor)",
        description="Write the MCP server entry that runs `chronomem serve` into the client's config, merged with "
        "what is there (other servers and settings are kept). Project scope: .mcp.json (Claude Code) or "
        ".cursor/mcp.json (Cursor) at the repository root; user scope: ~/.claude.json or ~/.cursor/mcp.json. "
        "CHRONOMEM_HOME, CHRONOMEM_MODEL_PATH and CHRONOMEM_MODEL are passed on when set (or --store given).",
    )
    p.add_argument("client", choices=CLIENTS, help="the MCP client to set up")
    p.add_argument("--scope", choices=SCOPES, default="project", help="project (default) or user")
    p.add_argument("--print", dest="print_only", action="store_true", help="print the JSON to add; write nothing")
    p.add_argument("--name", default=SERVER_NAME, help=f"the server's name in the config (default {SERVER_NAME})")
    p.add_argument("--uninstall", action="store_true",
                   help="remove the entry install added (other servers and settings are kept)")


def run(args: argparse.Namespace) -> int:
    """`chronomem install`: print or write the entry; one line (or JSON) says what happened."""
    name = (args.name or SERVER_NAME).strip()
    if not name:
        raise InvalidInput("--name must not be empty")
    target = Target(args.client, args.scope, config_path(args.client, args.scope))
    if getattr(args, "uninstall", False):
        action = remove_entry(target, name)
        if getattr(args, "json", False):
            print(json.dumps({"client": target.client, "scope": target.scope, "path": str(target.path),
                              "action": action, "name": name}, indent=2))
        else:
            print(f"removed {name} from {target.path}" if action == "removed" else f"no {name} entry in {target.path}")
        return 0
    shared = args.scope == "project"  # a file in the repository, shared through git: nothing of this machine in it
    env = server_env(store=getattr(args, "store", None))
    entry = build_entry(
        args.client,
        args.scope,
        portable_command() if shared else server_command(),
        {k: v for k, v in env.items() if k not in _PATH_KEYS} if shared else env,
        project=getattr(args, "project", None),
    )
    if args.print_only:
        print(json.dumps(snippet(entry, name), indent=2, ensure_ascii=False))
        return 0
    result = write_entry(target, entry, name)
    if getattr(args, "json", False):
        print(json.dumps({"client": target.client, "scope": target.scope, "path": str(target.path),
                          "action": result.action, "name": name, "entry": result.entry}, indent=2))
        return 0
    verb = {"added": "added", "updated": "updated", "unchanged": "already up to date:"}[result.action]
    print(f"{verb} {name} in {target.path} ({target.client}, {target.scope} scope)")
    if target.client == "claude-code" and target.scope == "project":
        print("Claude Code asks once to approve a project's .mcp.json servers: run `claude` in the repository "
              "(`claude mcp list` shows the server as pending until then).", file=sys.stderr)
    elif target.client == "cursor":
        print("Cursor picks up mcp.json changes on its own; check Settings → MCP for a green dot.", file=sys.stderr)
    return 0
