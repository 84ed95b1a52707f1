"""One shared server for a team (server/team.py): `serve --transport http --tokens FILE`, a real process, real MCP
clients each with its own token. A client's name is recorded on what it writes; a read-only token may only read;
a token limited to projects may not touch others; an unknown token gets 401; Host/Origin are still checked."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest

from _server_helpers import READ_TIMEOUT, call_error, call_ok, full_env, running_server, serve_args

pytestmark = pytest.mark.slow  # a real server and four clients (~15 s)

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def tokens_file(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    tokens = {name: secrets.token_urlsafe(24) for name in ("alice", "ci", "web")}
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"clients": [
        {"name": "alice", "token": tokens["alice"]},
        {"name": "ci", "token": tokens["ci"], "read_only": True},
        {"name": "web", "token": tokens["web"], "projects": ["web-app"]},
    ]}))
    return path, tokens


async def session(base: str, token: str, work) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=READ_TIMEOUT) as http:
        async with Client(streamable_http_client(f"{base}/mcp", http_client=http), read_timeout_seconds=READ_TIMEOUT) as c:
            await work(c)


def test_team_server_names_limits_and_refuses(store: Path, tmp_path: Path) -> None:
    path, tokens = tokens_file(tmp_path)
    with running_server(store, "http", tmp_path, project="backend", extra=["--host", "0.0.0.0", "--tokens", str(path)]) as base:
        post = lambda **h: httpx.post(f"{base}/mcp", json=INIT, headers={**HEADERS, **h}, timeout=READ_TIMEOUT)  # noqa: E731
        assert post().status_code == 401
        assert post(Authorization="Bearer not-a-known-token-000000").status_code == 401
        assert post(Authorization=f"Bearer {tokens['ci']}", Origin="http://evil.example").status_code == 403
        ids: dict[str, str] = {}

        async def alice(c) -> None:
            kept = await call_ok(c, "remember", {"content": "The backend deploys with make release."})
            ids["alice"] = kept["id"]

        async def ci(c) -> None:
            found = await call_ok(c, "recall", {"query": "how does the backend deploy?"})
            assert ids["alice"] in [r["id"] for r in found["results"]]
            refused = await call_error(c, "remember", {"content": "CI may not write."})
            assert "read-only" in refused and "ci" in refused
            refused = await call_error(c, "forget", {"id": ids["alice"], "reason": "no"})
            assert "read-only" in refused

        async def web(c) -> None:
            empty = await call_ok(c, "recall", {"query": "how does it build?", "project": "web-app"})
            assert empty["results"] == [] and "'web-app' has no memories" in empty["message"]
            assert "backend" not in empty["message"]  # another client's project is not named to this one
            kept = await call_ok(c, "remember", {"content": "The web app builds with vite.", "project": "web-app"})
            ids["web"] = kept["id"]
            refused = await call_error(c, "recall", {"query": "deploy"})  # the server's default project: backend
            assert "may not use project 'backend'" in refused
            assert "scope 'all'" in await call_error(c, "recall", {"query": "x", "project": "web-app", "scope": "all"})
            assert "backend" in await call_error(c, "forget", {"id": ids["alice"], "reason": "not mine"})
            with pytest.raises(Exception, match="may not use project 'backend'"):
                await c.read_resource("chronomem://brief")
            assert "web app" in str(await c.read_resource("chronomem://brief/web-app")).lower()

        async def check(c) -> None:
            chain = await call_ok(c, "history", {"id": ids["alice"]})
            found = await call_ok(c, "recall", {"query": "how does the web app build?", "project": "web-app"})
            hit = next(r for r in found["results"] if r["id"] == ids["web"])
            assert "client:web" in hit["tags"], hit
            assert chain["entries"]

        async def run() -> None:
            await session(base, tokens["alice"], alice)
            await session(base, tokens["ci"], ci)
            await session(base, tokens["web"], web)
            await session(base, tokens["alice"], check)

        anyio.run(run)
    log = (tmp_path / "server-http.log").read_text()
    assert all(t not in log for t in tokens.values()), "a token reached the server log"


def test_a_bad_token_file_is_one_line(store: Path, tmp_path: Path) -> None:
    bad = tmp_path / "tokens.json"
    bad.write_text(json.dumps({"clients": [{"name": "x", "token": "short"}]}))
    done = subprocess.run([sys.executable, *serve_args(store, "--transport", "http", "--tokens", str(bad))],
                          env=full_env(), cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    lines = [line for line in done.stderr.strip().splitlines() if line]
    assert len(lines) == 1 and "16+ characters" in lines[0] and "'x'" in lines[0], done.stderr
