"""Garbage on stdio does not kill `chronomem serve`: a real server process is fed invalid JSON, non-UTF-8
bytes, control characters, wrong JSON-RPC shapes, a deeply nested request and a huge line, and afterwards a
plain `initialize`, `tools/list` and `tools/call` are still answered on stdout — which carries JSON only."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typing import Any

from _server_helpers import READ_TIMEOUT, full_env, serve_args

PROTOCOL = "2025-06-18"

GARBAGE: list[bytes] = [
    b"not json at all",
    b"{",
    b"}{",
    b"\xff\xfe\xfd\x00\x80 binary \xc3\x28",
    b"\x1b[31m\x07\x00\x08",
    b"[]",
    b"[1, 2, 3]",
    b"null",
    b"42",
    b'"a string"',
    b"{}",
    b'{"jsonrpc": "1.0", "id": 1, "method": "initialize"}',
    b'{"jsonrpc": "2.0", "id": {"nested": true}, "method": "tools/list"}',
    b'{"jsonrpc": "2.0", "method": 17}',
    b'{"jsonrpc": "2.0", "id": 9, "method": "no/such/method", "params": {}}',
    b'{"jsonrpc": "2.0", "id": 10, "result": {"unexpected": "response"}}',
    b'{"jsonrpc": "2.0", "id": 11, "error": {"code": "x"}}',
    b'{"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": "not an object"}',
    ("[" * 100_000 + "]" * 100_000).encode(),
    b'{"jsonrpc": "2.0", "id": 13, "method": "ping", "params": {"x": "' + b"A" * 3_000_000 + b'"}}',
    b"\xef\xbb\xbf{\"jsonrpc\": \"2.0\", \"id\": 14, \"method\": \"ping\"}",  # a byte-order mark
    b"",
    b"   ",
]


class Server:
    """`chronomem serve` on stdio with raw pipes; stdout lines are collected on a thread."""

    def __init__(self, store: Path, cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, *serve_args(store)],
            env=full_env(),
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.stderr = b""
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read()

    def send(self, raw: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()

    def request(self, rid: int, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(json.dumps(message).encode())

    def wait_for(self, rid: int, seen: list[dict[str, Any]]) -> dict[str, Any]:
        deadline = time.monotonic() + READ_TIMEOUT
        while time.monotonic() < deadline:
            try:
                raw = self.lines.get(timeout=0.5)
            except queue.Empty:
                assert self.proc.poll() is None, f"server died ({self.proc.returncode}): {self.stderr[-2000:]!r}"
                continue
            message = json.loads(raw)  # stdout carries JSON-RPC only: anything else fails here
            seen.append(message)
            if message.get("id") == rid:
                return message
        raise AssertionError(f"no answer to request {rid}; stderr: {self.stderr[-2000:]!r}")

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.mark.slow
def test_garbage_on_stdin_does_not_stop_the_server(store: Path, tmp_path: Path) -> None:
    server = Server(store, tmp_path)
    seen: list[dict[str, Any]] = []
    try:
        for raw in GARBAGE:  # before initialize
            server.send(raw)
        server.request(1, "initialize", {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "garbage-test", "version": "0"},
        })
        init = server.wait_for(1, seen)
        assert init["result"]["serverInfo"]["name"] == "chronomem", init
        server.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

        for raw in GARBAGE:  # and after
            server.send(raw)
        server.request(2, "tools/list")
        tools = server.wait_for(2, seen)
        assert {t["name"] for t in tools["result"]["tools"]} >= {"remember", "recall"}

        # Wrong-typed and hostile tool arguments are tool errors (one line), not crashes.
        hostile = [
            {"name": "recall", "arguments": {"query": {"$gt": ""}}},
            {"name": "recall", "arguments": "not an object"},
            {"name": "remember", "arguments": {"content": "x\x00y"}},
            {"name": "remember", "arguments": {"content": "ok", "facts": [[[[[]]]]]}},
            {"name": "forget", "arguments": {"id": "' OR 1=1 --"}},
        ]
        for rid, params in enumerate(hostile, start=3):
            server.request(rid, "tools/call", params)
            answer = server.wait_for(rid, seen)
            if "result" in answer:
                assert answer["result"]["isError"] is True, answer
                text = answer["result"]["content"][0]["text"]
                assert "\n" not in text.strip() and "Traceback" not in text, text
            else:
                assert "error" in answer and answer["error"]["message"], answer

        server.request(20, "tools/call", {"name": "remember", "arguments": {"content": "Staging listens on port 8443."}})
        kept = server.wait_for(20, seen)
        assert kept["result"].get("isError") is not True, kept
        server.request(21, "tools/call", {"name": "recall", "arguments": {"query": "staging port"}})
        found = server.wait_for(21, seen)
        assert any(r["text"] == "Staging listens on port 8443." for r in found["result"]["structuredContent"]["results"])
        assert server.proc.poll() is None
    finally:
        server.close()
    assert b"Traceback" not in server.stderr, server.stderr[-3000:]


@pytest.mark.slow
def test_clear_answers_a_lone_surrogate_unknown_arguments_and_one_start_line(store: Path, tmp_path: Path) -> None:
    """A lone surrogate gets a JSON-RPC error (not silence); an unknown argument is an error naming the accepted
    ones while the aliases (`text`, `k`) still work; stderr holds the one start line and nothing else."""
    server = Server(store, tmp_path)
    seen: list[dict[str, Any]] = []
    try:
        server.request(1, "initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                         "clientInfo": {"name": "clear-answers", "version": "0"}})
        server.wait_for(1, seen)
        server.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

        server.send(b'{"jsonrpc":"2.0","id":2,"method":"tools/call",'
                    b'"params":{"name":"recall","arguments":{"query":"\\ud800"}}}')
        bad = server.wait_for(2, seen)
        assert bad["error"]["code"] == -32602 and "params.arguments.query" in bad["error"]["message"], bad
        assert "surrogate" in bad["error"]["message"]

        server.request(3, "tools/call", {"name": "recall", "arguments": {"query": "x", "top_k": 3}})
        unknown = server.wait_for(3, seen)["result"]
        assert unknown["isError"] is True
        text = unknown["content"][0]["text"]
        assert "unknown argument top_k" in text and "recall accepts query, paths, limit" in text and ", k" in text, text

        server.request(4, "tools/call", {"name": "remember", "arguments": {"text": "Staging listens on port 8443."}})
        assert server.wait_for(4, seen)["result"].get("isError") is not True
        server.request(5, "tools/call", {"name": "recall", "arguments": {"query": "staging port", "k": 1}})
        found = server.wait_for(5, seen)["result"]["structuredContent"]["results"]
        assert len(found) == 1 and found[0]["text"] == "Staging listens on port 8443."
    finally:
        server.close()
    lines = server.stderr.decode().strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("chronomem ") and "over stdio at stdin/stdout" in lines[0]
    assert f"store {store}" in lines[0] and "model sentence-transformers/all-MiniLM-L6-v2 (shipped)" in lines[0]
