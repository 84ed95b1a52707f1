"""Group commit on a shared store (storage/groupcommit.py), against the local S3 server: notes that wait for the write
lease are committed together in one LanceDB commit, each caller returns only once its note is committed, a lone writer
does not wait, and a holder that died mid-fold never makes a queued note appear twice."""

from __future__ import annotations

import json
import signal
import threading
import time

import lancedb
import pytest

from chronomem.config import Settings, StoreURI
from chronomem.service import MemoryService
from chronomem.storage.filters import Filter
from chronomem.storage.groupcommit import ACKS, QUEUE, read_record, to_ipc
from chronomem.storage.remote import Lease, objects_of
from chronomem.tools import remember

from .test_several_writers import acked_ids, spawn


def version(uri: str) -> int:
    location = StoreURI(uri)
    return int(lancedb.connect(uri, storage_options=location.storage_options() or None).open_table("memories").version)


def queued(uri: str) -> list[str]:
    return sorted(n for n in objects_of(StoreURI(uri)).names(QUEUE) if n.endswith(".arrow"))


def wait_for(condition, what: str, seconds: float = 120.0) -> None:
    """Poll `condition` until true (the processes and threads it waits for run on loaded cores): fail saying `what`."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def service(uri: str, embedder, clock) -> MemoryService:
    return MemoryService(Settings(store_path=StoreURI(uri), project="proj"), embedder=embedder, clock=clock)


def chunk_ids(svc: MemoryService) -> list[str]:
    return [r.id for r in svc.store.find(Filter().kinds(["chunk"]))]


def test_a_lone_writer_commits_at_once_without_the_queue(s3_uri: str, s3_svc: MemoryService) -> None:
    remember(s3_svc, "The store is open.")
    before = version(s3_uri)
    ids = [remember(s3_svc, f"Lone note {i}: service s{i} listens on port {8000 + i}.").id for i in range(3)]
    assert version(s3_uri) == before + 3  # one commit each, none waited for a batch
    assert queued(s3_uri) == []
    assert set(ids) <= set(chunk_ids(s3_svc))


def test_notes_waiting_for_the_lease_are_committed_in_one_commit(s3_uri: str, s3_svc: MemoryService, embedder,
                                                                  clock) -> None:
    remember(s3_svc, "The store is open.")
    location = StoreURI(s3_uri)
    other = Lease(objects_of(location), "write")  # another server holding the write lease
    other.acquire(timeout=30)
    writers = [service(s3_uri, embedder, clock) for _ in range(3)]
    for svc in writers:
        svc.store  # noqa: B018 - opened before the lease is contended
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            results[n] = remember(writers[n], f"Waiting note {n}: queue worker q{n} drains the {n}th topic.").id  # type: ignore[assignment]
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    wait_for(lambda: len(queued(s3_uri)) == 3, "three queued notes")
    before = version(s3_uri)
    assert results == {}, "a note returned before it was committed"
    assert len(chunk_ids(s3_svc)) == 1  # a reader is not held up by the lease, nor sees a queued note
    other.release()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    assert version(s3_uri) == before + 1, "the three waiting notes were not committed together"
    stored = chunk_ids(service(s3_uri, embedder, clock))
    assert set(results.values()) <= set(stored) and len(stored) == len(set(stored)) == 4
    assert queued(s3_uri) == []
    acked = [json.loads(objects_of(location).get(f"{ACKS}/{n}") or b"{}") for n in objects_of(location).names(ACKS)]
    assert set(results.values()) <= {i for a in acked for i in a.get("ids", [])}, "the acknowledgement record misses some"


def prepared(svc: MemoryService, text: str):
    """The Arrow rows a writer would queue for a plain note `text` (as `MemoryStore.add` prepares them)."""
    from chronomem.records import MemoryRecord, new_id

    now = svc.now()
    record = MemoryRecord(id=new_id(now), kind="chunk", project="proj", content=text, valid_at=now, created_at=now,
                          vector=svc.embedder.embed([text])[0], embed_model=svc.embedder.name, source="agent")
    return svc.store._arrow([record])


@pytest.mark.parametrize("committed", [True, False], ids=["committed-before-the-crash", "crashed-before-committing"])
def test_a_holder_that_died_mid_fold_never_doubles_a_queued_note(s3_uri: str, s3_svc: MemoryService,
                                                                  committed: bool) -> None:
    """A holder that wrote its fold intent (and committed, or not) then died: the next holder commits each queued note
    exactly once."""
    remember(s3_svc, "The store is open.")
    store = s3_svc.store
    objects = objects_of(StoreURI(s3_uri))
    data = prepared(s3_svc, "Queued by a writer whose holder then died: cache ttl is 300 s.")
    note = data.column("id")[0].as_py()
    objects.put(f"{QUEUE}/00000000000000000001-deadbeef0001.arrow", to_ipc(data))
    objects.put(f"{QUEUE}/~fold-00000000000000000002-deadbeef0002.json",
                json.dumps({"entries": ["00000000000000000001-deadbeef0001"], "by": "dead"}).encode())
    if committed:
        with s3_svc.writing():
            store.commit_rows(data, [])  # the dead holder's commit landed; nothing after it did
    remember(s3_svc, "The next writer's note.")
    ids = chunk_ids(service(s3_uri, s3_svc.embedder, s3_svc.clock))
    assert ids.count(note) == 1
    assert objects.names(QUEUE) == []  # the entry and the intent are gone


def test_a_queued_note_without_an_intent_is_committed_by_the_next_holder(s3_uri: str, s3_svc: MemoryService) -> None:
    remember(s3_svc, "The store is open.")
    objects = objects_of(StoreURI(s3_uri))
    data = prepared(s3_svc, "Queued by a writer killed while it waited: the retry limit is 5.")
    objects.put(f"{QUEUE}/00000000000000000001-feedface0001.arrow", to_ipc(data))
    before = version(s3_uri)
    remember(s3_svc, "The next writer's note, committed with the queued one.")
    assert version(s3_uri) == before + 1
    assert chunk_ids(s3_svc).count(data.column("id")[0].as_py()) == 1
    assert queued(s3_uri) == []


def test_a_queued_note_put_back_by_a_retried_upload_is_not_committed_again(s3_uri: str,
                                                                           s3_svc: MemoryService) -> None:
    """Issue 48, as the fault proxy's log showed it: a writer's PUT of its queue entry was answered only after its
    client's timeout, the holder committed the entry and deleted it meanwhile, then the client's retry of the PUT landed
    and put the entry back — with no fold intent naming it. The next holder must not commit it a second time."""
    remember(s3_svc, "The store is open.")
    location = StoreURI(s3_uri)
    objects = objects_of(location)
    data = prepared(s3_svc, "Queued by a writer whose upload was retried: the build cache lives in /var/cache/ci.")
    note = data.column("id")[0].as_py()
    entry, body = f"{QUEUE}/00000000000000000001-0badc0de0001.arrow", to_ipc(data)
    objects.put(entry, body)  # the upload's first try lands; its answer is lost
    remember(s3_svc, "The holder's own note, committed with the queued one.")
    assert queued(s3_uri) == [] and chunk_ids(s3_svc).count(note) == 1  # committed, acknowledged, deleted
    objects.put(entry, body)  # the client's retry of that PUT lands after the delete
    after = remember(s3_svc, "The next holder's own note.")
    stored = chunk_ids(service(s3_uri, s3_svc.embedder, s3_svc.clock))
    assert stored.count(note) == 1, "a queued note put back in the queue was committed twice"
    assert after.id in stored and len(stored) == len(set(stored))
    assert queued(s3_uri) == []
    acked, _, _ = read_record(objects)
    assert note in acked


def test_a_writer_killed_while_its_note_waits_leaves_it_whole_or_absent(s3_uri: str, s3_env: dict[str, str],
                                                                         s3_svc: MemoryService) -> None:
    """SIGKILL between upload and commit: the note was never acknowledged; the next holder commits it whole, once."""
    remember(s3_svc, "The store is open.")
    other = Lease(objects_of(StoreURI(s3_uri)), "write")
    other.acquire(timeout=30)
    proc = spawn(s3_uri, "k", 1, "chunks", s3_env)
    try:
        wait_for(lambda: len(queued(s3_uri)) == 1 or proc.poll() is not None, "the writer's queued note", 300)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        other.release()
    out = proc.stdout.read() if proc.stdout else ""
    assert acked_ids(out) == [], "the killed writer was acknowledged before its note was committed"
    remember(s3_svc, "Written after the writer was killed.")
    rows = [r for r in s3_svc.store.find(Filter().kinds(["chunk"])) if "Writer k note number 0" in r.content]
    assert len(rows) == 1 and rows[0].content == "Writer k note number 0: unit k/0 is configured."
    assert queued(s3_uri) == []
