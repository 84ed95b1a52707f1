"""Shared pieces of the server integration tests: how to spawn `chronomem serve`, and the
knowledge-update story (pytest → nox) checked over whichever transport a test connects with.

Everything here talks to a real server process through a real MCP client; nothing imports
chronomem itself.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcp import Client

REPO = Path(__file__).resolve().parents[2]
#: The model the package ships (what the server loads with nothing set); for tests that pass it explicitly.
MODEL_PATH = str(REPO / "chronomem" / "embed" / "model")

PROJECT = "p"

#: Bound on any single request; a hang fails the test instead of reaching pytest-timeout.
READ_TIMEOUT = 60.0
#: Bound on a whole test's conversation with the server.
TEST_DEADLINE = 150.0

TOOL_NAMES = {"remember", "recall", "forget", "as_of", "history", "entity"}


def server_env(**overrides: str) -> dict[str, str]:
    """The variables the spawned server gets: none of the model settings (it loads the shipped model).

    `PYTHONPATH` puts this checkout first, so the server runs the code under test even when the installed
    (editable) package points at another checkout."""
    env = {"CHRONOMEM_LOG_LEVEL": "WARNING"}  # nothing else: the shipped model, as a user gets it
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    if os.environ.get("CHRONOMEM_CACHE_DIR"):  # this run's cache folder, for any int8 copy (tests/conftest.py)
        env["CHRONOMEM_CACHE_DIR"] = os.environ["CHRONOMEM_CACHE_DIR"]
    env.update(overrides)
    return env


def full_env(**overrides: str) -> dict[str, str]:
    """This process's environment without any CHRONOMEM_* leaking in, plus `server_env`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOMEM_")}
    env.update(server_env(**overrides))
    return env


def serve_args(store: Path, *extra: str, project: str | None = PROJECT) -> list[str]:
    """Arguments after the Python executable that start the server on `store` (`project=None`: no --project)."""
    pinned = ["--project", project] if project else []
    return ["-m", "chronomem", "serve", "--store", str(store), *pinned, *extra]


# ---------------------------------------------------------------------------- network servers


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running_server(
    store: Path, transport: str, log_dir: Path, startup_timeout: float = 60.0, project: str | None = PROJECT,
    extra: Sequence[str] = (),
) -> Iterator[str]:
    """Start `chronomem serve --transport <sse|http>` on a free port (`extra`: more arguments, a later `--host` wins);
    yield its base URL; always stop it."""
    port = free_port()
    log_path = log_dir / f"server-{transport}.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                *serve_args(
                    store, "--transport", transport, "--host", "127.0.0.1", "--port", str(port), *extra, project=project
                ),
            ],
            env=full_env(),
            cwd=log_dir,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + startup_timeout
            while True:
                if proc.poll() is not None:
                    raise AssertionError(
                        f"chronomem serve --transport {transport} exited with {proc.returncode} before listening:\n"
                        + log_path.read_text(errors="replace")
                    )
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise AssertionError(
                            f"chronomem serve --transport {transport} did not listen on port {port} within "
                            f"{startup_timeout:.0f} s:\n" + log_path.read_text(errors="replace")
                        ) from None
                    time.sleep(0.05)
            yield f"http://127.0.0.1:{port}"
        finally:
            stop(proc)


def stop(proc: subprocess.Popen) -> None:
    """End a server process this test started: SIGTERM, then SIGKILL after 10 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


# ---------------------------------------------------------------------------- tool calls


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def call_ok(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call a tool that must succeed; return its structured content."""
    result = await client.call_tool(name, arguments)
    assert not result.is_error, f"{name}({arguments}) failed: {_text(result)}"
    assert result.structured_content is not None, f"{name} returned no structured content"
    assert _text(result).strip(), f"{name} returned no readable text"
    return result.structured_content


async def call_error(client: Client, name: str, arguments: dict[str, Any], one_line: bool = True) -> str:
    """Call a tool that must fail as a tool error (not a protocol error); return its message.

    `one_line=False` is for arguments the MCP framework rejects against the input schema before
    chronomem sees them: those messages are pydantic's (several lines), not chronomem's.
    """
    result = await client.call_tool(name, arguments)
    text = _text(result)
    assert result.is_error, f"{name}({arguments}) should have failed but returned: {text}"
    assert text.strip(), f"{name} failed with an empty message"
    if one_line:
        assert "\n" not in text.strip(), f"{name} error is not one line: {text!r}"
    assert "Traceback" not in text, f"{name} error leaks a traceback: {text!r}"
    return text


def refers_to(item: dict[str, Any], memory_id: str) -> bool:
    """True when a returned item is the memory `memory_id` or a revision of it (same memory, closed interval)."""
    return item.get("id") == memory_id or item.get("revision_of") == memory_id


# ---------------------------------------------------------------------------- the story

PYTEST_TEXT = "We run tests with pytest"
NOX_TEXT = "Tests now run with nox -s tests"
QUERY = "how do we run the tests"


async def remember_test_commands(client: Client) -> dict[str, str]:
    """Remember the pytest era (from 2024-01-10), then the nox era (from 2024-03-01); return the ids."""
    first = await call_ok(
        client,
        "remember",
        {
            "content": PYTEST_TEXT,
            "valid_from": "2024-01-10",
            "facts": [{"subject": PROJECT, "predicate": "test_command", "object": "pytest"}],
        },
    )
    assert first["project"] == PROJECT
    assert first["valid_at"].startswith("2024-01-10")
    assert [(f["action"], f["object"]) for f in first["facts"]] == [("added", "pytest")]

    second = await call_ok(
        client,
        "remember",
        {
            "content": NOX_TEXT,
            "valid_from": "2024-03-01",
            "facts": [{"subject": PROJECT, "predicate": "test_command", "object": "nox -s tests"}],
        },
    )
    assert second["valid_at"].startswith("2024-03-01")
    [nox_fact] = second["facts"]
    assert nox_fact["object"] == "nox -s tests"
    assert nox_fact["action"] == "superseded", second
    assert nox_fact["supersedes"] == first["facts"][0]["id"]
    assert len({first["id"], second["id"], first["facts"][0]["id"], nox_fact["id"]}) == 4
    return {
        "pytest_chunk": first["id"],
        "pytest_fact": first["facts"][0]["id"],
        "pytest_created_at": first["created_at"],
        "nox_chunk": second["id"],
        "nox_fact": nox_fact["id"],
    }


async def check_recall_is_current(client: Client, ids: dict[str, str]) -> None:
    """recall answers with nox, and nothing it returns states pytest as the current command."""
    out = await call_ok(client, "recall", {"query": QUERY})
    assert out["abstained"] is False
    results = out["results"]
    assert results, out
    top = results[0]
    assert top["id"] == ids["nox_fact"], f"expected the nox fact first, got {[r['text'] for r in results]}"
    assert top["kind"] == "fact" and top["object"] == "nox -s tests"
    assert top["supersedes"] == ids["pytest_fact"]
    # The statement the fact came from is folded into the fact, which names it as its source.
    assert ids["nox_chunk"] in top["source_ids"]
    for item in results:
        assert not refers_to(item, ids["pytest_fact"]), f"superseded pytest fact returned by recall: {item}"
        assert not refers_to(item, ids["pytest_chunk"]), f"superseded pytest memory returned by recall: {item}"
        assert "pytest" not in item["text"].lower(), f"recall states pytest as current: {item['text']!r}"
        assert item["invalid_at"] is None, f"recall returned an ended memory: {item}"
        assert item["expired_at"] is None, f"recall returned a retracted record: {item}"


async def check_as_of_past(client: Client, ids: dict[str, str]) -> None:
    """as_of 2024-02-01 answers with pytest (the value then), closed at 2024-03-01, and not nox."""
    out = await call_ok(client, "as_of", {"query": QUERY, "at": "2024-02-01"})
    assert out["at"].startswith("2024-02-01")
    results = out["results"]
    facts = [r for r in results if refers_to(r, ids["pytest_fact"])]
    assert facts, f"pytest fact missing from as_of 2024-02-01: {[r['text'] for r in results]}"
    assert facts[0]["object"] == "pytest"
    assert facts[0]["valid_at"].startswith("2024-01-10")
    assert (facts[0]["invalid_at"] or "").startswith("2024-03-01"), facts[0]
    assert refers_to(results[0], ids["pytest_fact"]), f"expected the pytest fact first, got {results[0]}"
    for item in results:
        assert not refers_to(item, ids["nox_fact"]), f"as_of 2024-02-01 returned the later nox fact: {item}"
        assert "nox" not in item["text"].lower(), f"as_of 2024-02-01 states nox: {item['text']!r}"


async def check_history(client: Client, ids: dict[str, str]) -> None:
    """history of (p, test_command): pytest [2024-01-10, 2024-03-01), then nox [2024-03-01, now)."""
    out = await call_ok(client, "history", {"subject": PROJECT, "predicate": "test_command"})
    entries = out["entries"]
    assert [e["object"] for e in entries] == ["pytest", "nox -s tests"], entries
    old, new = entries
    assert refers_to(old, ids["pytest_fact"])
    assert old["status"] == "ended"
    assert old["valid_at"].startswith("2024-01-10")
    assert (old["invalid_at"] or "").startswith("2024-03-01")
    assert old["superseded_by"] == ids["nox_fact"]
    assert new["id"] == ids["nox_fact"]
    assert new["status"] == "current"
    assert new["valid_at"].startswith("2024-03-01")
    assert new["invalid_at"] is None
    assert new["supersedes"] == ids["pytest_fact"]

    by_id = await call_ok(client, "history", {"id": ids["nox_fact"]})
    assert [e["object"] for e in by_id["entries"]] == ["pytest", "nox -s tests"]
