"""The MCP server: registers the five tools on an `mcp` 2.x `MCPServer`.

Each tool has a title, a description written for the calling model, MCP annotations
and forgiving argument names (`text` for `content`, `k` for `limit`, `memory_id` for
`id`). Results are structured content plus readable text. A `ChronomemError`
becomes a one-line tool error; anything unexpected is logged to stderr and reported
in one line, and the server stays up. Blocking work runs on a worker thread so the
event loop keeps answering; after each call the consolidator gets its turn.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Annotated, Any, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from chronomem import __version__
from chronomem.errors import ChronomemError
from chronomem.records import FactInput
from chronomem.server.brief import REQUEST_CONTEXT, register_brief
from chronomem.server.roots import Workspaces
from chronomem.service import MemoryService
from chronomem.tools.results import ForgetResult, HistoryResult, RecallResult, RememberResult

log = logging.getLogger(__name__)

INSTRUCTIONS = """\
chronomem is this project's long-term memory. Call `recall` before answering questions about
the project's commands, conventions, decisions, ports, owners or past bugs; call `remember`
when you learn something worth keeping (pass structured `facts` when a value can change, so
the old value is invalidated rather than contradicting the new one). `as_of` answers what was
true at an earlier time (a date, or a git tag/commit/branch such as v1.4.0); `history` shows how
a fact changed; `forget` ends a memory that is no longer true, without deleting it. Pass `paths`
to `remember` when a memory is about specific files: `recall` then marks it `stale` once those
files change, and `recall(paths=[...])` returns what is known about files before you edit them."""

R = TypeVar("R", bound=BaseModel)

Project = Annotated[str | None, Field(description="Project scope; default the current project.")]
Limit = Annotated[int | None, Field(description="Most results to return (1-100, default 10).")]
LimitAlias = Annotated[int | None, Field(description="Alias of limit.")]
Budget = Annotated[int | None, Field(description="Cap on the estimated tokens of returned text.")]
Scope = Annotated[str, Field(description="`project` (default), `global`, `both` (project + global) or `all`.")]
Kinds = Annotated[list[str] | None, Field(description="Only `fact` and/or `chunk`.")]
IdAlias = Annotated[str | None, Field(description="Alias of id.")]


#: A UTF-16 surrogate standing alone in a decoded string: JSON's "\ud800" escape without its pair. It cannot be
#: encoded as UTF-8, so a reply echoing it would never be written (the client would wait for nothing).
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
INVALID_PARAMS = -32602


def lone_surrogate_at(value: Any, where: str = "params") -> str | None:
    """The path of the first string (or key) in `value` holding a lone surrogate, else None."""
    if isinstance(value, str):
        return where if _LONE_SURROGATE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and _LONE_SURROGATE.search(key):
                return f"{where} (a key)"
            found = lone_surrogate_at(item, f"{where}.{key}")
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = lone_surrogate_at(item, f"{where}.{index}")
            if found:
                return found
    return None


async def reject_malformed_unicode(ctx: Any, call_next: Any) -> Any:
    """Server middleware: a request whose params hold a lone surrogate gets a JSON-RPC error naming where."""
    where = lone_surrogate_at(getattr(ctx, "params", None))
    if where is not None and getattr(ctx, "request_id", None) is not None:
        from mcp.shared.exceptions import MCPError

        raise MCPError(INVALID_PARAMS, _surrogate_message(where))
    if where is not None:
        return None  # a notification gets no reply: drop it
    return await call_next(ctx)


def unreadable_request_reply(exc: Exception) -> Any:
    """For a line the transport could not parse: a JSON-RPC error for its id when Python reads it as a request
    whose params hold a lone surrogate, else None (garbage without an id stays unanswered, as before)."""
    import json

    from mcp.shared.message import SessionMessage
    from mcp_types import ErrorData, JSONRPCError

    try:
        line = exc.errors()[0]["input"]  # type: ignore[attr-defined]  # pydantic's ValidationError keeps the line
        message = json.loads(line)
    except Exception:
        return None
    if not isinstance(message, dict) or not isinstance(message.get("id"), (int, str)) or "method" not in message:
        return None
    if isinstance(message["id"], str) and _LONE_SURROGATE.search(message["id"]):
        return None
    where = lone_surrogate_at(message.get("params")) or lone_surrogate_at(message.get("method"), "method")
    if where is None:
        return None
    error = ErrorData(code=INVALID_PARAMS, message=_surrogate_message(where))
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=message["id"], error=error))


def _surrogate_message(where: str) -> str:
    return (
        f"{where} holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape), which is not text: "
        "send valid Unicode"
    )


def unknown_arguments(server: MCPServer[Any], name: str, arguments: Any) -> str | None:
    """A one-line error when `arguments` names a parameter tool `name` does not take, listing those it does."""
    if not isinstance(arguments, dict):
        return None
    tool = server._tool_manager.get_tool(name) if hasattr(server, "_tool_manager") else None
    accepted = list((getattr(tool, "parameters", None) or {}).get("properties", {}))
    if not accepted:
        return None
    unknown = sorted(str(key) for key in arguments if key not in accepted)
    if not unknown:
        return None
    noun = "argument" if len(unknown) == 1 else "arguments"
    shown = ", ".join(key if key.isprintable() and len(key) <= 40 else repr(key[:40]) for key in unknown[:5])
    more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
    return f"unknown {noun} {shown}{more}; {name} accepts {', '.join(accepted)}"


def _pick(primary: Any, alias: Any, name: str, alias_name: str) -> Any:
    if primary is not None and alias is not None and primary != alias:
        raise ToolError(f"pass {name} or {alias_name}, not both")
    return primary if primary is not None else alias


class ChronomemServer(MCPServer[Any]):
    """MCPServer whose argument-validation errors are one readable line, like every other tool error,
    and whose calls without a `project` default to the client's workspace root (server/roots.py)."""

    workspaces: Workspaces | None = None

    async def run_stdio_async(self) -> None:
        """mcp's stdio transport, with an answer to a request its JSON parser refuses but Python's reads.

        pydantic's JSON parser rejects a lone surrogate escape ("\\ud800") as invalid JSON, and the transport then
        drops the line without a reply: the client waits out its timeout. Such a line that still reads as a
        request with an id gets a JSON-RPC invalid-params error saying why.
        """
        from mcp.server.stdio import stdio_server
        from mcp.shared._context_streams import create_context_streams

        async with stdio_server() as (read_stream, write_stream):
            forward, received = create_context_streams[Any](0)

            async def pump() -> None:
                async with forward:
                    async for item in read_stream:
                        reply = unreadable_request_reply(item) if isinstance(item, Exception) else None
                        if reply is not None:
                            await write_stream.send(reply)
                        else:
                            await forward.send(item)

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(pump)
                await self._lowlevel_server.run(received, write_stream, self._lowlevel_server.create_initialization_options())
                tasks.cancel_scope.cancel()

    async def read_resource(self, uri: Any, context: Any = None) -> Any:
        token = REQUEST_CONTEXT.set(context)  # static resources get no Context; the brief's handler reads it here
        try:
            return await super().read_resource(uri, context)
        finally:
            REQUEST_CONTEXT.reset(token)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        unknown = unknown_arguments(self, name, arguments)
        if unknown is not None:
            raise ToolError(f"invalid arguments for {name}: {unknown}")
        if self.workspaces is not None and context is not None:
            arguments = await self.workspaces.fill_project(self, name, arguments, context)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(f"invalid arguments for {name}: {validation_summary(exc.__cause__)}") from None
            raise


def validation_summary(error: ValidationError) -> str:
    """`limit: must be an integer; facts.0.object: field required` — field paths and reasons, no values."""
    parts = []
    for item in error.errors()[:5]:
        where = ".".join(str(p) for p in item["loc"]) or "arguments"
        parts.append(f"{where}: {item['msg'].lower()}")
    more = len(error.errors()) - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def _default(value: Any, default: Any) -> Any:
    return default if value is None else value


def build_server(svc: MemoryService) -> MCPServer[Any]:
    """An MCPServer whose tools work through `svc`; the model and store warm up when it starts."""

    from chronomem.consolidate.runner import Consolidator

    consolidator = Consolidator(svc)

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        svc.warm_up()
        try:
            yield None
        finally:
            consolidator.stop()

    workspaces = Workspaces(enabled=not svc.settings.project)  # --project / CHRONOMEM_PROJECT win over roots
    server = ChronomemServer(
        "chronomem",
        title="chronomem",
        instructions=INSTRUCTIONS,
        version=__version__,
        lifespan=lifespan,
        log_level=svc.settings.log_level if svc.settings.log_level in _LEVELS else "WARNING",
        middleware=[reject_malformed_unicode, workspaces.middleware],
    )
    server.workspaces = workspaces
    limiter = anyio.CapacityLimiter(4)

    async def run(fn: Callable[..., R], *args: Any, **kwargs: Any) -> CallToolResult:
        consolidator.call_started()
        started = time.perf_counter()
        try:
            result = await anyio.to_thread.run_sync(partial(fn, svc, *args, **kwargs), limiter=limiter)
            log.debug("%s ran in %.1f ms", getattr(fn, "__name__", fn), (time.perf_counter() - started) * 1000)
        except ChronomemError as exc:
            raise ToolError(str(exc)) from None
        except ToolError:
            raise
        except Exception as exc:
            known = svc.explain_failure(exc)
            if known is not None:  # a damaged store: say so, with the recovery command
                raise ToolError(str(known)) from None
            log.exception("tool %s failed", getattr(fn, "__name__", fn))
            raise ToolError(f"internal error ({type(exc).__name__}); the server log has details") from None
        finally:
            consolidator.call_finished()
        if getattr(fn, "__name__", "") == "recall":  # hits reinforce salience later, off the read path
            consolidator.record_hits(item.id for item in getattr(result, "results", []))
        return CallToolResult(
            content=[TextContent(type="text", text=result.text())],  # type: ignore[attr-defined]
            structured_content=result.model_dump(mode="json"),
        )

    from chronomem import tools

    @server.tool(
        name="remember",
        title="Remember",
        annotations=ToolAnnotations(title="Remember", readOnlyHint=False, destructiveHint=False, idempotentHint=False),
    )
    async def remember(
        content: Annotated[str | None, Field(description="The statement to keep, verbatim.")] = None,
        facts: Annotated[
            # each item is checked on its own (tools.remember.parse_facts): a malformed fact is refused and
            # reported, and the note is stored all the same
            list[FactInput | dict[str, Any]] | None,
            Field(
                description="Structured facts the content states, one per value that may change later: "
                "subject (what it is about), predicate (which attribute), object (its value now), e.g. "
                '{"subject": "billing-api", "predicate": "port", "object": "8080"}. A fact on the same '
                "(subject, predicate) with a different object invalidates the older one. A malformed fact is "
                "refused and listed in `refused_facts`; the note is stored all the same."
            ),
        ] = None,
        valid_from: Annotated[
            str | None,
            Field(description="When it became true: ISO 8601 (2024-05-01) or a phrase ('2 days ago'). Default now."),
        ] = None,
        tags: Annotated[list[str] | None, Field(description="Optional labels for filtering.")] = None,
        paths: Annotated[
            list[str] | None,
            Field(
                description="Optional files or globs the memory is about (relative to the repository). Their "
                "content hashes and the HEAD commit are recorded; recall flags the memory stale when they change."
            ),
        ] = None,
        project: Project = None,
        text: Annotated[str | None, Field(description="Alias of content.")] = None,
    ) -> Annotated[CallToolResult, RememberResult]:
        """Store something worth remembering about this project, at once.

        Use it for decisions, commands, conventions, versions, ports, owners, bugs and fixes.
        When the statement sets a value that may change later, also pass `facts`, e.g.
        content="Tests now run with `nox -s tests`" with
        facts=[{"subject": "myproject", "predicate": "test_command", "object": "nox -s tests"}];
        the previous test_command is then invalidated (kept for as_of/history, gone from recall).
        Returns the new memory's id and what happened to each fact (added, superseded, reinforced).
        Credentials in any field (API keys, tokens, private keys, passwords, also in sentences) are
        stored as [REDACTED:<kind>] and listed in `redacted`; remember where a secret lives, not its value.
        Pass `paths` when the memory is about specific files (e.g. paths=["deploy/fabfile.py"]):
        recall then says when those files have changed since, and recall(paths=…) finds it.
        """
        return await run(
            tools.remember,
            _pick(content, text, "content", "text"),
            project=project,
            valid_from=valid_from,
            facts=facts,
            tags=tags,
            paths=paths,
        )

    @server.tool(
        name="recall",
        title="Recall",
        annotations=ToolAnnotations(title="Recall", readOnlyHint=True, destructiveHint=False, idempotentHint=True),
    )
    async def recall(
        query: Annotated[
            str | None, Field(description="What you want to know, in words or identifiers. Optional with `paths`.")
        ] = None,
        paths: Annotated[
            list[str] | None,
            Field(
                description="Files or globs (relative to the repository): return what is known about them, "
                "e.g. before editing them; ranked by `query` if given, else newest first."
            ),
        ] = None,
        limit: Limit = None,
        budget_tokens: Budget = None,
        scope: Scope = "project",
        kinds: Kinds = None,
        project: Project = None,
        k: LimitAlias = None,
    ) -> Annotated[CallToolResult, RecallResult]:
        """Look up what is currently true and remembered about this project.

        Call it before answering questions about the project's setup, commands, decisions or
        history, e.g. query="how do we run the tests". Returns live facts and verbatim memories,
        best first, each with id, kind, text, valid/recorded times, provenance, score and the
        channels that matched. When nothing relevant is stored it says so and returns no results
        (abstained=true) — do not guess then. Superseded values are not returned; use `as_of` or
        `history` for the past. A result whose files changed since it was written carries
        `stale` (which files) and is ranked lower: check it against the code. Before editing
        files, recall(paths=["src/auth/*.py"]) returns what is known about them.
        """
        return await run(
            tools.recall,
            query,
            paths=paths,
            project=project,
            scope=scope,
            limit=_default(_pick(limit, k, "limit", "k"), 10),
            budget_tokens=budget_tokens,
            kinds=kinds,
        )

    @server.tool(
        name="as_of",
        title="Recall as of a time",
        annotations=ToolAnnotations(title="Recall as of", readOnlyHint=True, destructiveHint=False, idempotentHint=True),
    )
    async def as_of(
        query: Annotated[str, Field(description="What you want to know.")],
        at: Annotated[
            str,
            Field(
                description="The moment: ISO 8601 (2024-05-01, 2024-05-01T14:00Z), '3 weeks ago', or a git "
                "commit, tag or branch of the project (v1.4.0), read as its commit time."
            ),
        ],
        known_at: Annotated[
            str | None,
            Field(description="Answer as chronomem knew it then (transaction time; a time or a git ref). Default now."),
        ] = None,
        limit: Limit = None,
        budget_tokens: Budget = None,
        scope: Scope = "project",
        kinds: Kinds = None,
        project: Project = None,
        k: LimitAlias = None,
    ) -> Annotated[CallToolResult, RecallResult]:
        """Look up what was true at an earlier time, e.g. "what was the test command in March?"

        Example: query="test command", at="2024-03-15", or query="deploy procedure", at="v1.4.0"
        (a tag, commit or branch: its commit time). Answers from the memories valid at `at`
        (as recorded by `known_at`, default now), including values that were superseded since.
        Same result shape as `recall`.
        """
        return await run(
            tools.as_of,
            query,
            at,
            known_at=known_at,
            project=project,
            scope=scope,
            limit=_default(_pick(limit, k, "limit", "k"), 10),
            budget_tokens=budget_tokens,
            kinds=kinds,
        )

    @server.tool(
        name="forget",
        title="Forget",
        annotations=ToolAnnotations(title="Forget", readOnlyHint=False, destructiveHint=False, idempotentHint=True),
    )
    async def forget(
        id: Annotated[str | None, Field(description="Id of the memory, from recall/as_of/history.")] = None,
        reason: Annotated[str | None, Field(description="Why it is no longer true; shown in history.")] = None,
        retract: Annotated[
            bool, Field(description="True if it was never true (a mistake), rather than true until now.")
        ] = False,
        at: Annotated[str | None, Field(description="When it stopped being true; default now.")] = None,
        memory_id: IdAlias = None,
    ) -> Annotated[CallToolResult, ForgetResult]:
        """Mark a memory as no longer true. Nothing is deleted.

        Use it when the user says something stopped being true or was wrong, e.g.
        id="01J…", reason="we dropped Redis". By default its validity ends now (as_of earlier
        still returns it); retract=true records that it was never true. Facts derived only
        from a forgotten memory are forgotten with it.
        """
        return await run(tools.forget, _pick(id, memory_id, "id", "memory_id"), reason, retract=retract, at=at)

    @server.tool(
        name="history",
        title="History of a fact",
        annotations=ToolAnnotations(title="History", readOnlyHint=True, destructiveHint=False, idempotentHint=True),
    )
    async def history(
        id: Annotated[str | None, Field(description="Id of any memory in the chain.")] = None,
        subject: Annotated[str | None, Field(description="Fact subject (with predicate), instead of id.")] = None,
        predicate: Annotated[str | None, Field(description="Fact predicate (with subject), instead of id.")] = None,
        project: Project = None,
        memory_id: IdAlias = None,
    ) -> Annotated[CallToolResult, HistoryResult]:
        """Show how a fact changed over time: every value with its valid interval, oldest first.

        Example: history(subject="myproject", predicate="test_command") → pytest (Jan–Mar),
        then nox -s tests (Mar–now), with ids, what superseded what, and why each ended, and
        the git commit that was HEAD when each was written.
        Also accepts the id of any memory from recall; for a plain memory it shows its revisions.
        """
        return await run(
            tools.history, _pick(id, memory_id, "id", "memory_id"), subject=subject, predicate=predicate, project=project
        )

    register_brief(server, svc)  # the chronomem://brief resource and the `brief` prompt
    return server


_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
