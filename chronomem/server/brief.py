"""The session brief over MCP: the `chronomem://brief` resource, its per-project template, and the `brief` prompt.

A client reads the resource (Claude Code: `@chronomem:chronomem://brief`) or runs the prompt
(`/mcp__chronomem__brief`) at the start of a session to get the project's current facts and
recent changes in at most `budget_tokens` (tools/brief.py). Without a project the brief is of
the session's workspace (the client's first root, as for tool calls; server/roots.py) or else
the server's default project.

Static resources get no request `Context` from `MCPServer`, so `ChronomemServer.read_resource`
puts it in `REQUEST_CONTEXT` for the resource handler here. Every failure is one line: a bad
argument is an invalid-params error, anything else an internal error naming its type.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS
from pydantic import Field

from chronomem.errors import ChronomemError, InvalidInput
from chronomem.service import MemoryService

log = logging.getLogger(__name__)

URI = "chronomem://brief"
TEMPLATE = "chronomem://brief/{project}"
SLOTS_URI = "chronomem://slots"
MIME = "text/markdown"

#: The request context of the resource read in progress (set by `ChronomemServer.read_resource`).
REQUEST_CONTEXT: ContextVar[Any] = ContextVar("chronomem_request_context", default=None)

DESCRIPTION = (
    "What a new session should know first: this project's current facts (most important first), "
    "recent changes (what replaced what, and when), the latest notes and global preferences, "
    "within a token budget (CHRONOMEM_BRIEF_TOKENS, default 1500). Each line has the id to pass "
    "to `history`, or ask `recall` for more."
)


def register_brief(server: MCPServer[Any], svc: MemoryService) -> None:
    """Add the brief's resource, resource template and prompt to `server`."""
    from chronomem.tools.brief import brief

    async def workspace(context: Any) -> str | None:
        """The session's workspace directory when the client's roots give one (and no --project is set)."""
        workspaces = getattr(server, "workspaces", None)
        if workspaces is None or not workspaces.enabled or context is None:
            return None
        try:
            return await workspaces.directory(context)
        except Exception:  # roots are a convenience: never fail the brief over them
            log.debug("workspace lookup for the brief failed", exc_info=True)
            return None

    async def render(project: str | None, budget_tokens: Any, context: Any) -> str:
        if project in (None, ""):
            project = await workspace(context)
        team = getattr(server, "team", None)
        if team is not None:  # a team server (server/team.py): the client's project limits hold for briefs too
            from chronomem.server.team import check_brief

            await anyio.to_thread.run_sync(lambda: check_brief(team, context, project, svc.project))
        try:
            result = await anyio.to_thread.run_sync(lambda: brief(svc, project, budget_tokens))
        except ChronomemError:
            raise
        except Exception as exc:
            known = svc.explain_failure(exc)
            if known is not None:  # a damaged store: say so, with the recovery command
                raise known from None
            log.exception("the session brief failed")
            raise ChronomemError(f"internal error ({type(exc).__name__}); the server log has details") from None
        return result.text()

    async def as_resource(project: str | None, context: Any) -> str:
        try:
            return await render(project, None, context)
        except ChronomemError as exc:
            raise ResourceError(str(exc)) from None

    @server.resource(URI, name="brief", title="Session brief", description=DESCRIPTION, mime_type=MIME)
    async def brief_resource() -> str:
        return await as_resource(None, REQUEST_CONTEXT.get())

    @server.resource(
        SLOTS_URI,
        name="slots",
        title="Fact slots in use",
        description="The project's fact slots (subject, predicate) with current values: reuse these names in "
        "`remember`'s facts so a new value replaces the old one instead of opening another slot.",
        mime_type=MIME,
    )
    async def slots_resource() -> str:
        from chronomem.tools.brief import slot_vocabulary

        project = await workspace(REQUEST_CONTEXT.get())
        try:
            return await anyio.to_thread.run_sync(lambda: slot_vocabulary(svc, project))
        except ChronomemError as exc:
            raise ResourceError(str(exc)) from None

    @server.resource(
        TEMPLATE,
        name="brief-of-project",
        title="Session brief of a project",
        description="The session brief of another project, by name (as `project` is passed to the tools).",
        mime_type=MIME,
    )
    async def brief_of_project(project: str, ctx: Context) -> str:
        return await as_resource(project, ctx)

    @server.prompt(
        name="brief",
        title="Session brief",
        description="Start the session with what chronomem remembers about this project: current facts and "
        "recent changes, within a token budget, with ids to expand.",
    )
    async def brief_prompt(
        ctx: Context,
        budget_tokens: Annotated[
            str | None,
            Field(description="Most tokens the brief may take (50-100000; default CHRONOMEM_BRIEF_TOKENS or 1500)."),
        ] = None,
        project: Annotated[str | None, Field(description="Project to brief on; default the current one.")] = None,
    ) -> list[dict[str, Any]]:
        try:
            text = await render(project, budget_tokens, ctx)
        except InvalidInput as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
        except ChronomemError as exc:
            raise MCPError(code=INTERNAL_ERROR, message=str(exc)) from None
        return [{"role": "user", "content": {"type": "text", "text": text}}]
