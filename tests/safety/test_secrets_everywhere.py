"""The secret scan on every text a caller sends, measured on the held-out corpus and checked on disk.

Held-out recall and look-alikes altered are asserted at the issue's thresholds; after `remember`
and `forget` with fake secrets in every field, no byte of any secret is anywhere in the store
directory (rows, full-text index, every old LanceDB version) or in an export; and what is not a
secret (a go.sum line, a pytest node id, a UUID, a git SHA, AWS's documented example key) is stored
byte for byte and comes back intact from recall.
"""

from __future__ import annotations

import random

import pytest

from chronomem.config import Settings
from chronomem.errors import InvalidInput
from chronomem.safety.secrets import scan
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.storage.portable import export_lines
from chronomem.tools import forget, history, recall, remember
from eval.secret_corpus import VENDOR_FORMATS
from eval.secrets import held_out, measure


def fake(kind: str, seed: int) -> str:
    return VENDOR_FORMATS[kind](random.Random(seed))


def disk_and_export(svc: MemoryService) -> bytes:
    files = b"".join(p.read_bytes() for p in svc.store.path.rglob("*") if p.is_file())
    return files + "\n".join(export_lines(svc.store)).encode()


def test_held_out_corpus_meets_the_thresholds() -> None:
    result = measure(*held_out())
    assert result["positives"]["cases"] >= 200 and result["benign"]["cases"] >= 100
    assert result["positives"]["recall"] >= 0.95, result["misses"]
    assert result["benign"]["rate"] <= 0.02, result["false_positive_examples"]


def test_no_secret_reaches_disk_or_export_from_any_field(svc: MemoryService) -> None:
    docker, postman, age = fake("docker-pat", 1), fake("postman-key", 2), fake("age-identity", 3)
    dsn, github = fake("sentry-dsn", 4), fake("github-pat", 5)
    prose_password = "Jenk1ns-Old!77"
    passphrase = "purple-otter-lamp-gravel-42"
    env_token = "Zx81kQpLm0aBc9dEr4Tu"
    # A look-alike stored in the same rows: the byte scan below can see stored text, so its silence means something.
    visible = "golang.org/x/text v0.14.0 h1:ScX5w1eTa3QqT8oi6+ziP7dTV1S2+ALU0bI+0zXKWiQ="
    first = remember(
        svc,
        f"{visible}\nThe root password on the old Jenkins box is {prose_password}. "
        f"Backups use passphrase {passphrase}. Run with API_TOKEN={env_token} locally.",
        tags=[docker],
        paths=[f"deploy/{github}.env"],
        facts=[
            {"subject": "proj", "predicate": "docker_pat", "object": docker},
            {"subject": "proj", "predicate": "sentry_dsn", "object": dsn},
        ],
    )
    assert {r.kind for r in first.redacted} >= {"docker-token", "password-in-text", "password-assignment", "sentry-dsn"}
    second = remember(svc, f"Postman key {postman} for the collection runner")
    done = forget(svc, second.id, reason=f"rotated; the age identity {age} replaced it")
    assert [r.kind for r in done.redacted] == ["age-secret-key"]
    assert age not in done.message and "[REDACTED:age-secret-key]" in done.message
    remember(svc, "a later write, so the rows above also live on in older table versions")
    assert len(list(svc.store.path.rglob("*.manifest"))) >= 3  # old versions are on disk too, and scanned

    raw = disk_and_export(svc)
    assert visible.encode() in raw  # stored text is readable in these bytes
    for secret in (docker, postman, age, dsn, github, prose_password, passphrase, env_token):
        assert secret.encode() not in raw, f"a secret reached disk: {secret[:6]}…"
    chain = history(svc, second.id)
    assert age not in chain.model_dump_json()


def test_a_project_name_holding_a_secret_is_refused(svc: MemoryService) -> None:
    token = fake("github-pat", 7)
    with pytest.raises(InvalidInput, match=r"^project contains 1 secret \(github-token ×1\); nothing was stored") as caught:
        remember(svc, "a note", project=f"acme-{token}")
    assert token not in str(caught.value)
    assert svc.store.count() == 0
    # an ordinary project name, even one naming a secret, is a name
    assert remember(svc, "a note", project="secret-rotation").project == "secret-rotation"


def test_reject_mode_refuses_a_forget_reason_with_a_secret(svc: MemoryService) -> None:
    kept = remember(svc, "Redis is the cache")
    strict = MemoryService(
        Settings(store_path=svc.settings.store_path, model_path=svc.settings.model_path, project="proj", secrets_mode="reject"),
        embedder=svc.embedder,
        clock=svc.clock,
    )
    key = fake("stripe-secret-key", 8)
    with pytest.raises(InvalidInput, match="^reason contains 1 secret") as caught:
        forget(strict, kept.id, reason=f"moved to {key}")
    assert key not in str(caught.value)
    [row] = svc.store.find(Filter().kinds(["chunk"]))
    assert row.invalid_at is None and row.expired_at is None  # nothing was forgotten


NON_SECRETS = [
    "golang.org/x/crypto v0.21.0 h1:X31++rzVUdKhX5sWmSOFZxx8UW/ldWx55cbf08iNAMA=",
    "tests/api/test_tokens.py::test_refresh[aB3dEf9XyZ12kLmN-expired]",
    "tenant 0b9e6f3c-5b8a-4c1e-9d2f-7a6b5c4d3e2f owns the bucket",
    "the token refresh fix landed in 3f2a9c1d0e4b5a6978c1d2e3f4a5b6c7d8e9f0a1",
    "AWS docs example: AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    '"integrity": "sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+LFTGHVxVjcXGOB5P"',
]


@pytest.mark.parametrize("text", NON_SECRETS, ids=["go.sum", "pytest-id", "uuid", "git-sha", "aws-example", "sri"])
def test_a_non_secret_is_stored_byte_for_byte_and_recalled_intact(svc: MemoryService, text: str) -> None:
    assert scan(text) == []
    result = remember(svc, text, tags=[text[:100]], facts=[{"subject": "proj", "predicate": "pinned", "object": text}])
    assert result.redacted == []
    assert svc.store.get(result.id).content == text
    [fact] = svc.store.find(Filter().kinds(["fact"]))
    assert fact.object == text
    found = recall(svc, text)
    assert any(text in item.text and item.object == text for item in found.results)  # the fact, which shows its note
