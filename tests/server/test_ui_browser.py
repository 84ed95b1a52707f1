"""The local page in a real browser: Chromium from the OS packages (/usr/bin/chromium) driven by Playwright's Python
API against a real `chronomem ui` process on a seeded store. A person's path through it: log in with the one-time
link, see the projects, search, see the superseded value below the current one on its timeline, slide `as of` back
and see the old value, forget the current one and see it leave recall but stay in history; and a page on another
origin cannot change anything. Screenshots go to CHRONOMEM_SCREENSHOTS when set
(`CHRONOMEM_SCREENSHOTS=eval/results/ui` refreshes the README's), else to the test's temporary directory.

Skips, saying why, when Playwright or Chromium is missing (.ci/run installs both where it can)."""

from __future__ import annotations

import http.server
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from _server_helpers import free_port, full_env, stop

pytestmark = pytest.mark.slow

CHROMIUM = os.environ.get("CHRONOMEM_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
PROJECT = "shop"
#: Bound on any wait for the page (a hang fails the test instead of reaching pytest-timeout).
WAIT_MS = 60_000

try:
    from playwright.sync_api import Page, expect, sync_playwright
except ImportError:  # pragma: no cover - depends on the environment
    sync_playwright = None  # type: ignore[assignment]


def _requirements() -> str | None:
    if sync_playwright is None:
        return "playwright is not installed (pip install -e '.[test]')"
    if not Path(CHROMIUM).is_file():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium, or set CHRONOMEM_CHROMIUM)"
    return None


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> dict[str, Any]:
    """A store holding the test command's change (pytest → nox -s tests) and one more fact, written through the tools."""
    reason = _requirements()
    if reason:
        pytest.skip(reason)
    from chronomem import tools
    from chronomem.config import Settings
    from chronomem.service import MemoryService

    from tests.conftest import model_dir

    store = tmp_path_factory.mktemp("ui-browser") / "store"
    svc = MemoryService(Settings(store_path=store, model_path=model_dir(), project=PROJECT), embedder=embedder)
    old = tools.remember(svc, "We run the tests with pytest", valid_from="2024-01-10",
                         facts=[{"subject": PROJECT, "predicate": "test_command", "object": "pytest"}])
    new = tools.remember(svc, "Tests now run with nox -s tests", valid_from="2024-03-01", tags=["client:alice"],
                         facts=[{"subject": PROJECT, "predicate": "test_command", "object": "nox -s tests"}])
    host = tools.remember(svc, "The staging host is staging.shop.internal", valid_from="2024-02-01",
                          facts=[{"subject": PROJECT, "predicate": "staging_host", "object": "staging.shop.internal"}])
    branch = tools.remember(svc, "The default branch is main", valid_from="2024-01-20",
                            facts=[{"subject": PROJECT, "predicate": "default_branch", "object": "main"}])
    return {"store": store, "svc": svc, "old": old.facts[0].id, "new": new.facts[0].id, "host": host.facts[0].id,
            "branch": branch.facts[0].id}


@contextmanager
def running_ui(store: Path, project: str, logs: Path) -> Iterator[dict[str, Any]]:
    """`chronomem ui --no-browser` on `store`; its base URL and the one-time link it printed (test_ui_page.py too)."""
    port = free_port()
    log_path = logs / "ui.log"
    args = [sys.executable, "-m", "chronomem", "ui", "--store", str(store), "--project", project,
            "--port", str(port), "--no-browser"]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(args, env=full_env(), cwd=logs, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        link = None
        deadline = time.monotonic() + 120
        while link is None:
            assert proc.poll() is None, log_path.read_text()
            found = re.search(r"(http://127\.0\.0\.1:\d+/login\?code=\S+)", log_path.read_text())
            if found:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    link = found.group(1)
                except OSError:
                    pass
            assert time.monotonic() < deadline, "chronomem ui did not start:\n" + log_path.read_text()
            time.sleep(0.1)
        yield {"base": f"http://127.0.0.1:{port}", "link": link, "log": log_path}
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def server(seeded: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """`chronomem ui --no-browser` on the seeded store; its base URL and the one-time link it printed."""
    with running_ui(seeded["store"], PROJECT, tmp_path_factory.mktemp("ui-log")) as running:
        yield running


@pytest.fixture(scope="module")
def browser_page(server: dict[str, Any]) -> Iterator[Page]:
    """One Chromium page, logged in through the one-time link."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1280, "height": 860})
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        expect.set_options(timeout=WAIT_MS)
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(server["link"])
        assert page.url == server["base"] + "/", page.url  # the code left the address bar
        yield page
        assert not errors, errors
        context.close()
        browser.close()


def search(page: Page, query: str) -> list[dict[str, str]]:
    """Type a query, press Search, wait for this answer; the results as (id, kind, text)."""
    page.fill("#q", query)
    with page.expect_response(lambda r: "/api/search" in r.url):
        page.click("#search-form button")
    expect(page.locator("#status")).to_have_text("")
    return page.eval_on_selector_all(
        "#results .result",
        "items => items.map(li => ({id: li.dataset.id, kind: li.dataset.kind, text: li.querySelector('.text').textContent}))",
    )


def bars(page: Page, panel: str) -> list[dict[str, str]]:
    page.wait_for_selector(f"{panel} svg rect.bar")
    return page.eval_on_selector_all(
        f"{panel} svg rect.bar", "rs => rs.map(r => ({id: r.dataset.id, value: r.dataset.value, status: r.dataset.status}))"
    )


def test_a_person_finds_understands_and_corrects_a_stale_fact(
    browser_page: Page, seeded: dict[str, Any], server: dict[str, Any], shots: Path
) -> None:
    page = browser_page
    # Projects: counts for the seeded project
    with page.expect_response(lambda r: "/api/projects" in r.url):
        page.click("#tabs button[data-tab=projects]")
    row = page.locator(f"#project-table tr[data-project={PROJECT}]")
    cells = row.locator("td").all_inner_texts()
    assert cells[:4] == [PROJECT, "6", "3", "1"], cells  # 3 live notes + 3 facts; pytest superseded
    page.screenshot(path=str(shots / "projects.png"))
    row.click()

    # Search now: the current value first; the superseded one below it, on the fact's timeline
    found = search(page, "how do we run the tests")
    assert found[0]["id"] == seeded["new"] and "nox -s tests" in found[0]["text"]
    assert seeded["old"] not in {r["id"] for r in found}  # recall, as the agent gets it: only what holds now
    first = page.locator(f"#results .result[data-id='{seeded['new']}']")
    expect(first).to_contain_text("by alice")  # the team client that wrote it (its `client:` tag)
    drawn = bars(page, "#search-timeline")
    assert [(b["value"], b["status"]) for b in drawn] == [("pytest", "ended"), ("nox -s tests", "current")]
    assert "replaced by “nox -s tests”" in page.inner_text("#search-timeline")
    page.click("#search-timeline rect.bar[data-value='pytest']")  # click through to the verbatim note
    assert page.inner_text("#note-text") == "We run the tests with pytest"
    page.screenshot(path=str(shots / "search-timeline.png"))
    page.click("#note-close")

    # Slide as_of back to the start of the project's memory: the old value answers
    page.focus("#asof")
    with page.expect_response(lambda r: "/api/search" in r.url and "at=" in r.url):
        page.keyboard.press("Home")
    expect(page.locator("#results .result .text").first).to_contain_text("pytest")
    assert page.input_value("#asof") == "0"
    assert page.inner_text("#asof-label").startswith("2024-01-10")
    then = search(page, "how do we run the tests")[0]
    assert then["kind"] == "fact" and then["text"].endswith(": pytest")  # the row now carrying pytest's closed interval
    expect(page.locator("#search-timeline svg line.asof")).to_have_count(1)  # the moment marked on the timeline
    expect(page.locator("#search-message")).to_contain_text("as of 2024-01-10")
    page.screenshot(path=str(shots / "as-of-slider.png"))
    page.click("#asof-now")
    expect(page.locator("#results .result").first).to_have_attribute("data-id", seeded["new"])

    # Forget the current value from its result: it leaves recall and stays in history
    page.click(f"#results .result[data-id='{seeded['new']}'] button.forget")
    assert page.input_value("#forget-id") == seeded["new"]
    page.fill("#forget-reason", "we went back to plain pytest")
    with page.expect_response(lambda r: "/api/forget" in r.url) as answer:
        page.click("#forget-form button")
    assert answer.value.status == 200
    expect(page.locator("#correct-message")).to_contain_text("no longer valid")
    page.screenshot(path=str(shots / "correct.png"))
    page.click("#tabs button[data-tab=search]")
    after = search(page, "how do we run the tests")
    assert seeded["new"] not in {r["id"] for r in after}
    page.click("#tabs button[data-tab=timeline]")
    page.fill("#tl-q", seeded["old"])
    page.click("#timeline-form button")
    expect(page.locator("#timeline-view rect.bar")).to_have_count(2)
    drawn = bars(page, "#timeline-view")
    assert [(b["value"], b["status"]) for b in drawn] == [("pytest", "ended"), ("nox -s tests", "ended")]
    assert "we went back to plain pytest" in page.inner_text("#timeline-view")

    # "This replaces that" from a search result: the new value supersedes, the old one stays on the timeline
    page.click("#tabs button[data-tab=search]")
    branch = search(page, "what is the default branch")
    assert branch[0]["id"] == seeded["branch"]
    page.click(f"#results .result[data-id='{seeded['branch']}'] button.replace")
    page.fill("#replace-value", "trunk")
    with page.expect_response(lambda r: "/api/replace" in r.url) as answer:
        page.click("#replace-form button")
    assert answer.value.status == 200
    expect(page.locator("#correct-message")).to_contain_text("is now 'trunk'")
    page.click("#tabs button[data-tab=search]")
    assert search(page, "what is the default branch")[0]["text"].endswith(": trunk")
    drawn = bars(page, "#search-timeline")
    assert [(b["value"], b["status"]) for b in drawn] == [("main", "ended"), ("trunk", "current")]

    # The brief, as an agent gets it, with its token count
    page.click("#tabs button[data-tab=brief]")
    expect(page.locator("#brief-text")).to_contain_text("Project memory")
    assert re.match(r"\d+ tokens", page.inner_text("#brief-tokens"))
    assert "staging.shop.internal" in page.inner_text("#brief-text")


def test_a_page_on_another_origin_cannot_change_anything(browser_page: Page, seeded: dict[str, Any], server: dict[str, Any]) -> None:
    """A page the person opens while logged in, served from another origin (a real HTTP server on 127.0.0.2, another
    loopback address, so the browser sends the request), tries to forget a memory. The server refuses it for its Origin
    (403) and the memory stays live."""
    target = f"{server['base']}/api/forget"
    body = '{"id": "%s", "reason": "gotcha"}' % seeded["host"]
    html = f"""<!doctype html><script>
      fetch("{target}", {{method: "POST", mode: "no-cors", credentials: "include",
             headers: {{"Content-Type": "text/plain"}}, body: '{body}'}}).catch(() => {{}});
    </script>""".encode()

    class Evil(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(html)))
            self.end_headers()
            self.wfile.write(html)

        def log_message(self, *args: Any) -> None:
            pass

    try:
        evil_server = http.server.HTTPServer(("127.0.0.2", 0), Evil)
    except OSError as exc:  # pragma: no cover - a system without the 127/8 loopback range
        pytest.skip(f"cannot bind 127.0.0.2 for the foreign page: {exc}")
    threading.Thread(target=evil_server.serve_forever, daemon=True).start()
    evil = browser_page.context.new_page()
    try:
        with evil.expect_response(lambda r: r.url == target) as refused:
            evil.goto(f"http://127.0.0.2:{evil_server.server_port}/")
        assert refused.value.status == 403
        assert refused.value.request.all_headers().get("origin") == f"http://127.0.0.2:{evil_server.server_port}"
    finally:
        evil.close()
        evil_server.shutdown()
        evil_server.server_close()
    from chronomem.tools import recall

    live = recall(seeded["svc"], "what is the staging host", project=PROJECT).results
    assert seeded["host"] in {r.id for r in live}
