"""The output schemas a client validates every result against: pydantic's `X | None` is published as
`"type": [X, "null"]` (`plain_nullables`), which accepts exactly what the `anyOf` did, at a fraction of a validator's
work; a real client over stdio gets such schemas and validates real results against them."""

from __future__ import annotations

import sys

import anyio
import jsonschema
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from _server_helpers import READ_TIMEOUT, TEST_DEADLINE, call_ok, serve_args, server_env
from chronomem.server.app import plain_nullables
from chronomem.tools.results import RecallResult

NULLABLE_STRING = {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Subject"}


def test_a_nullable_plain_type_becomes_a_list_of_types_keeping_its_title_and_default() -> None:
    assert plain_nullables(NULLABLE_STRING) == {"type": ["string", "null"], "default": None, "title": "Subject"}
    array = {"anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}], "title": "Tags"}
    assert plain_nullables(array) == {"items": {"type": "string"}, "type": ["array", "null"], "title": "Tags"}


def test_a_nullable_reference_or_union_is_left_as_it_is() -> None:
    for schema in (
        {"anyOf": [{"$ref": "#/$defs/Stale"}, {"type": "null"}], "default": None},
        {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
    ):
        assert plain_nullables(schema) == schema


def test_the_plain_schema_accepts_and_refuses_what_pydantics_did() -> None:
    original = RecallResult.model_json_schema()
    plain = plain_nullables(original)
    assert nullable_plain_types(original) and not nullable_plain_types(plain)
    item = {
        "id": "01J0", "kind": "chunk", "project": "p", "text": "t", "valid_at": "2025-01-01T00:00:00Z",
        "created_at": "2025-01-01T00:00:00Z", "source": "agent", "source_ids": [], "tags": [], "paths": [],
    }
    cases = [
        {**item, "subject": None},
        {**item, "subject": "payments"},
        {**item, "subject": 3},
        {**item, "invalid_at": None, "score": None},
        {**item, "score": "high"},
        {**item, "stale": None},
        {**item, "stale": "yes"},
    ]
    for case in cases:
        instance = {"results": [case], "abstained": False, "message": "", "tokens": 1, "truncated": False}
        verdicts = [not list(jsonschema.Draft202012Validator(schema).iter_errors(instance)) for schema in (original, plain)]
        assert verdicts[0] == verdicts[1], case


def nullable_plain_types(schema: object) -> list[object]:
    """The `anyOf`s left in `schema` that `plain_nullables` would have written as a list of types."""
    if isinstance(schema, list):
        return [found for item in schema for found in nullable_plain_types(item)]
    if not isinstance(schema, dict):
        return []
    found = [found for value in schema.values() for found in nullable_plain_types(value)]
    return found + ([schema] if plain_nullables(schema) != schema and "anyOf" in schema else [])


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_real_client_gets_plain_schemas_and_validates_real_results_against_them(store, tmp_path) -> None:
    params = StdioServerParameters(command=sys.executable, args=serve_args(store), env=server_env(), cwd=tmp_path)
    with anyio.fail_after(TEST_DEADLINE):
        async with Client(params, read_timeout_seconds=READ_TIMEOUT) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            await call_ok(client, "remember", {"content": "The staging database moved to Postgres 16 on db-staging:5433."})
            found = await call_ok(client, "recall", {"query": "staging database"})  # the client validates it
    for name, tool in tools.items():
        assert tool.output_schema is not None and not nullable_plain_types(tool.output_schema), name
    jsonschema.validate(found, tools["recall"].output_schema)
    assert found["results"] and found["results"][0]["invalid_at"] is None
