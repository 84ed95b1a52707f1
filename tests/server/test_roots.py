"""Workspace roots over a real MCP client: `chronomem serve` (stdio, no --project) asks the client for its
roots and keys memories to the root's git repository, not to the server's working directory."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import ListRootsResult, Root

from _server_helpers import READ_TIMEOUT, TEST_DEADLINE, call_ok, running_server, server_env
from chronomem.project import detect_project
from tests.gitrepo import IDENTITY

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

GIT_ENV = IDENTITY  # a fixed author and no user/system git config: see tests/gitrepo.py


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, env=env).stdout.strip()


def make_repo(path: Path, text: str) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q")
    (path / "README.md").write_text(text)
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", text)
    return path


class Roots:
    """The client's side of `roots/list`: whatever directories the test points it at."""

    def __init__(self, *paths: Path) -> None:
        self.paths = list(paths)
        self.asked = 0

    async def __call__(self, context) -> ListRootsResult:
        self.asked += 1
        return ListRootsResult(roots=[Root(uri=p.resolve().as_uri(), name=p.name) for p in self.paths])


def client(store: Path, cwd: Path, roots: Roots | None = None, mode: str = "legacy") -> Client:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "chronomem", "serve", "--store", str(store)], env=server_env(), cwd=cwd
    )
    return Client(params, mode=mode, read_timeout_seconds=READ_TIMEOUT, list_roots_callback=roots)


def mentions(out: dict, memory_id: str) -> bool:
    """The memory is among the results, itself or as the source of a fact extracted from it."""
    return any(r["id"] == memory_id or memory_id in (r.get("source_ids") or []) for r in out["results"])


@pytest.fixture
def repos(tmp_path: Path) -> dict[str, Path]:
    workspace = make_repo(tmp_path / "workspace", "the workspace")
    git(tmp_path, "clone", "-q", str(workspace), str(tmp_path / "other-checkout"))
    server_cwd = make_repo(tmp_path / "server-cwd", "where the server was started")
    unrelated = make_repo(tmp_path / "unrelated", "another project")
    return {"workspace": workspace, "clone": tmp_path / "other-checkout", "cwd": server_cwd, "unrelated": unrelated}


@pytest.mark.slow
async def test_memories_are_keyed_to_the_clients_root(store, repos):
    key = detect_project(str(repos["workspace"]))
    root_commit = git(repos["workspace"], "rev-list", "--max-parents=0", "HEAD")
    assert key == f"workspace-{root_commit[:8]}"
    server_key = detect_project(str(repos["cwd"]))
    assert server_key != key

    roots = Roots(repos["workspace"])
    with anyio.fail_after(TEST_DEADLINE):
        async with client(store, repos["cwd"], roots) as c:
            saved = await call_ok(c, "remember", {"content": "The staging database listens on port 6543"})
            assert saved["project"] == key
            found = await call_ok(c, "recall", {"query": "staging database port"})
            assert found["projects"] == [key]
            assert mentions(found, saved["id"]), found
            assert {r["project"] for r in found["results"]} == {key}
            both = await call_ok(c, "recall", {"query": "staging database port", "scope": "both"})
            assert both["projects"] == [key, "global"]
            assert roots.asked == 1, "roots are asked once per session, not per call"

            # An explicit project still wins over the root.
            elsewhere = await call_ok(c, "recall", {"query": "staging database port", "project": server_key})
            assert elsewhere["projects"] == [server_key]
            assert not mentions(elsewhere, saved["id"])

            # The client switches workspace: after roots/list_changed the new root decides.
            roots.paths = [repos["unrelated"]]
            await c.send_roots_list_changed()
            deadline = time.monotonic() + 10  # the notification and the next call are handled concurrently
            while True:
                out = await call_ok(c, "recall", {"query": "staging database port"})
                if out["projects"] != [key] or time.monotonic() > deadline:
                    break
                await anyio.sleep(0.1)
            assert out["projects"] == [detect_project(str(repos["unrelated"]))]
            assert roots.asked == 2

    # Another session whose root is a clone of the workspace at another path sees the same memory.
    with anyio.fail_after(TEST_DEADLINE):
        async with client(store, repos["cwd"], Roots(repos["clone"])) as c:
            found = await call_ok(c, "recall", {"query": "staging database port"})
    assert found["projects"] == [key]
    assert mentions(found, saved["id"]), found


@pytest.mark.slow
async def test_without_roots_the_server_directory_decides(store, repos):
    with anyio.fail_after(TEST_DEADLINE):
        async with client(store, repos["cwd"]) as c:
            saved = await call_ok(c, "remember", {"content": "Deploys go out on Tuesdays"})
    assert saved["project"] == detect_project(str(repos["cwd"]))


@pytest.mark.slow
async def test_explicit_project_flag_wins_over_roots(store, repos):
    roots = Roots(repos["workspace"])
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "chronomem", "serve", "--store", str(store), "--project", "pinned"],
        env=server_env(),
        cwd=repos["cwd"],
    )
    with anyio.fail_after(TEST_DEADLINE):
        async with Client(params, mode="legacy", read_timeout_seconds=READ_TIMEOUT, list_roots_callback=roots) as c:
            saved = await call_ok(c, "remember", {"content": "Deploys go out on Tuesdays"})
    assert saved["project"] == "pinned"
    assert roots.asked == 0


@pytest.mark.slow
async def test_a_failing_roots_callback_falls_back(store, repos):
    async def broken(context):
        raise RuntimeError("no roots here")

    with anyio.fail_after(TEST_DEADLINE):
        async with client(store, repos["cwd"], broken) as c:  # type: ignore[arg-type]
            saved = await call_ok(c, "remember", {"content": "Deploys go out on Tuesdays"})
    assert saved["project"] == detect_project(str(repos["cwd"]))


@pytest.mark.slow
async def test_each_http_session_has_its_own_root(store, repos, tmp_path):
    """One HTTP server, two sessions open at once with different roots: each is keyed to its own."""
    workspace_key = detect_project(str(repos["workspace"]))
    unrelated_key = detect_project(str(repos["unrelated"]))
    with running_server(store, "http", tmp_path, project=None) as base:
        with anyio.fail_after(TEST_DEADLINE):
            one = Client(f"{base}/mcp", mode="legacy", read_timeout_seconds=READ_TIMEOUT,
                         list_roots_callback=Roots(repos["workspace"]))
            two = Client(f"{base}/mcp", mode="legacy", read_timeout_seconds=READ_TIMEOUT,
                         list_roots_callback=Roots(repos["unrelated"]))
            async with one, two:
                first = await call_ok(one, "remember", {"content": "The workspace builds with make"})
                second = await call_ok(two, "remember", {"content": "The other project builds with cargo"})
                again = await call_ok(one, "recall", {"query": "how does it build"})
    assert first["project"] == workspace_key
    assert second["project"] == unrelated_key
    assert again["projects"] == [workspace_key]
    assert mentions(again, first["id"]) and not mentions(again, second["id"])
