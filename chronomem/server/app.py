"""The MCP server: an `mcp` 2.x `MCPServer` publishing the tools of `chronomem.tools.SPECS`.

Each tool's title, model-facing description, annotations, input schema and argument aliases
live in the tool's own module (`ToolSpec`, tools/spec.py); `register_tool` publishes one spec,
and `build_server` loops over them, adds the session brief (server/brief.py) and gives the
`initialize` instructions. What every call shares lives here too: results are structured content plus
readable text. An argument the tool does not take is refused naming those it does; a
`ChronomemError` becomes a one-line tool error; anything unexpected is logged to stderr and
reported in one line, and the server stays up. Blocking work runs on a worker thread so the
event loop keeps answering; after each call the consolidator gets its turn, and a client that offers sampling is
handed to it (server/sampling.py) so it may ask the client's model for facts. On stdio a line that does not
parse gets JSON-RPC's -32700 "Parse error" (or, when it reads as a request whose params hold a lone UTF-16
surrogate or nest too deep, an invalid-params error for its id), and a line of JSON that is not a JSON-RPC
message (`[]`, `42`, `{"foo": 1}`) gets -32600 "Invalid Request", instead of silence.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ValidationError

from chronomem import __version__
from chronomem.errors import ChronomemError
from chronomem.server.brief import REQUEST_CONTEXT, register_brief
from chronomem.server.roots import Workspaces
from chronomem.service import VISIBLE_PROJECTS, MemoryService
from chronomem.tools import SPECS, ToolSpec

log = logging.getLogger(__name__)

INSTRUCTIONS = """\
chronomem is this project's long-term memory, kept across sessions. When to call what:
- At the start of a session, read the `chronomem://brief` resource (or the `brief` prompt): current facts and recent changes.
- `recall` before answering about the project's commands, conventions, decisions, ports, owners or past bugs; `recall(paths=[...])` before editing files.
- `remember` when you learn something a later session should know; pass `facts` for values that may change (the old value is then invalidated) and `paths` when it is about specific files.
- `as_of` for what was true at an earlier date or release (a git tag, commit or branch such as v1.4.0).
- `history` for when and why a fact changed.
- `entity` for counts, latest values and extremes over an entity's facts (how many times a test flaked).
- `forget` when something stopped being true or was wrong; nothing is deleted."""

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


#: JSON-RPC's answer to a line that is not JSON (id null: no id can be read from it).
PARSE_ERROR = -32700
#: JSON-RPC's answer to JSON that is not a JSON-RPC message (id null).
INVALID_REQUEST = -32600
#: How many levels of arrays and objects mcp's JSON parser (pydantic's, jiter) reads in one message: a deeper line
#: is refused as invalid JSON ("recursion limit exceeded") though it is JSON.
PARSER_DEPTH = 200


def unreadable_line_reply(exc: Exception) -> Any:
    """The answer to a line mcp's stdio transport could not parse (it hands the parser's error over instead of a
    message, and would otherwise drop the line, leaving the client waiting):
    - a blank line: none (nothing was sent);
    - a line Python reads as a request with an id: an error for that id: invalid params (-32602) when its params
      hold a lone surrogate, or nest deeper than the parser reads, each saying so; else a parse error;
    - anything else (not JSON, truncated, binary, nested past any reading): -32700 "Parse error" with id null;
    - a line that is JSON but not a JSON-RPC message: -32600 "Invalid Request" (`invalid_request_reply`).
    None for an error that is not the parser's.
    A parse error also goes to stderr as one warning (its size and the parser's reason, not its content)."""
    import json

    from mcp.shared.message import SessionMessage
    from mcp_types import ErrorData, JSONRPCError
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return None
    try:
        first = exc.errors()[0]
        line, kind, reason = first["input"], first["type"], str(first["msg"]).removeprefix("Invalid JSON: ")
    except (IndexError, KeyError):
        return None
    if kind != "json_invalid":
        return invalid_request_reply(exc)
    if not isinstance(line, str):
        return None
    if not line.strip():
        return None
    rid: Any = None
    error = ErrorData(code=PARSE_ERROR, message="Parse error", data=reason)
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        message = None
    if isinstance(message, dict) and "method" in message and _usable_id(message.get("id")):
        rid = message["id"]
        params = message.get("params")
        depth = _depth(message)
        if depth > PARSER_DEPTH:
            where = _deepest_path(params, "params")
            error = ErrorData(code=INVALID_PARAMS, message=(
                f"{where} nests {depth} levels of arrays and objects; at most {PARSER_DEPTH} are read: "
                "send flatter arguments"))
        else:
            where = lone_surrogate_at(params) or lone_surrogate_at(message.get("method"), "method")
            if where is not None:
                error = ErrorData(code=INVALID_PARAMS, message=_surrogate_message(where))
    if error.code == PARSE_ERROR:  # mostly id null: the client cannot tell which message failed, so say it here too
        log.warning("stdin: a line of %d characters could not be parsed (%s); answered -32700 for id %s",
                    len(line.rstrip("\n")), reason, json.dumps(rid))
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=rid, error=error))


def invalid_request_reply(exc: Any) -> Any:
    """The answer to a line that parsed as JSON but is no JSON-RPC message (`[]`, `42`, `{"foo": 1}`, a batch,
    `"jsonrpc": "1.0"`, params that are not an object): -32600 "Invalid Request" with id null (JSON-RPC 2.0: an id
    is not detected in an invalid request, and echoing one could answer another request of that id); one warning
    on stderr (without the line's content)."""
    from mcp.shared.message import SessionMessage
    from mcp_types import ErrorData, JSONRPCError

    data = ('not a JSON-RPC 2.0 message: send an object with "jsonrpc": "2.0" and a "method" (and an "id" to be '
            'answered), one per line')
    log.warning("stdin: a line of JSON is not a JSON-RPC message (%d validation errors); answered -32600 for id null",
                len(exc.errors()))
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(
        code=INVALID_REQUEST, message="Invalid Request", data=data)))


def _usable_id(rid: Any) -> bool:
    """Can `rid` be echoed in a reply: a JSON-RPC id (an integer or a string) that is valid text."""
    if isinstance(rid, bool):
        return False
    return isinstance(rid, int) or (isinstance(rid, str) and not _LONE_SURROGATE.search(rid))


def _depth(value: Any) -> int:
    """Levels of arrays and objects in a parsed JSON value (0 for a scalar), counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in item)
    return deepest


def _deepest_path(value: Any, where: str) -> str:
    """The path through objects to where `value` nests deepest (`params.arguments.facts`), stopping at an array."""
    while isinstance(value, dict) and value:
        key = max(value, key=lambda k: _depth(value[k]))
        if _depth(value[key]) == 0:
            break
        value, where = value[key], f"{where}.{key}"
    return where


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


class ChronomemServer(MCPServer[Any]):
    """MCPServer whose argument-validation errors are one readable line, like every other tool error,
    and whose calls without a `project` default to the client's workspace root (server/roots.py)."""

    workspaces: Workspaces | None = None
    #: A team server's clients (server/team.py): who each call is, and what it may do.
    team: Any = None
    svc: MemoryService | None = None
    #: The consolidator's way to the client's model (server/sampling.py), None when sampling is off.
    sampling: Any = None

    async def run_stdio_async(self) -> None:
        """mcp's stdio transport, with an answer to every line its JSON parser refuses (`unreadable_line_reply`).

        The transport drops such a line without a reply, and the client waits out its timeout: garbage and
        truncated JSON, but also JSON pydantic's parser refuses and Python's reads (a lone surrogate escape,
        "\\ud800"; nesting deeper than PARSER_DEPTH). Each gets -32700 "Parse error" (id null), or an
        invalid-params error for the request's id saying why; the connection goes on.
        """
        from mcp.server.stdio import stdio_server
        from mcp.shared._context_streams import create_context_streams

        async with stdio_server() as (read_stream, write_stream):
            forward, received = create_context_streams[Any](0)

            async def pump() -> None:
                async with forward:
                    async for item in read_stream:
                        try:
                            reply = unreadable_line_reply(item) if isinstance(item, Exception) else None
                        except Exception:  # never let one bad line stop the pump (and with it the server)
                            log.exception("could not answer an unparseable line")
                            reply = None
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
        if self.sampling is not None and context is not None:
            self.sampling.capture(context)  # a client that offers sampling: the consolidator may ask its model
        if self.workspaces is not None and context is not None:
            arguments = await self.workspaces.fill_project(self, name, arguments, context)
        shown = None
        if self.team is not None and context is not None:
            arguments = await self._authorize(name, arguments, context)
            shown = VISIBLE_PROJECTS.set(self.team.visible(getattr(context, "headers", None)))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(f"invalid arguments for {name}: {validation_summary(exc.__cause__)}") from None
            raise
        finally:
            if shown is not None:
                VISIBLE_PROJECTS.reset(shown)


    async def _authorize(self, name: str, arguments: dict[str, Any], context: Any) -> dict[str, Any]:
        """The team client's rights on this call (server/team.py); its name goes with what it writes."""
        from chronomem.server.team import authorize

        client = self.team.client(getattr(context, "headers", None))
        spec = next((s for s in SPECS if s.name == name), None)
        if client is None or spec is None or self.svc is None:
            raise ToolError("unauthorized: send Authorization: Bearer <your token>")
        svc = self.svc

        def memory_project(memory_id: str) -> str | None:
            found = svc.store.get(memory_id)
            return found.project if found is not None else None

        try:
            return await anyio.to_thread.run_sync(
                partial(authorize, client, name, spec.hints.read_only, arguments, svc.project, memory_project)
            )
        except ChronomemError as exc:
            raise ToolError(str(exc)) from None


def validation_summary(error: ValidationError) -> str:
    """`limit: must be an integer; facts.0.object: field required` — field paths and reasons, no values."""
    parts = []
    for item in error.errors()[:5]:
        where = ".".join(str(p) for p in item["loc"]) or "arguments"
        parts.append(f"{where}: {item['msg'].lower()}")
    more = len(error.errors()) - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


Runner = Callable[[ToolSpec, dict[str, Any]], Awaitable[CallToolResult]]


def register_tool(server: MCPServer[Any], spec: ToolSpec, run: Runner) -> None:
    """Publish `spec` on `server`: its title, description and hints as MCP has them, and a handler whose
    signature (the spec's parameters and aliases) is the input schema and whose return annotation gives
    the output schema (the spec's result model) while it returns a `CallToolResult` (structured + text)."""

    async def call(**arguments: Any) -> CallToolResult:
        return await run(spec, arguments)

    signature = spec.signature().replace(return_annotation=Annotated[CallToolResult, spec.result])
    call.__name__ = call.__qualname__ = spec.name
    call.__signature__ = signature  # type: ignore[attr-defined]
    call.__annotations__ = {
        **{name: p.annotation for name, p in signature.parameters.items()},
        "return": signature.return_annotation,
    }
    hints = spec.hints
    server.add_tool(
        call,
        name=spec.name,
        title=spec.title,
        description=spec.description,
        annotations=ToolAnnotations(
            title=spec.title,
            readOnlyHint=hints.read_only,
            destructiveHint=hints.destructive,
            idempotentHint=hints.idempotent,
            openWorldHint=hints.open_world,
        ),
    )
    metadata = server._tool_manager.get_tool(spec.name).fn_metadata  # read live by the SDK at each listing
    if metadata.output_schema is not None:
        metadata.output_schema = plain_nullables(metadata.output_schema)
    # The schema stays published; without its model the SDK does not validate each result against it again: the
    # structured content is the result model's own dump (`run`), and clients validate what they receive.
    metadata.output_model = None


def plain_nullables(schema: Any) -> Any:
    """`schema` with each `anyOf` of one typed schema and `{"type": "null"}` (pydantic's `X | None`) written as that
    schema with `"type": [X, "null"]`: the same values pass, and a validator checks one type instead of trying two
    branches and building an error for the one that fails. Measured with the Python SDK client, which validates
    every result against the tool's output schema: a recall of 10 results spent ~6 ms of its ~25 ms there."""
    if isinstance(schema, list):
        return [plain_nullables(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: plain_nullables(value) for key, value in schema.items()}
    branches = out.get("anyOf")
    if isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches:
        other = branches[0] if branches[1] == {"type": "null"} else branches[1]
        if isinstance(other, dict) and isinstance(other.get("type"), str) and not {"$ref", "anyOf", "oneOf", "allOf"} & other.keys():
            del out["anyOf"]
            out = {**other, **out, "type": [other["type"], "null"]}
    return out


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
    server.svc = svc
    if consolidator.sampling is not None:
        from chronomem.server.sampling import SamplingBridge

        server.sampling = SamplingBridge(consolidator.sampling)
        consolidator.use_sampling(server.sampling)
    limiter = anyio.CapacityLimiter(4)

    async def run(spec: ToolSpec, arguments: dict[str, Any]) -> CallToolResult:
        try:
            kwargs = spec.handler_arguments(arguments)  # aliases folded in; a clash is one line
        except ChronomemError as exc:
            raise ToolError(str(exc)) from None
        consolidator.call_started()
        started = time.perf_counter()
        try:
            result = await anyio.to_thread.run_sync(partial(spec.handler, svc, **kwargs), limiter=limiter)
            log.debug("%s ran in %.1f ms", spec.name, (time.perf_counter() - started) * 1000)
        except ChronomemError as exc:
            raise ToolError(str(exc)) from None
        except ToolError:
            raise
        except Exception as exc:
            known = svc.explain_failure(exc)
            if known is not None:  # a damaged store: say so, with the recovery command
                raise ToolError(str(known)) from None
            log.exception("tool %s failed", spec.name)
            raise ToolError(f"internal error ({type(exc).__name__}); the server log has details") from None
        finally:
            consolidator.call_finished()
        if spec.reinforces_hits:  # hits reinforce salience later, off the read path
            consolidator.record_hits(item.id for item in getattr(result, "results", []))
        return CallToolResult(
            content=[TextContent(type="text", text=result.text())],  # type: ignore[attr-defined]
            structured_content=result.model_dump(mode="json"),
        )

    for spec in SPECS:
        register_tool(server, spec, run)

    register_brief(server, svc)  # the chronomem://brief resource and the `brief` prompt
    return server


_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
