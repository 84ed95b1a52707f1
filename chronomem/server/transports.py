"""Running the MCP server over stdio, SSE or streamable HTTP (the network ones through `security`)."""

from __future__ import annotations

import sys
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
    tokens_file: str | None = None,
) -> None:
    """Block serving MCP until the client disconnects (stdio) or the process is stopped (HTTP).

    SSE and HTTP refuse a non-loopback `host` without a bearer `token`, require the token on
    every request when one is set, and check Host/Origin headers (see `security`). With `tokens_file` (a team
    server, server/team.py) every client has its own token, name and rights.
    """
    from chronomem.server.app import build_server
    from chronomem.malloc import limit_arenas
    from chronomem.server.security import check_exposure, serve_network

    team = None
    if tokens_file and transport in ("sse", "http"):
        from chronomem.server.team import Team

        team = Team.load(tokens_file)  # a bad file is one line, before anything starts
    if transport in ("sse", "http"):
        check_exposure(host, team.tokens[0] if team else token)  # before anything starts: a refusal is one line
    limit_arenas()  # before the model's and the store's worker threads start
    server = build_server(svc)
    if team is not None:
        server.team = team  # type: ignore[attr-defined]
    print(start_line(svc, transport, host, port), file=sys.stderr, flush=True)
    if transport == "stdio":
        server.run("stdio")
    elif transport in ("sse", "http"):
        serve_network(server, transport, host, port, team.tokens if team else token, allowed_hosts, allowed_origins)
    else:  # pragma: no cover - the CLI restricts the choices
        raise ValueError(f"unknown transport {transport!r}")


def address(transport: Transport, host: str, port: int) -> str:
    """Where a client reaches the server: `stdin/stdout`, or the URL of the SSE / streamable HTTP endpoint."""
    if transport == "stdio":
        return "stdin/stdout"
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}{'/sse' if transport == 'sse' else '/mcp'}"


def start_line(svc: MemoryService, transport: Transport, host: str = "127.0.0.1", port: int = 8765) -> str:
    """The one line `serve` writes to stderr for a person: version, store, transport, address, model."""
    from chronomem import __version__

    embedder = svc.embedder
    source = getattr(embedder, "source", None)
    model = embedder.name + (f" ({source})" if source else "")
    return (
        f"chronomem {__version__} serving MCP over {transport} at {address(transport, host, port)}; "
        f"store {svc.settings.store_path}; model {model}"
    )
