"""Network exposure of `chronomem serve --transport http|sse`, with real HTTP against spawned servers:
refusal to bind a non-loopback address without a token, 401 without the bearer token, and Host/Origin
checks against DNS rebinding. All traffic goes to 127.0.0.1."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import pytest

from _server_helpers import READ_TIMEOUT, call_ok, free_port, full_env, serve_args

TOKEN = "test-token-7f3a9c1e5b2d4f60a8"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "sec-test", "version": "0"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def serve(store: Path, cwd: Path, *extra: str, token_env: str | None = None) -> subprocess.CompletedProcess:
    """Run `chronomem serve` expecting it to refuse to start (it exits at once)."""
    env = full_env(**({"CHRONOMEM_TOKEN": token_env} if token_env else {}))
    return subprocess.run(
        [sys.executable, *serve_args(store, *extra)], env=env, cwd=cwd, capture_output=True, text=True, timeout=60,
        stdin=subprocess.DEVNULL,
    )


@contextmanager
def spawned(store: Path, cwd: Path, transport: str, host: str = "127.0.0.1", token: str | None = None,
            token_flag: bool = False) -> Iterator[str]:
    port = free_port()
    args = ["--transport", transport, "--host", host, "--port", str(port)]
    if token and token_flag:
        args += ["--token", token]
    env = full_env(**({"CHRONOMEM_TOKEN": token} if token and not token_flag else {}))
    log = open(cwd / f"server-{transport}-{port}.log", "wb")
    proc = subprocess.Popen([sys.executable, *serve_args(store, *args)], env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (cwd / f"server-{transport}-{port}.log").read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "server did not listen"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def post_init(base: str, **headers: str) -> httpx.Response:
    return httpx.post(f"{base}/mcp", json=INIT, headers={**MCP_HEADERS, **headers}, timeout=READ_TIMEOUT)


@pytest.mark.parametrize("transport", ["http", "sse"])
def test_refuses_a_non_loopback_bind_without_a_token(store: Path, tmp_path: Path, transport: str) -> None:
    out = serve(store, tmp_path, "--transport", transport, "--host", "0.0.0.0", "--port", str(free_port()))
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0, out.stderr
    assert out.stderr.startswith("error: binding to 0.0.0.0 exposes this memory to the network: set CHRONOMEM_TOKEN")
    assert out.stdout == ""
    weak = serve(store, tmp_path, "--transport", transport, "--host", "0.0.0.0", "--port", str(free_port()),
                 token_env="short")
    assert weak.returncode == 2 and "at least 16 characters" in weak.stderr and "\n" not in weak.stderr.strip()


def test_http_requires_the_bearer_token(store: Path, tmp_path: Path) -> None:
    with spawned(store, tmp_path, "http", token=TOKEN) as base:
        missing = post_init(base)
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"].startswith("Bearer")
        assert post_init(base, Authorization="Bearer wrong-token-0000000000").status_code == 401
        assert post_init(base, Authorization=f"Basic {TOKEN}").status_code == 401
        assert httpx.get(f"{base}/mcp", timeout=READ_TIMEOUT).status_code == 401
        ok = post_init(base, Authorization=f"Bearer {TOKEN}")
        assert ok.status_code == 200, ok.text
        assert "chronomem" in ok.text

        # DNS rebinding: a page on another origin, or a request naming another host, is turned away
        # even with the token.
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert post_init(base, Origin="http://evil.example", **auth).status_code == 403
        assert post_init(base, Host="evil.example:80", **auth).status_code == 421
        port = base.rsplit(":", 1)[1]
        assert post_init(base, Origin=f"http://localhost:{port}", **auth).status_code == 200


@pytest.mark.slow
def test_token_from_the_flag_and_a_real_mcp_client(store: Path, tmp_path: Path) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    with spawned(store, tmp_path, "http", token=TOKEN, token_flag=True) as base:
        assert post_init(base).status_code == 401

        async def talk() -> None:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=READ_TIMEOUT) as http:
                async with Client(streamable_http_client(f"{base}/mcp", http_client=http), read_timeout_seconds=READ_TIMEOUT) as client:
                    kept = await call_ok(client, "remember", {"content": "The VPN endpoint is vpn.internal:1194"})
                    found = await call_ok(client, "recall", {"query": "vpn endpoint"})
                    assert kept["id"] in {r["id"] for r in found["results"]}

        anyio.run(talk)


def test_loopback_without_token_still_checks_origin(store: Path, tmp_path: Path) -> None:
    with spawned(store, tmp_path, "http") as base:
        assert post_init(base).status_code == 200
        origin = post_init(base, Origin="http://attacker.example:8765")
        assert origin.status_code == 403
        assert "CHRONOMEM_ALLOWED_ORIGINS=http://attacker.example:8765" in origin.text, origin.text
        host = post_init(base, Host="attacker.example")
        assert host.status_code == 421
        assert "Invalid Host header" in host.text and "CHRONOMEM_ALLOWED_HOSTS=attacker.example" in host.text, host.text


def test_sse_requires_the_token_and_checks_origin(store: Path, tmp_path: Path) -> None:
    with spawned(store, tmp_path, "sse", token=TOKEN) as base:
        assert httpx.get(f"{base}/sse", timeout=READ_TIMEOUT).status_code == 401
        assert httpx.post(f"{base}/messages/?session_id=0", json=INIT, timeout=READ_TIMEOUT).status_code == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        evil = httpx.get(f"{base}/sse", headers={"Origin": "http://evil.example", **auth}, timeout=READ_TIMEOUT)
        assert evil.status_code == 403
        with httpx.stream("GET", f"{base}/sse", headers=auth, timeout=READ_TIMEOUT) as stream:
            assert stream.status_code == 200
            first = next(stream.iter_lines())
            assert first.startswith("event: endpoint")


def test_non_loopback_bind_with_a_token_serves_only_with_it(store: Path, tmp_path: Path) -> None:
    with spawned(store, tmp_path, "http", host="0.0.0.0", token=TOKEN) as base:
        assert post_init(base).status_code == 401
        assert post_init(base, Authorization=f"Bearer {TOKEN}").status_code == 200
        assert post_init(base, Authorization=f"Bearer {TOKEN}", Origin="http://evil.example").status_code == 403
