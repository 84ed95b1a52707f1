"""A reopened store's read index starts from its snapshot (search/snapshot.py) and answers exactly what a fresh
build answers: the same rows, the same scores, every write since seen (this process's and another's); a
snapshot that is damaged, of another format or of another table is ignored with one log line and no traceback,
and the index is built from the table as without snapshots.

Real LanceDB stores in temp dirs; row vectors are the shipped model's embeddings of varied notes (with a little
noise, so the store holds more rows than the notes), and the queries are embedded by it too.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import random
import struct
import subprocess
import sys
import zlib
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chronomem.embed import FastEmbedder
from chronomem.records import UTC, MemoryRecord, new_id
from chronomem.search import densematrix, snapshot
from chronomem.search.engine import SNAPSHOT_ENV, hybrid_search, open_store, text_search, vector_search
from chronomem.storage import Filter, MemoryStore
from chronomem.storage.store import OPEN_BUILD_ROWS

T0 = datetime(2025, 5, 1, tzinfo=UTC)
ROWS = 2_600  # more than OPEN_BUILD_ROWS: the store alone would build its copy after the first search
SUBJECTS = ["payments-api", "ledger-svc", "catalog", "webhooks", "the CI pipeline", "auth-gateway", "src/app/main.py"]
FACTS = [
    "listens on port {n}",
    "is owned by team {w}",
    "was deployed on Tuesday by {w}",
    "times out after {n} seconds under load",
    "reads its settings from config/{w}.yaml",
    "pins Python 3.{n} and uv 0.{n}",
    "caches results in Redis for {n} minutes",
    "failed its nightly run because of {w}",
]
WORDS = ["alice", "growth", "infra", "flaky-retry", "parseHTTPDate", "ERR_LEDGER_TIMEOUT", "nginx", "kafka"]
QUERIES = ["which port does payments-api listen on", "who owns the ledger", "flaky nightly run", "redis cache minutes", "parseHTTPDate"]
FILTERS = [
    Filter(),
    Filter().live(T0 + timedelta(days=20), T0 + timedelta(days=40)),
    Filter().projects(["alpha"]).kinds(["fact"]),
    Filter().live(T0 + timedelta(days=60), T0 + timedelta(days=60)).originals(),
]


@pytest.fixture(scope="module")
def base(embedder: FastEmbedder) -> tuple[list[str], np.ndarray]:
    """Distinct notes and their embeddings, which rows vary."""
    rng = random.Random(7)
    texts = sorted({f"{rng.choice(SUBJECTS)} {rng.choice(FACTS).format(n=rng.randrange(2, 99), w=rng.choice(WORDS))}" for _ in range(400)})
    return texts, np.asarray(embedder.embed(texts), dtype=np.float32)


def make_rows(base: tuple[list[str], np.ndarray], n: int, seed: int) -> list[MemoryRecord]:
    texts, vectors = base
    rng = random.Random(seed)
    noise = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        j = rng.randrange(len(texts))
        valid = T0 + timedelta(days=rng.randrange(0, 60), minutes=i)
        vector = vectors[j] + noise.normal(0, 0.02, vectors.shape[1]).astype(np.float32)
        rows.append(
            MemoryRecord(
                id=new_id(valid),
                kind=rng.choice(["chunk", "fact"]),
                project=rng.choice(["alpha", "beta"]),
                content=f"{texts[j]} (note {i})",
                valid_at=valid,
                created_at=valid + timedelta(hours=rng.randrange(0, 24)),
                invalid_at=valid + timedelta(days=rng.randrange(1, 30)) if rng.random() < 0.3 else None,
                revision_of=new_id() if rng.random() < 0.05 else None,
                paths=["src/app/main.py"] if rng.random() < 0.2 else [],
                tags=["ops"] if rng.random() < 0.1 else [],
                vector=(vector / np.linalg.norm(vector)).tolist(),
                embed_model="test",
            )
        )
    return rows


def opened(path: Path, dim: int, snapshots: bool, monkeypatch: pytest.MonkeyPatch) -> MemoryStore:
    with monkeypatch.context() as patch:
        if not snapshots:
            patch.setenv(SNAPSHOT_ENV, "0")
        return open_store(path, dim, "test", read_index_rows=100_000)


def answers(store: MemoryStore, embedder: FastEmbedder) -> list[Any]:
    """Every search of every query and filter: ids, scores and rows."""
    out: list[Any] = []
    for query, vector in zip(QUERIES, embedder.embed(QUERIES), strict=True):
        for flt in FILTERS:
            dense = vector_search(store, vector, flt, 15)
            lexical = text_search(store, query, flt, 15)
            both_dense, both_lexical, contains = hybrid_search(store, vector, query, flt, 15)
            out.append(
                (
                    [(r.id, s) for r, s in dense],
                    [(r.id, s) for r, s in lexical],
                    [(r.id, s) for r, s in both_dense],
                    [(r.id, s) for r, s in both_lexical],
                    contains,
                    [r.raw() for r, _ in lexical],
                )
            )
    return out


@pytest.fixture
def saved(tmp_path: Path, base: tuple[list[str], np.ndarray], monkeypatch: pytest.MonkeyPatch) -> tuple[Path, int]:
    """A store of ROWS rows with a snapshot of its read index at its current version."""
    path = tmp_path / "store"
    dim = base[1].shape[1]
    store = opened(path, dim, True, monkeypatch)
    rows = make_rows(base, ROWS, seed=1)
    store.add(rows[: ROWS // 2])
    store.add(rows[ROWS // 2 :])
    assert store.wait_for_read_index()
    snapshot.write(store.read_index, path)  # type: ignore[arg-type]
    assert snapshot.snapshot_path(path).exists()
    return path, dim


def snapshot_logs(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == snapshot.__name__ and r.levelno >= logging.INFO]


@pytest.mark.parametrize("shortlist", [False, True], ids=["exact", "projection-shortlist"])
def test_a_reopened_store_answers_from_its_snapshot_as_a_fresh_build_does(
    tmp_path: Path, base: tuple[list[str], np.ndarray], embedder: FastEmbedder, monkeypatch: pytest.MonkeyPatch, shortlist: bool
) -> None:
    if shortlist:  # the projection (its axes, projected codes) is saved and restored too
        monkeypatch.setattr(densematrix, "SHORTLIST_MIN_ROWS", 1_000)
    path, dim = tmp_path / "store", base[1].shape[1]
    first = opened(path, dim, True, monkeypatch)
    first.add(make_rows(base, ROWS, seed=2))
    assert first.wait_for_read_index()
    assert (first.read_index._dense._axes is not None) == shortlist  # type: ignore[union-attr]
    snapshot.write(first.read_index, path)  # type: ignore[arg-type]

    reopened = opened(path, dim, True, monkeypatch)
    assert ROWS > OPEN_BUILD_ROWS and reopened.read_index is not None  # loaded at open: no build, no LanceDB search
    assert reopened.read_index.version == reopened.table.version
    rebuilt = opened(path, dim, False, monkeypatch)
    assert rebuilt.wait_for_read_index()
    assert answers(reopened, embedder) == answers(rebuilt, embedder)


def resident_share(path: Path, section: str) -> float:
    """The share of a snapshot section's pages mapped into this process (Linux: /proc/self/maps and pagemap)."""
    meta, _ = _footer_of(path.read_bytes())
    where = meta["sections"][section]
    real = os.path.realpath(path)
    starts = [int(line.split()[0].split("-")[0], 16) for line in Path("/proc/self/maps").read_text().splitlines() if line.endswith(real)]
    if not starts:
        return 0.0
    first, end = (min(starts) + where["offset"]) // 4096, (min(starts) + where["offset"] + where["nbytes"] + 4095) // 4096
    with open("/proc/self/pagemap", "rb") as pages:
        pages.seek(first * 8)
        entries = struct.unpack(f"<{end - first}Q", pages.read((end - first) * 8))
    return sum(entry >> 63 & 1 for entry in entries) / (end - first)


@pytest.mark.skipif(not Path("/proc/self/pagemap").exists(), reason="reads Linux's page map")
def test_a_reopened_store_reads_its_float32_rows_from_the_snapshot_file_without_mapping_them(
    saved: tuple[Path, int], embedder: FastEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vectors are most of a snapshot (1.5 kB a row); touched through the map, the kernel maps them in large
    folios and they count in the process's RSS. Read with pread, they stay the page cache's."""
    path, dim = saved
    reopened = opened(path, dim, True, monkeypatch)
    assert reopened.read_index is not None and reopened.read_index.rows == ROWS
    assert answers(reopened, embedder)  # every dense search re-scores its best rows from their float32 values
    assert resident_share(snapshot.snapshot_path(path), "dense.codes") > 0.5  # the map is there and used
    assert resident_share(snapshot.snapshot_path(path), snapshot.VECTORS) < 0.05


def test_writes_after_the_snapshot_by_this_process_and_another_are_seen_after_reopening(
    saved: tuple[Path, int],
    base: tuple[list[str], np.ndarray],
    embedder: FastEmbedder,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    path, dim = saved
    writer = opened(path, dim, False, monkeypatch)
    ours = make_rows(base, 50, seed=3)
    writer.add(ours)
    closed = writer.find(Filter().ids([ours[0].id]), limit=1)[0].raw().copy(invalid_at=T0 + timedelta(days=1), reason="replaced")
    writer.upsert([closed])
    theirs = make_rows(base, 40, seed=4)
    script = (
        "import pickle, sys\n"
        "from chronomem.search.engine import open_store\n"
        f"store = open_store({str(path)!r}, {dim}, 'test', read_index_rows=0)\n"
        "store.add(pickle.load(sys.stdin.buffer))\n"
    )
    subprocess.run([sys.executable, "-c", script], input=pickle.dumps(theirs), check=True, capture_output=True)

    caplog.set_level(logging.DEBUG, logger=snapshot.__name__)
    reopened = opened(path, dim, True, monkeypatch)
    index = reopened.read_index
    assert index is not None and any(f"{ROWS} rows at version" in r.getMessage() for r in caplog.records)  # loaded
    rebuilt = opened(path, dim, False, monkeypatch)
    assert rebuilt.wait_for_read_index()
    assert answers(reopened, embedder) == answers(rebuilt, embedder)
    assert index.rows == ROWS + 90 and index.version == reopened.table.version  # caught up by the diff at first use
    found = {r.id for r in reopened.find(Filter().ids([r.id for r in ours + theirs]), limit=200)}
    assert found == {r.id for r in ours + theirs}
    assert reopened.find(Filter().ids([ours[0].id]), limit=1)[0].invalid_at == T0 + timedelta(days=1)

    # and the reopened store (opened through pylance, LanceDB at its first write) keeps its copy in step
    later = make_rows(base, 30, seed=5)
    reopened.add(later)
    assert index.rows == ROWS + 120 and reopened.read_index is index
    rebuilt = opened(path, dim, False, monkeypatch)
    assert rebuilt.wait_for_read_index()
    assert answers(reopened, embedder) == answers(rebuilt, embedder)


def _damage_truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _damage_footer(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-40] ^= 0xFF
    path.write_bytes(bytes(data))


def _footer_of(data: bytes) -> tuple[dict[str, Any], int]:
    length, _, _ = struct.unpack("<QI8s", data[-20:])
    start = len(data) - 20 - length
    return json.loads(data[start : len(data) - 20]), start


def _damage(path: Path, section: str) -> None:
    data = bytearray(path.read_bytes())
    meta, _ = _footer_of(bytes(data))
    where = meta["sections"][section]
    data[where["offset"] + where["nbytes"] // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _damage_section(path: Path) -> None:
    _damage(path, "ids")


def _damage_vectors(path: Path) -> None:  # checked through the file, not the map
    _damage(path, snapshot.VECTORS)


def _other_format(path: Path) -> None:
    data = path.read_bytes()
    meta, start = _footer_of(data)
    footer = json.dumps({**meta, "format": 999}).encode()
    path.write_bytes(data[:start] + footer + struct.pack("<QI8s", len(footer), zlib.crc32(footer), data[-8:]))


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _garbage(path: Path) -> None:
    path.write_bytes(b"not a snapshot at all" * 100)


@pytest.mark.parametrize("damage", [_damage_truncate, _damage_footer, _damage_section, _damage_vectors, _other_format, _empty, _garbage])
def test_a_damaged_or_foreign_format_snapshot_is_ignored_in_one_line_and_the_index_built_from_the_table(
    saved: tuple[Path, int],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    damage: Any,
) -> None:
    path, dim = saved
    damage(snapshot.snapshot_path(path))
    caplog.set_level(logging.INFO, logger=snapshot.__name__)
    reopened = opened(path, dim, True, monkeypatch)
    assert reopened.read_index is None  # nothing trusted: built as without snapshots
    lines = snapshot_logs(caplog)
    assert len(lines) == 1 and "ignored" in lines[0].getMessage() and lines[0].exc_info is None
    assert "Traceback" not in capsys.readouterr().err
    assert not snapshot.snapshot_path(path).exists()  # removed: the next write replaces it
    assert reopened.wait_for_read_index() and reopened.read_index.rows == ROWS  # type: ignore[union-attr]


def test_a_snapshot_is_never_used_for_a_table_it_was_not_taken_of(
    tmp_path: Path, saved: tuple[Path, int], base: tuple[list[str], np.ndarray], monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    path, dim = saved
    caplog.set_level(logging.INFO, logger=snapshot.__name__)
    taken = snapshot.snapshot_path(path).read_bytes()

    # another store, written the same way (same row count, same versions): its own table, not this one
    other = tmp_path / "other"
    store = opened(other, dim, False, monkeypatch)
    rows = make_rows(base, ROWS, seed=9)
    store.add(rows[: ROWS // 2])
    store.add(rows[ROWS // 2 :])
    assert store.table.version == opened(path, dim, False, monkeypatch).table.version
    snapshot.snapshot_path(other).write_bytes(taken)
    assert opened(other, dim, True, monkeypatch).read_index is None

    # a store whose table was made anew with fewer rows (the snapshot's version may still be ahead)
    fewer = tmp_path / "fewer"
    store = opened(fewer, dim, False, monkeypatch)
    store.add(make_rows(base, ROWS - 100, seed=10))
    snapshot.snapshot_path(fewer).write_bytes(taken)
    assert opened(fewer, dim, True, monkeypatch).read_index is None

    # the same table re-embedded by another model (its metadata says so)
    remodelled = tmp_path / "remodelled"
    store = open_store(remodelled, dim, "another-model", read_index_rows=0)
    rows = make_rows(base, ROWS, seed=1)
    for row in rows:
        row.embed_model = "another-model"
    store.add(rows[: ROWS // 2])
    store.add(rows[ROWS // 2 :])
    snapshot.snapshot_path(remodelled).write_bytes(taken)
    assert open_store(remodelled, dim, "another-model", read_index_rows=100_000).read_index is None

    ignored = [r for r in snapshot_logs(caplog) if "ignored" in r.getMessage()]
    assert len(ignored) == 3 and all(r.exc_info is None for r in ignored)


def test_rows_gone_from_the_table_take_the_snapshot_with_them(saved: tuple[Path, int], monkeypatch: pytest.MonkeyPatch) -> None:
    path, dim = saved
    store = opened(path, dim, True, monkeypatch)
    index = store.read_index
    assert index is not None
    victim = store.find(Filter(), limit=1)[0].id
    store.table.delete(f"id = '{victim}'")  # as a purge does (storage's own tools), under the table
    assert store.find(Filter().ids([victim]), limit=1) == []
    assert not snapshot.snapshot_path(path).exists()  # it held the purged row's text


def test_the_keeper_saves_after_a_build_then_when_enough_changed_and_at_exit(saved: tuple[Path, int], monkeypatch: pytest.MonkeyPatch) -> None:
    path, dim = saved
    store = opened(path, dim, True, monkeypatch)
    index = store.read_index
    assert index is not None
    keeper = snapshot.Keeper(path)
    now = 1_000.0
    assert keeper.due(index, now)  # nothing saved by this keeper: after a build, save
    keeper.saved_version, keeper.saved_rows, keeper.saved_at = index.version, index.rows, now
    assert not keeper.due(index, now + 10 * snapshot.IDLE_INTERVAL)  # unchanged: never
    index.version += 1
    assert not keeper.due(index, now + 1)
    assert keeper.due(index, now + 1, exiting=True)
    assert keeper.due(index, now + snapshot.IDLE_INTERVAL)
    keeper.saved_rows -= snapshot.EVERY_ROWS
    assert not keeper.due(index, now + snapshot.MIN_INTERVAL / 2)
    assert keeper.due(index, now + snapshot.MIN_INTERVAL)
    index.version -= 1

    small = snapshot.Keeper(path)
    monkeypatch.setattr(snapshot, "MIN_ROWS", index.rows + 1)
    assert not small.due(index, now)  # a small table is built at open in ~0.1 s: no snapshot


def test_a_crash_mid_write_leaves_the_trusted_snapshot_as_it_was(saved: tuple[Path, int], monkeypatch: pytest.MonkeyPatch) -> None:
    path, dim = saved
    before = snapshot.snapshot_path(path).read_bytes()
    store = opened(path, dim, True, monkeypatch)

    def fail(*_: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(snapshot._Writer, "vectors", fail)
    with pytest.raises(OSError):
        snapshot.write(store.read_index, path)  # type: ignore[arg-type]
    assert snapshot.snapshot_path(path).read_bytes() == before
    assert not list(path.glob(f"{snapshot.SNAPSHOT_NAME}.tmp-*"))


def test_a_store_built_without_a_snapshot_gets_one_from_its_keeper_and_the_next_open_loads_it(
    saved: tuple[Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, dim = saved
    snapshot.discard(path)
    store = opened(path, dim, True, monkeypatch)
    assert store.read_index is None and store.wait_for_read_index()  # built from the table, as before
    keeper = next(k for k in snapshot._live_keepers() if k.directory == path and k._store() is store)  # type: ignore[misc]
    keeper.tick()  # what its thread does every TICK_SECONDS: a build is saved at once
    assert snapshot.snapshot_path(path).exists() and keeper.saved_version == store.read_index.version  # type: ignore[union-attr]
    assert opened(path, dim, True, monkeypatch).read_index is not None


def test_a_purge_takes_the_snapshot_with_the_purged_text(
    tmp_path: Path, base: tuple[list[str], np.ndarray], embedder: FastEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, dim = tmp_path / "store", base[1].shape[1]
    store = open_store(path, dim, embedder.name, read_index_rows=100_000)
    rows = make_rows(base, ROWS, seed=11)
    for row in rows:
        row.embed_model = embedder.name
    rows[7].content = "the vault passphrase is tangerine-42"
    store.add(rows)
    assert store.wait_for_read_index()
    snapshot.write(store.read_index, path)  # type: ignore[arg-type]
    assert b"tangerine-42" in snapshot.snapshot_path(path).read_bytes()
    done = subprocess.run(
        [sys.executable, "-m", "chronomem", "purge", "--id", rows[7].id, "--store", str(path), "--yes", "--json"],
        capture_output=True, text=True, env={**os.environ, "CHRONOMEM_PROJECT": "alpha"},
    )
    assert done.returncode == 0, done.stderr
    assert not snapshot.snapshot_path(path).exists()


def test_a_clean_exit_saves_the_writes_made_since_the_snapshot(
    saved: tuple[Path, int], base: tuple[list[str], np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, dim = saved
    before = opened(path, dim, False, monkeypatch).table.version
    script = (
        "import pickle, sys\n"
        "from chronomem.search.engine import open_store\n"
        f"store = open_store({str(path)!r}, {dim}, 'test', read_index_rows=100_000)\n"
        "assert store.read_index is not None\n"  # loaded from the snapshot
        "store.add(pickle.load(sys.stdin.buffer))\n"
    )
    subprocess.run([sys.executable, "-c", script], input=pickle.dumps(make_rows(base, 25, seed=6)), check=True, capture_output=True)
    reopened = opened(path, dim, True, monkeypatch)
    assert reopened.table.version > before
    assert reopened.read_index is not None and reopened.read_index.rows == ROWS + 25  # the snapshot the exit wrote
    assert reopened.read_index.version == reopened.table.version


def test_save_moved_saves_what_a_clean_exit_would_while_the_process_runs(
    saved: tuple[Path, int], base: tuple[list[str], np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, dim = saved
    store = opened(path, dim, True, monkeypatch)
    assert store.read_index is not None  # loaded from the snapshot
    store.add(make_rows(base, 25, seed=8))
    snapshot.save_moved()
    reopened = opened(path, dim, True, monkeypatch)
    assert reopened.read_index is not None and reopened.read_index.rows == ROWS + 25
    assert reopened.read_index.version == store.table.version


def test_a_versions_stamp_is_its_commit_time_as_the_tables_listing_has_it(tmp_path: Path) -> None:
    """`version_stamp` reads one version's manifest, not the listing of every version: the same time for every
    version the table lists, None for one it does not."""
    import lance
    import pyarrow as pa

    uri = tmp_path / f"{snapshot.TABLE_NAME}.lance"
    lance.write_dataset(pa.table({"x": [0]}), str(uri))
    for i in range(1, 4):
        lance.write_dataset(pa.table({"x": [i]}), str(uri), mode="append")
    listed = {int(entry["version"]): entry["timestamp"].isoformat() for entry in lance.dataset(str(uri)).versions()}
    assert len(listed) == 4
    assert {version: snapshot.version_stamp(tmp_path, version) for version in listed} == listed
    assert snapshot.version_stamp(tmp_path, max(listed) + 7) is None
