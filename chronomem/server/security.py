"""Who may reach the network transports (SSE, streamable HTTP), and from where.

- Loopback by default. Binding to any other address needs a bearer token (`--token` or
  `CHRONOMEM_TOKEN`, 16+ characters); without one the server refuses to start.
- With a token set, every HTTP request must carry `Authorization: Bearer <token>`; others
  get 401 before reaching MCP (constant-time comparison).
- DNS rebinding: the `Host` and `Origin` headers are checked by `mcp`'s transport security
  against loopback names, the bound address, and `CHRONOMEM_ALLOWED_HOSTS` /
  `CHRONOMEM_ALLOWED_ORIGINS` (comma-separated; `*` turns the check off). A foreign Host
  gets 421, a foreign Origin 403.
- With the local page on (`chronomem ui`, `serve --ui`), `uiauth.UiGate` takes the bearer check's place:
  the same checks on `/mcp`, and for the page the same Host/Origin checks plus its login and CSRF.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import socket
from collections.abc import Sequence
from typing import Any

from chronomem.errors import ChronomemError

MIN_TOKEN_CHARS = 16
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_WILDCARD_BINDS = ("0.0.0.0", "::", "")


class ExposureError(ChronomemError):
    """The server would be reachable from the network without authentication."""


def is_loopback(host: str) -> bool:
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, token: str | None) -> None:
    """Refuse (one line) a non-loopback bind without a token, and any token too short to be a secret."""
    if token is not None and len(token.strip()) < MIN_TOKEN_CHARS:
        raise ExposureError(
            f"the bearer token must be at least {MIN_TOKEN_CHARS} characters; make one with "
            "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    if not is_loopback(host) and not token:
        raise ExposureError(
            f"binding to {host or '0.0.0.0'} exposes this memory to the network: set CHRONOMEM_TOKEN "
            "(or pass --token) to a secret of 16+ characters, or bind to 127.0.0.1"
        )


def _host_names(host: str) -> list[str]:
    """Names a client may put in `Host` to reach a server bound to `host`."""
    names = list(LOOPBACK_NAMES)
    bare = host.strip().strip("[]")
    if bare in _WILDCARD_BINDS:
        for candidate in {socket.gethostname(), socket.getfqdn()}:
            names.append(candidate)
            try:
                names.extend(info[4][0] for info in socket.getaddrinfo(candidate, None))
            except OSError:
                pass
    elif not is_loopback(bare):
        names.append(bare)
    return list(dict.fromkeys(f"[{n}]" if ":" in n and not n.startswith("[") else n for n in names))


def transport_security(host: str, allowed_hosts: Sequence[str] = (), allowed_origins: Sequence[str] = ()) -> Any:
    """`mcp` TransportSecuritySettings for a server bound to `host` (Host/Origin checks against DNS rebinding)."""
    from mcp.server.transport_security import TransportSecuritySettings

    extra_hosts = [h.strip() for h in allowed_hosts if h.strip()]
    extra_origins = [o.strip() for o in allowed_origins if o.strip()]
    if "*" in extra_hosts or "*" in extra_origins:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = _host_names(host) + extra_hosts
    hosts = [h for n in names for h in (n, f"{n}:*")]
    origins = [f"{scheme}://{n}{port}" for n in names for scheme in ("http", "https") for port in ("", ":*")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(dict.fromkeys(hosts)),
        allowed_origins=list(dict.fromkeys(origins + extra_origins)),
    )


class BearerTokenMiddleware:
    """ASGI middleware: HTTP and WebSocket requests without `Authorization: Bearer <token>` (one of `tokens`: a team
    server's token file has one per client, server/team.py) get 401."""

    def __init__(self, app: Any, token: str | Sequence[str]) -> None:
        self.app = app
        self._tokens = [t.strip().encode() for t in ([token] if isinstance(token, str) else token)]

    def _authorized(self, scope: dict[str, Any]) -> bool:
        for name, value in scope.get("headers") or []:
            if name.lower() == b"authorization":
                scheme, _, credential = value.partition(b" ")
                matches = [hmac.compare_digest(credential.strip(), t) for t in self._tokens]  # every one compared
                if scheme.lower() == b"bearer" and any(matches):
                    return True
        return False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket") or self._authorized(scope):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = json.dumps({"error": "unauthorized", "message": "send Authorization: Bearer <token>"}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b'Bearer realm="chronomem"'),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


#: What fixes each of `mcp`'s DNS-rebinding refusals, appended to its reply body.
_REFUSAL_FIXES = {
    (421, b"Invalid Host header"): (
        "Host", "CHRONOMEM_ALLOWED_HOSTS",
        "this server answers to loopback names and the address it is bound to",
    ),
    (403, b"Invalid Origin header"): (
        "Origin", "CHRONOMEM_ALLOWED_ORIGINS",
        "this server accepts browser origins on loopback names and the address it is bound to",
    ),
}


class ExplainRefusals:
    """ASGI middleware: `mcp`'s bare 421 "Invalid Host header" / 403 "Invalid Origin header" replies name the
    header value refused and the setting that admits it (CHRONOMEM_ALLOWED_HOSTS / _ORIGINS)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: dict[str, Any] = {}

        async def explain(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and message["status"] in (403, 421):
                held["start"] = message
                held["body"] = b""
                return
            if "start" not in held:
                await send(message)
                return
            held["body"] += message.get("body", b"")
            if message.get("more_body"):
                return
            start, body = held.pop("start"), held.pop("body")
            fix = _REFUSAL_FIXES.get((start["status"], body.strip()))
            if fix is not None:
                header, setting, who = fix
                value = next((v.decode("latin-1") for k, v in scope.get("headers") or [] if k.decode("latin-1").lower() == header.lower()), "")
                body = (
                    f"{body.decode().strip()}: {header} {value!r} is not allowed; {who}. To allow it, start the "
                    f"server with {setting}={value or '<value>'} (comma-separated; * turns the check off)\n"
                ).encode()
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(body)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, explain)


def network_app(
    server: Any,
    transport: str,
    host: str,
    token: str | Sequence[str] | None,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    sessions: Any = None,
) -> Any:
    """The ASGI app serving `server` (an `MCPServer`) over SSE or streamable HTTP with the checks above.
    `token` may be several (a team's token file, server/team.py).

    With `sessions` (uiauth.Sessions: the local page is on, one token), `uiauth.UiGate` guards the page and
    keeps the bearer check on `/mcp`."""
    if sessions is not None and token is not None and not isinstance(token, str):
        raise ValueError("the page has one token, not a team's")
    check_exposure(host, token if isinstance(token, str) or token is None else (token[0] if token else None))
    security = transport_security(host, allowed_hosts, allowed_origins)
    if transport == "sse":
        app = server.sse_app(transport_security=security, host=host)
    else:
        app = server.streamable_http_app(transport_security=security, host=host)
    if sessions is not None:
        from chronomem.server.uiauth import UiGate

        return ExplainRefusals(UiGate(app, sessions, security, token))
    app = ExplainRefusals(app)
    if token:
        app = BearerTokenMiddleware(app, token)
    return app


def serve_network(
    server: Any,
    transport: str,
    host: str,
    port: int,
    token: str | Sequence[str] | None,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    sessions: Any = None,
) -> None:
    """Serve `network_app(...)` with uvicorn on `host`:`port`; block until stopped."""
    import anyio
    import uvicorn

    app = network_app(server, transport, host, token, allowed_hosts, allowed_origins, sessions)
    config = uvicorn.Config(app, host=host, port=port, log_level=server.settings.log_level.lower())
    anyio.run(uvicorn.Server(config).serve)
