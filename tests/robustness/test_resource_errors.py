"""A full disk and a read-only store are named as what they are, in one line, exit 2, nothing marked damaged,
nothing lost. The tests run as root, where chmod does not stop a write, so the conditions are real file
systems: a 4 MB tmpfs filled to the last byte (ENOSPC) and the same tmpfs remounted read-only (EROFS), in a
private mount namespace (`unshare -m`) that disappears with the shell. Skipped where that is not allowed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import model_dir

SCRIPT = r"""
set -u
M="$1"
mount -t tmpfs -o size=4m tmpfs "$M" || exit 77
S="$M/store"
run() { "$PY" -m chronomem "$@" --store "$S"; }
run remember "The deploy key lives in vault path ops/deploy." >/dev/null || exit 10
run remember "Staging runs on port 8443." >/dev/null || exit 11
head -c 100000000 /dev/zero > "$M/filler" 2>/dev/null
run remember "This note meets a full disk." 2>"$M.full.err"; echo "full rc=$?"
run doctor --json > "$M.doctor.json" 2>/dev/null; echo "doctor rc=$?"
rm "$M/filler"
run export 2>/dev/null | wc -l | sed 's/^/exported /'
mount -o remount,ro "$M"
run remember "This note meets a read-only store." 2>"$M.ro.err"; echo "ro rc=$?"
run recall "staging port" >/dev/null 2>&1; echo "recall rc=$?"
cp "$M.full.err" "$M.ro.err" "$M.doctor.json" "$OUT"/ 2>/dev/null
"""


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare -m")
def test_full_disk_and_read_only_store_are_named_in_one_line(tmp_path: Path) -> None:
    mount = tmp_path / "m"
    mount.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOMEM_")}
    env.update({"CHRONOMEM_MODEL_PATH": str(model_dir()), "HF_HUB_OFFLINE": "1", "CHRONOMEM_PROJECT": "p",
                "PY": sys.executable, "OUT": str(out),
                "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    ran = subprocess.run(["unshare", "-m", "bash", "-c", SCRIPT, "x", str(mount)], capture_output=True, text=True,
                         env=env, timeout=300)
    if ran.returncode == 77 or "unshare failed" in ran.stderr:
        pytest.skip(f"no private tmpfs here: {ran.stderr.strip()[:200]}")
    assert "full rc=2" in ran.stdout and "ro rc=2" in ran.stdout and "recall rc=0" in ran.stdout, ran.stdout + ran.stderr
    assert "exported 2" in ran.stdout, ran.stdout  # both acknowledged writes are there once space is freed
    for name, words in (("m.full.err", "the disk is full (ENOSPC)"), ("m.ro.err", "read-only file system (EROFS)")):
        err = (out / name).read_text().strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: cannot write to the store") and words in err[0], err
        assert "damaged" in err[0] and "not damaged" in err[0] and "Traceback" not in err[0]
    doctor = json.loads((out / "m.doctor.json").read_text())
    assert doctor["store"]["ok"] is True and doctor["store"]["rows"] == 2, doctor["store"]  # nothing marked damaged
