"""What coordinates writers of a store in object storage: one consolidator at a time through the lease (others
skip), its state kept in the bucket, and the commands that only work on a local directory refusing in one line."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from chronomem.config import StoreURI
from chronomem.consolidate.runner import Consolidator
from chronomem.consolidate.watermark import STATE_FILE
from chronomem.service import MemoryService
from chronomem.storage.locks import CONSOLIDATE_LOCK_NAME, store_lock
from chronomem.storage.filters import Filter
from chronomem.storage.remote import Lease, LeaseLost, objects_of
from chronomem.tools import recall, remember

from .conftest import REPO, cli_env

#: In the full suite (.ci/run), not the quick one: consolidators and lapsed leases on the local S3 server (~5 s). The
#: quick run keeps a shared store's round trip, its group commit and catch-up (issue 46: the quick run within 150 s
#: on two cores).
pytestmark = pytest.mark.slow


def test_one_consolidator_at_a_time_and_its_state_in_the_bucket(s3_svc: MemoryService) -> None:
    remember(s3_svc, "We decided the API gateway is Envoy.", facts=[
        {"subject": "api gateway", "predicate": "is", "object": "Envoy"}])
    remember(s3_svc, "The staging database is Postgres 16 on db-stage-2.")
    location = s3_svc.store.path
    assert isinstance(location, StoreURI)
    other = store_lock(location, CONSOLIDATE_LOCK_NAME)  # another server's consolidator, holding the lease
    other.acquire()
    try:
        assert Consolidator(s3_svc, llm=None).step() is None, "a second consolidator must skip, not run"
    finally:
        other.release()
    steps = Consolidator(s3_svc, llm=None).run_to_completion()
    assert steps and steps[0].did == "extract rules"
    state = objects_of(location).get(STATE_FILE)
    assert state is not None and b"rules" in state, "the consolidation state is an object in the store"
    assert not Path(STATE_FILE).exists()
    assert recall(s3_svc, "which database does staging use?").results


@pytest.mark.parametrize("command", [["backup"], ["reembed", "--yes"]])
def test_local_only_commands_refuse_a_remote_store(
    command: list[str], s3_uri: str, s3_env: dict[str, str], tmp_path: Path
) -> None:
    done = subprocess.run([sys.executable, "-m", "chronomem", "--store", s3_uri, *command], cwd=REPO,
                          env=cli_env(s3_env, tmp_path), capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "local store only" in lines[0] and s3_uri in lines[0], done.stderr


def test_a_write_after_the_write_lease_lapsed_is_refused(s3_svc: MemoryService) -> None:
    """The server's commit is fenced by its write lease: stalled past the lease while another server took it over,
    its remember fails in one line and writes nothing."""
    remember(s3_svc, "The store is open.")
    location = s3_svc.store.path
    assert isinstance(location, StoreURI)
    s3_svc._file_lock = Lease(objects_of(location), "write", seconds=1.0)  # the service's own, with a short lease
    with s3_svc.writing():
        stalled = s3_svc._file_lock
        stalled._stop.set()  # as if the process were paused: its renewal does not run
        stalled._renewer.join()
        time.sleep(1.2)
        other = Lease(objects_of(location), "write", seconds=30.0)
        other.acquire(timeout=10)
        with pytest.raises(LeaseLost, match="expired"):
            remember(s3_svc, "Written by a stalled server.")
    other.release()
    assert not [r for r in s3_svc.store.find(Filter().kinds(["chunk"])) if "stalled" in r.content]
    assert remember(s3_svc, "Written once the lease is back.").id


def test_a_consolidator_whose_lease_lapsed_commits_nothing(s3_svc: MemoryService, monkeypatch) -> None:
    """A consolidation step that stalled past its lease while another consolidator took over: its next commit is
    refused; a remember from another thread of the same server meanwhile is not."""
    import chronomem.storage.remote as remote

    remember(s3_svc, "The store is open.")
    location = s3_svc.store.path
    assert isinstance(location, StoreURI)
    monkeypatch.setattr(remote, "LEASE_SECONDS", 1.0)
    consolidator = Consolidator(s3_svc, llm=None)
    seen: dict[str, object] = {}

    def stalled_step(store):
        lease = consolidator.lease
        lease._stop.set()  # paused: no renewal
        lease._renewer.join()
        time.sleep(1.2)
        other = Lease(objects_of(location), "consolidate", seconds=30.0)
        other.acquire(timeout=10)  # another server's consolidator takes over
        worker = threading.Thread(target=lambda: seen.update(call=remember(s3_svc, "A call meanwhile.")))
        worker.start()
        worker.join()
        with pytest.raises(LeaseLost):
            remember(s3_svc, "Committed by the stalled consolidator.")
        other.release()
        return None

    consolidator.step(stalled_step)
    assert seen["call"].id  # type: ignore[attr-defined]
    contents = [r.content for r in s3_svc.store.find(Filter().kinds(["chunk"]))]
    assert "A call meanwhile." in contents and "Committed by the stalled consolidator." not in contents
