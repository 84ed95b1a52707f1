"""Running the MCP server over stdio, SSE or streamable HTTP."""

from __future__ import annotations

from typing import Literal

from chronomem.service import MemoryService

Transport = Literal["stdio", "sse", "http"]


def serve(svc: MemoryService, transport: Transport = "stdio", host: str = "127.0.0.1", port: int = 8765) -> None:
    """Block serving MCP until the client disconnects (stdio) or the process is stopped (HTTP)."""
    from chronomem.server.app import build_server

    server = build_server(svc)
    if transport == "stdio":
        server.run("stdio")
    elif transport == "sse":
        server.run("sse", host=host, port=port)
    elif transport == "http":
        server.run("streamable-http", host=host, port=port)
    else:  # pragma: no cover - the CLI restricts the choices
        raise ValueError(f"unknown transport {transport!r}")
