"""What a client sees before it calls anything, through the `mcp` 2.x client over stdio against `chronomem serve`:
every tool has a title and a full set of annotations, the `initialize` instructions say when to call each tool,
and each tool's argument aliases (declared beside the tool, `ToolSpec.aliases`) work, or clash, as published."""

from __future__ import annotations

import sys

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from _server_helpers import READ_TIMEOUT, TEST_DEADLINE, TOOL_NAMES, call_error, call_ok, serve_args, server_env

pytestmark = pytest.mark.anyio

#: What each tool does to the store, as its annotations must say (MCP's hints).
READS = {"recall", "as_of", "history", "entity"}
WRITES = {"remember", "forget"}


def stdio_client(store, tmp_path, mode: str) -> Client:
    params = StdioServerParameters(command=sys.executable, args=serve_args(store), env=server_env(), cwd=tmp_path)
    return Client(params, mode=mode, read_timeout_seconds=READ_TIMEOUT)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_every_tool_has_a_title_and_annotations_and_the_instructions_name_them(store, tmp_path, mode):
    with anyio.fail_after(TEST_DEADLINE):
        async with stdio_client(store, tmp_path, mode) as client:
            instructions = client.instructions
            listed = (await client.list_tools()).tools

    tools = {tool.name: tool for tool in listed}
    assert set(tools) == TOOL_NAMES == READS | WRITES
    for name, tool in tools.items():
        assert tool.title and tool.title.strip(), f"{name} has no title"
        hints = tool.annotations
        assert hints is not None, f"{name} has no annotations"
        assert hints.title == tool.title, name
        # every hint stated, none left to the client's defaults (readOnly false, destructive true, openWorld true)
        for field in ("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint"):
            assert isinstance(getattr(hints, field), bool), f"{name} leaves {field} unset"
        assert hints.open_world_hint is False, f"{name}: chronomem reaches only the local store and repository"
        assert hints.read_only_hint is (name in READS), name
        assert hints.destructive_hint is False, f"{name}: nothing is deleted, a memory's validity is only closed"
    assert tools["remember"].annotations.idempotent_hint is False  # each call stores one more memory
    for name in READS | {"forget"}:  # forgetting an ended memory again answers `unchanged`
        assert tools[name].annotations.idempotent_hint is True, name
    assert "deleted" in tools["forget"].description  # the model is told why forget is not destructive

    assert instructions and instructions.strip(), "initialize carries no instructions"
    assert len(instructions.splitlines()) <= 10, "the instructions are meant to be a few lines"
    for name in TOOL_NAMES:
        assert f"`{name}`" in instructions, f"the instructions do not say when to call {name}"
    assert "chronomem://brief" in instructions


@pytest.mark.slow
async def test_every_alias_stands_for_its_parameter_and_a_clash_is_one_line(store, tmp_path):
    with anyio.fail_after(TEST_DEADLINE):
        async with stdio_client(store, tmp_path, "auto") as client:
            schemas = {t.name: t.input_schema["properties"] for t in (await client.list_tools()).tools}
            assert {"text", "k", "memory_id"} <= {key for props in schemas.values() for key in props}
            for name, alias, target in [("remember", "text", "content"), ("recall", "k", "limit"),
                                        ("as_of", "k", "limit"), ("forget", "memory_id", "id"),
                                        ("history", "memory_id", "id")]:
                assert schemas[name][alias]["description"] == f"Alias of {target}.", (name, alias)

            kept = await call_ok(client, "remember", {"text": "The billing service listens on port 8443.",
                                                      "valid_from": "2024-01-10"})
            other = await call_ok(client, "remember", {"content": "The billing service is owned by the payments team."})
            found = await call_ok(client, "recall", {"query": "billing service", "k": 1})
            assert len(found["results"]) == 1
            past = await call_ok(client, "as_of", {"query": "billing service", "at": "2024-06-01", "k": 1})
            assert len(past["results"]) == 1
            chain = await call_ok(client, "history", {"memory_id": kept["id"]})
            assert chain["entries"] and chain["entries"][0]["id"] == kept["id"], chain
            gone = await call_ok(client, "forget", {"memory_id": kept["id"], "reason": "moved to 9443"})
            assert gone["id"] == kept["id"] and gone["action"] == "invalidated", gone

            clash = await call_error(client, "remember", {"content": "a", "text": "b"})
            assert clash.endswith(": pass content or text, not both"), clash
            clash = await call_error(client, "history", {"id": kept["id"], "memory_id": other["id"]})
            assert clash.endswith(": pass id or memory_id, not both"), clash
            same = await call_ok(client, "recall", {"query": "billing service", "limit": 2, "k": 2})  # agree: fine
            assert len(same["results"]) <= 2
