"""Progress on the command line's long work: drawn on stderr when it is a terminal (a real pseudo-terminal here),
nothing of it when stderr is a pipe."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from pathlib import Path

import pytest

from chronomem import tools
from chronomem.service import MemoryService

REPO = Path(__file__).resolve().parents[1]


def run(args: list[str], terminal: bool) -> tuple[int, str]:
    """Run `chronomem …`; its stderr, from a pseudo-terminal or a pipe."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("COLUMNS", None)
    if not terminal:
        done = subprocess.run([sys.executable, "-m", "chronomem", *args], capture_output=True, text=True, env=env, timeout=300)
        return done.returncode, done.stderr
    master, slave = os.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "chronomem", *args], stdout=subprocess.DEVNULL, stderr=slave,
                            stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    return proc.wait(timeout=60), out.decode(errors="replace")


@pytest.mark.slow  # four chronomem processes
def test_export_and_purge_show_progress_at_a_terminal_only(svc: MemoryService, tmp_path: Path) -> None:
    for i in range(3):
        tools.remember(svc, f"Note number {i} about the release train")
    store = str(svc.settings.store_path)
    code, shown = run(["export", "--store", store, "--out", str(tmp_path / "a.jsonl")], terminal=True)
    assert code == 0
    assert "exporting: 100%" in shown and "3/3" in shown, shown
    code, quiet = run(["export", "--store", store, "--out", str(tmp_path / "b.jsonl")], terminal=False)
    assert code == 0 and quiet.strip() == f"exported 3 memories to {tmp_path / 'b.jsonl'}", quiet

    code, shown = run(["purge", "--store", store, "--query", "number 1", "--yes"], terminal=True)
    assert code == 0 and "purging 1 memories" in shown, shown
    code, quiet = run(["purge", "--store", store, "--query", "number 2", "--yes"], terminal=False)
    assert code == 0 and "purging" not in quiet, quiet
