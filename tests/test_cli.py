"""The `chronomem` command from a real shell: the same tools, readable or JSON, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chronomem.config import Settings, default_store_path
from tests.conftest import model_dir


def run(*args: str, env: dict | None = None, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "CHRONOMEM_MODEL_PATH": str(model_dir()), "HF_HUB_OFFLINE": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "chronomem", *args], capture_output=True, text=True, env=full_env, input=stdin,
        timeout=120, cwd=cwd,
    )


@pytest.mark.slow
def test_shell_story_with_json(tmp_path: Path) -> None:
    store = ["--store", str(tmp_path / "s"), "--project", "shop"]
    first = run("remember", "Tests run with pytest.", "--valid-from", "2024-01-01", "--fact", "shop", "test_command", "pytest", "--json", *store)
    assert first.returncode == 0, first.stderr
    first_json = json.loads(first.stdout)
    second = run("remember", "-", "--valid-from", "2024-03-01", "--fact", "shop", "test_command", "nox -s tests", "--json", *store,
                 stdin="Tests now run with nox -s tests.")
    assert json.loads(second.stdout)["facts"][0]["supersedes"] == first_json["facts"][0]["id"]

    now = json.loads(run("recall", "how to run tests", "--json", *store).stdout)
    assert now["results"][0]["object"] == "nox -s tests"
    past = json.loads(run("as-of", "how to run tests", "--at", "2024-02-01", "--json", *store).stdout)
    assert past["results"][0]["object"] == "pytest"
    chain = json.loads(run("history", "--subject", "shop", "--predicate", "test_command", "--json", *store).stdout)
    assert [e["object"] for e in chain["entries"]] == ["pytest", "nox -s tests"]

    human = run("recall", "how to run tests", *store)
    assert human.returncode == 0 and "nox -s tests" in human.stdout and not human.stdout.lstrip().startswith("{")
    gone = run("forget", second.stdout and json.loads(second.stdout)["id"], "--reason", "reverted", *store)
    assert gone.returncode == 0 and "no longer valid" in gone.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["remember", ""], "content is empty"),
        (["as-of", "x", "--at", "whenever"], "cannot read at"),
        (["forget", "01ARZ3NDEKTSV4RRFFQ69G5FAV"], "no memory has id"),
        (["recall", "x", "-k", "0"], "limit must be from 1"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    out = run(*args, "--store", str(tmp_path / "s"))
    assert out.returncode == 2
    assert out.stderr.strip().startswith("error:") and message in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_missing_model_says_what_to_do(tmp_path: Path) -> None:
    out = run("remember", "x", "--store", str(tmp_path / "s"), env={"CHRONOMEM_MODEL_PATH": str(tmp_path / "nope")})
    assert out.returncode == 2 and "CHRONOMEM_MODEL_PATH" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.slow
def test_store_from_env_and_never_the_working_directory(tmp_path: Path) -> None:
    home = tmp_path / "home"
    out = run("remember", "hello", "--project", "p", env={"CHRONOMEM_HOME": str(home)}, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert (home / "memories.lance").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]


def test_default_store_is_the_user_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_store_path() == tmp_path / "xdg" / "chronomem" / "store"
    assert Settings.from_env(environ={}).store_path == default_store_path()
    assert Settings.from_env(store="/x", environ={"CHRONOMEM_HOME": "/y"}).store_path == Path("/x")


@pytest.mark.slow
def test_demo_tells_the_story() -> None:
    out = run("demo")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    now = text.split("# Now:")[1].split("# Back then")[0]
    then = text.split("# Back then:")[1].split("# How the test command changed")[0]
    first = lambda section: next(line for line in section.splitlines() if line.startswith("1. "))  # noqa: E731
    assert "nox -s tests" in first(now)
    assert "pytest" in first(then) and "nox" not in first(then)
    assert "[ended]" in text and "[current]" in text
    assert "Nothing relevant is stored" in text


def test_python_m_and_help() -> None:
    out = run("--help")
    assert out.returncode == 0
    for command in ("serve", "remember", "recall", "forget", "as-of", "history", "demo"):
        assert command in out.stdout


@pytest.mark.slow
def test_consolidate_runs_to_completion(tmp_path: Path) -> None:
    store = ["--store", str(tmp_path / "s"), "--project", "p"]
    assert run("remember", "The queue is RabbitMQ.", *store).returncode == 0
    out = run("consolidate", "--json", *store)
    assert out.returncode == 0, out.stderr
    assert [s["did"] for s in json.loads(out.stdout)] == ["extract rules", "index upkeep"]
    assert "1 chunk(s)" in json.loads(out.stdout)[0]["detail"]


def test_every_option_has_help_text() -> None:
    import argparse

    from chronomem.cli import build_parser

    missing = []

    def walk(parser: argparse.ArgumentParser, name: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub_name, sub in action.choices.items():
                    walk(sub, sub_name)
            elif not action.help and action.dest != "help":
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser(), "chronomem")
    assert not missing, missing


@pytest.mark.slow
def test_doctor_into_a_pipe_closed_early_ends_quietly(tmp_path: Path) -> None:
    """`chronomem doctor | head -1`: the reader leaves after one line; no BrokenPipe traceback."""
    env = {**os.environ, "HOME": str(tmp_path / "home"), "CHRONOMEM_HOME": str(tmp_path / "s")}
    proc = subprocess.Popen(
        f"{sys.executable} -m chronomem doctor | head -c 1", shell=True, env=env, cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    out, err = proc.communicate(timeout=120)
    assert len(out) == 1
    assert b"Traceback" not in err and b"BrokenPipe" not in err, err.decode()


@pytest.mark.slow
def test_import_prints_no_progress_bar_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    exported = tmp_path / "in.jsonl"
    source = run("remember", "Ports: staging 8443.", "--store", str(tmp_path / "a"), "--project", "p")
    assert source.returncode == 0, source.stderr
    assert run("export", "--out", str(exported), "--store", str(tmp_path / "a")).returncode == 0
    out = run("import", str(exported), "--store", str(tmp_path / "b"))
    assert out.returncode == 0, out.stderr
    assert "embedding" not in out.stderr and "it/s" not in out.stderr and "memory/s" not in out.stderr, out.stderr


@pytest.mark.slow  # five CLI processes, ~10 s
def test_entity_command_counts_and_reads_the_past(tmp_path: Path) -> None:
    store = ["--store", str(tmp_path / "s"), "--project", "shop"]
    for day, version in (("2024-01-05", "3.1.0"), ("2024-02-10", "3.2.0"), ("2024-04-01", "4.0.1")):
        out = run("remember", f"Bumped django to {version}.", "--valid-from", day, "--fact", "django", "version", version, *store)
        assert out.returncode == 0, out.stderr
    now = json.loads(run("entity", "django", "--json", *store).stdout)
    assert now["views"][0]["value"] == "4.0.1" and now["views"][0]["count"] == 3
    march = run("entity", "django", "--as-of", "2024-03-01", *store)
    assert march.returncode == 0 and "django: version latest = 3.2.0" in march.stdout
    bad = run("entity", "--view", "nope", *store)
    assert bad.returncode == 2 and "no view named 'nope'" in bad.stderr and "Traceback" not in bad.stderr
