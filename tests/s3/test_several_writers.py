"""Several processes writing one store in object storage (the local S3 server), each its own `MemoryService` with
its own LanceDB connection — as servers on different machines would be; they share nothing but the bucket.

N remembers per writer: the issue's 200 in .ci/run, 40 by default (within minutes on two shared cores; every commit
contends just the same, but a longer run is what shows starvation: see PER_WRITER)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from chronomem.config import Settings, StoreURI
from chronomem.service import MemoryService
from chronomem.storage.filters import Filter
from chronomem.tools import history, recall, remember

from .conftest import REPO

pytestmark = pytest.mark.slow

#: CHRONOMEM_S3_WRITES sets it; .ci/run runs the issue's 200 (a longer run is what shows a writer starved), the
#: default stays 40 so that a developer's full suite stays short. 200 on 2026-11-29 (after the read index caught up
#: from new fragments only): 800 acknowledged, 800 present, none doubled, none refused, 194.5 s for this test and
#: 240 s for the file on idle cores (it was 37.6 min for the file on 2026-11-27, under load: eval/results/s3.md).
PER_WRITER = int(os.environ.get("CHRONOMEM_S3_WRITES", "40"))
#: How long `finish` waits for the writers: start-up, then ~10 s a write at worst on 2 shared cores.
FINISH_TIMEOUT = 900 + 10 * PER_WRITER


def spawn(uri: str, tag: str, count: int, mode: str, env: dict[str, str]) -> subprocess.Popen[str]:
    full = {**os.environ, **env, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.s3.worker", uri, tag, str(count), mode],
        cwd=REPO, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def finish(
    procs: list[subprocess.Popen[str]], timeout: float = FINISH_TIMEOUT
) -> tuple[list[list[str]], list[str]]:
    """Every writer run to its end: the ids each acknowledged, and the remembers refused in one line (not
    acknowledged: e.g. the write lease waited for past WRITE_LOCK_TIMEOUT) — the tests check what was
    acknowledged first, so a run with refusals still says whether anything acknowledged went missing."""
    done = [proc.communicate(timeout=timeout) for proc in procs]
    for proc, (_, err) in zip(procs, done, strict=True):
        assert proc.returncode == 0, err[-2000:]
    refused = [line for out, _ in done for line in out.splitlines() if line.startswith('{"error"')]
    return [acked_ids(out) for out, _ in done], refused


def no_refusals(refused: list[str]) -> None:
    assert not refused, f"{len(refused)} remembers were refused (loudly; not acknowledged), the first: {refused[0]}"


def acked_ids(out: str) -> list[str]:
    """The ids a worker printed as acknowledged (its lines for failed remembers say "error" instead)."""
    return [entry["id"] for entry in map(json.loads, (x for x in out.splitlines() if x.startswith("{"))) if "id" in entry]


def open_svc(uri: str, embedder) -> MemoryService:
    return MemoryService(Settings(store_path=StoreURI(uri), project="proj"), embedder=embedder)


@pytest.mark.timeout(FINISH_TIMEOUT + 120)  # `finish`'s own wait, and the store's read-back
def test_four_writers_lose_and_double_nothing(s3_uri: str, s3_env: dict[str, str], embedder) -> None:
    open_svc(s3_uri, embedder).store  # created once: this test is about commits, the next about creation
    procs = [spawn(s3_uri, f"w{n}", PER_WRITER, "chunks", s3_env) for n in range(4)]
    acked, refused = finish(procs)
    ids = [i for ids in acked for i in ids]
    store = open_svc(s3_uri, embedder).store
    rows = store.find(Filter().kinds(["chunk"]))
    stored = [r.id for r in rows]
    assert sorted(set(ids) - set(stored)) == [], "acknowledged memories are missing"
    assert len(stored) == len(set(stored)), "a memory is stored twice"
    assert len({r.content for r in rows}) == len(rows), "a text is stored twice"
    print(f"{len(ids)} acknowledged, all present, no duplicate; {len(refused)} refused")
    no_refusals(refused)
    assert len(ids) == len(stored) == 4 * PER_WRITER


def test_two_writers_on_one_slot_leave_one_current_fact(s3_uri: str, s3_env: dict[str, str], embedder) -> None:
    open_svc(s3_uri, embedder).store
    per = 12
    no_refusals(finish([spawn(s3_uri, tag, per, "slot", s3_env) for tag in ("a", "b")])[1])
    svc = open_svc(s3_uri, embedder)
    chain = history(svc, subject="proj", predicate="deploy target")
    statuses = [e.status for e in chain.entries]
    assert statuses.count("current") == 1, statuses
    assert len(chain.entries) == 2 * per and statuses[-1] == "current"
    assert all(s == "ended" for s in statuses[:-1]), statuses
    objects = [e.object for e in chain.entries]
    assert len(set(objects)) == 2 * per, "every statement is in the chain once"
    found = recall(svc, "what is the deploy target?")
    facts = [r for r in found.results if r.kind == "fact"]
    assert [f.object for f in facts][:1] == [objects[-1]]


def test_eight_servers_open_a_fresh_store_at_once(s3_uri: str, s3_env: dict[str, str], embedder) -> None:
    procs = [spawn(s3_uri, f"o{n}", 1, "chunks", s3_env) for n in range(8)]
    acked, refused = finish(procs)
    no_refusals(refused)
    assert all(len(ids) == 1 for ids in acked)
    store = open_svc(s3_uri, embedder).store
    assert store.count() == 8
    assert sorted(store.ids_exist([i for ids in acked for i in ids])) == sorted(i for ids in acked for i in ids)


def test_kill_9_mid_commit_loses_nothing_acknowledged(s3_uri: str, s3_env: dict[str, str], embedder) -> None:
    open_svc(s3_uri, embedder).store
    proc = spawn(s3_uri, "k", 500, "chunks", s3_env)
    assert proc.stdout is not None
    acked: list[str] = []
    while len(acked) < 8:
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else "the writer died"
        acked.append(json.loads(line)["id"])
    time.sleep(0.05)  # into its next commit
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    acked += acked_ids(proc.stdout.read())
    svc = open_svc(s3_uri, embedder)
    assert set(acked) <= svc.store.ids_exist(acked), "an acknowledged memory is missing after kill -9"
    after = remember(svc, "Written after the writer was killed.")  # the dead holder's lease expires; the store opens
    assert svc.store.get(after.id) is not None
