"""`chronomem install claude-code|cursor`: the documented JSON shapes (--print), merging into existing config
files without losing other servers or keys, idempotence, and home-directory files under $HOME (a tmp dir)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from chronomem.errors import InvalidInput
from chronomem.install import Target, build_entry, config_path, server_command, server_env, write_entry

MODEL = "/models/minilm"


def git_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def install(*args: str, cwd: Path, home: Path, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOMEM_")}
    env.update({"HOME": str(home), "CHRONOMEM_MODEL_PATH": MODEL, **(extra_env or {})})
    return subprocess.run(
        [sys.executable, "-m", "chronomem", "install", *args], capture_output=True, text=True, env=env, cwd=cwd,
        timeout=60,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "repo")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def expected_command(scope: str = "user") -> tuple[str, list[str]]:
    """Project files (shared through git) get the portable `chronomem`; user files this installation's path."""
    cmd = ["chronomem"] if scope == "project" else server_command()
    return cmd[0], [*cmd[1:], "serve"]


def expected_env(scope: str) -> dict[str, str]:
    return {} if scope == "project" else {"CHRONOMEM_MODEL_PATH": MODEL}


@pytest.mark.slow
@pytest.mark.parametrize("scope", ["project", "user"])
def test_print_claude_code_shape(repo: Path, home: Path, scope: str) -> None:
    out = install("claude-code", "--scope", scope, "--print", cwd=repo, home=home)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    command, args = expected_command(scope)
    # Claude Code's documented stdio entry: {"mcpServers": {name: {type, command, args, env}}}.
    assert data == {"mcpServers": {"chronomem": {"type": "stdio", "command": command, "args": args,
                                                 "env": expected_env(scope)}}}
    if scope == "user":
        assert os.path.isabs(command) and os.access(command, os.X_OK)
    assert not (repo / ".mcp.json").exists() and not (home / ".claude.json").exists(), "--print writes nothing"


@pytest.mark.slow
@pytest.mark.parametrize("scope", ["project", "user"])
def test_print_cursor_shape_uses_workspace_folder(repo: Path, home: Path, scope: str) -> None:
    out = install("cursor", "--scope", scope, "--print", cwd=repo, home=home)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    command, args = expected_command(scope)
    # Cursor's mcp.json: {command, args, env} (no type); ${workspaceFolder} is substituted by Cursor.
    assert data == {"mcpServers": {"chronomem": {"command": command, "args": [*args, "--project", "${workspaceFolder}"],
                                                 "env": expected_env(scope)}}}
    assert not (repo / ".cursor").exists() and not (home / ".cursor").exists()


def test_config_paths_follow_each_client(repo: Path, home: Path) -> None:
    assert config_path("claude-code", "project", repo, home) == repo / ".mcp.json"
    assert config_path("claude-code", "user", repo, home) == home / ".claude.json"
    assert config_path("cursor", "project", repo, home) == repo / ".cursor" / "mcp.json"
    assert config_path("cursor", "user", repo, home) == home / ".cursor" / "mcp.json"
    with pytest.raises(InvalidInput):
        config_path("vscode", "project", repo, home)


def test_project_scope_writes_at_the_repository_root_from_a_subdirectory(repo: Path, home: Path) -> None:
    sub = repo / "src" / "deep"
    sub.mkdir(parents=True)
    out = install("claude-code", cwd=sub, home=home)  # --scope defaults to project
    assert out.returncode == 0, out.stderr
    assert f"added chronomem in {repo.resolve() / '.mcp.json'}" in out.stdout
    entry = json.loads((repo / ".mcp.json").read_text())["mcpServers"]["chronomem"]
    assert entry["type"] == "stdio" and entry["args"][-1] == "serve"
    assert not (sub / ".mcp.json").exists()


@pytest.mark.slow
def test_user_scope_merges_into_claude_json_keeping_everything_else(repo: Path, home: Path) -> None:
    existing = {
        "numStartups": 7,
        "projects": {"/some/where": {"allowedTools": ["Bash"], "mcpServers": {}}},
        "mcpServers": {"github": {"type": "stdio", "command": "npx", "args": ["-y", "gh-mcp"], "env": {"X": "1"}}},
    }
    claude_json = home / ".claude.json"
    claude_json.write_text(json.dumps(existing))
    claude_json.chmod(0o600)

    out = install("claude-code", "--scope", "user", cwd=repo, home=home)
    assert out.returncode == 0, out.stderr
    data = json.loads(claude_json.read_text())
    assert data["numStartups"] == 7 and data["projects"] == existing["projects"]
    assert data["mcpServers"]["github"] == existing["mcpServers"]["github"]
    assert data["mcpServers"]["chronomem"]["command"] == expected_command()[0]
    assert stat.S_IMODE(claude_json.stat().st_mode) == 0o600, "the file's mode is kept"
    assert [p.name for p in home.iterdir()] == [".claude.json"], "no temp file is left behind"

    again = install("claude-code", "--scope", "user", cwd=repo, home=home)
    assert again.returncode == 0 and "already up to date" in again.stdout
    assert json.loads(claude_json.read_text()) == data


@pytest.mark.slow
def test_cursor_project_merge_and_update(repo: Path, home: Path) -> None:
    cursor = repo / ".cursor" / "mcp.json"
    cursor.parent.mkdir()
    stale = {"command": "/old/venv/bin/chronomem", "args": ["serve"], "env": {}}
    cursor.write_text(json.dumps({"mcpServers": {"chronomem": stale, "db": {"url": "http://localhost:9000/mcp"}}}))

    out = install("cursor", "--json", cwd=repo, home=home, extra_env={"CHRONOMEM_HOME": "rel/store"})
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert (result["action"], result["scope"], Path(result["path"])) == ("updated", "project", cursor.resolve())
    servers = json.loads(cursor.read_text())["mcpServers"]
    assert servers["db"] == {"url": "http://localhost:9000/mcp"}
    # A project file is shared through git: no path of this machine in it, the command found on PATH.
    assert servers["chronomem"]["env"] == {} and servers["chronomem"]["command"] == "chronomem"
    assert install("cursor", "--json", cwd=repo, home=home, extra_env={"CHRONOMEM_HOME": "rel/store"}).stdout.count(
        '"unchanged"') == 1


def test_env_carries_only_chronomem_locations() -> None:
    environ = {"CHRONOMEM_MODEL_PATH": "~/m", "CHRONOMEM_HOME": "/s", "CHRONOMEM_TOKEN": "t0ken",
               "CHRONOMEM_LLM_API_KEY": "sk-x", "ANTHROPIC_API_KEY": "sk-y", "CHRONOMEM_PROJECT": "p"}
    env = server_env(environ)
    assert env == {"CHRONOMEM_MODEL_PATH": os.path.expanduser("~/m"), "CHRONOMEM_HOME": "/s"}
    assert server_env({}, store="/other") == {"CHRONOMEM_HOME": "/other"}


def test_build_entry_is_pure_and_pins_an_explicit_project() -> None:
    entry = build_entry("claude-code", "user", ["/venv/bin/python", "-m", "chronomem"], {}, project="shop")
    assert entry == {"type": "stdio", "command": "/venv/bin/python", "args": ["-m", "chronomem", "serve", "--project", "shop"],
                     "env": {}}


def test_command_falls_back_to_python_dash_m(tmp_path: Path) -> None:
    python = tmp_path / "bin" / "python"
    assert server_command(which=lambda _: None, executable=str(python)) == [str(python), "-m", "chronomem"]
    assert server_command(which=lambda _: "/usr/local/bin/chronomem", executable=str(python)) == ["/usr/local/bin/chronomem"]


@pytest.mark.slow
def test_broken_json_is_refused_not_overwritten(repo: Path, home: Path) -> None:
    broken = '{"mcpServers": {"x": '
    (repo / ".mcp.json").write_text(broken)
    out = install("claude-code", cwd=repo, home=home)
    assert out.returncode == 2 and out.stderr.startswith("error: ") and "is not valid JSON (line 1" in out.stderr
    assert (repo / ".mcp.json").read_text() == broken
    with pytest.raises(InvalidInput, match="not an object"):
        (repo / "list.json").write_text("[]")
        write_entry(Target("cursor", "project", repo / "list.json"), {"command": "x", "args": []})


@pytest.mark.slow
def test_uninstall_removes_exactly_what_install_added(repo: Path, home: Path) -> None:
    mcp = repo / ".mcp.json"
    mcp.write_text(json.dumps({"mcpServers": {"github": {"command": "npx", "args": ["gh"]}}, "x": 1}))
    before = json.loads(mcp.read_text())
    assert install("claude-code", cwd=repo, home=home).returncode == 0
    out = install("claude-code", "--uninstall", cwd=repo, home=home)
    assert out.returncode == 0 and "removed chronomem" in out.stdout, out.stderr
    assert json.loads(mcp.read_text()) == before
    assert "no chronomem entry" in install("claude-code", "--uninstall", cwd=repo, home=home).stdout

    assert install("cursor", cwd=repo, home=home).returncode == 0  # a file install created is removed whole
    assert install("cursor", "--uninstall", cwd=repo, home=home).returncode == 0
    assert not (repo / ".cursor").exists()
    assert install("cursor", "--scope", "user", cwd=repo, home=home).returncode == 0
    assert install("cursor", "--scope", "user", "--uninstall", cwd=repo, home=home).returncode == 0
    assert not (home / ".cursor").exists()
