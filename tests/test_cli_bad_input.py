"""Bad input at the command line: every command answers hostile arguments, bytes and files with one
`error:` line and exit code 2 — no traceback — and leaves the store as it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import model_dir


def run(args: list[str | bytes], stdin: bytes | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOMEM_")}
    env.update({"CHRONOMEM_MODEL_PATH": str(model_dir()), "HF_HUB_OFFLINE": "1"})
    return subprocess.run([sys.executable.encode(), b"-m", b"chronomem", *[a if isinstance(a, bytes) else a.encode() for a in args]],
                          capture_output=True, env=env, input=stdin, timeout=120)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cli-bad")
    binary = root / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00\x01garbage")
    foreign = root / "foreign.jsonl"
    foreign.write_text('{"id": "01J9ZK3W4X5Y6Z7A8B9C0D1E2F", "color": "red"}\n')
    return {"store": root / "store", "binary": binary, "foreign": foreign, "root": root}


CASES = [
    (["remember", "-"], b"\xff\xfe not utf-8 \xc3\x28", "standard input is not UTF-8"),
    (["remember", b"bytes \xff\xfe in argv"], None, "unpaired surrogate"),
    (["remember", "bell \x07 escape \x1b[2J"], None, "control character"),
    (["remember", "-"], b"x" * 40_000, "the limit is 32,000"),
    (["remember", "ok", "--valid-from", "2999-01-01"], None, "outside the supported range"),
    (["as-of", "tests", "--at", "2024-13-45"], None, "is not a real date or time"),
    (["recall", "tests", "--limit", "0"], None, "limit must be from 1 to 100"),
    (["recall", "x" * 5000], None, "the limit is 4,000"),
    (["forget", "x' OR 1=1 --"], None, "is not a memory id"),
    (["forget", "01ARZ3NDEKTSV4RRFFQ69G5FAV", "--superseded-by", "../etc/passwd"], None, "is not a memory id"),
    (["history", "--subject", "' OR '1'='1", "--predicate", "p"], None, "no facts for subject"),
    (["purge", "--id", "'; DROP TABLE memories; --", "--yes"], None, "is not a memory id"),
    (["serve", "--transport", "http", "--host", "0.0.0.0"], None, "exposes this memory to the network"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("args", "stdin", "expected"), CASES, ids=[str(c[0][0]) + "-" + c[2][:20] for c in CASES])
def test_bad_arguments_fail_in_one_line(files: dict[str, Path], args: list, stdin: bytes | None, expected: str) -> None:
    out = run([*args, "--store", str(files["store"]), "--project", "p"], stdin=stdin)
    err = out.stderr.decode("utf-8", "replace").strip()
    assert out.returncode == 2, (out.returncode, err, out.stdout)
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and "Traceback" not in err, err
    assert expected in err, err


@pytest.mark.slow
def test_an_oversized_fact_is_refused_and_the_note_kept(files: dict[str, Path]) -> None:
    store = ["--store", str(files["root"] / "partial"), "--project", "p"]
    out = run(["remember", "billing-api listens on 8080", "--fact", "s", "p", "o" * 5000, *store])
    said = out.stdout.decode()
    assert out.returncode == 0 and "Traceback" not in out.stderr.decode(), out.stderr
    assert "refused 1 fact" in said and "facts[0].object" in said, said
    found = run(["recall", "which port does billing-api listen on", *store])
    assert "billing-api listens on 8080" in found.stdout.decode(), found.stdout


@pytest.mark.slow
def test_bad_files_and_paths_fail_in_one_line(files: dict[str, Path]) -> None:
    store = ["--store", str(files["root"] / "fresh")]
    for args, expected in (
        (["import", str(files["binary"]), *store], "is not UTF-8 text"),
        (["import", str(files["foreign"]), *store], "line 1: unknown column 'color'"),
        (["import", str(files["root"] / "missing.jsonl"), *store], "no such file"),
        (["export", *store], "no store at"),
    ):
        out = run(args)
        err = out.stderr.decode().strip()
        assert out.returncode == 2 and len(err.splitlines()) == 1 and expected in err, (args, err)
