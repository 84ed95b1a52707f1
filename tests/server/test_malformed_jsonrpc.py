"""Garbage on stdio does not kill `chronomem serve`: a real server process is fed invalid JSON, non-UTF-8
bytes, control characters, wrong JSON-RPC shapes, a deeply nested request and a huge line, and afterwards a
plain `initialize`, `tools/list` and `tools/call` are still answered on stdout — which carries JSON only.
A line that does not parse is answered with JSON-RPC's -32700 Parse error (id null), a request nested deeper
than the parser reads with an error for its id, a line of JSON that is not a JSON-RPC message with -32600 Invalid
Request, and a blank line not at all."""

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

    def next(self) -> dict[str, Any]:
        """The next message on stdout (JSON, or the test fails)."""
        try:
            raw = self.lines.get(timeout=READ_TIMEOUT)
        except queue.Empty:
            raise AssertionError(f"no message on stdout; stderr: {self.stderr[-2000:]!r}") from None
        return json.loads(raw)

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


def nested(levels: int) -> Any:
    """A string inside `levels` arrays."""
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return value


def initialized(server: Server, seen: list[dict[str, Any]]) -> None:
    server.request(1, "initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                     "clientInfo": {"name": "parse-errors", "version": "0"}})
    assert server.wait_for(1, seen)["result"]["serverInfo"]["name"] == "chronomem"
    server.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')


UNPARSEABLE: list[bytes] = [
    b"not json at all",
    b"{",
    b'{"jsonrpc": "2.0", "id": 7, "method": "tools/list"',  # truncated: its id cannot be trusted
    b'{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "recall", "arguments": {"query": "po',
    b"}{",
    b"\xff\xfe\xfd\x00\x80 binary \xc3\x28",
    b"\x1b[31m\x07\x00\x08",
]


@pytest.mark.slow
def test_a_line_that_does_not_parse_gets_a_parse_error_and_the_connection_goes_on(store: Path, tmp_path: Path) -> None:
    """JSON-RPC 2.0: invalid JSON gets {"id": null, "error": {"code": -32700, "message": "Parse error"}}, each
    before anything sent after it; a blank line gets nothing; valid requests keep working on the same pipe;
    stderr has one warning per such line, without its content."""
    server = Server(store, tmp_path)
    seen: list[dict[str, Any]] = []
    try:
        initialized(server, seen)
        for raw in UNPARSEABLE:
            server.send(raw)
            answer = server.next()
            assert answer["jsonrpc"] == "2.0" and answer["id"] is None, (raw, answer)
            assert answer["error"]["code"] == -32700 and answer["error"]["message"] == "Parse error", (raw, answer)
            assert isinstance(answer["error"].get("data"), str) and answer["error"]["data"], answer
        server.send(b"")
        server.send(b"   \t ")
        server.request(2, "ping")
        assert server.next() == {"jsonrpc": "2.0", "id": 2, "result": {}}  # the blank lines were not answered

        server.request(3, "tools/call", {"name": "remember", "arguments": {"content": "Staging listens on port 8443."}})
        assert server.next()["result"].get("isError") is not True
        server.send(b"{{{")
        assert server.next()["error"]["code"] == -32700
        server.request(4, "tools/call", {"name": "recall", "arguments": {"query": "staging port"}})
        found = server.next()
        assert found["id"] == 4
        assert [r["text"] for r in found["result"]["structuredContent"]["results"]] == ["Staging listens on port 8443."]
    finally:
        server.close()
    text = server.stderr.decode(errors="replace")
    assert "Traceback" not in text, text[-3000:]
    lines = text.strip().splitlines()
    assert lines[0].startswith("chronomem ") and "over stdio" in lines[0]
    warned = [line for line in lines[1:] if "could not be parsed" in line and "-32700" in line]
    assert len(warned) == len(UNPARSEABLE) + 1 == len(lines) - 1, lines
    assert not any("not json" in line or "tools/list" in line or "binary" in line for line in warned), warned


@pytest.mark.slow
def test_arguments_nested_past_the_parser_get_an_error_not_silence(store: Path, tmp_path: Path) -> None:
    """150 levels is a tool error (facts must be objects); past the ~200 levels mcp's JSON parser reads, the
    request gets an invalid-params error for its id naming the argument; nested past what Python reads either,
    a parse error (id null). The server answers the next request either way."""
    server = Server(store, tmp_path)
    seen: list[dict[str, Any]] = []
    try:
        initialized(server, seen)
        server.request(2, "tools/call", {"name": "remember", "arguments": {"content": "ok", "facts": nested(150)}})
        shallow = server.wait_for(2, seen)
        assert shallow["result"]["isError"] is True and "facts" in shallow["result"]["content"][0]["text"], shallow

        for rid, levels in ((3, 198), (4, 250), (5, 700)):
            server.request(rid, "tools/call", {"name": "remember", "arguments": {"content": "ok", "facts": nested(levels)}})
            deep = server.next()
            assert deep["id"] == rid and deep["error"]["code"] == -32602, deep
            message = deep["error"]["message"]
            assert message.startswith("params.arguments.facts nests ") and f"{levels + 3} levels" in message, message
            assert "at most 200" in message and "\n" not in message, message

        server.send(b'{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "remember", '
                    b'"arguments": {"content": "ok", "facts": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}}")
        unreadable = server.next()
        assert unreadable["id"] is None and unreadable["error"]["code"] == -32700, unreadable

        server.request(7, "tools/call", {"name": "remember", "arguments": {"content": "Deploys go out on Thursdays."}})
        assert server.next()["result"].get("isError") is not True
        server.request(8, "ping")
        assert server.next() == {"jsonrpc": "2.0", "id": 8, "result": {}}
    finally:
        server.close()
    assert b"Traceback" not in server.stderr, server.stderr[-3000:]


NOT_JSONRPC: list[bytes] = [
    b"[]",
    b"42",
    b'{"foo": 1}',
    b"null",
    b'"a string"',
    b"{}",
    b'[{"jsonrpc": "2.0", "id": 5, "method": "ping"}]',  # a batch: MCP has none since 2025-06-18
    b'{"jsonrpc": "2.0", "method": 17}',
    b'{"jsonrpc": "2.0", "id": 11, "error": {"code": "x"}}',
    b'{"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": "not an object"}',
    b'{"jsonrpc": "1.0", "id": 13, "method": "ping"}',
]


@pytest.mark.slow
def test_json_that_is_not_a_jsonrpc_message_gets_invalid_request(store: Path, tmp_path: Path) -> None:
    """JSON-RPC 2.0: valid JSON that is not a request, notification or response gets {"id": null, "error":
    {"code": -32600, "message": "Invalid Request"}}, each before anything sent after it (id null even when the
    invalid object holds one); the connection goes on; one warning each on stderr, without the line."""
    server = Server(store, tmp_path)
    seen: list[dict[str, Any]] = []
    try:
        initialized(server, seen)
        for raw in NOT_JSONRPC:
            server.send(raw)
            answer = server.next()
            assert answer["jsonrpc"] == "2.0" and answer["id"] is None, (raw, answer)
            assert answer["error"]["code"] == -32600 and answer["error"]["message"] == "Invalid Request", (raw, answer)
            assert "jsonrpc" in answer["error"]["data"], answer
        server.request(2, "ping")
        assert server.next() == {"jsonrpc": "2.0", "id": 2, "result": {}}
        server.send(b"[1, 2, 3]")
        assert server.next()["error"]["code"] == -32600
        server.request(3, "tools/call", {"name": "remember", "arguments": {"content": "Staging listens on port 8443."}})
        answer = server.next()
        assert answer["id"] == 3 and answer["result"].get("isError") is not True, answer
    finally:
        server.close()
    text = server.stderr.decode(errors="replace")
    assert "Traceback" not in text, text[-3000:]
    lines = text.strip().splitlines()
    warned = [line for line in lines[1:] if "not a JSON-RPC message" in line and "-32600" in line]
    assert len(warned) == len(NOT_JSONRPC) + 1 == len(lines) - 1, lines
    assert not any("foo" in line or "a string" in line for line in warned), warned
