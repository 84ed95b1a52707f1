"""Running the MCP server over stdio, SSE or streamable HTTP (the network ones through `security`)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from typing import Any, Literal

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
    ui: bool = False,
    open_browser: bool = False,
    tokens_file: str | None = None,
) -> None:
    """Block serving MCP until the client disconnects (stdio) or the process is stopped (HTTP).

    SSE and HTTP refuse a non-loopback `host` without a bearer `token`, require the token on
    every request when one is set, and check Host/Origin headers (see `security`). With `ui`
    (streamable HTTP only) the same app also serves the local page (server/ui.py) behind
    `uiauth`'s gate; a one-time login link goes to stderr, and to the browser with `open_browser`.
    With `tokens_file` (a team server, server/team.py) every client has its own token, name and rights.
    """
    from chronomem.server.app import build_server
    from chronomem.malloc import limit_arenas
    from chronomem.server.security import check_exposure, serve_network

    if ui and transport != "http":
        from chronomem.errors import InvalidInput

        raise InvalidInput("the page is served with the streamable HTTP transport: use --transport http with --ui")
    team = None
    if tokens_file and transport in ("sse", "http"):
        from chronomem.server.team import Team

        if ui:
            from chronomem.errors import InvalidInput

            raise InvalidInput("the page has one token: --ui cannot serve a team's token file; run `chronomem ui` on your machine")
        team = Team.load(tokens_file)  # a bad file is one line, before anything starts
    if transport in ("sse", "http"):
        check_exposure(host, team.tokens[0] if team else token)  # before anything starts: a refusal is one line
    limit_arenas()  # before the model's and the store's worker threads start
    server = build_server(svc)
    sessions = page_sessions(server, svc, host, port, token) if ui else None
    if team is not None:
        server.team = team  # type: ignore[attr-defined]
    print(start_line(svc, transport, host, port), file=sys.stderr, flush=True)
    if sessions is not None:
        print(f"the page: {sessions.link} (this link logs in once)", file=sys.stderr, flush=True)
        if open_browser:
            threading.Thread(target=_open_when_listening, args=(sessions.link, port), daemon=True).start()
    if transport == "stdio":
        server.run("stdio")
    elif transport in ("sse", "http"):
        serve_network(
            server, transport, host, port, team.tokens if team else token, allowed_hosts, allowed_origins, sessions=sessions
        )
    else:  # pragma: no cover - the CLI restricts the choices
        raise ValueError(f"unknown transport {transport!r}")


def page_sessions(server: Any, svc: MemoryService, host: str, port: int, token: str | None) -> Any:
    """Register the page on `server`; its sessions, with the one-time `link` to print (token: the configured
    one, else one made for this process, so the page always asks for a login)."""
    from chronomem.server.security import is_loopback
    from chronomem.server.ui import register_ui
    from chronomem.server.uiauth import Sessions, new_secret

    register_ui(server, svc)
    sessions = Sessions(token or new_secret(), port)
    shown = host if is_loopback(host) or host.strip("[]") not in ("0.0.0.0", "::", "") else "127.0.0.1"
    base = address("http", shown, port).removesuffix("/mcp")
    sessions.link = f"{base}/login?code={sessions.one_time_code()}"
    return sessions


def _open_when_listening(link: str, port: int) -> None:
    """Open `link` in the user's browser once the server accepts connections (gives up after a minute)."""
    import socket
    import time
    import webbrowser
    from urllib.parse import urlsplit

    host = urlsplit(link).hostname or "127.0.0.1"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, port), timeout=0.5).close()
        except OSError:
            time.sleep(0.1)
            continue
        webbrowser.open(link)
        return


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
