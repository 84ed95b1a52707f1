"""Secret scanning on write: the scanner over the fake-key corpus and its look-alikes, and `remember`
in each mode on the real store — nothing secret is embedded, stored or echoed back."""

from __future__ import annotations

import random
import string

import pytest

from chronomem.config import Settings
from chronomem.errors import InvalidInput
from chronomem.safety.secrets import SecretGuard, redact, scan
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.tools import recall, remember
from eval.secret_corpus import benign_cases, secret_cases
from eval.secrets import leaks

SECRETS = secret_cases(seed=11, per_kind=2)
BENIGN = benign_cases(seed=12, per_kind=2)


def fake_github_token() -> str:
    rng = random.Random(3)
    return "ghp_" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(36))


def fake_aws_key() -> str:
    rng = random.Random(4)
    return "AKIA" + "".join(rng.choice(string.ascii_uppercase + "234567") for _ in range(16))


def test_corpus_covers_at_least_fifteen_kinds() -> None:
    assert len({c.kind for c in SECRETS}) >= 15


@pytest.mark.parametrize("case", SECRETS, ids=lambda c: c.kind)
def test_every_fake_credential_is_found_and_fully_redacted(case) -> None:
    found = scan(case.text)
    assert found, f"nothing found in {case.kind}"
    cleaned = redact(case.text, found)
    for secret in case.secrets:
        assert not leaks(secret, cleaned, original=case.text), f"{case.kind}: part of the secret survived in {cleaned!r}"
    assert "[REDACTED:" in cleaned


@pytest.mark.parametrize("case", BENIGN, ids=lambda c: c.kind)
def test_benign_look_alikes_are_left_alone(case) -> None:
    found = scan(case.text)
    assert found == [], f"{case.kind} flagged: {[(f.kind, case.text[f.start:f.end]) for f in found]}"


def test_redaction_keeps_the_surrounding_text_and_is_idempotent() -> None:
    token = fake_github_token()
    text = f"CI pushes with {token} to the release branch; db at postgres://app:s3cretPassw0rd@db:5432/app"
    cleaned = redact(text, scan(text))
    assert cleaned == (
        "CI pushes with [REDACTED:github-token] to the release branch; "
        "db at postgres://app:[REDACTED:password-in-url]@db:5432/app"
    )
    assert scan(cleaned) == []


def test_private_key_block_is_redacted_whole() -> None:
    case = next(c for c in SECRETS if c.kind == "rsa-private-key")
    cleaned = redact(case.text, scan(case.text))
    assert "BEGIN" not in cleaned and "END RSA" not in cleaned and cleaned.startswith("deploy key:\n[REDACTED:private-key]")


def test_unknown_mode_is_a_one_line_error() -> None:
    with pytest.raises(InvalidInput, match="CHRONOMEM_SECRETS must be one of redact, reject, allow"):
        SecretGuard("shred")


def with_mode(svc: MemoryService, mode: str) -> MemoryService:
    settings = Settings(
        store_path=svc.settings.store_path, model_path=svc.settings.model_path, project="proj", secrets_mode=mode
    )
    return MemoryService(settings, embedder=svc.embedder, clock=svc.clock)


def stored_bytes(svc: MemoryService) -> bytes:
    return b"".join(p.read_bytes() for p in svc.store.path.rglob("*") if p.is_file())


def test_remember_redacts_content_and_facts_before_storing(svc: MemoryService) -> None:
    token, key = fake_github_token(), fake_aws_key()
    result = remember(
        svc,
        f"Release uses {token}; the backup job uses {key}.",
        facts=[{"subject": "proj", "predicate": "deploy_token", "object": token}],
        tags=[key],
    )
    assert {(r.kind, r.count) for r in result.redacted} == {("github-token", 2), ("aws-key", 2)}
    assert "redacted 4 secrets" in result.message
    dumped = result.model_dump_json()
    assert token not in dumped and key not in dumped

    chunk = svc.store.get(result.id)
    assert chunk is not None
    assert chunk.content == "Release uses [REDACTED:github-token]; the backup job uses [REDACTED:aws-key]."
    assert chunk.tags == ["[REDACTED:aws-key]"]
    [fact] = svc.store.find(Filter().kinds(["fact"]))
    assert fact.object == "[REDACTED:github-token]" and token not in fact.content
    # Nothing on disk holds either secret: not the rows, not the full-text index, not an old version.
    raw = stored_bytes(svc)
    assert token.encode() not in raw and key.encode() not in raw
    found = recall(svc, "which token does the release use")
    assert all(token not in item.text for item in found.results)


def test_reject_mode_refuses_and_stores_nothing(svc: MemoryService) -> None:
    strict = with_mode(svc, "reject")
    token = fake_github_token()
    with pytest.raises(InvalidInput) as caught:
        remember(strict, f"use {token} for CI")
    message = str(caught.value)
    assert "github-token" in message and token not in message and "\n" not in message
    assert strict.store.count() == 0


def test_allow_mode_stores_text_as_given(svc: MemoryService) -> None:
    token = fake_github_token()
    result = remember(with_mode(svc, "allow"), f"use {token} for CI")
    assert result.redacted == []
    assert svc.store.get(result.id).content == f"use {token} for CI"


def test_benign_text_is_stored_verbatim(svc: MemoryService) -> None:
    text = "Fixed in 3f2a9c1d0e4b5a6978c1d2e3f4a5b6c7d8e9f0a1; tenant 0b9e6f3c-5b8a-4c1e-9d2f-7a6b5c4d3e2f; id 01J9ZK3W4X5Y6Z7A8B9C0D1E2F."
    result = remember(svc, text)
    assert result.redacted == [] and svc.store.get(result.id).content == text


def test_a_word_after_a_keyword_in_a_slot_name_is_part_of_the_name() -> None:
    predicate = "secret_location:PagerDuty API token"
    assert scan(predicate) == []  # a name that says where a secret is holds no secret, as text either
    assert scan(predicate, name=True) == []
    assert scan("password: Xk9fPq2LmZ", name=True)  # a value with digits is still a password, name or not


def test_secret_slots_named_alike_stay_apart(svc: MemoryService) -> None:
    remember(svc, "PagerDuty token is in Vault.", facts=[{"subject": "proj", "predicate": "secret_location:PagerDuty API token", "object": "Vault"}])
    later = remember(
        svc, "Stripe token is in 1Password.",
        facts=[{"subject": "proj", "predicate": "secret_location:Stripe API token", "object": "1Password"}],
    )
    assert [f.action for f in later.facts] == ["added"]  # not a new value of the PagerDuty slot
    live = svc.store.find(Filter().kinds(["fact"]).live(svc.now(), svc.now()))
    assert sorted(r.predicate for r in live) == ["secret_location:pagerduty_api_token", "secret_location:stripe_api_token"]


JWT_HEADER = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"  # {"alg":"HS256","typ":"JWT"}, the same in every HS256 token


@pytest.mark.parametrize(
    "text",
    [
        "redis://:s3cretPassw0rd@cache.example:6379/0",
        "REDIS_URL=rediss://:s3cretPassw0rd@cache.example:6380/0",
        "the cache is at redis://:s3cretPassw0rd@cache.example:6379/0 since Tuesday",
        "amqp://:s3cretPassw0rd@rabbit.internal:5672/",
    ],
)
def test_a_password_in_a_url_without_a_user_is_masked(text: str) -> None:
    """Redis before ACLs authenticates with a password alone: scheme://:password@host is as secret as with a user."""
    found = scan(text)
    assert [f.kind for f in found] == ["password-in-url"]
    cleaned = redact(text, found)
    assert "s3cretPassw0rd" not in cleaned and "://:[REDACTED:password-in-url]@" in cleaned
    assert cleaned.replace("[REDACTED:password-in-url]", "s3cretPassw0rd") == text  # only the password went
    assert scan("redis://:@cache.example:6379/0") == [] and scan("redis://cache.example:6379/0") == []


@pytest.mark.parametrize(
    "text",
    [
        "postgres://$PGUSER:$PGPASSWORD@db:5432/app",
        "postgres://${PGUSER}:${PGPASSWORD}@db:5432/app",
        "DATABASE_URL=postgres://$PGUSER:${PGPASSWORD}@db:5432/app",
        "redis://:$REDIS_PASSWORD@cache:6379/0",
        "postgres://app:${DB_PASSWORD:?set DB_PASSWORD}@db/app",
        "mysql://app:%DB_PASSWORD%@db/app",
        "postgres://app:$(DB_PASSWORD)@db/app",
        "postgres://app:{{db_password}}@db/app",
        "API_TOKEN=$API_TOKEN",
    ],
)
def test_a_url_made_of_variables_is_left_alone(text: str) -> None:
    """The password part names the variable that holds it: there is nothing secret to mask."""
    assert scan(text) == [], [(f.kind, text[f.start : f.end]) for f in scan(text)]


def test_a_literal_beside_or_inside_a_variable_is_still_masked() -> None:
    default = "postgres://app:${DB_PASSWORD:-Zq8vLm2Pw4}@db/app"  # the inline default is a literal password
    assert [f.kind for f in scan(default)] == ["password-in-url"]
    mixed = "staging: postgres://$PGUSER:$PGPASSWORD@db/app; prod: postgres://app:Zq8vLm2Pw4xy@prod-db/app"
    assert redact(mixed, scan(mixed)) == (
        "staging: postgres://$PGUSER:$PGPASSWORD@db/app; prod: postgres://app:[REDACTED:password-in-url]@prod-db/app"
    )


@pytest.mark.parametrize(
    "template",
    [
        "{v}",
        "the JWT header is {v}",
        "token: {v}",
        "Authorization: Bearer {v}",
        "export AUTH_TOKEN={v}",
        'AUTH_TOKEN: "{v}"',
        "password {v}",
        "every access token here starts with {v}.",
    ],
)
def test_a_jwt_header_alone_is_left_alone(template: str) -> None:
    """A token is header.payload.signature; the header alone is the public {"alg":"HS256","typ":"JWT"}."""
    text = template.format(v=JWT_HEADER)
    assert scan(text) == [], [(f.kind, text[f.start : f.end]) for f in scan(text)]


def test_a_jwt_with_its_payload_or_anything_else_base64_json_is_still_a_secret() -> None:
    import base64

    payload = "eyJzdWIiOiIxMjM0NTY3ODkwIiwicm9sZSI6ImFkbWluIn0"  # {"sub":"1234567890","role":"admin"}
    signed = f"{JWT_HEADER}.{payload}.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    for text in (f"session cookie was {signed}", f"unsigned: {JWT_HEADER}.{payload}."):
        assert [f.kind for f in scan(text)] == ["jwt"], text
    # base64 JSON that is not a header: a key file, or a header carrying anything but header parameters
    key_file = base64.urlsafe_b64encode(b'{"type":"service_account","private_key_id":"4f2a9c"}').decode().rstrip("=")
    not_a_header = base64.urlsafe_b64encode(b'{"alg":"HS256","password":"Zq8vLm2Pw4"}').decode().rstrip("=")
    for value in (key_file, not_a_header):
        text = f"GOOGLE_CREDENTIALS={value}"
        assert [f.kind for f in scan(text)] == ["password-assignment"], text


def test_remember_masks_a_userless_url_password_and_keeps_a_variable_url(svc: MemoryService) -> None:
    text = "Cache: redis://:s3cretPassw0rd@cache.example:6379/0. App DB: postgres://$PGUSER:$PGPASSWORD@db:5432/app."
    result = remember(svc, text)
    assert [(r.kind, r.count) for r in result.redacted] == [("password-in-url", 1)]
    assert svc.store.get(result.id).content == (
        "Cache: redis://:[REDACTED:password-in-url]@cache.example:6379/0. App DB: postgres://$PGUSER:$PGPASSWORD@db:5432/app."
    )
    assert b"s3cretPassw0rd" not in stored_bytes(svc)
