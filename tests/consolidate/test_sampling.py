"""Extraction by the client's own model: a real MCP client (stdio, `mcp.Client`) whose `sampling_callback` answers.

`chronomem serve` runs as a subprocess on a temporary store with the model the package ships. The client's
model is a small deterministic stand-in (`StandIn`): it reads the note out of the prompt and answers with the
strict JSON operations the prompt asks for (ADD a package's version, or UPDATE the shown fact of it). The
litellm transport, where a test wants one, is test_llm's OpenAI-protocol server on 127.0.0.1. Nothing leaves
loopback. Waits are for something the server wrote (its consolidator state file), bounded by the test's
deadline; no test asserts on how long anything took. The hourly budget is checked in process, with the same
stand-in behind the consolidator's transport interface (an hour cannot pass in a test).
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CreateMessageRequestParams, CreateMessageResult, SamplingMessage, TextContent

from chronomem.consolidate.extract_llm import Completion, SamplingConfig
from chronomem.consolidate.runner import Consolidator
from chronomem.server.sampling import usage_of
from chronomem.tools import remember
from tests.consolidate.test_llm import ID_LINE, llm
from tests.server._server_helpers import (
    READ_TIMEOUT,
    TEST_DEADLINE,
    call_ok,
    free_port,
    full_env,
    serve_args,
    server_env,
    stop,
)

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

openai_server = llm  # test_llm's fixture (a local server speaking the OpenAI protocol), by its own name "llm"

UPGRADE = re.compile(r"\b(?:upgrade|bump)\s+(?P<package>[A-Za-z][\w.-]*)\s+to\s+v?(?P<version>\d[\w.+-]*)", re.I)
FIRST = "Upgrade certifi to 2026.7.22"
SECOND = "Upgrade certifi to 2026.8.1"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store"


class StandIn:
    """The client's model: deterministic, local. It answers the extraction prompt from the note it quotes."""

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.answering = True
        self.usage: list[tuple[int, int]] = []

    async def __call__(self, context: Any, params: Any) -> CreateMessageResult:
        prompt = "\n".join(m.content.text for m in params.messages if getattr(m.content, "text", None))
        self.prompts.append(prompt)
        if not self.answering:
            await anyio.sleep_forever()  # a client that stops answering
        note = re.search(r"<<<\n(.*)\n>>>", prompt, re.S)
        found = UPGRADE.search(note.group(1) if note else "")
        if found is None:
            ops: list[dict[str, str]] = [{"op": "NONE"}]
        else:
            package, version = found["package"].lower(), found["version"]
            shown = [m["id"] for m in ID_LINE.finditer(prompt)
                     if m["subject"].strip() == package and m["predicate"].strip() == "version"]
            ops = ([{"op": "UPDATE", "id": shown[0], "object": version}] if shown else
                   [{"op": "ADD", "subject": package, "predicate": "version", "object": version}])
        answer = json.dumps({"operations": ops})
        used = (len(((params.system_prompt or "") + "\n" + prompt).split()), len(answer.split()))
        self.usage.append(used)
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text=answer), model="stand-in",
            _meta={"usage": {"inputTokens": used[0], "outputTokens": used[1]}},
        )


def client(store: Path, tmp_path: Path, sampling: StandIn | None, **env: str) -> Client:
    params = StdioServerParameters(command=sys.executable, args=serve_args(store), env=server_env(**env), cwd=tmp_path)
    return Client(params, mode="legacy", read_timeout_seconds=READ_TIMEOUT, sampling_callback=sampling)


def state(store: Path) -> dict[str, Any]:
    """The consolidator's state file (consolidate/watermark.py), as the server last wrote it."""
    try:
        return json.loads((store / "consolidate-state.json").read_text())
    except (FileNotFoundError, ValueError):
        return {}


def usage(store: Path, transport: str) -> dict[str, int]:
    return (state(store).get("llm_usage") or {}).get(transport) or {}


def processed(store: Path, stage: str, memory_id: str) -> bool:
    return memory_id in ((state(store).get("stages") or {}).get(stage) or {}).get("recent", {})


async def until(condition: Callable[[], bool]) -> None:
    """Wait for something the server writes (the test's deadline bounds it)."""
    while not condition():
        await anyio.sleep(0.05)


async def versions(c: Client) -> list[tuple[str, str]]:
    """certifi's version facts, oldest first: (value, status); none when history finds no such slot."""
    result = await c.call_tool("history", {"subject": "certifi", "predicate": "version"})
    if result.is_error:
        text = "".join(getattr(b, "text", "") for b in result.content)
        assert "no facts for subject 'certifi'" in text, text
        return []
    return [(e["object"], e["status"]) for e in result.structured_content["entries"]]


async def facts_recalled(c: Client, query: str) -> list[dict[str, Any]]:
    out = await call_ok(c, "recall", {"query": query})
    return [r for r in out["results"] if r["kind"] == "fact"]


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_clients_model_reads_notes_the_rules_cannot(store, tmp_path, openai_server):
    """Sampling first: notes the rules do not read get facts from the client's model (with the slot vocabulary in
    the prompt), a litellm model configured beside it is not asked, and the counters say calls and tokens."""
    fake, config = openai_server
    model = StandIn()
    with anyio.fail_after(TEST_DEADLINE):
        async with client(store, tmp_path, model, CHRONOMEM_LLM_MODEL=config.model, CHRONOMEM_LLM_API_BASE=config.api_base or "",
                          CHRONOMEM_LLM_API_KEY="sk-local-test") as c:
            first = await call_ok(c, "remember", {"content": FIRST, "valid_from": "2026-07-22"})
            assert first["facts"] == [], "the agent passed no facts"
            await until(lambda: usage(store, "sampling").get("notes", 0) >= 1)
            assert processed(store, "llm", first["id"])
            assert await versions(c) == [("2026.7.22", "current")]

            second = await call_ok(c, "remember", {"content": SECOND, "valid_from": "2026-08-01"})
            await until(lambda: usage(store, "sampling").get("notes", 0) >= 2)
            assert await versions(c) == [("2026.7.22", "ended"), ("2026.8.1", "current")]
            out = await call_ok(c, "recall", {"query": "which certifi version do we use"})
            assert out["results"][0]["object"] == "2026.8.1", out["results"][0]
            assert second["id"] in out["results"][0]["source_ids"]

    counted = usage(store, "sampling")
    assert len(model.prompts) == counted["calls"] == 2
    assert counted["notes"] == 2 and counted["failures"] == 0
    assert counted["prompt_tokens"] == sum(u[0] for u in model.usage)
    assert counted["completion_tokens"] == sum(u[1] for u in model.usage)
    assert "certifi · version" not in model.prompts[0]  # no slot yet
    assert "- certifi · version" in model.prompts[1], "the slot vocabulary goes with the request"
    assert fake.requests == [], "the client's model comes before litellm's"
    assert "litellm" not in (state(store).get("llm_usage") or {})
    print(f"\nsampling: {counted['calls'] / counted['notes']:.1f} call(s) and "
          f"{(counted['prompt_tokens'] + counted['completion_tokens']) / counted['notes']:.0f} tokens per note "
          f"({counted['prompt_tokens']} prompt + {counted['completion_tokens']} completion over {counted['notes']} notes)")


@pytest.mark.slow
@pytest.mark.anyio
async def test_without_sampling_or_litellm_the_rules_alone_extract(store, tmp_path):
    """A client that does not offer sampling and no litellm model: today's behaviour, no LLM stage at all."""
    with anyio.fail_after(TEST_DEADLINE):
        async with client(store, tmp_path, None) as c:
            first = await call_ok(c, "remember", {"content": FIRST, "valid_from": "2026-07-22"})
            await until(lambda: processed(store, "rules", first["id"]))
            assert await versions(c) == []
            assert await facts_recalled(c, "certifi version") == [], "the rules read no fact from the note"
    after = state(store)
    assert "llm" not in after["stages"] and "llm_usage" not in after


@pytest.mark.slow
@pytest.mark.anyio
async def test_sampling_switched_off_is_never_used(store, tmp_path, openai_server):
    """CHRONOMEM_SAMPLING=off: a client that offers sampling is not asked; the litellm model the user set is."""
    fake, config = openai_server
    fake.answer = lambda request: (200, json.dumps({"operations": [
        {"op": "ADD", "subject": "certifi", "predicate": "version", "object": "2026.7.22"}]}), 0.0)
    model = StandIn()
    with anyio.fail_after(TEST_DEADLINE):
        async with client(store, tmp_path, model, CHRONOMEM_SAMPLING="off", CHRONOMEM_LLM_MODEL=config.model,
                          CHRONOMEM_LLM_API_BASE=config.api_base or "", CHRONOMEM_LLM_API_KEY="sk-local-test") as c:
            first = await call_ok(c, "remember", {"content": FIRST, "valid_from": "2026-07-22"})
            await until(lambda: usage(store, "litellm").get("notes", 0) >= 1)
            assert await versions(c) == [("2026.7.22", "current")]
    assert model.prompts == []
    assert len(fake.requests) == usage(store, "litellm")["calls"] == 1
    assert usage(store, "litellm")["prompt_tokens"] == 10  # what the local server's answer says
    assert "sampling" not in state(store)["llm_usage"]
    assert processed(store, "llm", first["id"])


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_client_that_stops_answering_loses_no_note(store, tmp_path):
    """The client's model does not answer: the request times out, the note stays pending, nothing hangs; at the
    client's next call its model is asked again and the note gets its fact."""
    model = StandIn()
    model.answering = False
    with anyio.fail_after(TEST_DEADLINE):
        async with client(store, tmp_path, model, CHRONOMEM_SAMPLING_TIMEOUT="1") as c:
            first = await call_ok(c, "remember", {"content": FIRST, "valid_from": "2026-07-22"})
            await until(lambda: usage(store, "sampling").get("failures", 0) >= 1)
            assert len(model.prompts) == 1
            assert not processed(store, "llm", first["id"]), "the note stays pending"

            model.answering = True
            await call_ok(c, "recall", {"query": "certifi"})  # the server still answers; the client is back
            await until(lambda: processed(store, "llm", first["id"]))
            assert await versions(c) == [("2026.7.22", "current")]
    counted = usage(store, "sampling")
    assert counted["failures"] == 1 and counted["notes"] == 1 and counted["calls"] == len(model.prompts) == 2


class LocalTransport:
    """The same stand-in behind the consolidator's transport interface, in process (no MCP), for the budget."""

    name = "sampling"

    def __init__(self, model: StandIn) -> None:
        self.model = model

    def available(self) -> bool:
        return True

    def transient(self) -> tuple[type[BaseException], ...]:
        return ()

    def complete(self, messages: list[dict[str, str]]) -> Completion:
        params = CreateMessageRequestParams(
            messages=[SamplingMessage(role="user", content=TextContent(type="text", text=m["content"]))
                      for m in messages if m["role"] != "system"],
            system_prompt=messages[0]["content"], max_tokens=100,
        )
        result = anyio.run(self.model, None, params)
        return Completion(result.content.text, *usage_of(result.meta))


def test_the_hourly_budget_leaves_notes_pending_not_skipped(svc, clock):
    """With one sampling call left in the hour, one note is read and the next waits: pending, not skipped."""
    model = StandIn()
    runner = Consolidator(svc, llm=None, sampling=SamplingConfig(calls_per_hour=1))
    assert runner.use_sampling(LocalTransport(model))
    for text, day in ((FIRST, "2024-05-01"), (SECOND, "2024-05-20")):
        clock.advance(seconds=1)
        remember(svc, text, valid_from=day)
    steps = runner.run_to_completion()
    asked = [s for s in steps if s.did == "extract llm"]
    assert [s.counts["calls"] for s in asked] == [1] and "via sampling" in asked[0].detail
    assert runner.pending_chunks()["llm"] == 1, "the second note waits for the next hour"
    assert runner.usage()["sampling"]["calls"] == runner.usage()["sampling"]["notes"] == 1
    assert runner.usage()["sampling"]["calls_per_note"] == 1.0
    assert not Consolidator(svc, llm=None, sampling=SamplingConfig(enabled=False)).use_sampling(LocalTransport(model))


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_disconnected_client_is_not_waited_for(store, tmp_path):
    """Streamable HTTP: a client's model reads its note between calls; the client leaves; another (without sampling)
    writes a note. The server asks the gone client once, fails without a traceback, keeps the note pending and
    goes on answering."""
    from mcp.client.streamable_http import streamable_http_client

    port = free_port()
    log_path = tmp_path / "server.log"
    args = serve_args(store, "--transport", "http", "--host", "127.0.0.1", "--port", str(port))
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, *args], env=full_env(CHRONOMEM_SAMPLING_TIMEOUT="1"), cwd=tmp_path,
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        try:
            with anyio.fail_after(TEST_DEADLINE):
                while True:  # until it listens (or exits)
                    assert proc.poll() is None, log_path.read_text(errors="replace")
                    try:
                        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                        break
                    except OSError:
                        await anyio.sleep(0.05)
                url = f"http://127.0.0.1:{port}/mcp"
                model = StandIn()
                async with Client(streamable_http_client(url), mode="legacy", read_timeout_seconds=READ_TIMEOUT,
                                  sampling_callback=model) as gone:
                    first = await call_ok(gone, "remember", {"content": FIRST, "valid_from": "2026-07-22"})
                    await until(lambda: processed(store, "llm", first["id"]))
                    assert await versions(gone) == [("2026.7.22", "current")]
                async with Client(streamable_http_client(url), mode="legacy", read_timeout_seconds=READ_TIMEOUT) as c:
                    second = await call_ok(c, "remember", {"content": SECOND, "valid_from": "2026-08-01"})
                    await until(lambda: usage(store, "sampling").get("failures", 0) >= 1)
                    assert not processed(store, "llm", second["id"]), "the note stays pending"
                    assert await versions(c) == [("2026.7.22", "current")]  # the server answers on
        finally:
            stop(proc)
    assert len(model.prompts) == 1, "the client that left was never reached"
    assert usage(store, "sampling")["notes"] == 1
    said = log_path.read_text(errors="replace")
    assert "Traceback" not in said, said
    assert "LLM extraction through sampling stopped" in said
