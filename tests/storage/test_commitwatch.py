"""A store skips LanceDB's version check only when no commit can have happened since the version it holds."""

from __future__ import annotations

import random
from pathlib import Path

from chronomem.search.engine import open_store, vector_search
from chronomem.storage import Filter
from chronomem.storage.commitwatch import CommitWatch
from tests.search.test_readindex import DIM, make_rows, rand_vector


def test_manifest_names_follow_both_layouts(tmp_path: Path) -> None:
    assert CommitWatch(tmp_path).manifest(1).name == "18446744073709551614.manifest"
    assert CommitWatch(tmp_path, v2_names=False).manifest(7).name == "7.manifest"


def test_only_the_held_version_present_and_the_next_absent_means_unmoved(tmp_path: Path) -> None:
    watch = CommitWatch(tmp_path)
    assert watch.moved(None)
    assert watch.moved(3), "no manifest of version 3: cleaned up, so the table moved on"
    watch.manifest(3).write_text("x")
    assert not watch.moved(3)
    watch.manifest(4).write_text("x")  # a commit
    assert watch.moved(3) and not watch.moved(4)
    watch.manifest(3).unlink()  # cleanup of the old version
    assert not watch.moved(4)


def test_a_folder_that_cannot_be_read_means_moved(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    assert CommitWatch(not_a_folder).moved(1)  # stat fails with ENOTDIR, not "no such file"


def test_the_watch_reads_the_tables_real_manifests(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s", DIM, "test", read_index_rows=0)
    store.add(make_rows(random.Random(1), 3))
    assert store._commits.manifest(store._version).is_file()
    assert not store._commits.moved(store._version), "our own commit leaves nothing to reload"
    assert store._version == store._handle.version


def test_another_process_commit_is_seen_by_the_next_read(tmp_path: Path) -> None:
    indexed = open_store(tmp_path / "s", DIM, "test", read_index_rows=10_000)
    assert indexed.wait_for_read_index()
    plain = open_store(tmp_path / "s", DIM, "test", read_index_rows=0)
    rng = random.Random(7)
    indexed.add(make_rows(rng, 20))
    vector_search(indexed, rand_vector(rng), Filter(), 5)
    assert not indexed._commits.moved(indexed._version)
    arrived = make_rows(rng, 3)
    plain.add(arrived)  # another process commits right after
    assert indexed._commits.moved(indexed._version)
    found = {r.id for r, _ in vector_search(indexed, arrived[1].vector, Filter(), 5)}
    assert arrived[1].id in found
    assert indexed.read_index.version == plain._table.version
    assert indexed.count() == plain.count() == 23  # LanceDB's own answers see it too


def test_writers_on_two_handles_take_turns_without_losing_rows(tmp_path: Path) -> None:
    one = open_store(tmp_path / "s", DIM, "test", read_index_rows=10_000)
    two = open_store(tmp_path / "s", DIM, "test", read_index_rows=0)
    rng = random.Random(3)
    written = []
    for turn in range(6):
        rows = make_rows(rng, 2)
        (one if turn % 2 else two).add(rows)  # each writes on a handle that has not seen the other's commit
        written += [r.id for r in rows]
    assert one.count() == two.count() == len(written)
    assert set(one.ids_exist(written)) == set(two.ids_exist(written)) == set(written)
