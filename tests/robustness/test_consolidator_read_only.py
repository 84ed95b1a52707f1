"""The consolidator on a store it cannot write (issue 46): one warning line on stderr, no traceback, the thread
alive and resting (backing off), the server still answering; and when the store takes writes again, consolidation
resumes by itself.

Why this way: the tests run as root, where chmod does not stop a write, so a store made read-only with chmod would
not fail at all. The store is instead on a real read-only file system: a tmpfs, written while read-write, then
remounted read-only, in a private mount namespace (`unshare -m`) that disappears with the process — as
tests/robustness/test_resource_errors.py does. The writes fail for real (EROFS) inside the product's own code
(the consolidation lock file, then any commit); nothing is mocked. Skipped where root or unshare is missing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import model_dir

REPO = Path(__file__).resolve().parents[2]

#: Shared start of both scripts: mount a tmpfs at argv[1], write two notes there with the real CLI, remount it
#: read-only. `remount(rw)` is there for the script that makes it writable again.
PRELUDE = r"""
import json, os, subprocess, sys, time
M, OUT = sys.argv[1], sys.argv[2]
if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", M]).returncode != 0:
    sys.exit(77)
S = os.path.join(M, "store")
for text in ("The deploy key lives in vault path ops/deploy.", "Staging runs on port 8443."):
    subprocess.run([sys.executable, "-m", "chronomem", "remember", text, "--store", S, "--project", "p"], check=True,
                   stdout=subprocess.DEVNULL)

def remount(mode):
    subprocess.run(["mount", "-o", f"remount,{mode}", M], check=True)

remount("ro")
"""

#: A real `chronomem serve` over stdio on the read-only store; recalls spaced so the consolidator gets idle moments.
SERVER = PRELUDE + r"""
err = open(os.path.join(OUT, "server.err"), "wb")
srv = subprocess.Popen([sys.executable, "-m", "chronomem", "serve", "--store", S, "--project", "p"],
                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)

def send(msg):
    srv.stdin.write((json.dumps(msg) + "\n").encode())
    srv.stdin.flush()

send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
      "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
srv.stdout.readline()
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
answers = []
for i in range(1, 5):
    send({"jsonrpc": "2.0", "id": i, "method": "tools/call",
          "params": {"name": "recall", "arguments": {"query": "which port does staging run on?"}}})
    got = json.loads(srv.stdout.readline())
    result = got.get("result") or {}
    answers.append({"error": bool(result.get("isError")) or "error" in got, "found": "8443" in json.dumps(result)})
    time.sleep(1.5)  # idle: the consolidator takes its turn (and meets the read-only store)
alive = srv.poll() is None
srv.stdin.close()
srv.wait(timeout=30)
print(json.dumps({"answers": answers, "alive": alive}))
"""

#: The runner itself, with a short rest, on the same kind of store: it rests through several wakes, then the store
#: is made writable and the next wake resumes consolidation (the two notes' rules extraction).
RUNNER = PRELUDE + r"""
import logging
from chronomem.config import Settings
from chronomem.consolidate.runner import Consolidator
from chronomem.service import MemoryService

records = []
class Keep(logging.Handler):
    def emit(self, record):
        records.append({"level": record.levelname, "message": record.getMessage(), "trace": bool(record.exc_info)})
logging.getLogger("chronomem").addHandler(Keep())
logging.getLogger("chronomem").setLevel(logging.INFO)

svc = MemoryService(Settings.from_env(store=S, project="p"))
runner = Consolidator(svc, idle_seconds=0.05, llm=None, resource_backoff=0.3)

def poke(times, gap):
    for _ in range(times):
        runner.call_started()
        runner.call_finished()
        time.sleep(gap)

poke(8, 0.2)  # 1.6 s read-only: tried at the first wake, then after each rest (0.3, 0.6 s ...)
deadline = time.monotonic() + 20  # a loaded machine may wake it less often: until it has tried twice, not a clock
while time.monotonic() < deadline and runner.refusals < 2:
    poke(1, 0.2)
paused, refusals = runner.paused, runner.refusals
alive_ro = runner._thread.is_alive()
remount("rw")
deadline = time.monotonic() + 20
while time.monotonic() < deadline and not any(s.did == "extract rules" for s in runner.steps):
    poke(1, 0.3)
runner.stop()
print(json.dumps({"paused": paused, "refusals": refusals, "alive_ro": alive_ro, "resumed": runner.paused is None,
                  "steps": [s.did for s in runner.steps], "records": records}), flush=True)
# what is tested ends here: leave without the interpreter's finalisation, which a native thread of the store or the
# model aborts now and then ("PyGILState_Release: thread state must be current", SIGABRT; an open defect)
os._exit(0)
"""


def run_in_namespace(script: str, tmp_path: Path) -> dict:
    mount, out = tmp_path / "m", tmp_path / "out"
    mount.mkdir()
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOMEM_")}
    env.update({"CHRONOMEM_MODEL_PATH": str(model_dir()), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)})
    if os.environ.get("CHRONOMEM_CACHE_DIR"):
        env["CHRONOMEM_CACHE_DIR"] = os.environ["CHRONOMEM_CACHE_DIR"]
    ran = subprocess.run(["unshare", "-m", sys.executable, "-c", script, str(mount), str(out)], capture_output=True,
                         text=True, env=env, timeout=300)
    if ran.returncode == 77 or "unshare failed" in ran.stderr:
        pytest.skip(f"no private tmpfs here: {ran.stderr.strip()[:200]}")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    said = json.loads(ran.stdout.strip().splitlines()[-1])
    said["server.err"] = (out / "server.err").read_text() if (out / "server.err").exists() else ""
    return said


needs_namespace = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                                     reason="needs root and unshare -m for a read-only file system")


@pytest.mark.slow
@needs_namespace
def test_the_runner_rests_on_a_read_only_store_warns_once_and_resumes_when_writable(tmp_path: Path) -> None:
    said = run_in_namespace(RUNNER, tmp_path)
    assert said["alive_ro"], "the consolidator thread died on the read-only store"
    assert said["paused"] and "read-only file system (EROFS)" in said["paused"]
    records = said["records"]
    assert not [r for r in records if r["trace"] or r["level"] == "ERROR"], records  # no traceback, no error
    paused = [r for r in records if r["message"].startswith("consolidation paused")]
    assert said["refusals"] >= 2, said  # it tried again after resting ...
    assert len(paused) == 1 and paused[0]["level"] == "WARNING", records  # ... and said so once
    assert "Tool calls still answer" in paused[0]["message"]
    assert said["resumed"] and any(r["message"].startswith("consolidation resumed") for r in records), records
    assert "extract rules" in said["steps"], said["steps"]  # the two notes are consolidated once it may write


@pytest.mark.slow
@needs_namespace
def test_a_server_on_a_read_only_store_answers_and_its_consolidator_warns_once(tmp_path: Path) -> None:
    said = run_in_namespace(SERVER, tmp_path)
    assert said["alive"] and all(not a["error"] and a["found"] for a in said["answers"]), said
    err = said["server.err"]
    assert "Traceback" not in err and "Exception in thread" not in err, err
    warned = [line for line in err.splitlines() if "consolidation paused" in line]
    assert len(warned) == 1 and warned[0].startswith("WARNING chronomem.consolidate.runner:"), err
    assert "read-only file system (EROFS)" in warned[0] and "not damaged" in warned[0]
