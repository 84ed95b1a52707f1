"""`chronomem purge` on a store in object storage (the local S3 server): the purged text leaves every object in
the bucket and every version, while a writer on the same store keeps writing — nothing it was told is stored
goes missing — and the store opens and takes writes afterwards."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chronomem.config import StoreURI
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.storage.portable import erase, plan_purge
from chronomem.storage.remote import objects_of
from chronomem.tools import forget, history, recall, remember
from tests.storage.test_portable import MARKER, build_history

from .conftest import REPO, cli_env
from .test_several_writers import acked_ids, open_svc, spawn

#: A word no other memory holds, to look for in the bucket's bytes (the slow test's; the other uses MARKER).
SECRET = "Quokkazebra"


def objects_holding(location: StoreURI, word: str) -> list[str]:
    """The store's objects whose bytes hold `word` (case-insensitive; the full-text index lower-cases)."""
    objects = objects_of(location)
    needle = word.lower().encode()
    return [name for name in objects.names("") if needle in (objects.get(name) or b"").lower()]


def versions_holding(svc: MemoryService, word: str) -> list[int]:
    """The table versions (every one still in the store) with a row whose text holds `word`."""
    dataset = svc.store._table.to_lance()
    found = []
    for version in dataset.versions():
        rows = dataset.checkout_version(version["version"]).to_table(columns=["content", "reason"]).to_pylist()
        if any(word.lower() in f"{r['content']} {r['reason']}".lower() for r in rows):
            found.append(version["version"])
    return found


@pytest.mark.slow  # ~40 remembers and two rewrites on the local S3 server (~60 s)
@pytest.mark.parametrize("quoted", [False, True], ids=["one-file", "a-reason-quotes-it"])
def test_purge_of_a_shared_store_leaves_no_trace(s3_svc: MemoryService, clock, quoted: bool) -> None:
    """The local store's purge test (tests/storage/test_portable.py) on a bucket: the purged text is in no object
    (data, deletion, index files) and no version. `one-file`: the purged rows are a few in one data file, which
    only the purge's own compaction rewrites; `a-reason-quotes-it`: a surviving memory's reason quoted the text
    and is blanked (an update)."""
    ids = build_history(s3_svc, clock)
    kept = remember(s3_svc, "An unrelated later note about linting with ruff.")
    if quoted:
        old = remember(s3_svc, "Releases were signed by hand.")
        forget(s3_svc, old.id, f"signing is automated now, see the {MARKER} note")
    for n in range(30):  # so that the purged rows are under a tenth of their file, which Lance's own
        remember(s3_svc, f"Service {n} listens on port {9000 + n}.")  # compaction would then leave as it is
    with s3_svc.writing():
        s3_svc.store.optimize()  # one data file, a full-text index segment and a version that hold the text
    location = s3_svc.store.path
    assert isinstance(location, StoreURI)
    assert objects_holding(location, MARKER), "the check below must be able to find the text"
    with s3_svc.writing():
        plan = plan_purge(s3_svc.store, query=MARKER.upper())
        assert ids["d"] in plan.ids and ids["d_fact"] in plan.ids and ids["e_fact"] not in plan.ids
        assert bool(plan.scrub_reasons) == quoted
        report = erase(s3_svc.store, plan)
    assert report.removed == len(plan.ids) and report.kept == s3_svc.store.count()
    assert report.reasons_scrubbed == len(plan.scrub_reasons)
    assert objects_holding(location, MARKER) == []
    assert objects_holding(location, "signing secret lives in vault") == []
    assert versions_holding(s3_svc, MARKER) == []
    again = open_svc(str(location), s3_svc.embedder)  # another server opening the store afterwards
    assert again.store.find(Filter().ids(plan.ids)) == []
    assert recall(again, "how do we run the tests").results[0].object == "nox -s tests"
    assert recall(again, "linting with ruff").results[0].id == kept.id
    chain = history(again, subject="proj", predicate="signing_secret_path")
    assert [e.object for e in chain.entries] == ["kms alias/release"]
    after = remember(again, "Written after the purge.")
    assert again.store.get(after.id) is not None


@pytest.mark.slow  # a writer process and the `chronomem purge` process, each loading the model
def test_purge_while_a_writer_writes_loses_nothing_acknowledged(
    s3_uri: str, s3_env: dict[str, str], embedder, tmp_path: Path
) -> None:
    svc = open_svc(s3_uri, embedder)
    secrets = [remember(svc, f"Note {n}: the old VPN key is {SECRET}-{n}.").id for n in range(3)]
    writes = 150  # enough that the writer is still writing when the purge is done
    writer = spawn(s3_uri, "w", writes, "chunks", s3_env)
    assert writer.stdout is not None
    acked: list[str] = []
    while len(acked) < 5:  # the writer is under way
        line = writer.stdout.readline()
        assert line, writer.stderr.read() if writer.stderr else "the writer died"
        acked += acked_ids(line)
    started = time.monotonic()
    purge = subprocess.run(
        [sys.executable, "-m", "chronomem", "--store", s3_uri, "purge", "--yes", "--query", SECRET, "--json"],
        cwd=REPO, env=cli_env(s3_env, tmp_path), capture_output=True, text=True, timeout=600,
    )
    purge_seconds = time.monotonic() - started
    assert writer.poll() is None, "the writer finished before the purge did: the two did not overlap"
    out, err = writer.communicate(timeout=900)
    assert purge.returncode == 0, purge.stderr
    assert json.loads(purge.stdout)["purged"] == 3
    assert writer.returncode == 0, err[-2000:]
    lines = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    acked += acked_ids(out)
    failed = [entry["error"] for entry in lines if "error" in entry]
    assert len(acked) + len(failed) == writes
    svc = open_svc(s3_uri, embedder)  # the store opens
    assert svc.store.ids_exist(acked) == set(acked), "an acknowledged memory is missing after the purge"
    assert svc.store.ids_exist(secrets) == set()
    location = svc.store.path
    assert isinstance(location, StoreURI)
    assert objects_holding(location, SECRET) == [] and versions_holding(svc, SECRET) == []
    print(f"purge {purge_seconds:.1f} s while the writer wrote: {len(acked)} acknowledged (all present), "
          f"{len(failed)} refused loudly: {failed[:1]}")
