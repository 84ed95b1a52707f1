"""`chronomem serve` over the network transports: streamable HTTP (`--transport http`, endpoint
`/mcp`) and the older SSE transport (`--transport sse`, endpoint `/sse`), each in a real
subprocess on a free port, driven by the `mcp` 2.x client."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client
from mcp.client.sse import sse_client

from _server_helpers import (
    READ_TIMEOUT,
    TEST_DEADLINE,
    TOOL_NAMES,
    call_error,
    call_ok,
    check_as_of_past,
    check_history,
    check_recall_is_current,
    remember_test_commands,
    running_server,
)

pytestmark = pytest.mark.anyio


@pytest.mark.slow
async def test_streamable_http_story(store, tmp_path):
    with running_server(store, "http", tmp_path) as base:
        with anyio.fail_after(TEST_DEADLINE):
            async with Client(f"{base}/mcp", read_timeout_seconds=READ_TIMEOUT) as client:
                listed = await client.list_tools()
                assert {t.name for t in listed.tools} == TOOL_NAMES
                ids = await remember_test_commands(client)
                await check_recall_is_current(client, ids)
                await check_as_of_past(client, ids)
                await check_history(client, ids)
                await call_error(client, "as_of", {"query": "test command", "at": "not a date"})

            # A second, independent session (the initialize handshake this time) on the same
            # server sees what the first one wrote.
            async with Client(f"{base}/mcp", mode="legacy", read_timeout_seconds=READ_TIMEOUT) as other:
                await check_recall_is_current(other, ids)


@pytest.mark.slow
async def test_sse_recall(store, tmp_path):
    with running_server(store, "sse", tmp_path) as base:
        with anyio.fail_after(TEST_DEADLINE):
            # `sse_client(url)` is an async context manager yielding (read, write) streams: that is
            # exactly the `Transport` protocol `Client` accepts.
            async with Client(sse_client(f"{base}/sse"), read_timeout_seconds=READ_TIMEOUT) as client:
                listed = await client.list_tools()
                assert {t.name for t in listed.tools} == TOOL_NAMES

                empty = await call_ok(client, "recall", {"query": "which port does staging use"})
                assert empty["abstained"] is True and empty["results"] == []

                kept = await call_ok(
                    client,
                    "remember",
                    {
                        "content": "Staging serves HTTPS on port 8443",
                        "facts": [{"subject": "staging", "predicate": "port", "object": "8443"}],
                    },
                )
                out = await call_ok(client, "recall", {"query": "which port does staging use"})
                assert out["abstained"] is False
                returned = {r["id"]: r for r in out["results"]}
                fact = returned.get(kept["facts"][0]["id"])
                assert fact is not None, out["results"]
                # The statement is folded into the fact made from it, which names it as its source.
                assert fact["object"] == "8443" and fact["source_ids"] == [kept["id"]]
