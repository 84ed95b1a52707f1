"""`chronomem serve` driven by a third-party client: the MCP Inspector CLI (TypeScript SDK).

The Inspector is pinned to INSPECTOR_VERSION. `.ci/install-inspector.sh` installs it once into
$CHRONOMEM_INSPECTOR_DIR (default `.ci/node`); when that install is present (and of this
version) its `mcp-inspector` binary is used, otherwise `npx -y @modelcontextprotocol/inspector@VERSION`.

Invocation (one server process per call, spawned by the Inspector over stdio):

    mcp-inspector --cli --format json -e KEY=VALUE ... --method tools/call --tool-name recall \\
        --tool-arg query=... -- python -m chronomem serve --store DIR --project p

The Inspector does NOT hand its own environment to the server it spawns (only a default set
such as PATH and HOME), so CHRONOMEM_MODEL_PATH must be passed with `-e`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from _server_helpers import MODEL_PATH, PROJECT, REPO, TOOL_NAMES, full_env, serve_args

pytestmark = pytest.mark.slow  # end to end through the MCP Inspector CLI (npm)

INSPECTOR_VERSION = "2.12.0"
INSPECTOR_PACKAGE = f"@modelcontextprotocol/inspector@{INSPECTOR_VERSION}"
INSPECTOR_DIR = Path(os.environ.get("CHRONOMEM_INSPECTOR_DIR") or REPO / ".ci" / "node")
#: One Inspector run spawns node and the server; bounded so a hang fails instead of stalling CI.
RUN_TIMEOUT = 180

#: Exit status of the Inspector CLI when the tool result has isError: true.
EXIT_TOOL_IS_ERROR = 5


def _installed_inspector() -> list[str] | None:
    binary = INSPECTOR_DIR / "node_modules" / ".bin" / "mcp-inspector"
    manifest = INSPECTOR_DIR / "node_modules" / "@modelcontextprotocol" / "inspector" / "package.json"
    if not (binary.exists() and manifest.exists()):
        return None
    try:
        version = json.loads(manifest.read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None
    return [str(binary)] if version == INSPECTOR_VERSION else None


def _inspector_command() -> list[str]:
    installed = _installed_inspector()
    if installed is not None:
        if shutil.which("node") is None:
            pytest.skip("the MCP Inspector is installed but `node` is not on PATH")
        return installed
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip(
            "MCP Inspector tests need Node.js: `npx` is not on PATH and the Inspector is not installed "
            f"in {INSPECTOR_DIR} (run .ci/install-inspector.sh)"
        )
    return [npx, "-y", INSPECTOR_PACKAGE]


@pytest.fixture(scope="module")
def inspector() -> list[str]:
    return _inspector_command()


def run_inspector(
    inspector: list[str], store: Path, tmp_path: Path, *method_args: str, expect_exit: int = 0
) -> dict[str, Any]:
    """Run one Inspector CLI call against a freshly spawned `chronomem serve`; return its JSON output."""
    env = full_env()
    # Keep the Inspector's own state out of the user's home directory.
    env["MCP_CATALOG_PATH"] = str(tmp_path / "inspector" / "mcp.json")
    env["MCP_CLIENT_CONFIG_PATH"] = str(tmp_path / "inspector" / "client.json")
    # Proves `-e` is what carries the settings: the Inspector's own environment has none of them.
    for key in [k for k in env if k.startswith("CHRONOMEM_") or k == "HF_HUB_OFFLINE"]:
        del env[key]
    command = [
        *inspector,
        "--cli",
        "--format",
        "json",
        "-e",
        f"CHRONOMEM_MODEL_PATH={MODEL_PATH}",
        "-e",
        "HF_HUB_OFFLINE=1",
        *method_args,
        "--",
        sys.executable,
        *serve_args(store),
    ]
    done = subprocess.run(
        command, cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=RUN_TIMEOUT
    )
    where = f"\n$ {' '.join(command)}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    assert done.returncode == expect_exit, f"inspector exited {done.returncode}, expected {expect_exit}{where}"
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise AssertionError(f"inspector stdout is not one JSON document{where}") from None


def test_inspector_lists_the_five_tools(inspector, store, tmp_path):
    out = run_inspector(inspector, store, tmp_path, "--method", "tools/list", "--strict")
    tools = {tool["name"]: tool for tool in out["result"]["tools"]}
    assert set(tools) == TOOL_NAMES
    for name, tool in tools.items():
        assert tool.get("description"), name
        assert tool["inputSchema"]["type"] == "object", name
        assert tool.get("outputSchema", {}).get("type") == "object", name
    assert tools["recall"]["annotations"]["readOnlyHint"] is True
    assert tools["remember"]["annotations"]["destructiveHint"] is False


def test_inspector_remember_then_recall(inspector, store, tmp_path):
    kept = run_inspector(
        inspector,
        store,
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        "remember",
        "--tool-arg",
        "content=The deploy script lives in tools/deploy.sh",
    )["result"]
    assert kept["isError"] is False
    chunk_id = kept["structuredContent"]["id"]

    # A second server process on the same store, via --tool-args-json this time (facts need JSON).
    with_fact = run_inspector(
        inspector,
        store,
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        "remember",
        "--tool-args-json",
        json.dumps(
            {
                "content": "We lint with ruff",
                "facts": [{"subject": PROJECT, "predicate": "linter", "object": "ruff"}],
            }
        ),
    )["result"]
    assert with_fact["isError"] is False
    assert [f["action"] for f in with_fact["structuredContent"]["facts"]] == ["added"]

    found = run_inspector(
        inspector,
        store,
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        "recall",
        "--tool-arg",
        "query=where is the deploy script",
        "--tool-arg",
        "k=3",
    )["result"]
    assert found["isError"] is False
    results = found["structuredContent"]["results"]
    assert 1 <= len(results) <= 3
    assert results[0]["id"] == chunk_id
    assert results[0]["text"] == "The deploy script lives in tools/deploy.sh"
    assert "The deploy script lives in tools/deploy.sh" in found["content"][0]["text"]


def test_inspector_sees_tool_errors(inspector, store, tmp_path):
    out = run_inspector(
        inspector,
        store,
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        "as_of",
        "--tool-arg",
        "query=test command",
        "--tool-arg",
        "at=not a date",
        expect_exit=EXIT_TOOL_IS_ERROR,
    )["result"]
    assert out["isError"] is True
    [block] = out["content"]
    assert "not a date" in block["text"] and "\n" not in block["text"]
