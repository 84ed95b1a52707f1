"""A name that only ended memories mention was mentioned: recall answers with those memories, marked ended.

The names gate abstains when a name of the query is in no memory of the searched slice ("never mentioned").
Searching the live slice alone, it said so of a path the store had held until a newer note moved the module
(devmem_validation with a noisy agent: "Look through the notes for `internal/juniperly/feeds/`"). Before
abstaining, the memories ended by then are searched too; retracted ones (never true) stay out.
"""

from __future__ import annotations

from chronomem.service import MemoryService
from chronomem.tools import as_of, forget, recall, remember

OLD_PATH = {"subject": "feeds", "predicate": "path", "object": "modules/feeds/"}
NEW_PATH = {"subject": "feeds", "predicate": "path", "object": "internal/core/feeds/"}


def _moved(svc: MemoryService, clock) -> tuple[str, str]:
    old = remember(svc, "The feeds code sits in `modules/feeds/`.", project="juniper", valid_from="2024-02-01", facts=[OLD_PATH])
    clock.advance(seconds=1)
    new = remember(svc, "Code for the feeds module sits in internal/core/feeds/.", project="juniper", valid_from="2024-04-01", facts=[NEW_PATH])
    clock.advance(seconds=1)
    return old.id, new.id


def test_a_name_only_ended_memories_mention_is_answered_with_them(svc: MemoryService, clock) -> None:
    old, new = _moved(svc, clock)
    found = recall(svc, "Look through the notes for `modules/feeds/`.", project="juniper")
    assert not found.abstained
    first = found.results[0]
    assert "modules/feeds/" in first.text and first.invalid_at is not None  # shown as ended, with when
    assert "modules/feeds/" in found.message and "had ended" in found.message
    # a question the live memories answer is answered from them alone, as before
    live = recall(svc, "where is the feeds module's code?", project="juniper")
    assert all(item.invalid_at is None for item in live.results)
    assert "had ended" not in live.message


def test_as_of_before_the_move_still_answers_from_the_slice_live_then(svc: MemoryService, clock) -> None:
    _moved(svc, clock)
    then = as_of(svc, "Look through the notes for `modules/feeds/`.", at="2024-03-01", project="juniper")
    assert not then.abstained and "modules/feeds/" in then.results[0].text
    assert "had ended" not in then.message  # live then: no wider search


def test_a_name_never_stored_still_abstains(svc: MemoryService, clock) -> None:
    _moved(svc, clock)
    found = recall(svc, "Look through the notes for `lib/py/feeds/`.", project="juniper")
    assert found.abstained and found.results == []
    assert "never mentioned" in found.message


def test_a_retracted_memory_stays_out(svc: MemoryService, clock) -> None:
    note = remember(svc, "The billing code sits in `legacy/billing/`.", project="juniper", valid_from="2024-02-01")
    clock.advance(seconds=1)
    forget(svc, note.id, reason="never true: a typo", retract=True)
    found = recall(svc, "Look through the notes for `legacy/billing/`.", project="juniper")
    assert found.abstained and found.results == []
