"""A local S3-compatible server for tests, benchmarks and trying a team store offline: moto's server (the
`moto[server]` package, in the `test` extra) with conditional writes made atomic.

moto answers `If-None-Match: *` with 412 when the object exists, but checks and writes without a lock, so two
racing creates of one key can both win (about 1 in 300 keys under races, measured with moto 5.2): Lance's
commits and chronomem's leases rely on exactly one winning. This server runs each conditional request under
one lock. `--ignore-conditional` instead drops the conditional headers (a store that does not honour them:
the negative control `chronomem doctor` must flag). It also counts requests per operation
(GET /__local_s3/stats, POST /__local_s3/reset), for eval/bench_s3.py.

    python scripts/local_s3.py --port 9000           # prints the endpoint URL on stdout, then serves
    AWS_ENDPOINT_URL=http://127.0.0.1:9000 AWS_ALLOW_HTTP=true AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test \\
        AWS_REGION=us-east-1 chronomem --store s3://team-memory/store remember "…"

Buckets named with `--bucket` (repeatable) are created at start; moto accepts any key pair.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections import Counter
from typing import Any

CONDITIONAL = ("HTTP_IF_NONE_MATCH", "HTTP_IF_MATCH")


class LocalS3:
    """moto's WSGI app, with conditional requests serialised (or ignored) and requests counted."""

    def __init__(self, ignore_conditional: bool = False) -> None:
        from moto.server import DomainDispatcherApplication, create_backend_app

        self.app = DomainDispatcherApplication(create_backend_app)
        self.ignore_conditional = ignore_conditional
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.count_lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        if path.startswith("/__local_s3/"):
            return self._control(environ, start_response, path)
        with self.count_lock:
            self.counts[_operation(environ)] += 1
        conditional = any(h in environ for h in CONDITIONAL)
        if conditional and self.ignore_conditional:
            for header in CONDITIONAL:
                environ.pop(header, None)
            conditional = False
        if not conditional:
            return self.app(environ, start_response)
        with self.lock:  # check-and-write of one conditional request at a time
            return list(self.app(environ, start_response))

    def _control(self, environ: dict[str, Any], start_response: Any, path: str) -> Any:
        if path.endswith("/reset"):
            with self.count_lock:
                self.counts.clear()
        with self.count_lock:
            body = json.dumps(dict(self.counts)).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]


def _operation(environ: dict[str, Any]) -> str:
    """A request's kind: its method, `LIST` for a bucket listing, `PUT-IF` for a conditional create."""
    method = environ.get("REQUEST_METHOD", "")
    query = environ.get("QUERY_STRING", "")
    target = environ.get("HTTP_X_AMZ_TARGET")
    if target:
        return "DDB:" + target.rsplit(".", 1)[-1]
    if method == "GET" and ("list-type" in query or environ.get("PATH_INFO", "").rstrip("/").count("/") <= 1):
        return "LIST"
    if method == "PUT" and "HTTP_IF_NONE_MATCH" in environ:
        return "PUT-IF"
    return method


def serve(host: str = "127.0.0.1", port: int = 0, ignore_conditional: bool = False) -> tuple[Any, str]:
    """Start the server on a thread; (the werkzeug server, its endpoint URL)."""
    import logging

    from moto.moto_server.werkzeug_app import MotoRequestHandler
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request

    server = make_server(host, port, LocalS3(ignore_conditional), threaded=True, request_handler=MotoRequestHandler)
    threading.Thread(target=server.serve_forever, name="local-s3", daemon=True).start()
    return server, f"http://{host}:{server.server_address[1]}"


def client_env(endpoint: str) -> dict[str, str]:
    """The environment a chronomem process needs to use this server's buckets (moto accepts any key pair)."""
    return {"AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": "true", "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1"}


def create_buckets(endpoint: str, names: list[str]) -> None:
    import boto3

    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="test", aws_secret_access_key="test")
    for name in names:
        client.create_bucket(Bucket=name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000, help="0: any free port (printed)")
    parser.add_argument("--bucket", action="append", default=[], help="create this bucket at start (repeatable)")
    parser.add_argument("--ignore-conditional", action="store_true", help="drop If-None-Match/If-Match (a broken store)")
    args = parser.parse_args(argv)
    server, endpoint = serve(args.host, args.port, args.ignore_conditional)
    create_buckets(endpoint, args.bucket)
    print(endpoint, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
