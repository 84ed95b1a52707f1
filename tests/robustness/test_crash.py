"""Crash safety, for real: a writer process is SIGKILLed mid-remember, mid-forget, mid-optimize and at random moments;
after every kill the store must open, read whole, answer a recall and hold every acknowledged write.
(`python -m eval.crash` runs 50 rounds.)"""

from __future__ import annotations

from pathlib import Path

from eval.crash import run_crash
import pytest

pytestmark = pytest.mark.slow  # end to end: real processes killed mid-write, many rounds

ROUNDS = 8


def test_store_survives_sigkill_during_writes_and_upkeep(tmp_path: Path) -> None:
    result = run_crash(tmp_path / "store", rounds=ROUNDS, seed=16, work_dir=tmp_path / "work")
    assert result.problems == []
    assert result.survived == ROUNDS
    assert result.acknowledged > 0 and result.found == result.acknowledged
    assert result.targets == {"random": 2, "optimize": 2, "remember": 2, "forget": 2}
