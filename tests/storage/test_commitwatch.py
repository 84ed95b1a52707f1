"""A read skips LanceDB's version listing only when no commit can have happened since the last check."""

from __future__ import annotations

import random
import time
from pathlib import Path

from chronomem.storage import Filter, MemoryStore
from chronomem.storage.commitwatch import CommitWatch
from tests.storage.test_readindex import DIM, make_rows, rand_vector


def test_a_settled_stamp_is_trusted_until_the_folder_changes(tmp_path: Path) -> None:
    folder = tmp_path / "_versions"
    folder.mkdir()
    (folder / "1.manifest").write_text("x")
    watch = CommitWatch(folder, settle_ns=50_000_000)
    fresh = watch.stamp()
    watch.checked(fresh)
    assert not watch.unchanged(fresh), "a stamp younger than the settle time is not trusted"
    time.sleep(0.1)
    settled = watch.stamp()
    assert settled == fresh
    watch.checked(settled)
    assert watch.unchanged(watch.stamp())
    (folder / "2.manifest").write_text("x")  # a commit
    assert not watch.unchanged(watch.stamp())
    watch.checked(watch.stamp())
    watch.forget()
    assert not watch.unchanged(watch.stamp())


def test_a_missing_folder_always_means_a_full_check(tmp_path: Path) -> None:
    watch = CommitWatch(tmp_path / "absent", settle_ns=0)
    watch.checked(watch.stamp())
    assert watch.stamp() is None
    assert not watch.unchanged(watch.stamp())


def test_another_process_commit_after_a_trusted_check_is_seen(tmp_path: Path) -> None:
    indexed = MemoryStore.open(tmp_path / "s", DIM, "test", read_index_rows=10_000)
    assert indexed.wait_for_read_index()
    plain = MemoryStore.open(tmp_path / "s", DIM, "test", read_index_rows=0)
    assert indexed._commits.versions_dir.is_dir(), "the watch looks at the table's real versions folder"
    indexed._commits.settle_ns = 50_000_000
    rng = random.Random(7)
    indexed.add(make_rows(rng, 20))
    time.sleep(0.1)
    query = rand_vector(rng)
    indexed.vector_search(query, Filter(), 5)  # a full check, stamp now settled
    assert indexed._commits.unchanged(indexed._commits.stamp())
    arrived = make_rows(rng, 3)
    plain.add(arrived)  # another process commits right after
    found = {r.id for r, _ in indexed.vector_search(arrived[1].vector, Filter(), 5)}
    assert arrived[1].id in found
    assert indexed.read_index.version == plain._table.version
