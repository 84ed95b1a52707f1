"""The session brief over stdio through the `mcp` 2.x client: the resource, its template and the prompt."""

from __future__ import annotations

import sys

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from _server_helpers import (
    PROJECT,
    READ_TIMEOUT,
    TEST_DEADLINE,
    call_ok,
    remember_test_commands,
    serve_args,
    server_env,
)

pytestmark = pytest.mark.anyio

URI = "chronomem://brief"


def stdio_client(store, tmp_path, mode: str = "auto", **env: str) -> Client:
    params = StdioServerParameters(command=sys.executable, args=serve_args(store), env=server_env(**env), cwd=tmp_path)
    return Client(params, mode=mode, read_timeout_seconds=READ_TIMEOUT)


def estimate_tokens(text: str) -> int:
    """The estimate chronomem budgets with: about 4 characters a token."""
    return max(1, -(-len(text) // 4))


def fact(subject: str, predicate: str, obj: str) -> dict[str, str]:
    return {"subject": subject, "predicate": predicate, "object": obj}


def prompt_text(result) -> str:
    [message] = result.messages
    assert message.role == "user"
    return message.content.text


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_brief_resource_and_prompt_over_stdio(store, tmp_path, mode):
    with anyio.fail_after(TEST_DEADLINE):
        async with stdio_client(store, tmp_path, mode) as client:
            resources = await client.list_resources()
            [brief] = [r for r in resources.resources if str(r.uri) == URI]
            assert brief.mime_type == "text/markdown" and brief.title and brief.description
            templates = await client.list_resource_templates()
            assert [t.uri_template for t in templates.resource_templates] == ["chronomem://brief/{project}"]
            prompts = await client.list_prompts()
            [prompt] = [p for p in prompts.prompts if p.name == "brief"]
            assert {a.name for a in prompt.arguments} == {"budget_tokens", "project"}
            assert not any(a.required for a in prompt.arguments)

            # An empty project says so.
            empty = await client.read_resource(URI)
            [content] = empty.contents
            assert content.mime_type == "text/markdown"
            assert content.text.startswith(f"# Project memory: {PROJECT}\nNo memories in project {PROJECT} yet: `remember`")

            ids = await remember_test_commands(client)
            await call_ok(
                client,
                "remember",
                {"content": "The API listens on 8080.", "facts": [fact("api", "port", "8080")]},
            )

            read = await client.read_resource(URI, cache_mode="bypass")
            text = read.contents[0].text
            assert estimate_tokens(text) <= 1500
            facts = text.split("## Current facts\n", 1)[1].split("\n\n", 1)[0].splitlines()
            assert f"- test_command: `nox -s tests` (since 2024-03-01) [{ids['nox_fact']}]" in facts
            assert any(line.startswith("- api · port: `8080`") for line in facts)
            assert all("pytest" not in line for line in facts)
            changes = text.split("## Recent changes\n", 1)[1].split("\n\n", 1)[0].splitlines()
            assert changes == [
                f"- test_command: now `nox -s tests`, replaced `pytest` on 2024-03-01 "
                f"[{ids['nox_fact']}; replaced {ids['pytest_fact']}]"
            ]

            # The template names the project; the default project gives the same brief.
            by_name = await client.read_resource(f"chronomem://brief/{PROJECT}")
            assert by_name.contents[0].text == text
            other = await client.read_resource("chronomem://brief/elsewhere")
            assert other.contents[0].text.startswith("# Project memory: elsewhere\nNo memories in project elsewhere yet")

            # The prompt: one user message holding the brief, within the budget asked for.
            got = await client.get_prompt("brief")
            assert prompt_text(got) == text
            small = prompt_text(await client.get_prompt("brief", {"budget_tokens": "60"}))
            assert estimate_tokens(small) <= 60 and "more left out to fit 60 tokens" in small
            assert prompt_text(await client.get_prompt("brief", {"project": "elsewhere"})).startswith(
                "# Project memory: elsewhere\n"
            )

            # Bad arguments are one clear line, and the server stays up.
            with pytest.raises(MCPError) as bad:
                await client.get_prompt("brief", {"budget_tokens": "lots"})
            assert "budget_tokens" in str(bad.value) and "\n" not in str(bad.value)
            assert "Traceback" not in str(bad.value)
            with pytest.raises(MCPError) as tiny:
                await client.get_prompt("brief", {"budget_tokens": "5"})
            assert "budget_tokens must be from 50" in str(tiny.value)
            with pytest.raises(MCPError) as bad_project:
                await client.read_resource("chronomem://brief/bad%0Aname")
            assert "control characters" in str(bad_project.value) and "\n" not in str(bad_project.value)
            await call_ok(client, "recall", {"query": "test command"})


@pytest.mark.slow
async def test_default_budget_comes_from_the_environment(store, tmp_path):
    with anyio.fail_after(TEST_DEADLINE):
        async with stdio_client(store, tmp_path, CHRONOMEM_BRIEF_TOKENS="120") as client:
            for i in range(8):
                await call_ok(
                    client,
                    "remember",
                    {"content": f"Service {i} runs on host {i}.", "facts": [fact(f"service {i}", "host", f"host-{i}.internal")]},
                )
            text = (await client.read_resource(URI)).contents[0].text
            assert estimate_tokens(text) <= 120 and "more left out to fit 120 tokens" in text
            assert "service 7 · host: `host-7.internal`" in text  # the newest first among equals


@pytest.mark.slow
async def test_brief_follows_the_clients_workspace_root(store, tmp_path):
    """Without --project, the brief is of the client's first root, like the tool calls."""
    import os
    import subprocess

    from mcp_types import ListRootsResult, Root

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True, env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull})
    server_cwd = tmp_path / "elsewhere"
    server_cwd.mkdir()

    async def roots(context) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=workspace.resolve().as_uri(), name="workspace")])

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "chronomem", "serve", "--store", str(store)], env=server_env(), cwd=server_cwd
    )
    with anyio.fail_after(TEST_DEADLINE):
        async with Client(params, mode="legacy", read_timeout_seconds=READ_TIMEOUT, list_roots_callback=roots) as client:
            first = (await client.read_resource(URI)).contents[0].text
            assert first.startswith("# Project memory: workspace\nNo memories in project workspace yet")
            saved = await call_ok(
                client,
                "remember",
                {"content": "Lint with ruff.", "facts": [fact("workspace", "lint_command", "ruff check .")]},
            )
            assert saved["project"].startswith("workspace-")
            text = (await client.read_resource(URI, cache_mode="bypass")).contents[0].text
            assert "- lint_command: `ruff check .` (since " in text and saved["facts"][0]["id"] in text
            assert prompt_text(await client.get_prompt("brief")) == text


@pytest.mark.slow
async def test_the_slot_vocabulary_resource_names_the_slots_in_use(store, tmp_path):
    with anyio.fail_after(TEST_DEADLINE):
        async with stdio_client(store, tmp_path) as client:
            empty = (await client.read_resource("chronomem://slots")).contents[0].text
            assert "No facts yet" in empty
            await call_ok(client, "remember", {"content": "The API listens on 8080.", "facts": [fact("api", "port", "8080")]})
            await call_ok(client, "remember", {"content": "The api service moved to 8443.", "facts": [fact("the api service", "Port", "8443")]})
            text = (await client.read_resource("chronomem://slots", cache_mode="bypass")).contents[0].text
            # the second naming was filed under the first slot, which holds one current value
            assert "- api · port · 1" in text.splitlines() and "the api service" not in text


@pytest.mark.slow
async def test_supersedes_and_probable_updates_over_stdio(store, tmp_path):
    """The consent loop as a client sees it: a reply names the probable update's id, the next call passes it."""
    with anyio.fail_after(TEST_DEADLINE):
        async with stdio_client(store, tmp_path) as client:
            old = await call_ok(client, "remember", {"content": "Full check: `./scripts/test` (~20s)", "valid_from": "2024-01-01"})
            new = await call_ok(client, "remember", {"content": "Full check: `./scripts/test` (~23s)", "valid_from": "2024-02-01"})
            assert [(u["id"], u["basis"]) for u in new["probable_updates"]] == [(old["id"], "same text but for a value")]
            confirmed = await call_ok(
                client, "remember",
                {"content": "Full check: `./scripts/test` (~23s), confirmed.", "valid_from": "2024-02-02", "supersedes": [old["id"]]},
            )
            assert confirmed["superseded"] == [old["id"]] and confirmed["probable_updates"] == []
            now = await call_ok(client, "recall", {"query": "how long does the full check take"})
            assert old["id"] not in [r["id"] for r in now["results"]]
            then = await call_ok(client, "as_of", {"query": "how long does the full check take", "at": "2024-01-15"})
            assert old["id"] in {r.get("revision_of") or r["id"] for r in then["results"]}
            # the other way to confirm, as the reply says: forget the listed memory, superseded by the new note
            later = await call_ok(client, "remember", {"content": "Full check: `./scripts/test` (~25s), confirmed.", "valid_from": "2024-03-01"})
            assert [u["id"] for u in later["probable_updates"]] == [confirmed["id"]]
            ended = await call_ok(client, "forget", {"id": confirmed["id"], "superseded_by": later["id"]})
            assert ended["action"] == "invalidated" and "2024-03-01" in ended["message"]
