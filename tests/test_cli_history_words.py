"""`chronomem history "words"`: the README's way to name a fact by words (`chronomem history "test command"`)
finds the fact and shows its chain. It used to look the words up, then pass them on as an id, and fail with
"is not a memory id". The real command through its `main()`, on a real store in a temp dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronomem.cli import main
from tests.conftest import model_dir


def test_history_by_words_shows_the_chain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("CHRONOMEM_PROJECT", "CHRONOMEM_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CHRONOMEM_MODEL_PATH", str(model_dir()))
    monkeypatch.chdir(tmp_path)
    where = ["--store", str(tmp_path / "store"), "--project", "shop"]
    assert main(["remember", "Tests run with pytest.", "--fact", "shop", "test_command", "pytest",
                 "--valid-from", "2024-01-08", *where]) == 0
    assert main(["remember", "Tests now run with nox -s tests.", "--fact", "shop", "test_command", "nox -s tests",
                 "--valid-from", "2024-03-04", *where]) == 0
    capsys.readouterr()
    assert main(["history", "test command", *where]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert out.startswith("shop · test_command in shop: 2 value(s), current 'nox -s tests'.")
    assert "2024-01-08 → 2024-03-04  'pytest'" in out
