"""`chronomem <read> --project NAME` for a project that holds no memories (issue 46): exit code 2 and one `error:`
line on stderr that says so and names the projects that do; `remember --project NEW` still creates the project.
The real command through its `main()`, on a real store in a temp dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronomem.cli import main
from tests.conftest import model_dir

READS = [
    ["recall", "which port does the API listen on?"],
    ["recall", "--path", "src/api.py"],
    ["as-of", "which port does the API listen on?", "--at", "2030-01-01"],
    ["history", "--subject", "api", "--predicate", "port"],
    ["history", "api port"],
    ["entity", "api"],
    ["brief"],
]


def _in(folder: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The environment a user runs the command in: no project or store set, the shipped model, cwd `folder`;
    returns the `--store` arguments of `folder`'s store."""
    for name in ("CHRONOMEM_PROJECT", "CHRONOMEM_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CHRONOMEM_MODEL_PATH", str(model_dir()))
    monkeypatch.chdir(folder)
    return ["--store", str(folder / "store")]


def _shop(where: list[str]) -> None:
    assert main(["remember", "The API listens on port 8080.", "--fact", "api", "port", "8080",
                 "--project", "shop", *where]) == 0


@pytest.fixture(scope="module")
def shop_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store whose one project, shop, holds one memory: made once for the tests that only read it (their reads
    of another project fail before touching it)."""
    folder = tmp_path_factory.mktemp("unknown-project")
    with pytest.MonkeyPatch.context() as mp:
        _shop(_in(folder, mp))
    return folder


@pytest.fixture
def store(shop_folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The shared store of project shop (read only)."""
    where = _in(shop_folder, monkeypatch)
    capsys.readouterr()
    return where


@pytest.fixture
def own_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """A store of project shop of this test's own, for a test that writes to it."""
    where = _in(tmp_path, monkeypatch)
    _shop(where)
    capsys.readouterr()
    return where


@pytest.mark.parametrize("read", READS, ids=[" ".join(r[:2]) for r in READS])
def test_a_read_of_an_empty_project_fails_naming_the_known_ones(
    store: list[str], read: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*read, "--project", "shpo", *store]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    [line] = out.err.strip().splitlines()
    assert line.startswith("error: ") and "Project 'shpo' has no memories" in line
    assert "Projects with memories: shop" in line


def test_the_project_from_the_environment_counts_as_named(
    store: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CHRONOMEM_PROJECT", "shpo")
    assert main(["recall", "which port?", *store]) == 2
    assert "Project 'shpo' has no memories" in capsys.readouterr().err


def test_reads_of_a_project_with_memories_and_writes_to_a_new_one_still_work(
    own_store: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    store = own_store
    assert main(["recall", "which database do we use?", "--project", "shop", *store]) == 0  # abstains, rc 0
    assert "Nothing relevant" in capsys.readouterr().out
    assert main(["remember", "Payments retry three times.", "--project", "payments", *store]) == 0
    assert "in project payments" in capsys.readouterr().out
    assert main(["recall", "how often do payments retry?", "--project", "payments", *store]) == 0
    assert "Payments retry three times." in capsys.readouterr().out


def test_a_bad_argument_is_reported_before_the_project(store: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["recall", "x", "-k", "0", "--project", "shpo", *store]) == 2
    assert "limit must be from 1" in capsys.readouterr().err
