"""The page's JSON API for what it shows without a query and the marks on what it lists, in process: the exact app
`chronomem ui` serves (build_server + the page's gate), on a real store with the shipped model and a fixed clock,
through real HTTP requests (Starlette's TestClient, the page's token as a bearer header). The landing list of recent
memories a page at a time, the slider's moments, one id for an ended value everywhere, the reason on a memory
forgotten later seen `as of`, as_of answering only what is relevant (no padding), and corrections recorded as made
by the person on the page. test_ui_page.py drives the same through Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from chronomem import tools
from chronomem.config import Settings
from chronomem.server.app import build_server
from chronomem.server.security import network_app
from chronomem.server.transports import page_sessions
from chronomem.server.ui import page_person
from chronomem.service import MemoryService
from chronomem.storage import Filter
from tests.conftest import Clock, model_dir

PORT = 8767
BASE = f"http://127.0.0.1:{PORT}"
TOKEN = "ui-api-test-token-7d2e4c1b"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
#: Twenty notes on unrelated things (test_ui_page.py lists them all, more than a page of its landing list).
FILLER = [
    "The payments service retries failed charges three times", "Logs are kept for thirty days in the archive bucket",
    "The design review happens every second Tuesday", "Feature flags live in the flags.yaml file",
    "The mobile app talks to the api gateway only", "Database migrations run before each deploy",
    "The search index is rebuilt nightly", "On-call rotates every Monday morning",
    "Secrets are read from the vault at startup", "The frontend is built with Vite",
    "Invoices are generated on the first day of the month", "The warehouse sync job runs every fifteen minutes",
    "Product images are resized by a lambda on upload", "The support inbox is triaged by the duty engineer",
    "Customer emails are sent through Postmark", "The checkout page is cached for sixty seconds",
    "Refunds above 500 euros need a manager's approval", "The recommendation model is retrained weekly",
    "Load tests run against the perf environment on Thursdays", "Translations are managed in Crowdin",
]
#: Notes enough for three pages of 5.
NOTES = FILLER[:10]


def client_for(svc: MemoryService) -> TestClient:
    server = build_server(svc)
    sessions = page_sessions(server, svc, "127.0.0.1", PORT, TOKEN)
    return TestClient(network_app(server, "http", "127.0.0.1", TOKEN, sessions=sessions), base_url=BASE)


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> Iterator[dict[str, Any]]:
    """A project whose memories span 2020-2024 (the store's moments are few and far apart), a changed fact, a fact
    forgotten on 2024-04-01 with a reason, plain notes, and another project; the clock fixed at 2024-06-01."""
    clock = Clock(datetime(2024, 6, 1, 12, 0, tzinfo=UTC))
    store = tmp_path_factory.mktemp("ui-api") / "store"
    svc = MemoryService(Settings(store_path=store, model_path=model_dir(), project="shop"), embedder=embedder, clock=clock)

    def write(text: str, since: str, fact: tuple[str, str] | None = None, project: str | None = None) -> Any:
        clock.advance(minutes=1)
        facts = [{"subject": "shop", "predicate": fact[0], "object": fact[1]}] if fact else None
        return tools.remember(svc, text, valid_from=since, facts=facts, project=project)

    ids: dict[str, Any] = {}
    ids["founded"] = write("The repository was created by the platform team", "2020-05-01").id
    ids["pytest"] = write("We run the tests with pytest", "2024-01-10", ("test_command", "pytest")).facts[0].id
    ids["host"] = write("The staging host is staging.shop.internal", "2024-02-01", ("staging_host", "staging.shop.internal")).facts[0].id
    ids["deploys"] = write("Deploys go out on Fridays after the standup", "2024-02-10").id
    nox = write("Tests now run with nox -s tests", "2024-03-01", ("test_command", "nox -s tests"))
    ids["nox"] = nox.facts[0].id
    for n, text in enumerate(NOTES):
        ids[f"filler{n}"] = write(text, f"2024-03-{10 + n:02d}").id
    clock.advance(minutes=1)
    tools.forget(svc, ids["host"], "staging was shut down", at="2024-04-01")
    ids["ops"] = write("The ops runbook lives in the wiki", "2024-02-01", project="ops").id
    with client_for(svc) as client:
        yield {"client": client, "svc": svc, "ids": ids, "nox_supersedes": nox.facts[0].supersedes}


def get(shop: dict[str, Any], path: str, **params: Any) -> Any:
    reply = shop["client"].get(path, params=params, headers=AUTH)
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_the_landing_list_is_the_projects_memories_newest_first_a_page_at_a_time(shop: dict[str, Any]) -> None:
    ids = shop["ids"]
    for path in ("/api/recent", "/api/moments"):  # behind the page's login like the rest of its API
        assert shop["client"].get(path, params={"project": "shop"}).status_code == 401
    pages = [get(shop, "/api/recent", project="shop", offset=offset, limit=5) for offset in (0, 5, 10, 15)]
    # what holds now in shop, as the store counts it: the founding note, the notes of the host and of nox, the
    # deploys note, 10 more notes and one fact, nox (pytest, and the note stating it, were replaced; the host forgotten)
    now = shop["svc"].now()
    total = pages[0]["total"]
    assert total == shop["svc"].store.count(Filter().live(now, now).projects(["shop"])) == 15
    assert all(p["total"] == total for p in pages)
    listed = [r["id"] for p in pages for r in p["results"]]
    assert len(listed) == total == len(set(listed))  # every memory once, no page overlapping another
    assert [len(p["results"]) for p in pages] == [min(5, max(0, total - o)) for o in (0, 5, 10, 15)]
    created = [r["created_at"] for p in pages for r in p["results"]]
    assert created == sorted(created, reverse=True)  # most recently recorded first
    assert listed[0] == ids["filler9"] and ids["founded"] == listed[-1]
    assert ids["nox"] in listed and ids["pytest"] not in listed and ids["host"] not in listed  # what holds now
    assert ids["ops"] not in listed and all(r["project"] == "shop" for p in pages for r in p["results"])
    ops = get(shop, "/api/recent", project="ops")
    assert [r["id"] for r in ops["results"]] == [ids["ops"]] and ops["total"] == 1
    # as of a moment: what held then, e.g. pytest and the staging host on 2024-02-15, not nox
    then = get(shop, "/api/recent", project="shop", at="2024-02-15T23:59:59Z", limit=50)
    held = {r["id"] for r in then["results"]}
    assert {ids["pytest"], ids["host"], ids["deploys"], ids["founded"]} <= held and ids["nox"] not in held


def test_the_sliders_moments_are_the_times_memories_began_or_ended(shop: dict[str, Any]) -> None:
    moments = get(shop, "/api/moments", project="shop")["moments"]
    days = [m[:10] for m in moments]
    assert days[0] == "2020-05-01" and days[1] == "2024-01-10"  # one step from 2020 to 2024, not a year per pixel
    assert {"2024-02-01", "2024-02-10", "2024-03-01", "2024-04-01"} <= set(days)  # began, and ended (forgotten)
    assert moments == sorted(set(moments))
    assert get(shop, "/api/moments", project="ops")["moments"] == ["2024-02-01T00:00:00Z"]


def test_an_ended_value_has_one_id_on_the_timeline_in_recall_and_as_of(shop: dict[str, Any]) -> None:
    ids = shop["ids"]
    now = get(shop, "/api/search", q="how do we run the tests", project="shop")
    assert now["results"][0]["id"] == ids["nox"]
    named = now["results"][0]["supersedes"]
    assert named == ids["pytest"] == shop["nox_supersedes"]
    bars = get(shop, "/api/timeline", id=ids["nox"], project="shop")["bars"]
    assert [(b["value"], b["id"]) for b in bars] == [("pytest", named), ("nox -s tests", ids["nox"])]
    assert bars[0]["ended_by"] == ids["nox"]
    assert bars[0]["row_id"] != named  # the closed interval lives in a revision row: the page names the first id
    then = get(shop, "/api/search", q="how do we run the tests", project="shop", at="2024-02-15")
    assert then["results"][0]["object"] == "pytest" and then["results"][0]["id"] == named
    assert then["results"][0]["row_id"] == bars[0]["row_id"]
    listed = get(shop, "/api/recent", project="shop", at="2024-02-15T23:59:59Z", limit=50)["results"]
    assert named in {r["id"] for r in listed}
    assert get(shop, "/api/timeline", id=named, project="shop")["bars"] == bars  # the id leads back to the same slot


def test_a_memory_forgotten_later_seen_as_of_carries_how_and_why(shop: dict[str, Any]) -> None:
    ids = shop["ids"]
    then = get(shop, "/api/search", q="what is the staging host", project="shop", at="2024-02-15")
    host = next(r for r in then["results"] if r["kind"] == "fact")
    assert host["id"] == ids["host"]
    assert host["ended"] == {"at": "2024-04-01T00:00:00Z", "how": "forgotten", "reason": "staging was shut down", "by": None}
    replaced = get(shop, "/api/search", q="how do we run the tests", project="shop", at="2024-02-15")["results"][0]
    assert replaced["ended"]["how"] == "replaced" and replaced["ended"]["by"] == ids["nox"]
    assert replaced["ended"]["at"] == "2024-03-01T00:00:00Z"
    now = get(shop, "/api/search", q="how do we run the tests", project="shop")["results"]
    assert all(r["ended"] is None and r["status"] == "current" for r in now)


def test_as_of_answers_only_what_is_relevant_like_recall(shop: dict[str, Any]) -> None:
    """No padding: after the last change the page's as_of answers exactly what recall answers, and before anything
    about the question was stored it answers nothing rather than the store's other memories."""
    for question in ("how do we run the tests", "when do deploys go out", "who created the repository",
                     "how long are logs kept", "what is the weather in Paris"):
        now = get(shop, "/api/search", q=question, project="shop")["results"]
        late = get(shop, "/api/search", q=question, project="shop", at="2024-05-01")["results"]
        assert [r["id"] for r in late] == [r["id"] for r in now], question
        for answer in (now, late):
            if answer:
                best = max(r["score"] for r in answer)
                assert all(r["score"] >= 0.1 * best for r in answer), question
    early = get(shop, "/api/search", q="when do deploys go out", project="shop", at="2024-01-01")
    assert early["results"] == [] and early["abstained"]


def test_a_correction_on_the_page_is_recorded_as_made_by_the_person(tmp_path: Path, embedder: Any) -> None:
    clock = Clock(datetime(2024, 6, 1, 12, 0, tzinfo=UTC))
    svc = MemoryService(Settings(store_path=tmp_path / "store", model_path=model_dir(), project="p"), embedder=embedder, clock=clock)
    port = tools.remember(svc, "The API listens on port 8080", valid_from="2024-01-01",
                          facts=[{"subject": "api", "predicate": "port", "object": "8080"}]).facts[0].id
    note = tools.remember(svc, "Deploys go out on Fridays", valid_from="2024-01-01").id
    branch = tools.remember(svc, "The default branch is main", valid_from="2024-01-01",
                            facts=[{"subject": "repo", "predicate": "default_branch", "object": "main"}]).facts[0].id
    person = page_person()
    clock.advance(days=1)
    with client_for(svc) as client:
        done = client.post("/api/replace", json={"id": port, "value": "9090"}, headers=AUTH)
        assert done.status_code == 200, done.text
        assert f"by {person}" in done.json()["message"]
        bars = client.get("/api/timeline", params={"id": port}, headers=AUTH).json()["bars"]
        assert [(b["value"], b["by"], b["source"]) for b in bars] == [("8080", None, "agent"), ("9090", person, "agent")]
        assert bars[0]["ended_by_source"] == person
        found = client.get("/api/search", params={"q": "which port does the api listen on"}, headers=AUTH).json()["results"]
        assert found[0]["object"] == "9090" and found[0]["by"] == person and "ui" in found[0]["tags"]

        clock.advance(days=1)
        swapped = client.post("/api/replace", json={"id": note, "text": "Deploys go out on Tuesdays"}, headers=AUTH).json()
        history = tools.history(svc, note).entries
        assert history[-1].reason == f"replaced by {swapped['new_id']} (by {person})"

        clock.advance(days=1)
        assert client.post("/api/forget", json={"id": branch, "reason": "we dropped the branch"}, headers=AUTH).status_code == 200
        ended = client.get("/api/timeline", params={"id": branch}, headers=AUTH).json()["bars"][0]
        assert ended["status"] == "ended" and ended["cause"] == f"we dropped the branch (by {person})"
        seen = client.get("/api/search", params={"q": "what is the default branch", "at": "2024-02-01"}, headers=AUTH).json()
        mark = next(r for r in seen["results"] if r["kind"] == "fact")["ended"]
        assert mark["how"] == "forgotten" and mark["reason"] == f"we dropped the branch (by {person})"
