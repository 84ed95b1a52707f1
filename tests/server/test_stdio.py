"""`chronomem serve` over stdio, driven by the `mcp` 2.x client: the tool listing, the
knowledge-update story (pytest → nox), forgetting, tool errors and forgiving argument names."""

from __future__ import annotations

import sys

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from _server_helpers import (
    NOX_TEXT,
    PROJECT,
    PYTEST_TEXT,
    QUERY,
    READ_TIMEOUT,
    TEST_DEADLINE,
    TOOL_NAMES,
    call_error,
    call_ok,
    check_as_of_past,
    check_history,
    check_recall_is_current,
    refers_to,
    remember_test_commands,
    serve_args,
    server_env,
)

pytestmark = pytest.mark.anyio


def stdio_client(store, tmp_path, mode: str = "auto") -> Client:
    params = StdioServerParameters(command=sys.executable, args=serve_args(store), env=server_env(), cwd=tmp_path)
    return Client(params, mode=mode, read_timeout_seconds=READ_TIMEOUT)


# `auto` negotiates the 2026 protocol (server/discover); `legacy` is the initialize handshake
# most deployed clients (Claude Code, Cursor, the Inspector) still use.
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_tools_list_describes_the_five_tools(store, tmp_path, mode):
    with anyio.fail_after(TEST_DEADLINE):
        async with stdio_client(store, tmp_path, mode) as client:
            assert client.server_info is None or client.server_info.name == "chronomem"
            listed = await client.list_tools()

    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == TOOL_NAMES and len(listed.tools) == len(TOOL_NAMES)
    for name, tool in tools.items():
        assert tool.title, f"{name} has no title"
        assert tool.description and len(tool.description.strip()) > 40, f"{name} has no real description"
        assert tool.input_schema.get("type") == "object", f"{name} inputSchema: {tool.input_schema}"
        assert tool.input_schema.get("properties"), f"{name} inputSchema has no properties"
        assert tool.output_schema and tool.output_schema.get("type") == "object", f"{name} has no outputSchema"
        assert tool.output_schema.get("properties"), f"{name} outputSchema has no properties"
        assert tool.annotations is not None, f"{name} has no annotations"

    for name in ("recall", "as_of", "history"):
        assert tools[name].annotations.read_only_hint is True, name
    for name in ("remember", "forget"):
        assert tools[name].annotations.read_only_hint is not True, name
        assert tools[name].annotations.destructive_hint is False, name

    # Arguments a calling model needs, including the forgiving aliases.
    assert {"content", "text", "facts", "valid_from"} <= set(tools["remember"].input_schema["properties"])
    assert {"query", "limit", "k"} <= set(tools["recall"].input_schema["properties"])
    assert {"query", "at", "known_at"} <= set(tools["as_of"].input_schema["properties"])
    assert {"id", "memory_id", "reason"} <= set(tools["forget"].input_schema["properties"])
    assert {"id", "subject", "predicate"} <= set(tools["history"].input_schema["properties"])
    assert "paths" in tools["recall"].input_schema["properties"]  # query is optional when paths are given
    assert {"query", "at"} <= set(tools["as_of"].input_schema.get("required", []))
    # Every result carries ids to pass back to history/forget.
    assert "id" in tools["remember"].output_schema["properties"]
    assert "results" in tools["recall"].output_schema["properties"]
    assert "entries" in tools["history"].output_schema["properties"]


@pytest.mark.slow
async def test_knowledge_update_story(store, tmp_path):
    with anyio.fail_after(TEST_DEADLINE):
        async with stdio_client(store, tmp_path) as client:
            ids = await remember_test_commands(client)
            await check_recall_is_current(client, ids)
            await check_as_of_past(client, ids)
            await check_history(client, ids)

            # Transaction time: at 2024-02-01 as chronomem knew it right after the first remember,
            # the pytest fact was still open-ended (the nox statement had not been recorded yet).
            then = await call_ok(
                client, "as_of", {"query": "test command", "at": "2024-02-01", "known_at": ids["pytest_created_at"]}
            )
            [known_then] = [r for r in then["results"] if r["kind"] == "fact"]
            assert known_then["id"] == ids["pytest_fact"], known_then
            assert known_then["invalid_at"] is None, known_then
            # ... and long after 2024-03-01, as known then, pytest would still have been the answer.
            later = await call_ok(
                client, "as_of", {"query": "test command", "at": "2024-06-01", "known_at": ids["pytest_created_at"]}
            )
            assert [r["object"] for r in later["results"] if r["kind"] == "fact"] == ["pytest"]


@pytest.mark.slow
async def test_forget_ends_a_memory_but_as_of_still_sees_it(store, tmp_path):
    with anyio.fail_after(TEST_DEADLINE):
        async with stdio_client(store, tmp_path) as client:
            ids = await remember_test_commands(client)
            kept = await call_ok(
                client,
                "remember",
                {"content": "The staging database listens on port 5433", "valid_from": "2024-01-15"},
            )
            chunk = kept["id"]
            query = "which port does the staging database listen on"

            before = await call_ok(client, "recall", {"query": query})
            # The chunk, or the fact the consolidator's rules derived from it (it may have run already).
            assert any(refers_to(r, chunk) or chunk in r["source_ids"] for r in before["results"]), before

            gone = await call_ok(client, "forget", {"id": chunk, "reason": "staging moved to managed Postgres"})
            assert gone["id"] == chunk
            assert gone["action"] == "invalidated", gone

            after = await call_ok(client, "recall", {"query": query})
            assert not any(refers_to(r, chunk) for r in after["results"]), after["results"]

            past = await call_ok(client, "as_of", {"query": query, "at": "2024-06-01"})
            [seen] = [r for r in past["results"] if refers_to(r, chunk)]
            assert seen["text"] == "The staging database listens on port 5433"
            assert seen["invalid_at"] is not None  # now closed: it ended when it was forgotten

            hist = await call_ok(client, "history", {"id": chunk})
            assert hist["entries"] and any("managed Postgres" in (e["reason"] or "") for e in hist["entries"]), hist

            # Forgetting an unrelated memory leaves the test-command story alone.
            await check_recall_is_current(client, ids)


@pytest.mark.slow
async def test_tool_errors_are_one_line_and_the_server_stays_up(store, tmp_path):
    with anyio.fail_after(TEST_DEADLINE):
        async with stdio_client(store, tmp_path, mode="legacy") as client:
            await call_ok(client, "remember", {"content": "The CI runs on GitHub Actions"})

            message = await call_error(client, "remember", {"content": ""})
            assert "content" in message.lower() and "empty" in message.lower(), message
            message = await call_error(client, "remember", {"content": "   \n  "})
            message = await call_error(client, "as_of", {"query": "test command", "at": "not a date"})
            assert "not a date" in message, message
            message = await call_error(client, "forget", {"id": "01ARZ3NDEKTSV4RRFFQ69G5FAV"})
            assert "01ARZ3NDEKTSV4RRFFQ69G5FAV" in message, message
            await call_error(client, "forget", {"id": "not-an-id"})
            await call_error(client, "history", {"subject": PROJECT, "predicate": "no_such_slot"})
            await call_error(client, "remember", {"content": "a", "text": "b"})  # two different values
            await call_error(client, "recall", {"query": "ci", "limit": 5, "k": 6})
            await call_error(client, "recall", {"query": "ci", "limit": 101})
            await call_error(client, "recall", {"query": "ci", "limit": -1})
            await call_error(client, "recall", {"query": "ci", "limit": "many"}, one_line=False)
            await call_error(client, "recall", {"query": "ci", "scope": "galaxy"})
            await call_error(client, "recall", {"query": ""})
            kept = await call_ok(client, "remember", {"content": "x", "facts": [{"subject": "p", "predicate": "", "object": "y"}]})
            assert [r["index"] for r in kept["refused_facts"]] == [0] and "predicate" in kept["refused_facts"][0]["reason"]
            await call_error(client, "as_of", {"query": "test command"}, one_line=False)  # `at` is required

            out = await call_ok(client, "recall", {"query": "where does CI run"})
            assert out["results"] and out["results"][0]["text"] == "The CI runs on GitHub Actions"


@pytest.mark.slow
async def test_forgiving_argument_names(store, tmp_path):
    with anyio.fail_after(TEST_DEADLINE):
        async with stdio_client(store, tmp_path) as client:
            first = await call_ok(client, "remember", {"text": "The release branch is called main"})
            await call_ok(client, "remember", {"text": "Docs are built with mkdocs"})
            await call_ok(client, "remember", {"text": "The on-call rotation changes every Monday"})
            # Same value under both names is not a conflict.
            same = "Coverage must stay above 90%"
            await call_ok(client, "remember", {"content": same, "text": same})

            out = await call_ok(client, "recall", {"query": "release branch name", "k": 1})
            assert len(out["results"]) == 1
            assert out["results"][0]["id"] == first["id"]
            assert out["results"][0]["text"] == "The release branch is called main"

            wide = await call_ok(client, "recall", {"query": "release branch name", "k": 3})
            assert 1 <= len(wide["results"]) <= 3

            past = await call_ok(client, "as_of", {"query": "release branch", "at": "2100-01-01", "k": 1})
            assert len(past["results"]) <= 1

            hist = await call_ok(client, "history", {"memory_id": first["id"]})
            assert hist["entries"][0]["id"] == first["id"]
            gone = await call_ok(client, "forget", {"memory_id": first["id"], "reason": "renamed"})
            assert gone["id"] == first["id"]


@pytest.mark.slow
async def test_multiline_unicode_content_round_trips_verbatim(store, tmp_path):
    content = "Release checklist:\n\t1. bump version → 1.4.0\n\t2. tag it (signed) ✅\r\n3. café déploiement"
    with anyio.fail_after(TEST_DEADLINE):
        async with stdio_client(store, tmp_path) as client:
            kept = await call_ok(
                client, "remember", {"content": content, "tags": ["release"], "paths": ["RELEASING.md"]}
            )
            out = await call_ok(client, "recall", {"query": "release checklist", "k": 1})
    [item] = out["results"]
    assert item["id"] == kept["id"]
    assert item["text"] == content
    assert item["tags"] == ["release"] and item["paths"] == ["RELEASING.md"]


@pytest.mark.slow
async def test_recall_limit_zero_is_rejected(store, tmp_path):
    with anyio.fail_after(TEST_DEADLINE):
        async with stdio_client(store, tmp_path) as client:
            await call_ok(client, "remember", {"content": "The CI runs on GitHub Actions"})
            await call_error(client, "recall", {"query": "ci", "limit": 0})


async def test_schema_rejections_are_one_line(store, tmp_path):
    with anyio.fail_after(TEST_DEADLINE):
        async with stdio_client(store, tmp_path) as client:
            await call_error(client, "recall", {"query": "ci", "limit": "many"})


async def _remember_backfilled(client: Client) -> dict[str, str]:
    """The nox statement arrives first; the older pytest statement is backfilled afterwards."""
    nox = await call_ok(
        client,
        "remember",
        {
            "content": NOX_TEXT,
            "valid_from": "2024-03-01",
            "facts": [{"subject": PROJECT, "predicate": "test_command", "object": "nox -s tests"}],
        },
    )
    old = await call_ok(
        client,
        "remember",
        {
            "content": PYTEST_TEXT,
            "valid_from": "2024-01-10",
            "facts": [{"subject": PROJECT, "predicate": "test_command", "object": "pytest"}],
        },
    )
    assert [f["action"] for f in old["facts"]] == ["placed_in_past"], old
    return {
        "nox_chunk": nox["id"],
        "nox_fact": nox["facts"][0]["id"],
        "pytest_chunk": old["id"],
        "pytest_fact": old["facts"][0]["id"],
    }


@pytest.mark.slow
async def test_backfilled_older_value_is_placed_in_the_past(store, tmp_path):
    """Facts remembered out of valid-time order: the slot's chain is still pytest → nox."""
    with anyio.fail_after(TEST_DEADLINE):
        async with stdio_client(store, tmp_path) as client:
            ids = await _remember_backfilled(client)
            out = await call_ok(client, "recall", {"query": QUERY})
            assert out["results"][0]["id"] == ids["nox_fact"]
            assert not any(refers_to(r, ids["pytest_fact"]) for r in out["results"])
            past = await call_ok(client, "as_of", {"query": QUERY, "at": "2024-02-01"})
            assert refers_to(past["results"][0], ids["pytest_fact"]), past["results"]
            assert not any(refers_to(r, ids["nox_fact"]) for r in past["results"])
            hist = await call_ok(client, "history", {"subject": PROJECT, "predicate": "test_command"})
            chain = [(e["object"], e["status"]) for e in hist["entries"]]
            assert chain == [("pytest", "ended"), ("nox -s tests", "current")]


@pytest.mark.slow
async def test_backfilled_older_statement_does_not_surface_as_current(store, tmp_path):
    with anyio.fail_after(TEST_DEADLINE):
        async with stdio_client(store, tmp_path) as client:
            ids = await _remember_backfilled(client)
            out = await call_ok(client, "recall", {"query": QUERY})
    for item in out["results"]:
        assert not refers_to(item, ids["pytest_chunk"]), f"backfilled pytest statement returned as current: {item}"
        assert "pytest" not in item["text"].lower(), item


@pytest.mark.slow
async def test_two_servers_on_one_store_see_each_others_writes(store, tmp_path):
    with anyio.fail_after(TEST_DEADLINE):
        async with stdio_client(store, tmp_path) as first, stdio_client(store, tmp_path) as second:
            # Both processes have opened the store before either writes.
            await call_ok(first, "recall", {"query": QUERY})
            await call_ok(second, "recall", {"query": QUERY})
            kept = await call_ok(
                first,
                "remember",
                {
                    "content": PYTEST_TEXT,
                    "valid_from": "2024-01-10",
                    "facts": [{"subject": PROJECT, "predicate": "test_command", "object": "pytest"}],
                },
            )
            seen = await call_ok(second, "recall", {"query": QUERY})
            assert any(kept["id"] in (r["id"], *r["source_ids"]) for r in seen["results"]), seen["message"]
            newer = await call_ok(
                second,
                "remember",
                {
                    "content": NOX_TEXT,
                    "valid_from": "2024-03-01",
                    "facts": [{"subject": PROJECT, "predicate": "test_command", "object": "nox -s tests"}],
                },
            )
            assert newer["facts"][0]["supersedes"] == kept["facts"][0]["id"], newer
