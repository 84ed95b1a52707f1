"""A fault-injecting HTTP proxy between chronomem and the local S3 server (scripts/local_s3.py), for the shared-store
tests: a share of requests answered 503 (SlowDown) or 500 (InternalError) without reaching the server, answered only
after the client's timeout (the server did the request: whether it happened is unknown to the client), or cut by a
connection reset (before the request reaches the server, or after it did, its answer lost).

    python -m tests.s3.faultproxy --upstream http://127.0.0.1:PORT [--seed 7] [--p503 0.1] [--p500 0]
        [--pdelay 0.05] [--delay 1.5] [--preset 0.02]

prints its own endpoint on stdout, then serves. Which request meets which fault comes from one random generator seeded
with `--seed`, drawn once per request in the order requests arrive: the same seed gives the same sequence of faults
(which request gets which depends on the order the writers' requests arrive in). GET /__faults/stats answers the
counts of each fault injected so far (never itself faulted). POST /__faults/rules with a JSON list of rules
({"method": "PUT", "contains": "_versions/", "fault": "503-after", "times": 1}) makes the next `times` requests whose
method is `method`, whose request line contains `contains` and whose body contains `body` (optional: a bulk
delete's keys are in its body) meet `fault` instead of a draw — "503", "500",
"reset-before", "reset-after", or "503-after" (forwarded to the server, then answered 503: done, but the client is
told it failed); GET /__faults/rules answers the rules left, with the times each has still to fire.

Plain asyncio sockets, HTTP/1.1: each request is forwarded on a fresh connection to the server and its answer
relayed with `Connection: close`, so the client opens a new connection for its next request.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import socket
import struct
import sys
from collections import Counter
from urllib.parse import urlsplit

SLOW_DOWN = (b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code>"
             b"<Message>Please reduce your request rate.</Message></Error>")
INTERNAL = (b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>InternalError</Code>"
            b"<Message>We encountered an internal error. Please try again.</Message></Error>")


class FaultProxy:
    def __init__(self, upstream: str, seed: int, p503: float, p500: float, pdelay: float, delay: float,
                 preset: float) -> None:
        parts = urlsplit(upstream)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.rng = random.Random(seed)
        self.p503, self.p500, self.pdelay, self.delay, self.preset = p503, p500, pdelay, delay, preset
        self.counts: Counter[str] = Counter()
        self.rules: list[dict] = []  # set through POST /__faults/rules: faults for chosen requests, not drawn

    def rule_for(self, head: bytes, body: bytes) -> str | None:
        """The fault a rule gives this request (its `times` counted down), if one matches."""
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        for rule in self.rules:
            if (rule["times"] > 0 and line.startswith(rule["method"] + " ") and rule["contains"] in line
                    and rule.get("body", "").encode() in body):
                rule["times"] -= 1
                return rule["fault"]
        return None

    def draw(self) -> str:
        """The fault for the next request (one draw of the seeded generator per request)."""
        x = self.rng.random()
        for name, p in (("503", self.p503), ("500", self.p500), ("delay", self.pdelay),
                        ("reset-before", self.preset / 2), ("reset-after", self.preset / 2)):
            if x < p:
                return name
            x -= p
        return "ok"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await read_message(reader, request=True)
                if request is None:
                    return
                head, body = request
                if head.split(b" ", 2)[1].startswith(b"/__faults/stats"):
                    payload = json.dumps(dict(self.counts)).encode()
                    writer.write(response(200, "OK", payload, b"application/json"))
                    await writer.drain()
                    continue
                if head.split(b" ", 2)[1].startswith(b"/__faults/rules"):
                    if head.startswith(b"POST "):
                        self.rules = [{"method": "PUT", "times": 1, **rule} for rule in json.loads(body)]
                    writer.write(response(200, "OK", json.dumps(self.rules).encode(), b"application/json"))
                    await writer.drain()
                    continue
                fault = self.rule_for(head, body) or self.draw()
                self.counts[fault] += 1
                if fault == "503":
                    writer.write(response(503, "Slow Down", SLOW_DOWN))
                    await writer.drain()
                    continue
                if fault == "500":
                    writer.write(response(500, "Internal Server Error", INTERNAL))
                    await writer.drain()
                    continue
                if fault == "reset-before":
                    reset(writer)
                    return
                answer = await self.forward(head, body)
                if fault == "reset-after":
                    reset(writer)
                    return
                if fault == "503-after":  # done by the server; the client is told to slow down and try again
                    writer.write(response(503, "Slow Down", SLOW_DOWN))
                    await writer.drain()
                    return
                if fault == "delay":
                    await asyncio.sleep(self.delay)  # past the client's timeout: it has given up on this answer
                writer.write(answer)
                await writer.drain()
                return  # `Connection: close` was said
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            return
        finally:
            try:
                writer.close()
            except Exception:  # noqa: BLE001 - already reset
                pass

    async def forward(self, head: bytes, body: bytes) -> bytes:
        """The server's whole answer to one request, its `Connection` header made `close`."""
        up_reader, up_writer = await asyncio.open_connection(self.host, self.port)
        try:
            up_writer.write(with_close(head) + body)
            await up_writer.drain()
            answer = await read_message(up_reader, request=False, method=head.split(b" ", 1)[0])
            if answer is None:
                raise ConnectionError("the server closed without answering")
            rhead, rbody = answer
            return with_close(rhead) + rbody
        finally:
            up_writer.close()


def with_close(head: bytes) -> bytes:
    """`head` (request or response line and headers, ending in a blank line) with `Connection: close`."""
    lines = [line for line in head.split(b"\r\n")[:-2] if not line.lower().startswith(b"connection:")]
    return b"\r\n".join([*lines, b"Connection: close", b"", b""])


def response(status: int, reason: str, body: bytes, kind: bytes = b"application/xml") -> bytes:
    return (f"HTTP/1.1 {status} {reason}\r\n".encode() + b"Content-Type: " + kind + b"\r\n"
            + f"Content-Length: {len(body)}\r\n".encode() + b"\r\n" + body)


def reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset (SO_LINGER 0), as a dropped connection looks to the client."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def read_message(reader: asyncio.StreamReader, request: bool, method: bytes = b"") -> tuple[bytes, bytes] | None:
    """One HTTP/1.1 message: (its head, through the blank line; its body, as sent, chunked or not). None at EOF."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    status = b"" if request else head.split(b" ", 2)[1]
    if not request and (method == b"HEAD" or status in (b"204", b"304") or status.startswith(b"1")):
        return head, b""
    if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
        body = b""
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";")[0].strip(), 16)
            chunk = await reader.readexactly(size + 2)
            body += size_line + chunk
            if size == 0:
                break
        return head, body
    if b"content-length" in headers:
        return head, await reader.readexactly(int(headers[b"content-length"]))
    if request:
        return head, b""
    return head, await reader.read()  # an answer without a length ends with the connection


async def serve(proxy: FaultProxy, host: str, port: int) -> None:
    server = await asyncio.start_server(proxy.handle, host, port)
    bound = server.sockets[0].getsockname()[1]
    print(f"http://{host}:{bound}", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--p503", type=float, default=0.10)
    parser.add_argument("--p500", type=float, default=0.0)
    parser.add_argument("--pdelay", type=float, default=0.05)
    parser.add_argument("--delay", type=float, default=1.5, help="seconds an answer is held (past the client timeout)")
    parser.add_argument("--preset", type=float, default=0.02)
    args = parser.parse_args(argv)
    proxy = FaultProxy(args.upstream, args.seed, args.p503, args.p500, args.pdelay, args.delay, args.preset)
    try:
        asyncio.run(serve(proxy, args.host, args.port))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
