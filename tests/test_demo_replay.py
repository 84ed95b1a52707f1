"""`chronomem demo` prints its story as `$ chronomem …` commands (issue 46): copied by hand into a shell, they
must tell the same story. This test does what a reader would: it takes the demo's output, runs its "export
CHRONOMEM_HOME=…" line and then every `$` line, in order, in one real bash (a fresh store in a temp dir), and
checks that each command answers what the demo showed under it — the same text, ids aside (new ids are
minted) — and, spelled out, the story's outcome: the test command is `nox -s tests` now, was `pytest` on
2024-02-01, its history holds both, and a database never stored is not invented."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import model_dir

REPO = Path(__file__).resolve().parent.parent
ULID = re.compile(r"\b[0-9A-HJKMNP-TV-Z]{26}\b")
MARK = "@@@ step"


def environment(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOMEM_")}
    env.update({"CHRONOMEM_MODEL_PATH": str(model_dir()), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO),
                "PY": sys.executable, "TMPDIR": str(tmp_path)})
    return env


def steps(demo: str) -> tuple[str, list[tuple[str, str]]]:
    """The demo's replay line (`export …`), and each `$` command with the output printed under it."""
    export = re.search(r"^# .*?: (export CHRONOMEM_HOME=.*)$", demo, re.M)
    assert export is not None, demo
    found: list[tuple[str, str]] = []
    for block in re.split(r"^\$ ", demo, flags=re.M)[1:]:
        command, _, rest = block.partition("\n")
        shown = "\n".join(line for line in rest.split("\n") if line and not line.startswith("# "))
        found.append((command, shown))
    return export.group(1), found


def without_ids(text: str) -> str:
    """Ids numbered by first appearance: the replay mints new ones, in the same places."""
    seen: dict[str, str] = {}
    return ULID.sub(lambda m: seen.setdefault(m.group(0), f"<id{len(seen) + 1}>"), text)


@pytest.mark.slow
def test_the_demos_printed_commands_tell_its_story(tmp_path: Path) -> None:
    env = environment(tmp_path)
    demo = subprocess.run([sys.executable, "-m", "chronomem", "demo"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)
    assert demo.returncode == 0, demo.stderr
    export, commands = steps(demo.stdout)
    assert [c.split()[1] for c, _ in commands] == ["remember"] * 5 + ["recall", "as-of", "history", "recall"]
    assert all("--project demo-shop" in c for c, _ in commands)

    script = ['chronomem() { "$PY" -m chronomem "$@"; }', "set -e", export]
    for i, (command, _) in enumerate(commands):
        script += [f"echo '{MARK} {i}'", command]  # exactly the printed line, as a shell reads it
    replay = subprocess.run(["bash", "-c", "\n".join(script)], capture_output=True, text=True, env=env, cwd=tmp_path,
                            timeout=900)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    answers = ["\n".join(line for line in part.split("\n")[1:] if line) for part in replay.stdout.split(MARK)[1:]]
    assert len(answers) == len(commands)
    stores = list(tmp_path.glob("tmp.*"))
    assert len(stores) == 1 and (stores[0] / "memories.lance").is_dir()  # the replay wrote its own store

    shown = without_ids("\n\x00\n".join(s for _, s in commands)).split("\n\x00\n")
    got = without_ids("\n\x00\n".join(answers)).split("\n\x00\n")
    for (command, _), expected, answer in zip(commands, shown, got, strict=True):
        assert answer == expected, f"$ {command}\n--- the demo showed:\n{expected}\n--- the replay answered:\n{answer}"

    now, then, history, never = answers[5:]
    assert re.search(r"^1\. \[fact \S+\] demo-shop test command: nox -s tests$", now, re.M), now
    assert re.search(r"^1\. \[fact \S+\] demo-shop test command: pytest$", then, re.M), then
    assert "nox" not in then.split("\n")[1]
    assert history.startswith("demo-shop · test_command in demo-shop: 2 value(s), current 'nox -s tests'.")
    assert "'pytest'  [ended]" in history and "'nox -s tests'  [current]" in history
    assert never.startswith("Nothing relevant is stored for 'which database do we use?'")
