"""Who may use the local page (server/ui.py), and how a browser proves it: the gate in front of the HTTP app.

One ASGI middleware wraps the whole streamable-HTTP app when the page is on:

- MCP paths (`/mcp`) keep the transport's rules: the bearer token when one is configured
  (security.BearerTokenMiddleware's check), Host/Origin checked by `mcp` itself.
- Every other path is the page. First the same Host and Origin checks as the transport (the
  `TransportSecuritySettings` of security.transport_security, applied with `mcp`'s own validator:
  421 for a foreign Host, 403 for a foreign Origin, JSON bodies only on POST). Then
  authentication: `Authorization: Bearer <token>`, or the session cookie a browser gets from the
  one-time link (`/login?code=…`, printed by `chronomem ui`; the code works once) or from posting
  the token to `/login`. The page's token is CHRONOMEM_TOKEN when set, else a random one made for
  this process (so the page is never open to every local user, even where `/mcp` is).
- Cross-site requests: the cookie is HttpOnly and SameSite=Strict, and a request authenticated by
  it that changes anything (not GET/HEAD) must also carry an allowed `Origin` and the session's
  CSRF token in `X-Chronomem-CSRF` (the page reads it from its own HTML); otherwise 403.

Sessions and codes live in this process's memory: restarting the server logs every browser out.
"""

from __future__ import annotations

import hmac
import json
import secrets
from typing import Any

#: Paths served by the MCP transport rather than the page.
MCP_PATHS = ("/mcp",)
CSRF_HEADER = "x-chronomem-csrf"
#: Methods that change nothing: no CSRF token needed with the cookie.
SAFE_METHODS = ("GET", "HEAD")


def new_secret() -> str:
    """A random token or code: 32 random bytes, 43 URL-safe characters (security.MIN_TOKEN_CHARS is 16)."""
    return secrets.token_urlsafe(32)


class Sessions:
    """One-time login codes and the browser sessions they open (session id → CSRF token)."""

    def __init__(self, token: str, port: int) -> None:
        self.token = token.strip()
        self.cookie = f"chronomem_ui_{port}"  # cookies are per host, not per port: one name per server
        self._codes: set[str] = set()
        self._sessions: dict[str, str] = {}
        #: The one-time login link printed at start (set by transports).
        self.link = ""

    def one_time_code(self) -> str:
        code = new_secret()
        self._codes.add(code)
        return code

    def redeem(self, code: str) -> str | None:
        """A new session id for an unused code (the code is spent), else None."""
        for known in list(self._codes):
            if hmac.compare_digest(known.encode(), code.encode()):
                self._codes.discard(known)
                return self._open()
        return None

    def login(self, token: str) -> str | None:
        """A new session id when `token` is the page's token."""
        return self._open() if self.token_ok(token) else None

    def _open(self) -> str:
        sid = new_secret()
        self._sessions[sid] = new_secret()
        return sid

    def token_ok(self, token: str) -> bool:
        return bool(token) and hmac.compare_digest(token.strip().encode(), self.token.encode())

    def csrf(self, sid: str | None) -> str | None:
        return self._sessions.get(sid or "")

    def set_cookie(self, sid: str) -> str:
        return f"{self.cookie}={sid}; HttpOnly; SameSite=Strict; Path=/"


def _headers(scope: dict[str, Any]) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}


def _bearer(headers: dict[str, str]) -> str:
    scheme, _, credential = headers.get("authorization", "").partition(" ")
    return credential.strip() if scheme.lower() == "bearer" else ""


def _cookie(headers: dict[str, str], name: str) -> str | None:
    from http.cookies import CookieError, SimpleCookie

    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except CookieError:
        return None
    morsel = jar.get(name)
    return morsel.value if morsel else None


async def _reply(send: Any, status: int, body: bytes, content_type: bytes = b"application/json", extra: list[tuple[bytes, bytes]] = ()) -> None:  # type: ignore[assignment]
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode()), *extra]
    headers.append((b"cache-control", b"no-store"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _error(message: str) -> bytes:
    return json.dumps({"error": message}).encode()


class UiGate:
    """ASGI middleware: the page's Host/Origin checks, authentication and CSRF; MCP paths keep their bearer check."""

    def __init__(self, app: Any, sessions: Sessions, security: Any, mcp_token: str | None) -> None:
        from mcp.server.transport_security import TransportSecurityMiddleware

        self.app = app
        self.sessions = sessions
        self._checks = TransportSecurityMiddleware(security)
        self._mcp_token = mcp_token.strip() if mcp_token else None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        path = scope.get("path", "")
        if any(path == p or path.startswith(p + "/") for p in MCP_PATHS):
            if self._mcp_token and not hmac.compare_digest(_bearer(headers).encode(), self._mcp_token.encode()):
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                await _reply(
                    send, 401, _error("send Authorization: Bearer <token>"),
                    extra=[(b"www-authenticate", b'Bearer realm="chronomem"')],
                )
                return
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await self._page(scope, receive, send, headers, path)

    async def _page(self, scope: dict[str, Any], receive: Any, send: Any, headers: dict[str, str], path: str) -> None:
        from starlette.requests import Request

        method = scope.get("method", "GET")
        # Host and Origin first (the same 421 / 403 as /mcp; ExplainRefusals, around the gate, names the setting),
        # then only JSON bodies: a cross-site <form> or no-cors fetch can send neither an allowed Origin nor JSON
        refusal = await self._checks.validate_request(Request(scope, receive), is_post=False)
        if refusal is None and method == "POST":
            refusal = await self._checks.validate_request(Request(scope, receive), is_post=True)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if path == "/login":
            await self._login(scope, receive, send, headers)
            return
        bearer = _bearer(headers)
        sid = _cookie(headers, self.sessions.cookie)
        csrf = self.sessions.csrf(sid)
        if bearer and (self.sessions.token_ok(bearer) or (self._mcp_token and hmac.compare_digest(bearer.encode(), self._mcp_token.encode()))):
            pass  # a script: no cookie, so no cross-site risk
        elif csrf is not None:
            if method not in SAFE_METHODS:
                if not headers.get("origin"):
                    await _reply(send, 403, _error("a change from the page must carry an Origin header"))
                    return
                if not hmac.compare_digest(headers.get(CSRF_HEADER, "").encode(), csrf.encode()):
                    await _reply(send, 403, _error(f"missing or wrong {CSRF_HEADER} header: reload the page"))
                    return
        else:
            if path.startswith("/api/"):
                await _reply(send, 401, _error("not logged in: open the link `chronomem ui` printed"))
            else:
                await _reply(send, 401, LOGIN_PAGE.encode(), b"text/html; charset=utf-8")
            return
        scope = {**scope, "chronomem.csrf": csrf or ""}
        await self.app(scope, receive, send)

    async def _login(self, scope: dict[str, Any], receive: Any, send: Any, headers: dict[str, str]) -> None:
        from urllib.parse import parse_qs

        method = scope.get("method", "GET")
        sid: str | None = None
        if method == "GET":
            code = (parse_qs(scope.get("query_string", b"").decode("latin-1")).get("code") or [""])[0]
            sid = self.sessions.redeem(code) if code else None
            if sid is None:
                await _reply(send, 401, LOGIN_PAGE.encode(), b"text/html; charset=utf-8")
                return
            # 303 to the page: the code leaves the address bar and the history entry
            await _reply(send, 303, b"", b"text/plain", [(b"location", b"/"), (b"set-cookie", self.sessions.set_cookie(sid).encode())])
            return
        if method == "POST":
            body = b""
            while True:
                message = await receive()
                body += message.get("body", b"")
                if not message.get("more_body"):
                    break
            try:
                token = str(json.loads(body or b"{}").get("token", ""))
            except (ValueError, AttributeError):
                token = ""
            sid = self.sessions.login(token)
            if sid is None:
                await _reply(send, 401, _error("wrong token"))
                return
            await _reply(send, 200, b'{"ok": true}', extra=[(b"set-cookie", self.sessions.set_cookie(sid).encode())])
            return
        await _reply(send, 405, _error("GET or POST"))


LOGIN_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>chronomem: log in</title>
<style>body{font:15px system-ui,sans-serif;max-width:36em;margin:4em auto;color:#222}input{width:100%;padding:.4em}</style>
</head><body>
<h1>chronomem</h1>
<p>Open the one-time link <code>chronomem ui</code> printed (each link works once), or paste the token
(<code>CHRONOMEM_TOKEN</code>) here.</p>
<form id="login"><input id="token" type="password" autocomplete="off" placeholder="token">
<button>Log in</button></form><p id="said"></p>
<script>
document.getElementById('login').addEventListener('submit', async (e) => {
  e.preventDefault();
  const r = await fetch('/login', {method: 'POST', headers: {'Content-Type': 'application/json'},
    body: JSON.stringify({token: document.getElementById('token').value})});
  if (r.ok) location.href = '/'; else document.getElementById('said').textContent = 'Wrong token.';
});
</script></body></html>
"""
