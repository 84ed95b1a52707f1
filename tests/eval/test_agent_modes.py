"""eval/agent_modes.py: one row per split and mode, read from eval.devmem's result files; a missing run is a dash."""

from __future__ import annotations

import json
from pathlib import Path

from eval.agent_modes import main


def test_rows_come_from_the_result_files(tmp_path: Path) -> None:
    system = {"current_hit@1": 0.9, "stale_leak_changed": 0.02, "as_of_accuracy": 0.95, "macro_hit@1": 0.8}
    env = {"git": {"commit": "abcdef1234", "chronomem_dirty": False}}
    (tmp_path / "devmem_validation-agent-noisy.json").write_text(json.dumps({"system": system, "environment": env}))
    assert main(["--results", str(tmp_path)]) == 0
    lines = (tmp_path / "agent_modes.md").read_text().splitlines()
    [row] = [line for line in lines if line.startswith("| devmem_validation | noisy agent (")]
    assert row.split(" | ")[2:] == ["0.900", "0.020", "0.950", "0.800", "abcdef1 |"]
    assert all(cell.strip() == "–" for cell in [line for line in lines if line.startswith("| devmem | text")][0].split("|")[3:7])
