"""What coordinates writers of a store in object storage: one consolidator at a time through the lease (others
skip), its state kept in the bucket, and the commands that only work on a local directory refusing in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chronomem.config import StoreURI
from chronomem.consolidate.runner import Consolidator
from chronomem.consolidate.watermark import STATE_FILE
from chronomem.service import MemoryService
from chronomem.storage.locks import CONSOLIDATE_LOCK_NAME, store_lock
from chronomem.storage.remote import objects_of
from chronomem.tools import recall, remember

from .conftest import REPO, cli_env


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


@pytest.mark.parametrize("command", [["purge", "--yes", "--project", "proj"], ["backup"], ["reembed", "--yes"]])
def test_local_only_commands_refuse_a_remote_store(
    command: list[str], s3_uri: str, s3_env: dict[str, str], tmp_path: Path
) -> None:
    done = subprocess.run([sys.executable, "-m", "chronomem", "--store", s3_uri, *command], cwd=REPO,
                          env=cli_env(s3_env, tmp_path), capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "local store only" in lines[0] and s3_uri in lines[0], done.stderr
