"""The LLM extractor end to end: litellm (not mocked) against a local server speaking OpenAI chat completions.

The server is a tiny `http.server` on 127.0.0.1 started by the test; each test scripts what
it answers. Checked: good answers applied in one commit, malformed answers and ids that were
not shown rejected (retried, then skipped), 500s and timeouts retried, an unreachable LLM
leaves the chunk pending, and the ambiguous slot band is settled by the LLM.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from chronomem.consolidate.extract_llm import LLMConfig, MalformedAnswer, parse_operations
from chronomem.consolidate.runner import Consolidator
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.tools import history, remember

ID_LINE = re.compile(r"^(?P<id>[0-9A-HJKMNP-TV-Z]{26}) \| (?P<subject>[^|]+) \| (?P<predicate>[^|]+) \| (?P<object>[^|]+) \|", re.M)
NONE = json.dumps({"operations": [{"op": "NONE"}]})

Reply = tuple[int, str, float]  # (HTTP status, assistant content or error text, seconds to wait first)


class FakeLLM:
    """An OpenAI-compatible chat-completions endpoint whose answers a test scripts."""

    def __init__(self) -> None:
        self.answer: Callable[[dict[str, Any]], Reply] = lambda request: (200, NONE, 0.0)
        self.requests: list[dict[str, Any]] = []

    @staticmethod
    def note(request: dict[str, Any]) -> str:
        user = request["messages"][1]["content"]
        m = re.search(r"<<<\n(.*)\n>>>", user, re.S)
        return m.group(1) if m else user

    @staticmethod
    def shown(request: dict[str, Any]) -> dict[str, dict[str, str]]:
        return {m["id"]: {k: m[k].strip() for k in ("subject", "predicate", "object")}
                for m in ID_LINE.finditer(request["messages"][1]["content"])}


@pytest.fixture
def llm() -> Iterator[tuple[FakeLLM, LLMConfig]]:
    fake = FakeLLM()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            fake.requests.append(request)
            status, content, delay = fake.answer(request)
            time.sleep(delay)
            if status == 200:
                body = {
                    "id": f"chatcmpl-{len(fake.requests)}", "object": "chat.completion", "created": int(time.time()),
                    "model": request.get("model", "test"),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
                }
            else:
                body = {"error": {"message": content, "type": "server_error", "code": status}}
            data = json.dumps(body).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # serve_forever checks for shutdown every poll_interval (0.5 s by default): each test's teardown waited that long
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    config = LLMConfig(
        model="openai/chronomem-test", api_base=f"http://127.0.0.1:{server.server_address[1]}/v1",
        api_key="sk-local-test", timeout=2.0, backoff=0.05, max_attempts=3, calls_per_batch=8,
    )
    try:
        yield fake, config
    finally:
        server.shutdown()
        server.server_close()


def note(svc: MemoryService, clock, text: str, at: str, **kw: Any):
    clock.advance(seconds=1)
    return remember(svc, text, valid_from=at, **kw)


def ops(*items: dict[str, Any]) -> str:
    return json.dumps({"operations": list(items)})


@pytest.mark.slow
def test_good_answers_are_applied_in_one_commit(svc: MemoryService, clock, llm) -> None:
    fake, config = llm
    note(svc, clock, "The queue is now RabbitMQ.", "2024-01-01")
    note(svc, clock, "The staging host is now stg-box-1.", "2024-01-02")
    owner = note(svc, clock, "Billing is Dana's.", "2024-01-03",
                 facts=[{"subject": "billing", "predicate": "owner", "object": "Dana"}])
    Consolidator(svc, llm=None).run_to_completion()  # the rules' facts exist before the LLM reads on
    chunk = note(svc, clock, "We ditched RabbitMQ for SQS, billing reports now land in the warehouse, "
                             "and the old staging box is gone. Dana still owns billing.", "2024-02-01")
    ids_before = {i for i, _ in svc.store.keys(Filter())}

    def answer(request: dict[str, Any]) -> Reply:
        if "ditched" not in FakeLLM.note(request):
            return 200, NONE, 0.0
        shown = {v["predicate"]: k for k, v in FakeLLM.shown(request).items()}
        assert {"queue", "staging_host", "owner"} <= set(shown), "the project's live facts are shown"
        return 200, ops(
            {"op": "UPDATE", "id": shown["queue"], "object": "SQS"},
            {"op": "ADD", "subject": "billing reports", "predicate": "location", "object": "the warehouse"},
            {"op": "INVALIDATE", "id": shown["staging_host"], "reason": "the staging box is gone"},
            {"op": "INVALIDATE", "id": shown["owner"], "reason": "a model guessing"},
        ), 0.0

    fake.answer = answer
    steps = Consolidator(svc, llm=config).run_to_completion()
    assert "extract llm" in [s.did for s in steps]
    queue = history(svc, subject="proj", predicate="queue")
    assert [(e.object, e.status, e.source) for e in queue.entries] == [("RabbitMQ", "ended", "rules"), ("SQS", "current", "llm")]
    assert queue.entries[0].invalid_at == "2024-02-01T00:00:00Z"
    [location] = history(svc, subject="billing reports", predicate="location").entries
    assert location.object == "the warehouse" and location.source == "llm"
    staging = history(svc, subject="proj", predicate="staging_host")
    assert [e.status for e in staging.entries][-1] == "ended" and "invalidated by the LLM" in (staging.entries[-1].reason or "")
    assert [e.status for e in history(svc, owner.facts[0].id).entries] == ["current"], "the agent's fact is not the LLM's to end"
    new_facts = svc.store.find(Filter().derived_from([chunk.id]).kinds(["fact"]))
    assert {f.source for f in new_facts} == {"llm"}
    assert ids_before <= {i for i, _ in svc.store.keys(Filter())}, "nothing physically removed"


def test_malformed_and_unshown_ids_are_rejected(svc: MemoryService, clock, llm, caplog) -> None:
    fake, config = llm
    note(svc, clock, "The queue is now RabbitMQ.", "2024-01-01")
    Consolidator(svc, llm=None).run_to_completion()
    note(svc, clock, "Moved the queue over to SQS.", "2024-02-01")
    note(svc, clock, "Nightly builds publish to the internal mirror.", "2024-02-02")
    answers: dict[str, list[str]] = {
        "Moved the queue": ["sure! here you go", "{\"operations\": [{\"op\": \"UPSERT\"}]}",
                            ops({"op": "UPDATE", "id": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "object": "SQS"})],
        "Nightly builds": ["```json\n{\"operations\": [{\"op\": \"ADD\", \"subject\": \"nightly builds\"}]}\n```",
                           ops({"op": "ADD", "subject": "nightly builds", "predicate": "publish_target",
                                "object": "internal mirror"})],
    }

    def answer(request: dict[str, Any]) -> Reply:
        text = FakeLLM.note(request)
        for key, queue in answers.items():
            if text.startswith(key):
                return 200, queue.pop(0), 0.0
        return 200, NONE, 0.0

    fake.answer = answer
    runner = Consolidator(svc, llm=config)
    runner.run_to_completion()
    assert [e.object for e in history(svc, subject="proj", predicate="queue").entries] == ["RabbitMQ"], "never half-applied"
    assert "was not among the facts shown" in caplog.text and "skipped" in caplog.text
    assert history(svc, subject="nightly builds", predicate="publish_target").entries[0].object == "internal mirror"
    assert runner.pending_chunks()["llm"] == 0
    retry = [r for r in fake.requests if FakeLLM.note(r).startswith("Nightly")][1]
    assert "rejected" in retry["messages"][-1]["content"], "a rejected answer is asked again with the reason"


def test_server_errors_and_timeouts_are_retried(svc: MemoryService, clock, llm) -> None:
    fake, config = llm
    note(svc, clock, "Artifacts go to the S3 bucket acme-builds.", "2024-01-01")
    script: list[Reply] = [(500, "boom", 0.0), (200, "", 3.0),  # a 500, then an answer slower than the 2 s timeout
                           (200, ops({"op": "ADD", "subject": "artifacts", "predicate": "bucket", "object": "acme-builds"}), 0.0)]
    fake.answer = lambda request: script.pop(0) if script else (200, NONE, 0.0)
    Consolidator(svc, llm=config).run_to_completion()
    assert history(svc, subject="artifacts", predicate="bucket").entries[0].object == "acme-builds"
    assert len(fake.requests) >= 3


def test_an_unreachable_llm_leaves_chunks_pending(svc: MemoryService, clock, llm) -> None:
    fake, config = llm
    note(svc, clock, "Artifacts go to the S3 bucket acme-builds.", "2024-01-01")
    fake.answer = lambda request: (503, "overloaded", 0.0)
    runner = Consolidator(svc, llm=config)
    steps = runner.run_to_completion()
    llm_steps = [s for s in steps if s.did == "extract llm"]
    assert llm_steps and "LLM unavailable" in llm_steps[0].detail
    assert len(fake.requests) == config.max_attempts
    assert runner.pending_chunks() == {"rules": 0, "llm": 1}, "retried later, not lost"


def test_the_ambiguous_slot_band_goes_to_the_llm(svc: MemoryService, clock, llm) -> None:
    fake, config = llm
    note(svc, clock, "The CI system is now CircleCI.", "2024-01-01")
    note(svc, clock, "The CI provider is now Buildkite.", "2024-03-01")

    def answer(request: dict[str, Any]) -> Reply:
        if "same attribute" in request["messages"][0]["content"]:
            return 200, json.dumps({"same": True}), 0.0
        return 200, NONE, 0.0

    fake.answer = answer
    Consolidator(svc, llm=config).run_to_completion()
    chain = history(svc, subject="proj", predicate="ci_system")
    assert [(e.object, e.status) for e in chain.entries] == [("CircleCI", "ended"), ("Buildkite", "current")]
    assert any("same attribute" in r["messages"][0]["content"] for r in fake.requests)


def test_parse_operations_is_strict() -> None:
    shown = {"01ARZ3NDEKTSV4RRFFQ69G5FAV"}
    assert parse_operations(NONE, shown) == []
    for bad in ("[]", '{"operations": []}', '{"operations": [{"op": "ADD", "subject": "x"}]}',
                '{"operations": [{"op": "INVALIDATE", "id": "01BX5ZZKBKACTAV9WEVGEMMVRZ"}]}',
                '{"operations": [{"op": "UPDATE", "id": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "object": "a"},'
                ' {"op": "INVALIDATE", "id": "01ARZ3NDEKTSV4RRFFQ69G5FAV"}]}'):
        with pytest.raises(MalformedAnswer):
            parse_operations(bad, shown)
