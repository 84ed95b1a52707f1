"""Hostile input at every tool entry, on the real store and model: hypothesis-generated arguments of every
JSON shape (wrong types, huge numbers, NaN, control characters, lone surrogates, deep nesting), strings crafted
for the LanceDB filter language, absurd dates and oversized payloads — called as plain functions and through an
in-process MCP client. Every call either succeeds or fails with one short line; nothing else escapes, no other
project's data leaks, and the store is intact afterwards."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from chronomem.errors import ChronomemError, InvalidInput, NotFound
from chronomem.server.app import build_server
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.tools import as_of, forget, history, recall, remember

TOOLS = {"remember": remember, "recall": recall, "as_of": as_of, "forget": forget, "history": history}
ARGUMENTS = {
    "remember": ["content", "project", "valid_from", "facts", "tags", "paths"],
    "recall": ["query", "project", "scope", "limit", "budget_tokens", "kinds", "paths"],
    "as_of": ["query", "at", "known_at", "project", "scope", "limit", "budget_tokens", "kinds"],
    "forget": ["id", "reason", "retract", "at"],
    "history": ["id", "subject", "predicate", "project"],
}
POSITIONAL = {"remember": 1, "recall": 1, "as_of": 2, "forget": 2, "history": 1}
MAX_ERROR_CHARS = 600

INJECTIONS = [
    "' OR '1'='1",
    "x' OR 1=1 --",
    "victim' OR project = 'victim",
    "\\' OR 1=1 --",
    "proj') OR (1=1",
    "'; DROP TABLE memories; --",
    "victim%",
    "%",
    "_",
    "*",
    "' UNION SELECT * FROM memories --",
    "\u2019 OR 1=1",
    "project IS NOT NULL",
    "TRUE",
    "0 OR 1",
    "'''",
    "a\\",
    "$1",
    "${project}",
    "array_has_any(source_ids, make_array('x'))",
    "victim\u0000",
]
ABSURD_DATES = [
    "0000-00-00",
    "0001-01-01",
    "1969-12-31",
    "2200-01-01",
    "9999-12-31T23:59:59Z",
    "10000000 years ago",
    "in 3 billion years",
    "-1 days",
    "1e308",
    "NaN",
    "2024-13-45",
    "2024-02-30",
    "24:61",
    "9" * 100,
    "a" * 101,
    "yesterday at 25 o'clock",
    "+275760-09-13",
    "2024-01-01T00:00:00+99:00",
    "",
    " ",
]

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=60)
    | st.sampled_from(INJECTIONS + ABSURD_DATES + ["fact", "chunk", "all", "both", "global", "project", "01J9ZK3W4X5Y6Z7A8B9C0D1E2F"])
)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=12
)


def check_error(exc: ChronomemError) -> None:
    text = str(exc)
    assert text and "\n" not in text and len(text) <= MAX_ERROR_CHARS, repr(text[:200])
    assert "Traceback" not in text


def call(tool: str, svc: MemoryService, kwargs: dict[str, Any]) -> Any:
    names = ARGUMENTS[tool]
    args = [kwargs.pop(n, None) for n in names[: POSITIONAL[tool]]]
    return TOOLS[tool](svc, *args, **kwargs)


@pytest.fixture
def seeded(svc: MemoryService) -> MemoryService:
    """A store with a victim project the hostile calls must never reach."""
    remember(svc, "Victim's deploy key lives in vault at victim/deploy.", project="victim",
             facts=[{"subject": "victim", "predicate": "deploy_key_path", "object": "vault victim/deploy"}])
    remember(svc, "Our tests run with pytest.", facts=[{"subject": "proj", "predicate": "test_command", "object": "pytest"}])
    return svc


@pytest.mark.slow
@pytest.mark.parametrize("tool", list(TOOLS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_any_arguments_succeed_or_fail_in_one_line(seeded: MemoryService, tool: str, data: st.DataObject) -> None:
    names = ARGUMENTS[tool]
    chosen = data.draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
    kwargs = {name: data.draw(json_values, label=name) for name in chosen}
    before = seeded.store.count()
    try:
        result = call(tool, seeded, dict(kwargs))
    except ChronomemError as exc:
        check_error(exc)
        return
    assert result.text().strip()
    for item in getattr(result, "results", []):
        assert item.project != "victim" or kwargs.get("project") == "victim" or kwargs.get("scope") == "all", (kwargs, item)
    if tool in ("recall", "as_of", "history"):
        assert seeded.store.count() == before, "a read-only tool wrote"


@pytest.mark.slow
@pytest.mark.parametrize("text", INJECTIONS)
def test_filter_injection_reaches_no_other_project(seeded: MemoryService, text: str) -> None:
    rows = seeded.store.count()
    for scope in ("project", "both"):
        try:
            out = recall(seeded, "where does the deploy key live", project=text, scope=scope)
        except InvalidInput as exc:  # a project name with characters a name may not hold
            check_error(exc)
            continue
        assert all(item.project not in ("victim", "proj") for item in out.results), out.results
    try:
        out = recall(seeded, text, project="proj")  # as query text: plain words, never query syntax
        assert all(item.project == "proj" for item in out.results)
    except InvalidInput as exc:  # NUL is not text
        check_error(exc)
    for fn, kwargs in (
        (history, {"subject": text, "predicate": "deploy_key_path", "project": "victim"}),
        (history, {"subject": "victim", "predicate": text, "project": "victim"}),
        (history, {"id": text}),
        (forget, {"id": text}),
    ):
        with pytest.raises((InvalidInput, NotFound)) as caught:
            fn(seeded, **kwargs)
        check_error(caught.value)
    assert seeded.store.count() == rows
    assert [e.object for e in history(seeded, subject="victim", predicate="deploy_key_path", project="victim").entries] == [
        "vault victim/deploy"
    ]


@pytest.mark.slow
@pytest.mark.parametrize("date", ABSURD_DATES)
def test_absurd_dates_are_refused_in_one_line(seeded: MemoryService, date: str) -> None:
    rows = seeded.store.count()
    calls = [
        lambda: remember(seeded, "a note", valid_from=date),
        lambda: remember(seeded, "a note", facts=[{"subject": "s", "predicate": "p", "object": "o", "valid_from": date}]),
        lambda: as_of(seeded, "tests", at=date),
        lambda: as_of(seeded, "tests", at="2024-05-01", known_at=date),
        lambda: forget(seeded, seeded.store.find(Filter().kinds(["chunk"]))[0].id, at=date),
    ]
    for attempt in calls:
        try:
            attempt()
        except ChronomemError as exc:
            check_error(exc)
    assert seeded.store.count() >= rows


@pytest.mark.parametrize(
    ("date", "reason"),
    [
        ("-1", "is a negative number"),
        ("yesterday at 25:00", "holds the clock time 25:00, which cannot be"),
        ("2024-05-01\x00", "holds a control character (U+0000)"),
        ("2024-13-01", "is not a real date or time: month must be in 1..12"),
    ],
)
def test_negative_impossible_and_control_character_dates_are_refused_by_every_tool(
    seeded: MemoryService, date: str, reason: str
) -> None:
    """Each was read as some time before (January; now's time of day; the date without the NUL; 13 January) and
    written; now every tool taking a time refuses it, saying why, and nothing is written with it."""
    rows = seeded.store.count()
    memory = seeded.store.find(Filter().kinds(["chunk"]))[0].id
    calls = {
        "remember valid_from": lambda: remember(seeded, "a note", valid_from=date),
        "as_of at": lambda: as_of(seeded, "tests", at=date),
        "as_of known_at": lambda: as_of(seeded, "tests", at="2024-05-01", known_at=date),
        "forget at": lambda: forget(seeded, memory, at=date),
    }
    for name, attempt in calls.items():
        with pytest.raises(InvalidInput) as err:
            attempt()
        assert reason in str(err.value), (name, str(err.value))
        check_error(err.value)
    assert seeded.store.count() == rows
    # A fact's own time: that fact is refused with the reason, the rest of the call goes on.
    kept = remember(seeded, "The deploy window is Thursday.", facts=[
        {"subject": "deploys", "predicate": "window", "object": "thursday", "valid_from": date},
    ])
    assert kept.facts == [] and [r.index for r in kept.refused_facts] == [0]
    assert reason in kept.refused_facts[0].reason, kept.refused_facts[0].reason


@pytest.mark.parametrize("project", [True, 7, ["proj"], {"a": 1}])
def test_as_of_at_a_git_ref_with_a_project_that_is_not_a_string_is_refused(seeded: MemoryService, project: Any) -> None:
    # found by the test above: the ref's repository was looked up from the project before it was checked
    with pytest.raises(InvalidInput, match="project must be a non-empty string"):
        as_of(seeded, "tests", at="0", project=project)


@pytest.mark.parametrize("project", [True, 7, ["proj"], {"a": 1}])
def test_remember_with_a_project_that_is_not_a_string_is_refused(seeded: MemoryService, project: Any) -> None:
    # found by the property test above: the secret scan read the project before it was checked
    rows = seeded.store.count()
    with pytest.raises(InvalidInput, match="project must be a non-empty string"):
        remember(seeded, "0", project=project)
    assert seeded.store.count() == rows


def deep(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = {"subject": [value], "predicate": "p", "object": "o"}
    return value


@pytest.mark.slow
@pytest.mark.parametrize(
    ("tool", "kwargs"),
    [
        ("remember", {"content": "x" * 5_000_000}),
        ("remember", {"content": "ok", "facts": [{"subject": "s", "predicate": "p", "object": "o"}] * 10_000}),
        ("remember", {"content": "ok", "tags": ["t"] * 100_000}),
        ("remember", {"content": "ok", "paths": ["p" * 100_000]}),
        ("remember", {"content": "nul \x00 byte"}),
        ("remember", {"content": "bell \x07 and escape \x1b[31m"}),
        ("remember", {"content": "lone surrogate \ud800"}),
        ("remember", {"content": b"\xff\xfe bytes"}),
        ("recall", {"query": "q" * 1_000_000}),
        ("recall", {"query": "tests", "limit": 10**30}),
        ("recall", {"query": "tests", "limit": float("nan")}),
        ("recall", {"query": "tests", "budget_tokens": -1}),
        ("recall", {"query": "tests", "kinds": [["fact"]]}),
        ("recall", {"query": {"$ne": None}}),
        ("forget", {"id": "01J9ZK3W4X5Y6Z7A8B9C0D1E2F"}),
        ("forget", {"id": "0" * 10_000}),
        ("history", {"id": ["01J9ZK3W4X5Y6Z7A8B9C0D1E2F"]}),
        ("history", {"subject": "s" * 100_000, "predicate": "p"}),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_oversized_nested_and_binary_input_fails_in_one_line(seeded: MemoryService, tool: str, kwargs: dict[str, Any]) -> None:
    rows = seeded.store.count()
    with pytest.raises(ChronomemError) as caught:
        call(tool, seeded, dict(kwargs))
    check_error(caught.value)
    assert seeded.store.count() == rows


def test_a_deeply_nested_fact_is_refused_in_one_line_and_the_note_kept(seeded: MemoryService) -> None:
    rows = seeded.store.count()
    result = call("remember", seeded, {"content": "ok", "facts": deep(400)})
    assert result.facts == [] and [r.index for r in result.refused_facts] == [0]
    check_error(InvalidInput(result.refused_facts[0].reason))
    assert seeded.store.count() == rows + 1


# ---------------------------------------------------------------------------- through MCP


def mcp_arguments(tool: str) -> st.SearchStrategy[dict[str, Any]]:
    names = ARGUMENTS[tool] + {"remember": ["text"], "recall": ["k"], "as_of": ["k"], "forget": ["memory_id"], "history": ["memory_id"]}[tool]
    keys = st.sampled_from(names) | st.text(min_size=1, max_size=12)
    return st.dictionaries(keys, json_values, max_size=6)


def run_mcp(svc: MemoryService, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, str]]:
    async def go() -> list[tuple[bool, str]]:
        out = []
        async with Client(build_server(svc), read_timeout_seconds=60) as client:
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                text = "\n".join(getattr(b, "text", "") for b in result.content)
                out.append((bool(result.is_error), text))
                if not result.is_error:
                    assert result.structured_content is not None
            ok = await client.call_tool("recall", {"query": "how do we run the tests"})
            assert not ok.is_error and ok.structured_content["results"], "the server stopped answering"
        return out

    return anyio.run(go)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_mcp_tool_calls_with_any_arguments_fail_in_one_line(seeded: MemoryService, data: st.DataObject) -> None:
    calls = [(tool, data.draw(mcp_arguments(tool), label=tool)) for tool in TOOLS]
    for (name, arguments), (is_error, text) in zip(calls, run_mcp(seeded, calls), strict=True):
        assert text.strip(), (name, arguments)
        if is_error:
            assert "\n" not in text.strip() and len(text) <= MAX_ERROR_CHARS, (name, arguments, text[:300])
            assert "Traceback" not in text and "internal error" not in text, (name, arguments, text)


def test_mcp_hostile_payloads_fail_in_one_line(seeded: MemoryService) -> None:
    calls = [
        ("remember", {"content": "x" * 2_000_000}),
        ("remember", {"content": "ok", "facts": deep(40)}),
        ("remember", {"content": "ok", "facts": [{"subject": "s", "predicate": "p", "object": "o"}] * 5_000}),
        ("remember", {"content": "ctrl \x00\x1b"}),
        ("recall", {"query": "tests", "project": "' OR '1'='1", "scope": "project"}),
        ("recall", {"query": "tests", "limit": "ten"}),
        ("recall", {"query": ["tests"]}),
        ("as_of", {"query": "tests", "at": "10000000 years ago"}),
        ("forget", {"id": "x' OR 1=1 --"}),
        ("history", {"subject": "victim' OR '1'='1", "predicate": "deploy_key_path"}),
        ("no_such_tool", {}),
    ]
    results = run_mcp(seeded, calls)
    for (name, arguments), (is_error, text) in zip(calls, results, strict=True):
        if name == "recall" and arguments.get("project"):
            continue  # a valid call: it must simply find nothing of other projects (checked below)
        assert is_error, (name, text[:200])
        assert "\n" not in text.strip() and len(text) <= MAX_ERROR_CHARS, (name, text[:300])
    # none of the victim's memories; its project's key may be named (an empty project's answer lists those with memories)
    assert "vault" not in results[4][1] and "deploy" not in results[4][1].lower()
