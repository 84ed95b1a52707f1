"""The stage timer wraps the read and write path's functions only while it measures, and counts each run."""

from __future__ import annotations

import importlib

from eval.stage_times import STAGES, timed


def _current(module_name: str, attribute: str) -> object:
    owner: object = importlib.import_module(module_name)
    *path, name = attribute.split(".")
    for part in path:
        owner = getattr(owner, part)
    return owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)


def test_every_stage_is_found_wrapped_while_open_and_restored_after() -> None:
    stages = [stage for tool in STAGES.values() for stage in tool]
    before = [_current(module, attribute) for module, attribute, _ in stages]
    spent: dict[str, float] = {}
    with timed(stages, spent):
        during = [_current(module, attribute) for module, attribute, _ in stages]
        from chronomem.retrieval import pipeline

        pipeline.with_notes(None, [])  # type: ignore[arg-type]  # no hits: returns at once, still a timed run
    assert all(a is not b for a, b in zip(before, during, strict=True))
    assert [_current(module, attribute) for module, attribute, _ in stages] == before
    assert set(spent) == {"facts' notes"} and spent["facts' notes"] >= 0.0
