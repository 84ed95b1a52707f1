"""Chains from structure (issue 45): notes that differ only in a value, written out of time order, read as one
chain: recall's first answer is the newest valid one, and as_of picks the one valid in every interval."""

from __future__ import annotations

import random

from chronomem.service import MemoryService
from chronomem.tools import as_of, recall, remember

VERSIONS = ["2023.1.4", "2023.2.11", "2023.3.3", "2023.4.22", "2023.5.7", "2023.6.30", "2023.7.22", "2023.8.5", "2023.9.14", "2023.10.2"]
QUESTION = "which certifi version do we use"


def test_ten_upgrades_out_of_time_order(svc: MemoryService, clock) -> None:
    order = list(range(10))
    random.Random(3).shuffle(order)
    ids: dict[int, str] = {}
    for i in order:
        clock.advance(seconds=1)
        ids[i] = remember(svc, f"Upgrade certifi to {VERSIONS[i]}", valid_from=f"2023-{i + 1:02d}-15").id
        clock.advance(seconds=1)
        remember(svc, f"Reviewed the flaky upload test again (round {i})", valid_from=f"2023-{i + 1:02d}-16")
    top = recall(svc, QUESTION).results[0]
    assert top.id == ids[9], top.text
    for i in range(10):
        first = as_of(svc, QUESTION, at=f"2023-{i + 1:02d}-20").results[0]
        assert (first.revision_of or first.id) == ids[i], (i, first.text)
