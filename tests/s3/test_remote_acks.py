"""The acknowledgement record of a shared store (`_chronomem/acks/`, storage/groupcommit.py) and `doctor`'s check of
it: every id a remember was acknowledged for is recorded in the bucket; doctor says they are all present, names one
that went missing, and does not call a purged one lost."""

from __future__ import annotations

import lancedb

from chronomem.config import StoreURI
from chronomem.service import MemoryService
from chronomem.storage.doctor import check
from chronomem.storage.filters import Filter
from chronomem.storage.groupcommit import read_record
from chronomem.storage.remote import objects_of
from chronomem.tools import remember


def test_doctor_checks_every_acknowledged_id_and_names_a_lost_one(s3_uri: str, s3_svc: MemoryService) -> None:
    ids = [remember(s3_svc, f"Record note {i}: the worker pool w{i} has {i + 2} threads.").id for i in range(4)]
    acked, purged, records = read_record(objects_of(StoreURI(s3_uri)))
    assert set(ids) <= acked and not purged and records >= 4
    healthy = check(StoreURI(s3_uri))
    assert healthy.ok, healthy.text()
    assert any("all 4 acknowledged memories are present" in n for n in healthy.notes), healthy.text()

    # a row lost behind chronomem's back (a hand-made delete, a bad restore): doctor names it
    table = lancedb.connect(s3_uri, storage_options=StoreURI(s3_uri).storage_options() or None).open_table("memories")
    table.delete(Filter().ids([ids[1]]).sql())
    lost = check(StoreURI(s3_uri))
    assert not lost.ok and any(ids[1] in p and "1 acknowledged memory is missing" in p for p in lost.problems), lost.text()


def test_a_purged_memory_is_not_called_lost(s3_uri: str, s3_svc: MemoryService) -> None:
    from chronomem.storage.portable import erase, plan_purge

    keep = remember(s3_svc, "The cache lives in redis on port 6380.").id
    gone = remember(s3_svc, "The staging password hint is hunter2-ish.").id
    with s3_svc.writing():
        erase(s3_svc.store, plan_purge(s3_svc.store, ids=[gone]))
    report = check(StoreURI(s3_uri))
    assert report.ok, report.text()
    assert any("1 purged since" in n for n in report.notes), report.text()
    assert keep in {r.id for r in s3_svc.store.find(Filter().kinds(["chunk"]))}


def test_the_record_is_compacted_without_losing_an_id(s3_uri: str, s3_svc: MemoryService) -> None:
    from chronomem.storage.groupcommit import compact_record, record_purged

    ids = [remember(s3_svc, f"Compacted note {i}: shard {i} holds tenants {i * 10}-{i * 10 + 9}.").id for i in range(3)]
    objects = objects_of(StoreURI(s3_uri))
    record_purged(objects, ["01PURGED0000000000000000000"])
    before = read_record(objects)
    assert compact_record(objects, min_records=2, age=0.0) == before[2]
    after = read_record(objects)
    assert after[:2] == before[:2] and set(ids) <= after[0] and after[2] == 1
    assert check(StoreURI(s3_uri)).ok
