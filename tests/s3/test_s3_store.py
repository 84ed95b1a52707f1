"""A store in object storage, against the local S3 server: the location stays a URI for every command, every tool
round-trips, and failures name their real cause (no bucket, unreachable endpoint) — never "damaged"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from chronomem.config import Settings, StoreURI, parse_store
from chronomem.errors import StoreError
from chronomem.service import MemoryService
from chronomem.tools import as_of, forget, history, recall, remember

from .conftest import cli_env, make_bucket


def test_store_location_is_a_path_or_a_uri(tmp_path: Path) -> None:
    for uri in ("s3://bucket/mem", "s3+ddb://bucket/mem?ddbTableName=t", "gs://bucket/a/b", "az://container/mem"):
        location = parse_store(uri, {})
        assert isinstance(location, StoreURI) and str(location) == uri
    ddb = parse_store("s3+ddb://bucket/mem?ddbTableName=t", {})
    assert str(ddb / "state.json") == "s3+ddb://bucket/mem/state.json?ddbTableName=t"
    assert parse_store(f"file://{tmp_path}", {}) == tmp_path
    assert parse_store(str(tmp_path), {}) == tmp_path
    env = {"CHRONOMEM_HOME": "s3://bucket/team/", "CHRONOMEM_STORAGE_OPTIONS": '{"AWS_ENDPOINT": "http://h:1"}'}
    settings = Settings.from_env(environ=env)
    assert settings.store_path == StoreURI("s3://bucket/team", (("aws_endpoint", "http://h:1"),))
    with pytest.raises(ValueError, match="CHRONOMEM_STORAGE_OPTIONS"):
        Settings.from_env(store="s3://bkt/x", environ={"CHRONOMEM_STORAGE_OPTIONS": "[1]"})


def test_a_bucket_name_the_provider_would_refuse_is_said_plainly_before_anything_is_reached() -> None:
    for uri, said in (("s3://a/mem", "not a valid S3 bucket name"), ("s3://My_Bucket/mem", "not a valid S3 bucket name"),
                      ("gs://-x-/mem", "not a valid Google Cloud Storage bucket name"), ("s3:///mem", "names no bucket"),
                      ("az:///mem", "names no bucket")):
        with pytest.raises(ValueError, match=said):
            parse_store(uri, {})
    assert str(parse_store("s3://my.bucket-1/mem", {})) == "s3://my.bucket-1/mem"
    out = subprocess.run([sys.executable, "-m", "chronomem", "--store", "s3://a/mem", "recall", "x"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [
        "error: 'a' in s3://a/mem is not a valid S3 bucket name: it is 1 character long, not 3-63. A bucket name is "
        "3-63 lower-case letters, digits, dots and hyphens, starting and ending with a letter or digit, no two dots "
        "in a row, not an IP address: put your bucket's exact name in --store / CHRONOMEM_HOME (s3://BUCKET/PREFIX)"
    ]


def test_every_tool_round_trips_on_s3(s3_svc: MemoryService, clock) -> None:
    first = remember(
        s3_svc, "We run the tests with plain pytest.", valid_from="2024-01-10",
        facts=[{"subject": "proj", "predicate": "test command", "object": "pytest"}],
    )
    clock.advance(days=1)
    second = remember(
        s3_svc, "Tests now run with nox -s tests.", valid_from="2024-03-01",
        facts=[{"subject": "proj", "predicate": "test command", "object": "nox -s tests"}],
    )
    assert second.facts[0].action == "superseded" and second.facts[0].supersedes == first.facts[0].id
    now = recall(s3_svc, "how do we run the tests?")
    assert now.results[0].kind == "fact" and now.results[0].object == "nox -s tests"
    then = as_of(s3_svc, "how do we run the tests?", at="2024-02-01")
    assert any(item.object == "pytest" for item in then.results if item.kind == "fact")
    chain = history(s3_svc, subject="proj", predicate="test command")
    assert [(e.object, e.status) for e in chain.entries] == [("pytest", "ended"), ("nox -s tests", "current")]
    clock.advance(days=1)
    forget(s3_svc, second.id, "wrong")
    assert second.id not in [item.id for item in recall(s3_svc, "nox tests").results]
    assert not Path("s3:").exists()


@pytest.mark.slow  # three `chronomem` processes, each loading the model (~15 s)
def test_cli_takes_a_uri_for_every_command(s3_uri: str, s3_env: dict[str, str], tmp_path: Path) -> None:
    env = cli_env(s3_env, tmp_path)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "chronomem", "--store", s3_uri, *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)

    made = run("remember", "The deploy script lives in scripts/deploy.sh")
    assert made.returncode == 0, made.stderr
    found = run("recall", "where is the deploy script")
    assert found.returncode == 0 and "scripts/deploy.sh" in found.stdout, found.stderr
    assert run("projects").returncode == 0
    assert not (tmp_path / "s3:").exists(), "the URI must not become a local folder"


@pytest.mark.slow  # full suite only: the client retries an unreachable endpoint ~7 s (issue 46: quick run ≤ 150 s)
def test_errors_name_the_real_cause(s3_env: dict[str, str], embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    def open_error(uri: str) -> str:
        svc = MemoryService(Settings(store_path=StoreURI(uri), project="p"), embedder=embedder)
        with pytest.raises(StoreError) as caught:
            svc.store
        return str(caught.value)

    missing = open_error("s3://no-such-bucket-here/mem")
    assert "bucket" in missing and "does not exist" in missing and "damaged" not in missing
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    unreachable = open_error("s3://any-bucket/mem")
    assert "unreachable" in unreachable and "damaged" not in unreachable and "\n" not in unreachable


def test_s3_ddb_commits_through_a_dynamodb_table(
    local_s3: str, s3_env: dict[str, str], embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`s3+ddb://` against the same local server (moto serves DynamoDB on the S3 port): Lance commits through the
    commit table; the tools round-trip and doctor says so."""
    import boto3

    from .conftest import make_bucket

    table = f"commits-{make_bucket(local_s3)[4:]}"
    boto3.client("dynamodb", endpoint_url=local_s3, region_name="us-east-1").create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "base_uri", "KeyType": "HASH"}, {"AttributeName": "version", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "base_uri", "AttributeType": "S"}, {"AttributeName": "version", "AttributeType": "N"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    monkeypatch.setenv("CHRONOMEM_STORAGE_OPTIONS", f'{{"dynamodb_endpoint": "{local_s3}"}}')
    settings = Settings.from_env(store=f"s3+ddb://{make_bucket(local_s3)}/store?ddbTableName={table}", project="p")
    svc = MemoryService(settings, embedder=embedder)
    made = remember(svc, "The staging cluster is called kestrel.")
    assert recall(svc, "what is the staging cluster called?").results[0].id == made.id
    commits = boto3.client("dynamodb", endpoint_url=local_s3, region_name="us-east-1").scan(TableName=table)
    assert commits["Count"] >= 2, "Lance committed through the DynamoDB table"
    from chronomem.storage.doctor import check

    assert check(settings.store_path).ok


def test_install_keeps_a_store_uri_as_it_is(tmp_path: Path) -> None:
    from chronomem.install import server_env

    assert server_env({}, store="s3://team-memory/backend") == {"CHRONOMEM_HOME": "s3://team-memory/backend"}
    assert server_env({"CHRONOMEM_HOME": "gs://team-bucket/m"}) == {"CHRONOMEM_HOME": "gs://team-bucket/m"}
    assert server_env({}, store=str(tmp_path / "x")) == {"CHRONOMEM_HOME": str(tmp_path / "x")}


@pytest.mark.slow  # in the full suite: it waits out a retry (issue 46: the quick run within 150 s)
def test_a_failed_open_is_tried_again(local_s3: str, s3_env: dict[str, str], embedder, monkeypatch) -> None:
    """A store that could not open (its bucket not made yet) opens once it can: the error is not kept for good."""
    import boto3

    import chronomem.service as service

    name = f"late-{make_bucket(local_s3)}"
    svc = MemoryService(Settings(store_path=StoreURI(f"s3://{name}/mem"), project="p"), embedder=embedder)
    with pytest.raises(StoreError, match="does not exist"):
        svc.store
    boto3.client("s3", endpoint_url=local_s3, region_name="us-east-1").create_bucket(Bucket=name)
    with pytest.raises(StoreError, match="does not exist"):
        svc.store  # within STORE_RETRY_SECONDS the same answer, without a request
    monkeypatch.setattr(service, "STORE_RETRY_SECONDS", 0.0)
    assert svc.store.count() == 0


def test_doctor_index_check_on_a_fresh_bucket_and_after_a_write(s3_svc: MemoryService) -> None:
    """The README's first command against a new bucket is `doctor`: no table yet is fine, not a failure (it said
    "Table 'memories' was not found … run doctor --repair"); once written, the index is read."""
    from chronomem.checks import FAIL, OK, check_index

    location = s3_svc.settings.store_path
    fresh = check_index(location)
    assert fresh.status == OK and "no table yet" in fresh.detail, fresh
    remember(s3_svc, "The deploy script is scripts/deploy.sh")
    written = check_index(location)
    assert written.status != FAIL and "no table yet" not in written.detail, written
