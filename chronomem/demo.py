"""`chronomem demo`: a project whose facts change, told to a temporary store, then queried.

Every step is printed as the `chronomem` command that does it (`$ chronomem …`, quoted for a POSIX shell) with
what it answered. The demo runs those very command lines — parsed by the CLI's own parser, run by the CLI's
own `tool_result`, both handed in by `chronomem.cli` — in one process against its temporary store, so the
lines, copied by hand into a shell pointed at an empty store (`export CHRONOMEM_HOME="$(mktemp -d)"`), tell
the same story: the facts are passed with `--fact` (nothing waits for `consolidate`), and the project is
named with `--project`.
"""

from __future__ import annotations

import json
import shlex
import tempfile
from dataclasses import replace
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chronomem.config import Settings

PROJECT = "demo-shop"

STORY = [
    ("2024-01-08", "We run the test suite with plain `pytest` from the repo root.", [("test_command", "pytest")]),
    ("2024-01-08", "The dev server listens on port 8000 (`make dev`).", [("dev_port", "8000")]),
    ("2024-02-20", "Lint with `ruff check .`; CI runs it before the tests.", [("lint_command", "ruff check .")]),
    (
        "2024-03-04",
        "We moved the tests to nox: run `nox -s tests` (it sets up the env and calls pytest).",
        [("test_command", "nox -s tests")],
    ),
    ("2024-04-02", "Dev server port is now 8080; 8000 clashed with the docs server.", [("dev_port", "8080")]),
]
QUESTION = "which command runs the tests?"
NEVER_STORED = "which database do we use?"
REPLAY = 'To replay it in a shell, point chronomem at an empty store first: export CHRONOMEM_HOME="$(mktemp -d)"'


def commands() -> list[tuple[str, list[str]]]:
    """The story as (what the step shows, the command's arguments after `chronomem`)."""
    scope = ["--project", PROJECT]
    steps: list[tuple[str, list[str]]] = []
    for i, (when, text, facts) in enumerate(STORY):
        argv = ["remember", text, "--valid-from", when]
        for predicate, value in facts:
            argv += ["--fact", PROJECT, predicate, value]
        steps.append(("Remembering a project's story (valid times in 2024):" if i == 0 else "", argv + scope))
    steps += [
        ("Now: which command runs the tests?", ["recall", QUESTION, "-k", "3", *scope]),
        ("Back then: what ran the tests on 2024-02-01?", ["as-of", QUESTION, "--at", "2024-02-01", "-k", "3", *scope]),
        ("How the test command changed:", ["history", "--subject", PROJECT, "--predicate", "test_command", *scope]),
        ("Something never stored:", ["recall", NEVER_STORED, *scope]),
    ]
    return steps


def run_demo(
    settings: Settings,
    parse: Callable[[list[str]], Any],
    run: Callable[[Any, Any], Any],
    as_json: bool = False,
) -> int:
    """Tell the story: each command parsed by `parse` (the CLI's parser) and run by `run` (the CLI's `tool_result`,
    handed in: this module does not import the CLI, which imports it)."""
    from chronomem.service import MemoryService

    with tempfile.TemporaryDirectory(prefix="chronomem-demo-") as tmp:
        svc = MemoryService(replace(settings, store_path=Path(tmp), project=PROJECT))
        outputs: list[dict[str, Any]] = []
        if not as_json:
            print(f"# {REPLAY}")
        for title, argv in commands():
            result = run(svc, parse(argv))
            line = "chronomem " + shlex.join(argv)
            if as_json:
                outputs.append({"step": title or line, "command": line, "result": result.model_dump(mode="json")})
                continue
            if title:
                print(f"\n# {title}")
            print(f"\n$ {line}")
            print(result.text())
        if as_json:
            print(json.dumps(outputs, indent=2))
    return 0
