"""`chronomem install claude-code` read back by the real Claude Code CLI: `claude mcp list` starts the configured
server over stdio, health-checks it, and reports it connected (project and user scope).

The CLI is pinned to CLAUDE_CODE_VERSION. `.ci/install-claude-code.sh` installs it from the npm registry into
$CHRONOMEM_CLAUDE_DIR (default `.ci/claude-code`); when that install is missing the test runs the script itself,
then falls back to a `claude` on PATH, and skips (saying why) when neither works. No API key is needed:
`claude mcp list` / `claude mcp get` only read the config and start the server. HOME points at a temporary
directory, so nothing of the user's own Claude Code settings is read or written.

Output format (2.1.x): one line per server, `<name>: <command> <args> - <status>`, where status is
`✔ Connected`, `✗ Failed to connect`, or `⏸ Pending approval (run `claude` to approve)` for a project
(.mcp.json) server nobody approved yet. Approval is read from settings: the documented
`enabledMcpjsonServers` key of the user settings (~/.claude/settings.json) approves it without a terminal.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, model_dir

pytestmark = pytest.mark.slow  # end to end through the Claude Code CLI (npm)

CLAUDE_CODE_VERSION = "2.1.330"
CLAUDE_DIR = Path(os.environ.get("CHRONOMEM_CLAUDE_DIR") or REPO / ".ci" / "claude-code")
INSTALL_SCRIPT = REPO / ".ci" / "install-claude-code.sh"
#: One CLI call spawns the server and waits for its health check; bounded so a hang fails instead of stalling CI.
RUN_TIMEOUT = 120


def _version(binary: str) -> str | None:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60,
                             env={**os.environ, "DISABLE_AUTOUPDATER": "1"}, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.split()[0] if out.returncode == 0 and out.stdout.strip() else None


@functools.cache
def _find_claude() -> tuple[str | None, str]:
    """(the CLI to run, "") or (None, why there is none). Cached: a failed install is tried once per session."""
    pinned = CLAUDE_DIR / "node_modules" / ".bin" / "claude"
    if pinned.exists() and _version(str(pinned)) == CLAUDE_CODE_VERSION:
        return str(pinned), ""
    reason = f"the Claude Code CLI {CLAUDE_CODE_VERSION} is not installed in {CLAUDE_DIR}"
    if shutil.which("npm") is not None and INSTALL_SCRIPT.exists():
        done = subprocess.run(["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=900,
                              stdin=subprocess.DEVNULL)
        if done.returncode == 0 and _version(str(pinned)) == CLAUDE_CODE_VERSION:
            return str(pinned), ""
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        reason += f", and `{INSTALL_SCRIPT.name}` could not install it from the npm registry ({tail})"
    else:
        reason += " and `npm` is not on PATH to install it"
    on_path = shutil.which("claude")
    if on_path is not None and _version(on_path):
        return on_path, ""
    return None, reason + "; no `claude` on PATH either"


@pytest.fixture(scope="module")
def claude() -> str:
    found, why = _find_claude()
    if found is None:
        pytest.skip(why)
    return found


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def claude_env(home: Path) -> dict[str, str]:
    """A clean environment: this HOME, no inherited Claude Code or chronomem settings, no network chatter."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


def run_claude(claude: str, *args: str, repo: Path, home: Path) -> str:
    out = subprocess.run([claude, *args], capture_output=True, text=True, cwd=repo, env=claude_env(home),
                         timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, (out.returncode, out.stdout, out.stderr)
    return out.stdout


def install(scope: str, repo: Path, home: Path, store: Path) -> None:
    env = {**claude_env(home), "CHRONOMEM_MODEL_PATH": str(model_dir()), "CHRONOMEM_HOME": str(store),
           "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-m", "chronomem", "install", "claude-code", "--scope", scope],
                         capture_output=True, text=True, cwd=repo, env=env, timeout=60)
    assert out.returncode == 0, out.stderr


def server_line(listing: str, name: str = "chronomem") -> str:
    lines = [line for line in listing.splitlines() if line.startswith(f"{name}: ")]
    assert len(lines) == 1, listing
    return lines[0]


def test_project_scope_server_connects_once_approved(claude: str, repo: Path, home: Path, tmp_path: Path) -> None:
    install("project", repo, home, tmp_path / "store")
    entry = json.loads((repo / ".mcp.json").read_text())["mcpServers"]["chronomem"]

    pending = server_line(run_claude(claude, "mcp", "list", repo=repo, home=home))
    assert pending.startswith(f"chronomem: {entry['command']} serve - ") and "Pending approval" in pending

    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(exist_ok=True)
    settings.write_text(json.dumps({"enabledMcpjsonServers": ["chronomem"]}))
    connected = server_line(run_claude(claude, "mcp", "list", repo=repo, home=home))
    assert connected.endswith("✔ Connected"), connected

    details = run_claude(claude, "mcp", "get", "chronomem", repo=repo, home=home)
    assert "Scope: Project config" in details and "Status: ✔ Connected" in details
    assert str(tmp_path) not in details and str(tmp_path) not in (repo / ".mcp.json").read_text(), "a shared file holds no machine path"


def test_user_scope_merges_into_claude_json_and_connects(claude: str, repo: Path, home: Path, tmp_path: Path) -> None:
    run_claude(claude, "mcp", "list", repo=repo, home=home)  # Claude Code writes its own ~/.claude.json first
    own = json.loads((home / ".claude.json").read_text())
    assert own and "mcpServers" not in own

    install("user", repo, home, tmp_path / "store")
    merged = json.loads((home / ".claude.json").read_text())
    assert {k: v for k, v in merged.items() if k != "mcpServers"} == own, "Claude Code's own keys are kept as they were"

    connected = server_line(run_claude(claude, "mcp", "list", repo=repo, home=home))
    assert connected.endswith("✔ Connected"), connected
    assert "Scope: User config" in run_claude(claude, "mcp", "get", "chronomem", repo=repo, home=home)
