"""The MCP client's workspace roots as a session's default project.

A client that declares the `roots` capability is asked `roots/list` on the session's first
tool call that has no explicit `project` (and again after `notifications/roots/list_changed`).
The first `file://` root that is a directory on this machine becomes the session's workspace:
it is passed to the tool as its `project` argument, so the memory is keyed to that directory's
repository (`chronomem.project`) and `MemoryService.workdir` points at it, instead of at the
server's working directory.

The answer is kept per connection (`Connection.state`: HTTP serves many sessions at once), not
per server. A client without roots, a connection that cannot carry server-to-client requests
(the 2026-07-28 protocol, where roots are deprecated), an error or a reply slower than
`ROOTS_TIMEOUT` all fall back silently (a debug log line) to the server's own default.
`--project` / `CHRONOMEM_PROJECT` turn the lookup off: an explicit project wins over roots.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlparse
from urllib.request import url2pathname

import anyio
from mcp_types import ListRootsRequest, ListRootsResult

from chronomem.project import MAX_PROJECT_CHARS

log = logging.getLogger(__name__)

#: Longest a tool call waits for the client's `roots/list` answer.
ROOTS_TIMEOUT = 2.0
LIST_CHANGED = "notifications/roots/list_changed"
_DIR_KEY = "chronomem.workspace"
_GEN_KEY = "chronomem.workspace.generation"


def first_directory(roots: Sequence[Any]) -> str | None:
    """The path of the first `file://` root that is an existing local directory."""
    for root in roots:
        parsed = urlparse(str(getattr(root, "uri", "")))
        if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
            continue
        path = url2pathname(parsed.path)
        if os.path.isabs(path) and os.path.isdir(path):
            return os.path.normpath(path)
        log.debug("workspace root %s is not a directory here; skipped", parsed.geturl())
    return None


def _state(session: Any) -> dict[str, Any] | None:
    """The connection's scratch state (it outlives the per-request session proxy), if reachable."""
    state = getattr(getattr(session, "_connection", None), "state", None)
    return state if isinstance(state, dict) else None


class Workspaces:
    """Fills a tool call's missing `project` with the session's workspace root."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._project_tools: frozenset[str] | None = None

    async def fill_project(self, server: Any, name: str, arguments: dict[str, Any], context: Any) -> dict[str, Any]:
        if not self.enabled or not isinstance(arguments, dict) or arguments.get("project") not in (None, ""):
            return arguments
        if self._project_tools is None:
            tools = await server.list_tools()
            self._project_tools = frozenset(
                t.name for t in tools if "project" in (t.input_schema or {}).get("properties", {})
            )
        if name not in self._project_tools:
            return arguments
        directory = await self.directory(context)
        if directory is None:
            return arguments
        return {**arguments, "project": directory}

    async def directory(self, context: Any) -> str | None:
        """The session's workspace directory, asked of the client once per connection."""
        try:
            session = context.session
        except (AttributeError, ValueError):  # no request behind this call
            return None
        state = _state(session)
        if state is not None and _DIR_KEY in state:
            return state[_DIR_KEY]
        generation = state.get(_GEN_KEY, 0) if state is not None else 0
        directory = await self._ask(context, session)
        if state is not None and state.get(_GEN_KEY, 0) == generation:  # no list_changed meanwhile
            state[_DIR_KEY] = directory
        return directory

    async def _ask(self, context: Any, session: Any) -> str | None:
        capabilities = getattr(session, "client_capabilities", None)
        if capabilities is None or capabilities.roots is None:
            return None
        if not getattr(session, "can_send_request", False):
            log.debug("client declares roots but this connection cannot ask for them")
            return None
        from mcp.shared.message import ServerMessageMetadata

        try:
            # Ask on the tool call's own channel: on streamable HTTP that is the POST's response stream,
            # which the client is reading now (the standalone GET stream may not be open).
            metadata = ServerMessageMetadata(related_request_id=context.request_context.request_id)
            with anyio.fail_after(ROOTS_TIMEOUT):
                result = await session.send_request(
                    ListRootsRequest(), ListRootsResult, request_read_timeout_seconds=ROOTS_TIMEOUT, metadata=metadata
                )
        except Exception as exc:  # a client that fails, refuses or is slow: keep the server's default
            log.debug("roots/list failed (%s: %s); using the server's default project", type(exc).__name__, exc)
            return None
        directory = first_directory(result.roots)
        if directory is not None and len(directory) > MAX_PROJECT_CHARS:
            log.debug("workspace root %s is too long a path to scope by; using the default project", directory)
            return None
        log.debug("workspace root: %s", directory)
        return directory

    async def middleware(self, ctx: Any, call_next: Any) -> Any:
        """Server middleware: forget a connection's workspace when the client says its roots changed."""
        if getattr(ctx, "method", None) == LIST_CHANGED and getattr(ctx, "request_id", None) is None:
            state = _state(getattr(ctx, "session", None))
            if state is not None:
                state.pop(_DIR_KEY, None)
                state[_GEN_KEY] = state.get(_GEN_KEY, 0) + 1
        return await call_next(ctx)

