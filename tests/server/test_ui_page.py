"""The page's browsing in a real browser: Chromium from the OS (/usr/bin/chromium) driven by Playwright's Python API
against a real `chronomem ui` process on a store written through the tools (real LanceDB, the shipped model).

What a person meets: the page opens on the project's recent memories, a page at a time; the `as of` slider stops at
the moments the store changed and a date box beside it takes any day; a memory forgotten later, seen as of an
earlier day, says so and why; the timeline follows the result the person chose; a correction made on the page says
who made it; and from 360 px wide nothing is cut off. Screenshots (landing list, date box; desktop and 360 px) go to
CHRONOMEM_SCREENSHOTS when set (`CHRONOMEM_SCREENSHOTS=eval/results/ui` refreshes eval/results/ui/), else to the
test's temporary directory. Skips, saying why, when Playwright or Chromium is missing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_ui_api import FILLER  # twenty notes on unrelated things: more than a page of the landing list
from test_ui_browser import CHROMIUM, WAIT_MS, _requirements, running_ui, search

pytestmark = pytest.mark.slow

try:
    from playwright.sync_api import BrowserContext, Page, expect, sync_playwright
except ImportError:  # pragma: no cover - depends on the environment
    sync_playwright = None  # type: ignore[assignment]

PROJECT = "shop"
DESKTOP = {"width": 1280, "height": 860}
PHONE = {"width": 360, "height": 740}


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory, embedder: Any) -> dict[str, Any]:
    """A shop whose memories span 2020-2024 (few moments, years apart), more than a page of them, a changed fact, a
    fact forgotten on 2024-04-01 with a reason, a note about flaky tests (no fact); two more projects (the test that
    corrects a memory does it in `web`, so the others do not depend on running before or after it)."""
    reason = _requirements()
    if reason:
        pytest.skip(reason)
    from chronomem import tools
    from chronomem.config import Settings
    from chronomem.service import MemoryService

    from tests.conftest import model_dir

    store = tmp_path_factory.mktemp("ui-page") / "store"
    svc = MemoryService(Settings(store_path=store, model_path=model_dir(), project=PROJECT), embedder=embedder)

    def fact(text: str, since: str, predicate: str, value: str, project: str = PROJECT) -> str:
        made = tools.remember(svc, text, valid_from=since, project=project,
                              facts=[{"subject": project, "predicate": predicate, "object": value}])
        return made.facts[0].id

    ids = {"founded": tools.remember(svc, "The shop repository was created by the platform team", valid_from="2020-05-01").id}
    ids["pytest"] = fact("We run the tests with pytest", "2024-01-10", "test_command", "pytest")
    ids["ci"] = fact("The CI runs on GitHub Actions", "2024-01-15", "ci_provider", "GitHub Actions")
    ids["host"] = fact("The staging host is staging.shop.internal", "2024-02-01", "staging_host", "staging.shop.internal")
    ids["flaky"] = tools.remember(svc, "Flaky tests are quarantined under tests/flaky and retried twice", valid_from="2024-02-05").id
    ids["nox"] = fact("Tests now run with nox -s tests", "2024-03-01", "test_command", "nox -s tests")
    for n, text in enumerate(FILLER):
        ids[f"filler{n}"] = tools.remember(svc, text, valid_from=f"2024-03-{n + 2:02d}").id
    tools.forget(svc, ids["host"], "staging was shut down", at="2024-04-01")
    ids["ops"] = tools.remember(svc, "The ops runbook lives in the wiki", valid_from="2024-02-01", project="ops").id
    ids["branch"] = fact("The default branch is main", "2024-01-20", "default_branch", "main", project="web")
    return {"store": store, "svc": svc, "ids": ids}


@pytest.fixture(scope="module")
def server(seeded: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with running_ui(seeded["store"], PROJECT, tmp_path_factory.mktemp("ui-page-log")) as running:
        yield running


@pytest.fixture(scope="module")
def context(server: dict[str, Any]) -> Iterator[BrowserContext]:
    """One Chromium profile, logged in once through the one-time link (each test opens its own tab in it)."""
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        ctx = browser.new_context(viewport=DESKTOP)
        ctx.set_default_timeout(WAIT_MS)
        expect.set_options(timeout=WAIT_MS)
        first = ctx.new_page()
        first.goto(server["link"])
        assert first.url == server["base"] + "/", first.url
        first.close()
        yield ctx
        ctx.close()
        browser.close()


@pytest.fixture
def page(context: BrowserContext, server: dict[str, Any]) -> Iterator[Page]:
    """A fresh tab on the page, its landing list loaded; no script error may happen in it."""
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    with tab.expect_response(lambda r: "/api/recent" in r.url):
        tab.goto(server["base"] + "/")
    expect(tab.locator("#recent .result").first).to_be_visible()
    yield tab
    tab.close()
    assert not errors, errors


def items(page: Page, where: str) -> list[dict[str, str]]:
    return page.eval_on_selector_all(
        f"{where} .result",
        "els => els.map(li => ({id: li.dataset.id, kind: li.dataset.kind, text: li.querySelector('.text').textContent,"
        " meta: li.innerText}))",
    )


def live_count(svc: Any, project: str) -> int:
    from chronomem.storage import Filter

    now = svc.now()
    return svc.store.count(Filter().live(now, now).projects([project]))


def test_the_page_opens_on_the_projects_recent_memories_a_page_at_a_time(page: Page, seeded: dict[str, Any], shots: Path) -> None:
    ids, total = seeded["ids"], live_count(seeded["svc"], PROJECT)
    assert total > 20  # more than one page
    expect(page.locator("#landing")).to_be_visible()
    expect(page.locator("#recent-title")).to_have_text(f"Recent memories in {PROJECT}")
    expect(page.locator("#recent-count")).to_contain_text(f"1–20 of {total}")
    first = items(page, "#recent")
    assert len(first) == 20
    assert first[0]["id"] == ids["filler19"] and first[1]["id"] == ids["filler18"]  # the last written first
    assert page.is_disabled("#recent-newer") and not page.is_disabled("#recent-older")
    page.screenshot(path=str(shots / "landing.png"))
    with page.expect_response(lambda r: "/api/recent" in r.url and "offset=20" in r.url):
        page.click("#recent-older")
    expect(page.locator("#recent-count")).to_contain_text(f"21–{total} of {total}")
    second = items(page, "#recent")
    assert len(second) == total - 20 and not {i["id"] for i in first} & {i["id"] for i in second}
    assert second[-1]["id"] == ids["founded"]  # the oldest last
    assert ids["nox"] in {i["id"] for i in first + second} and ids["pytest"] not in {i["id"] for i in first + second}
    assert page.is_disabled("#recent-older")
    # another project: its own memories
    with page.expect_response(lambda r: "/api/recent" in r.url and "project=ops" in r.url):
        page.select_option("#project", "ops")
    expect(page.locator("#recent-title")).to_have_text("Recent memories in ops")
    assert [i["id"] for i in items(page, "#recent")] == [ids["ops"]]


def test_the_date_box_and_the_slider_stop_at_the_stores_moments(page: Page, seeded: dict[str, Any], shots: Path) -> None:
    from chronomem.tools.browse import moments

    stops = moments(seeded["svc"], PROJECT)
    assert page.get_attribute("#asof", "max") == str(len(stops)) and page.input_value("#asof") == str(len(stops))
    expect(page.locator("#asof-label")).to_have_text("now")
    page.focus("#asof")
    with page.expect_response(lambda r: "/api/recent" in r.url and "at=" in r.url):
        page.keyboard.press("Home")
    expect(page.locator("#asof-label")).to_have_text("2020-05-01 00:00:00")
    assert page.input_value("#asof-date") == "2020-05-01"
    with page.expect_response(lambda r: "/api/recent" in r.url and "at=2024-01-10" in r.url):
        page.keyboard.press("ArrowRight")  # one step: from 2020 to the next moment anything changed, not a year on
    expect(page.locator("#asof-label")).to_have_text("2024-01-10 00:00:00")
    expect(page.locator("#recent-title")).to_have_text(f"Valid as of 2024-01-10 00:00:00 in {PROJECT}")
    held = {i["id"] for i in items(page, "#recent")}
    assert {seeded["ids"]["pytest"], seeded["ids"]["founded"]} <= held and seeded["ids"]["ci"] not in held

    # a typed date: what held at the end of that day; the slider rests on the last moment at or before it
    with page.expect_response(lambda r: "/api/recent" in r.url and "at=2024-02-15T23%3A59%3A59Z" in r.url):
        page.fill("#asof-date", "2024-02-15")
    expect(page.locator("#asof-label")).to_have_text("2024-02-15 (end of day)")
    before = [m for m in stops if m <= "2024-02-15T23:59:59Z"]
    assert page.input_value("#asof") == str(len(before) - 1) and stops[len(before) - 1].startswith("2024-02-05")
    held = {i["id"] for i in items(page, "#recent")}
    assert {seeded["ids"]["pytest"], seeded["ids"]["host"], seeded["ids"]["ci"]} <= held and seeded["ids"]["nox"] not in held
    found = search(page, "how do we run the tests")
    assert found[0]["id"] == seeded["ids"]["pytest"] and found[0]["text"].endswith(": pytest")
    expect(page.locator("#search-message")).to_contain_text("as of 2024-02-15 (end of day)")
    expect(page.locator("#search-timeline rect.bar")).to_have_count(2)
    page.screenshot(path=str(shots / "date-box.png"))
    with page.expect_response(lambda r: "/api/search" in r.url and "at=" not in r.url):
        page.click("#asof-now")
    assert page.input_value("#asof-date") == "" and search(page, "how do we run the tests")[0]["id"] == seeded["ids"]["nox"]


def test_a_memory_forgotten_later_seen_as_of_says_so_and_why(page: Page, seeded: dict[str, Any]) -> None:
    with page.expect_response(lambda r: "/api/recent" in r.url and "at=" in r.url):
        page.fill("#asof-date", "2024-02-15")
    host = page.locator(f"#recent .result[data-id='{seeded['ids']['host']}']")
    expect(host.locator(".badge.ended")).to_have_text("forgotten")
    expect(host.locator(".ended-line")).to_have_text("forgotten on 2024-04-01: staging was shut down")
    search(page, "what is the staging host")
    result = page.locator(f"#results .result[data-id='{seeded['ids']['host']}']")
    expect(result.locator(".ended-line")).to_have_text("forgotten on 2024-04-01: staging was shut down")
    pytest_then = search(page, "how do we run the tests")[0]
    line = page.locator(f"#results .result[data-id='{pytest_then['id']}'] .ended-line")
    expect(line).to_have_text(f"replaced on 2024-03-01 by {seeded['ids']['nox']}")
    page.click("#asof-now")
    expect(page.locator("#results .result .ended-line")).to_have_count(0)  # now: nothing shown has ended


def test_the_timeline_follows_the_chosen_result(page: Page, seeded: dict[str, Any]) -> None:
    panel = page.locator("#search-timeline")
    found = search(page, "which flaky tests are quarantined")
    assert found[0]["id"] == seeded["ids"]["flaky"] and found[0]["kind"] == "chunk"
    facts = [r for r in found if r["kind"] == "fact"]
    assert facts, found  # a fact further down: the old page drew its timeline for a note's question
    expect(page.locator("#results .result").first).to_have_class("result chosen")
    expect(panel).to_be_hidden()  # the chosen result is a note: no fact's timeline
    fact = page.locator(f"#results .result[data-id='{facts[0]['id']}']")
    fact.locator(".text").click()
    expect(fact).to_have_class("result chosen")
    expect(panel.locator("h3")).to_have_attribute("data-predicate", "test_command")
    assert facts[0]["id"] in {b["id"] for b in page.eval_on_selector_all("#search-timeline rect.bar", "rs => rs.map(r => ({id: r.dataset.id}))")}
    page.locator("#results .result").first.click()
    expect(panel).to_be_hidden()
    # another search's chosen fact moves the panel to its slot
    search(page, "which CI do we use")
    expect(panel.locator("h3")).to_have_attribute("data-predicate", "ci_provider")
    search(page, "how do we run the tests")
    expect(panel.locator("h3")).to_have_attribute("data-predicate", "test_command")
    # one id scheme: the ended value's bar carries the id the current result says it replaces
    replaced = page.locator(f"#results .result[data-id='{seeded['ids']['nox']}'] code.supersedes").inner_text()
    expect(panel.locator("rect.bar[data-value='pytest']")).to_have_attribute("data-id", replaced)
    assert replaced == seeded["ids"]["pytest"]


def test_a_correction_on_the_page_says_who_made_it(page: Page, seeded: dict[str, Any]) -> None:
    from chronomem.server.ui import page_person

    person = page_person()
    expect(page.locator("#person")).to_have_text(person)
    with page.expect_response(lambda r: "/api/recent" in r.url and "project=web" in r.url):
        page.select_option("#project", "web")
    search(page, "what is the default branch")
    page.click(f"#results .result[data-id='{seeded['ids']['branch']}'] button.replace")
    page.fill("#replace-value", "trunk")
    with page.expect_response(lambda r: "/api/replace" in r.url) as answer:
        page.click("#replace-form button")
    assert answer.value.status == 200
    expect(page.locator("#correct-message")).to_contain_text(f"is now 'trunk' (superseded, by {person})")
    page.click("#tabs button[data-tab=search]")
    found = search(page, "what is the default branch")
    assert found[0]["text"].endswith(": trunk")
    prov = page.locator(f"#results .result[data-id='{found[0]['id']}'] .prov")
    expect(prov).to_contain_text(f"by {person} on the page")
    assert not prov.inner_text().startswith("agent")
    panel = page.locator("#search-timeline")
    expect(panel.locator("rect.bar[data-value='trunk']")).to_have_attribute("data-by", person)
    expect(panel.locator("rect.bar[data-value='main']")).to_have_attribute("data-by", "agent")
    expect(panel).to_contain_text(f"replaced by “trunk” ({person})")


def test_from_360_px_wide_nothing_is_cut_off(page: Page, seeded: dict[str, Any], shots: Path) -> None:
    page.set_viewport_size(PHONE)
    page.reload()
    expect(page.locator("#recent .result").first).to_be_visible()

    def cut_off(view: str) -> None:
        outside = page.evaluate(
            """() => {
              const W = document.documentElement.clientWidth, bad = [];
              for (const e of document.querySelectorAll('body *')) {
                if (e.closest('[hidden]') || !e.getClientRects().length || e.tagName === 'OPTION') continue;
                const r = e.getBoundingClientRect();
                if (r.width && (r.left < -0.5 || r.right > W + 0.5)) bad.push(`${e.tagName}#${e.id}.${e.className.baseVal ?? e.className} ${Math.round(r.left)}..${Math.round(r.right)}`);
              }
              return {W, scroll: document.documentElement.scrollWidth, bad: bad.slice(0, 10)};
            }"""
        )
        assert outside["W"] <= PHONE["width"] and outside["scroll"] <= outside["W"] and not outside["bad"], (view, outside)

    cut_off("landing")
    page.screenshot(path=str(shots / "landing-360.png"))
    search(page, "how do we run the tests")
    expect(page.locator("#search-timeline rect.bar")).to_have_count(2)
    cut_off("search and timeline")
    page.screenshot(path=str(shots / "search-timeline-360.png"), full_page=True)
    with page.expect_response(lambda r: "/api/search" in r.url and "at=" in r.url):
        page.fill("#asof-date", "2024-02-15")
    expect(page.locator("#asof-date")).to_be_in_viewport()
    expect(page.locator("#asof")).to_be_in_viewport()
    expect(page.locator("#search-timeline rect.bar")).to_have_count(2)
    cut_off("date box")
    page.screenshot(path=str(shots / "date-box-360.png"))
    page.click("#search-timeline rect.bar[data-value='pytest']")
    expect(page.locator("#note")).to_be_visible()
    cut_off("a bar's note")
    page.click("#note-close")
    for tab in ("projects", "timeline", "brief", "correct"):
        page.click(f"#tabs button[data-tab={tab}]")
        if tab == "projects":
            expect(page.locator("#project-table tr[data-project=shop]")).to_be_visible()
        if tab == "timeline":
            page.fill("#tl-q", seeded["ids"]["nox"])
            page.click("#timeline-form button")
            expect(page.locator("#timeline-view rect.bar")).to_have_count(2)
        if tab == "brief":
            expect(page.locator("#brief-text")).to_contain_text("Project memory")
        cut_off(tab)
