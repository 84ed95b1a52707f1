"""The lease (storage/remote.py) against the local S3 server: one holder at a time across holders that share
nothing but the bucket, takeover after a holder stops renewing, and the conditional-create probe."""

from __future__ import annotations

import threading
import time

import pytest
from filelock import Timeout

from chronomem.config import StoreURI
from chronomem.storage.remote import Lease, conditional_create_holds, objects_of

from .conftest import make_bucket, start_local_s3


def test_one_holder_at_a_time(s3_uri: str) -> None:
    objects = objects_of(StoreURI(s3_uri))
    first, second = Lease(objects, "write"), Lease(objects_of(StoreURI(s3_uri)), "write")
    first.acquire()
    with pytest.raises(Timeout):
        second.acquire(timeout=0)
    first.acquire()  # reentrant, like a FileLock
    first.release()
    with pytest.raises(Timeout):
        second.acquire(timeout=0)
    first.release()
    second.acquire(timeout=5)
    assert second.is_locked and not first.is_locked
    second.release()


def test_read_modify_write_under_the_lease_loses_nothing(s3_uri: str) -> None:
    """Four holders (own Lease, own client) each add 1 to a counter object 10 times: 40, never fewer."""
    location = StoreURI(s3_uri)
    objects_of(location).put("counter", b"0")

    def work() -> None:
        objects = objects_of(location)
        lease = Lease(objects, "counter")
        for _ in range(10):
            with lease:
                value = int(objects.get("counter") or b"0")
                objects.put("counter", str(value + 1).encode())

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert objects_of(location).get("counter") == b"40"


def test_a_stalled_holder_is_taken_over_after_its_lease(s3_uri: str) -> None:
    objects = objects_of(StoreURI(s3_uri))
    crashed = Lease(objects, "write", seconds=1.0)
    crashed.acquire()
    crashed._stop.set()  # as if its process died: no renewal, no release
    crashed._renewer.join()
    other = Lease(objects, "write", seconds=1.0)
    with pytest.raises(Timeout):
        other.acquire(timeout=0)
    started = time.monotonic()
    other.acquire(timeout=10)
    assert time.monotonic() - started < 10
    other.release()


def test_a_held_lease_is_renewed_past_its_length(s3_uri: str) -> None:
    objects = objects_of(StoreURI(s3_uri))
    holder = Lease(objects, "write", seconds=0.6)
    holder.acquire()
    time.sleep(1.5)  # two renewals
    with pytest.raises(Timeout):
        Lease(objects, "write", seconds=0.6).acquire(timeout=0)
    holder.release()


def test_probe_tells_a_store_that_ignores_conditional_create(s3_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert conditional_create_holds(objects_of(StoreURI(s3_uri)))
    proc, endpoint = start_local_s3("--ignore-conditional")
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
        broken = StoreURI(f"s3://{make_bucket(endpoint)}/store")
        assert not conditional_create_holds(objects_of(broken))
        from chronomem.storage.doctor import check

        report = check(broken)
        assert not report.ok and report.verdict == "UNSAFE FOR SEVERAL WRITERS"
        assert "DAMAGED" not in report.text() and "If-None-Match" in report.text()
    finally:
        proc.kill()
        proc.wait()
