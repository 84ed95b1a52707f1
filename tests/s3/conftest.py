"""A real local S3 server for the shared-store tests: scripts/local_s3.py (moto's server, conditional writes made
atomic), started once per test session in its own process; each test gets a fresh bucket and the standard AWS
environment pointing at it (AWS_ENDPOINT_URL, AWS_ALLOW_HTTP, keys, region) — the variables a user sets."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from chronomem.config import Settings, StoreURI
from chronomem.embed import FastEmbedder
from chronomem.service import MemoryService

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "local_s3.py"


def start_local_s3(*flags: str) -> tuple[subprocess.Popen[str], str]:
    """scripts/local_s3.py on a free port: (its process, its endpoint URL)."""
    pytest.importorskip("moto", reason="the local S3 server needs moto[server] (the `test` extra)")
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--port", "0", *flags],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    assert proc.stdout is not None
    endpoint = proc.stdout.readline().strip()
    if not endpoint.startswith("http://"):
        proc.kill()
        pytest.fail("the local S3 server did not start")
    return proc, endpoint


def aws_env(endpoint: str) -> dict[str, str]:
    """The environment a process needs to use the local server's buckets (scripts/local_s3.py says it)."""
    return local_s3_script().client_env(endpoint)


def make_bucket(endpoint: str, prefix: str = "mem") -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:12]}"
    local_s3_script().create_buckets(endpoint, [name])
    return name


def local_s3_script() -> Any:
    """scripts/local_s3.py as a module (scripts/ is no package: on the path once, as eval/bench_s3.py does)."""
    if str(SCRIPT.parent) not in sys.path:
        sys.path.insert(0, str(SCRIPT.parent))
    import local_s3

    return local_s3


@pytest.fixture(scope="session")
def local_s3() -> Iterator[str]:
    proc, endpoint = start_local_s3()
    try:
        yield endpoint
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def s3_env(local_s3: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The AWS environment of the local server, set in this process too."""
    env = aws_env(local_s3)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


@pytest.fixture
def s3_uri(local_s3: str, s3_env: dict[str, str]) -> str:
    """A store URI in a fresh bucket of the local server."""
    return f"s3://{make_bucket(local_s3)}/team/store"


@pytest.fixture
def s3_svc(s3_uri: str, embedder: FastEmbedder, clock) -> MemoryService:
    settings = Settings(store_path=StoreURI(s3_uri), project="proj")
    return MemoryService(settings, embedder=embedder, clock=clock)


def cli_env(s3_env: dict[str, str], tmp: Path) -> dict[str, str]:
    """The environment a `chronomem` subprocess gets: this one's, the AWS variables, a project, no CHRONOMEM_HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHRONOMEM_HOME", "AWS_"))}
    env.update(s3_env)
    env["CHRONOMEM_PROJECT"] = "proj"
    env["PYTHONPATH"] = str(REPO)
    env["HOME"] = str(tmp)
    return env


@contextmanager
def fault_proxy(upstream: str, *flags: str) -> Iterator[str]:
    """tests/s3/faultproxy.py in a subprocess in front of `upstream`, with its command-line `flags`: its endpoint."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.s3.faultproxy", "--upstream", upstream, *flags],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    assert proc.stdout is not None
    endpoint = proc.stdout.readline().strip()
    assert endpoint.startswith("http://"), "the fault proxy did not start"
    try:
        yield endpoint
    finally:
        proc.kill()
        proc.wait()
