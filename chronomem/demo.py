"""`chronomem demo`: a project whose facts change, told to a temporary store, then queried."""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path

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


def run_demo(settings: Settings, as_json: bool = False) -> int:
    from chronomem import tools
    from chronomem.service import MemoryService

    with tempfile.TemporaryDirectory(prefix="chronomem-demo-") as tmp:
        svc = MemoryService(replace(settings, store_path=Path(tmp), project=PROJECT))
        outputs = []
        say = _printer(as_json, outputs)
        say("# Remembering a project's story (valid times in 2024):", None)
        for when, text, facts in STORY:
            result = tools.remember(
                svc,
                text,
                valid_from=when,
                facts=[{"subject": PROJECT, "predicate": p, "object": o} for p, o in facts],
            )
            say(f"\n$ chronomem remember {text!r} --valid-from {when}", result)
        question = "which command runs the tests?"
        say(f"\n# Now: recall {question!r}", tools.recall(svc, question, limit=3))
        say(f"\n# Back then: as_of {question!r} at 2024-02-01", tools.as_of(svc, question, "2024-02-01", limit=3))
        say("\n# How the test command changed: history", tools.history(svc, subject=PROJECT, predicate="test_command"))
        say("\n# Something never stored: recall 'which database do we use?'", tools.recall(svc, "which database do we use?"))
        if as_json:
            print(json.dumps(outputs, indent=2))
    return 0


def _printer(as_json: bool, outputs: list):
    def say(title: str, result) -> None:
        if as_json:
            if result is not None:
                outputs.append({"step": title.strip("# \n$"), "result": result.model_dump(mode="json")})
            return
        print(title)
        if result is not None:
            print(result.text())

    return say
