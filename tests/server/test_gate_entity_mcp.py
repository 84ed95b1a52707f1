"""Over MCP stdio, a server under the gate's skip policy: a restatement is answered (not stored, and why), the
gate's signals come back by name, and the `entity` tool's structured result carries the count."""

from __future__ import annotations

import sys

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from _server_helpers import READ_TIMEOUT, TEST_DEADLINE, call_ok, serve_args, server_env

pytestmark = pytest.mark.anyio
TEST = "tests/test_cache.py::test_eviction_order"


@pytest.mark.slow
async def test_skip_policy_reply_signals_and_entity_counts_over_stdio(store, tmp_path):
    params = StdioServerParameters(
        command=sys.executable, args=serve_args(store), env=server_env(CHRONOMEM_GATE="skip"), cwd=tmp_path
    )
    with anyio.fail_after(TEST_DEADLINE):
        async with Client(params, read_timeout_seconds=READ_TIMEOUT) as client:
            note = "The cache eviction test reads its fixtures from tests/fixtures/lru/."
            first = await call_ok(client, "remember", {"content": note})
            assert set(first["gate"]) >= {"novelty", "salience", "prediction_error", "decision"}
            again = await call_ok(client, "remember", {"content": note})
            assert again["id"] is None and again["gate"]["decision"] == "skipped"
            assert again["gate"]["nearest"] == first["id"] and "Not stored" in again["message"]

            for run in ("CI run 17", "CI run 23", "CI run 31"):
                await call_ok(client, "remember", {
                    "content": f"{TEST} flaked on {run}",
                    "facts": [{"subject": TEST, "predicate": "flaky", "object": run}],
                })
            found = await call_ok(client, "entity", {"name": TEST})
            flaky = next(v for v in found["views"] if v["view"] == "flaky")
            assert flaky["count"] == 3 and len(flaky["fact_ids"]) == 3

            recalled = await call_ok(client, "recall", {"query": "where are the eviction test fixtures", "kinds": ["chunk"]})
            item = next(i for i in recalled["results"] if i["id"] == first["id"])
            assert {"novelty", "salience", "prediction_error"} <= set(item) and item["novelty"] == first["gate"]["novelty"]
