"""The package layering of ../shared/DESIGN.md holds: `lint-imports` keeps every contract in pyproject.toml
(layers, the forbidden arrows, no cycle between packages). .ci/run also runs it before the tests."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept() -> None:
    command = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if command is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    run = subprocess.run([command, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout
