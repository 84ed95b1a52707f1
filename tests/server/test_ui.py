"""The local page's HTTP side, in process: the exact ASGI app `chronomem ui` serves (the MCP server's streamable-HTTP
app with the page's routes, behind uiauth's gate), on a real store with the shipped model, driven with real HTTP
requests through Starlette's TestClient. Login (one-time link, token), Host/Origin checks, CSRF, and that the API
answers what the tools answer; the browser tests (test_ui_browser.py) drive the same through Chromium."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from chronomem import tools
from chronomem.config import Settings
from chronomem.server.app import build_server
from chronomem.server.security import network_app
from chronomem.server.transports import page_sessions
from chronomem.service import MemoryService
from tests.conftest import model_dir

PORT = 8766
BASE = f"http://127.0.0.1:{PORT}"
TOKEN = "ui-test-token-5c1d8e2a9f"


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> Iterator[tuple[TestClient, object, dict[str, str]]]:
    """A seeded store (pytest, then nox -s tests, as the test command) and the page's app over it."""
    store = tmp_path_factory.mktemp("ui") / "store"
    svc = MemoryService(Settings(store_path=store, model_path=model_dir(), project="p"), embedder=embedder)
    first = tools.remember(svc, "We run tests with pytest", valid_from="2024-01-10",
                           facts=[{"subject": "p", "predicate": "test_command", "object": "pytest"}])
    second = tools.remember(svc, "Tests now run with nox -s tests", valid_from="2024-03-01",
                            facts=[{"subject": "p", "predicate": "test_command", "object": "nox -s tests"}])
    ids = {"pytest": first.facts[0].id, "nox": second.facts[0].id, "nox_note": second.id}
    server = build_server(svc)
    sessions = page_sessions(server, svc, "127.0.0.1", PORT, TOKEN)
    app = network_app(server, "http", "127.0.0.1", TOKEN, sessions=sessions)
    with TestClient(app, base_url=BASE, follow_redirects=False) as client:
        yield client, sessions, ids


@pytest.fixture(autouse=True)
def no_kept_cookies(page) -> None:
    """Each test sends the cookies it means to: the client's jar starts empty."""
    page[0].cookies.clear()


def login(client: TestClient, sessions: object) -> tuple[dict[str, str], str]:
    """Follow a fresh one-time link; the session cookie and the page's CSRF token."""
    code = sessions.one_time_code()  # type: ignore[attr-defined]
    reply = client.get(f"/login?code={code}")
    client.cookies.clear()
    assert reply.status_code == 303 and reply.headers["location"] == "/"
    cookie = reply.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    name, _, rest = cookie.partition("=")
    cookies = {name: rest.split(";")[0]}
    html = client.get("/", cookies=cookies).text
    csrf = html.split('name="csrf-token" content="')[1].split('"')[0]
    assert len(csrf) >= 32
    return cookies, csrf


def test_the_page_needs_a_login_and_the_one_time_link_works_once(page) -> None:
    client, sessions, _ = page
    assert client.get("/").status_code == 401
    assert client.get("/api/projects").status_code == 401
    assert "one-time link" in client.get("/").text
    code = sessions.one_time_code()
    assert client.get(f"/login?code={code}").status_code == 303
    client.cookies.clear()
    assert client.get(f"/login?code={code}").status_code == 401  # spent
    assert client.get("/login?code=not-a-code").status_code == 401
    assert sessions.link.startswith(f"{BASE}/login?code=")


def test_the_token_logs_in_by_header_or_form_and_mcp_keeps_its_bearer_check(page) -> None:
    client, _, _ = page
    assert client.get("/api/projects", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert client.get("/api/projects", headers={"Authorization": "Bearer wrong-token-000000000"}).status_code == 401
    assert client.post("/login", json={"token": "wrong"}).status_code == 401
    ok = client.post("/login", json={"token": TOKEN})
    client.cookies.clear()
    assert ok.status_code == 200 and "SameSite=Strict" in ok.headers["set-cookie"]
    # /mcp: the bearer token, never the page's cookie
    name, _, rest = ok.headers["set-cookie"].partition("=")
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    mcp_headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    assert client.post("/mcp", json=init, headers=mcp_headers, cookies={name: rest.split(";")[0]}).status_code == 401


def test_host_and_origin_are_checked_like_the_transport(page) -> None:
    client, sessions, ids = page
    cookies, csrf = login(client, sessions)
    refused = client.get("/api/projects", cookies=cookies, headers={"Host": "evil.example"})
    assert refused.status_code == 421 and "CHRONOMEM_ALLOWED_HOSTS" in refused.text
    cross = client.post(
        "/api/forget", json={"id": ids["nox"], "reason": "x"}, cookies=cookies,
        headers={"Origin": "http://evil.example", "X-Chronomem-CSRF": csrf},
    )
    assert cross.status_code == 403 and "CHRONOMEM_ALLOWED_ORIGINS" in cross.text
    assert client.get("/api/projects", cookies=cookies, headers={"Origin": "http://evil.example"}).status_code == 403
    headers = client.get("/", cookies=cookies).headers
    assert headers["x-frame-options"] == "DENY" and "frame-ancestors 'none'" in headers["content-security-policy"]


def test_a_change_needs_the_csrf_header_and_an_origin(page) -> None:
    client, sessions, ids = page
    cookies, csrf = login(client, sessions)
    body = {"id": ids["pytest"], "reason": "x"}
    origin = {"Origin": BASE}
    assert client.post("/api/forget", json=body, cookies=cookies, headers=origin).status_code == 403
    assert client.post("/api/forget", json=body, cookies=cookies, headers={**origin, "X-Chronomem-CSRF": "nope"}).status_code == 403
    assert client.post("/api/forget", json=body, cookies=cookies, headers={"X-Chronomem-CSRF": csrf}).status_code == 403
    # a form post (what a cross-site <form> can send) is refused before anything runs
    form = client.post("/api/forget", data={"id": ids["pytest"]}, cookies=cookies, headers={**origin, "X-Chronomem-CSRF": csrf})
    assert form.status_code == 400
    history = client.get("/api/timeline", params={"id": ids["pytest"]}, cookies=cookies).json()
    assert [b["status"] for b in history["bars"]] == ["ended", "current"]  # nothing was forgotten


def test_the_api_answers_what_the_tools_answer(page) -> None:
    client, sessions, ids = page
    cookies, csrf = login(client, sessions)
    projects = client.get("/api/projects", cookies=cookies).json()["projects"]
    assert [(p["project"], p["current_facts"], p["superseded"]) for p in projects] == [("p", 1, 1)]
    assert projects[0]["first_valid"].startswith("2024-01-10")

    now = client.get("/api/search", params={"q": "how do we run the tests", "project": "p"}, cookies=cookies).json()
    assert now["results"][0]["id"] == ids["nox"]
    then = client.get("/api/search", params={"q": "how do we run the tests", "project": "p", "at": "2024-02-01"},
                      cookies=cookies).json()
    assert then["results"][0]["object"] == "pytest"
    assert all("anchors" in r for r in then["results"])

    bars = client.get("/api/timeline", params={"q": "test command", "project": "p"}, cookies=cookies).json()["bars"]
    assert [(b["value"], b["status"], b["ended_by"]) for b in bars] == [
        ("pytest", "ended", ids["nox"]), ("nox -s tests", "current", None)
    ]
    assert bars[0]["note"] == "We run tests with pytest"
    assert bars[0]["end"].startswith("2024-03-01") and bars[1]["end"] is None

    brief = client.get("/api/brief", params={"project": "p"}, cookies=cookies).json()
    assert "nox -s tests" in brief["text"] and brief["tokens"] > 0

    missing = client.get("/api/timeline", params={"id": "01ARZ3NDEKTSV4RRFFQ69G5FAV"}, cookies=cookies)
    assert missing.status_code == 404 and "\n" not in missing.json()["error"]
    bad = client.get("/api/search", params={"q": "x", "project": "p", "at": "not a time at all"}, cookies=cookies)
    assert bad.status_code == 400 and "cannot read at" in bad.json()["error"]

    export = client.get("/api/export", params={"project": "p"}, cookies=cookies)
    assert export.status_code == 200 and 'filename="p.jsonl"' in export.headers["content-disposition"]
    assert len(export.text.splitlines()) == projects[0]["rows"]


def test_replace_supersedes_a_fact_and_keeps_the_old_one_in_history(svc: MemoryService, clock: object) -> None:
    from chronomem.tools.correct import replace
    from chronomem.tools.timeline import timeline

    made = tools.remember(svc, "The API listens on port 8080", facts=[{"subject": "api", "predicate": "port", "object": "8080"}])
    old = made.facts[0].id
    clock.advance(days=1)  # type: ignore[attr-defined]
    done = replace(svc, old, value="9090")
    assert done.action == "superseded"
    bars = timeline(svc, old).bars
    assert [(b.value, b.status) for b in bars] == [("8080", "ended"), ("9090", "current")]
    assert bars[0].ended_by == done.new_id
    note = tools.remember(svc, "Deploys go out on Fridays")
    clock.advance(days=1)  # type: ignore[attr-defined]
    swapped = replace(svc, note.id, "Deploys go out on Tuesdays")
    assert swapped.action == "replaced"
    live = tools.recall(svc, "when do deploys go out").results
    assert note.id not in {r.id for r in live} and swapped.new_id in {r.id for r in live}
    assert tools.history(svc, note.id).entries[-1].reason.startswith(f"replaced by {swapped.new_id}")


def test_the_page_refuses_to_bind_beyond_loopback_without_a_token(tmp_path, capsys, monkeypatch) -> None:
    from chronomem.cli import main

    monkeypatch.delenv("CHRONOMEM_TOKEN", raising=False)
    assert main(["ui", "--host", "0.0.0.0", "--no-browser", "--store", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: binding to 0.0.0.0 exposes this memory") and "\n" not in err
    assert main(["serve", "--transport", "sse", "--ui", "--store", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err.strip()
    assert "use --transport http with --ui" in err and "\n" not in err
    assert not (tmp_path / "s").exists()  # refused before the store was made
