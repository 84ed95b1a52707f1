"""Running the MCP server over stdio, SSE or streamable HTTP (the network ones through `security`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from chronomem.service import MemoryService

Transport = Literal["stdio", "sse", "http"]


def serve(
    svc: MemoryService,
    transport: Transport = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
) -> None:
    """Block serving MCP until the client disconnects (stdio) or the process is stopped (HTTP).

    SSE and HTTP refuse a non-loopback `host` without a bearer `token`, require the token on
    every request when one is set, and check Host/Origin headers (see `security`).
    """
    from chronomem.server.app import build_server
    from chronomem.malloc import limit_arenas
    from chronomem.server.security import check_exposure, serve_network

    if transport in ("sse", "http"):
        check_exposure(host, token)  # before anything starts: a refusal is one line
    limit_arenas()  # before the model's and the store's worker threads start
    server = build_server(svc)
    if transport == "stdio":
        server.run("stdio")
    elif transport in ("sse", "http"):
        serve_network(server, transport, host, port, token, allowed_hosts, allowed_origins)
    else:  # pragma: no cover - the CLI restricts the choices
        raise ValueError(f"unknown transport {transport!r}")
