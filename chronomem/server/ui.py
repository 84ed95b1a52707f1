"""The local page (`chronomem ui`, `serve --transport http --ui`): its routes and the JSON API its script calls.

Registered as custom routes of the same `MCPServer`, so one Starlette app (the streamable-HTTP
transport's) serves `/mcp` and the page; `uiauth.UiGate` in front of it does the Host/Origin
checks, the login and CSRF. No front-end build: `webui/` holds plain HTML, CSS and a script,
shipped as package data.

Every answer comes from the tools layer, as the agent gets it:

- `GET /api/projects` — tools/overview.py (counts per project).
- `GET /api/search` — `recall` (now) or `as_of` (`at`: the page's time slider), the same ranking
  and abstention; with `paths`, `recall(paths=…)`, and for a past moment the results whose paths
  match. Each result gains its `anchors` (file → blob id) for the provenance line. A person
  browsing is not the agent using a memory: these hits do not reinforce salience.
- `GET /api/recent` — tools/browse.py: the project's memories valid at `at` (default now), newest first, a
  page at a time (`offset`, `limit`): what the page opens on.
- `GET /api/moments` — tools/browse.py: the times the project's memories began or ended, the stops
  of the `as of` slider.
- `GET /api/timeline` — tools/timeline.py (a slot's bars).
- `GET /api/brief` — tools/brief.py, the text the `chronomem://brief` resource gives, with its tokens.
- `GET /api/memory` — one memory as stored (the verbatim note behind a bar).
- `POST /api/forget`, `POST /api/replace` — `forget` and tools/correct.py's "this replaces that":
  nothing is deleted. A correction made here says who made it, as a team server's client does
  (server/team.py): the person running the page (`page_person`, the OS account) is recorded in the
  `client:<name>` tag of what it writes and `(by <name>)` at the end of a forget's reason.

Every memory the page lists carries tools/browse.py's marks: the id it was first stored under (the
one `recall`'s `supersedes` and the timeline name), and for one whose validity ended how it ended
(replaced by which memory, or forgotten with its reason) — what a result seen `as of` shows.
- `GET /api/export` — one project's rows as `chronomem export` writes them (JSON lines).

Tool errors are one-line JSON `{"error": …}` with 400 (bad input) or 404 (no such memory).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from html import escape
from importlib import resources
from typing import Any

import anyio

from chronomem.errors import ChronomemError, NotFound
from chronomem.service import MemoryService

log = logging.getLogger(__name__)

#: The files of the page (package data under chronomem/server/webui/) and their media types.
STATIC = {"app.js": "text/javascript; charset=utf-8", "style.css": "text/css; charset=utf-8"}
#: Headers on every page response: scripts and styles only from this server, never framed, no referrer.
PAGE_HEADERS = {
    "content-security-policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
#: Most results a page search asks for (recall's own bound is 100).
MAX_RESULTS = 50


def _asset(name: str) -> str:
    return resources.files("chronomem.server").joinpath("webui", name).read_text(encoding="utf-8")


def page_person() -> str:
    """Who corrects memories on the page: the account running it (the page has one login, its token's)."""
    import getpass

    try:
        name = getpass.getuser().strip()
    except (OSError, KeyError, ImportError):  # no login name (a container without a passwd entry)
        name = ""
    return "".join(c for c in name if c.isprintable())[:64] or "page"


def register_ui(server: Any, svc: MemoryService, person: str | None = None) -> None:
    """Add the page's routes to `server` (an `MCPServer`); its streamable-HTTP app then serves them.
    `person`: the name corrections made on the page are recorded under (default `page_person()`)."""
    who = person or page_person()
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, Response

    limiter = anyio.CapacityLimiter(2)

    def route(path: str, methods: list[str] = ["GET"]) -> Callable[[Any], Any]:  # noqa: B006 - read only
        return server.custom_route(path, methods=methods, include_in_schema=False)

    async def answer(work: Callable[[], Any]) -> Response:
        """Run a tool call on a worker thread; its result as JSON, a ChronomemError as one line."""
        try:
            result = await anyio.to_thread.run_sync(work, limiter=limiter)
        except NotFound as exc:
            return JSONResponse({"error": str(exc)}, status_code=404, headers=PAGE_HEADERS)
        except ChronomemError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400, headers=PAGE_HEADERS)
        except Exception as exc:  # the page gets one line; the log has the rest
            known = svc.explain_failure(exc)
            if known is not None:
                return JSONResponse({"error": str(known)}, status_code=500, headers=PAGE_HEADERS)
            log.exception("page request failed")
            return JSONResponse({"error": f"internal error ({type(exc).__name__}); the server log has details"}, status_code=500, headers=PAGE_HEADERS)
        if isinstance(result, Response):
            return result
        body = result.model_dump(mode="json") if hasattr(result, "model_dump") else result
        return JSONResponse(body, headers=PAGE_HEADERS)

    @route("/")
    async def index(request: Request) -> Response:
        csrf = request.scope.get("chronomem.csrf", "")
        html = _asset("index.html").replace("{{csrf}}", csrf).replace("{{person}}", escape(who))
        return HTMLResponse(html, headers=PAGE_HEADERS)

    @route("/static/{name}")
    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return JSONResponse({"error": "no such file"}, status_code=404)
        return Response(_asset(name), media_type=STATIC[name], headers=PAGE_HEADERS)

    @route("/api/projects")
    async def projects(request: Request) -> Response:
        from chronomem.tools.overview import projects_overview

        return await answer(partial(projects_overview, svc))

    @route("/api/search")
    async def search(request: Request) -> Response:
        q = request.query_params
        return await answer(partial(_search, svc, dict(q), q.getlist("path")))

    @route("/api/recent")
    async def recent(request: Request) -> Response:
        from chronomem.tools.browse import PAGE, recent as listed

        q = request.query_params
        return await answer(
            partial(listed, svc, q.get("project") or None, at=q.get("at") or None, offset=q.get("offset") or 0,
                    limit=q.get("limit") or PAGE)
        )

    @route("/api/moments")
    async def moments(request: Request) -> Response:
        from chronomem.tools.browse import moments as stops

        project = request.query_params.get("project") or None
        return await answer(lambda: {"project": svc.project(project), "now": _now(svc), "moments": stops(svc, project)})

    @route("/api/timeline")
    async def timeline(request: Request) -> Response:
        from chronomem.tools.timeline import timeline as draw

        q = request.query_params
        return await answer(
            partial(draw, svc, q.get("id") or None, subject=q.get("subject") or None,
                    predicate=q.get("predicate") or None, query=q.get("q") or None, project=q.get("project") or None)
        )

    @route("/api/brief")
    async def brief(request: Request) -> Response:
        from chronomem.tools.brief import brief as make

        q = request.query_params

        def work() -> dict[str, Any]:
            result = make(svc, project=q.get("project") or None, budget_tokens=q.get("budget") or None)
            return {"project": result.project, "text": result.text(), "tokens": result.tokens,
                    "budget_tokens": result.budget_tokens, "omitted": result.omitted}

        return await answer(work)

    @route("/api/memory")
    async def memory(request: Request) -> Response:
        return await answer(partial(_memory, svc, request.query_params.get("id")))

    @route("/api/forget", ["POST"])
    async def forget(request: Request) -> Response:
        from chronomem.tools import forget as run

        body = await _json(request)
        reason = body.get("reason")
        said = f"{reason.strip()} (by {who})" if isinstance(reason, str) and reason.strip() else f"by {who}"
        return await answer(partial(run, svc, body.get("id"), said, retract=bool(body.get("retract"))))

    @route("/api/replace", ["POST"])
    async def replace(request: Request) -> Response:
        from chronomem.tools.correct import replace as run

        body = await _json(request)
        return await answer(
            partial(run, svc, body.get("id"), body.get("text") or None, who=who, value=body.get("value"),
                    reason=body.get("reason"))
        )

    @route("/api/export")
    async def export(request: Request) -> Response:
        project = request.query_params.get("project") or ""

        def work() -> Response:
            from chronomem.tools.export import export_project

            text = export_project(svc, project)
            name = "".join(c if c.isalnum() or c in "-_." else "_" for c in project) or "memories"
            return Response(
                text, media_type="application/x-ndjson",
                headers={**PAGE_HEADERS, "content-disposition": f'attachment; filename="{name}.jsonl"'},
            )

        return await answer(work)


async def _json(request: Any) -> dict[str, Any]:
    """The request's JSON object; anything else reads as {} (the tool then names what is missing)."""
    try:
        body = await request.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _now(svc: MemoryService) -> str:
    from chronomem.timeparse import iso

    return iso(svc.now()) or ""


def _search(svc: MemoryService, q: dict[str, str], paths: list[str]) -> Any:
    """`recall` now, or `as_of` at `q["at"]`; the page's filters passed as the agent would pass them."""
    from chronomem.codebase import path_matches
    from chronomem.tools import as_of, recall
    from chronomem.tools.browse import with_marks
    from chronomem.tools.lookup import anchors_of

    options: dict[str, Any] = {
        "project": q.get("project") or None,
        "scope": q.get("scope") or "project",
        "limit": min(int(q["limit"]), MAX_RESULTS) if (q.get("limit") or "").isdigit() else 10,
        "kinds": [k for k in (q.get("kinds") or "").split(",") if k] or None,
    }
    query = q.get("q") or None
    paths = [p for p in paths if p.strip()]
    if q.get("at"):
        result = as_of(svc, query, q["at"], **options)
        if paths:  # as_of takes no paths: keep the results about them
            result.results = [r for r in result.results if any(path_matches(p, given) for p in r.paths for given in paths)]
    else:
        result = recall(svc, query, paths=paths or None, **options)
    out = result.model_dump(mode="json")
    anchors = anchors_of(svc.store, [r.id for r in result.results])
    for item in out["results"]:
        item["anchors"] = anchors.get(item["id"], {})
    out["results"] = with_marks(svc, out["results"])  # first ids; how a memory seen as of then ended
    return out


def _memory(svc: MemoryService, memory_id: Any) -> dict[str, Any]:
    from chronomem.tools.lookup import get_or_fail
    from chronomem.tools.results import MemoryItem
    from chronomem.tools.validate import memory_id as valid

    record = get_or_fail(svc.store, valid(memory_id))
    return {**MemoryItem.of(record).model_dump(mode="json"), "anchors": dict(record.anchors)}


