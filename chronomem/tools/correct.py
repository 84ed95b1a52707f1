"""`replace`: "this replaces that" — a person's correction, made of `remember` and `forget`, deleting nothing.

- A fact: the new value is remembered as a fact on the same slot (subject, predicate, project),
  so the ordinary resolution supersedes the old value from now (its row keeps its interval,
  `history` and `as_of` still show it, `superseded_by` points at the new one). The note stating it
  is `text`, or the fact's own sentence.
- A note (chunk): `text` is remembered in the same project with the same paths, then the old note
  is forgotten with the reason "replaced by <new id>" (facts derived only from it end with it).

Writes carry the tag `ui` so their origin stays visible. Not an MCP tool: an agent does the same
with `remember` and `forget`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from chronomem.errors import InvalidInput
from chronomem.records import fact_sentence
from chronomem.service import MemoryService
from chronomem.tools.browse import CLIENT_TAG
from chronomem.tools.forget import forget
from chronomem.tools.lookup import get_or_fail, latest_revision
from chronomem.tools.remember import remember
from chronomem.tools.validate import memory_id, require_text

#: The tag on every memory a correction writes.
TAG = "ui"


class ReplaceResult(BaseModel):
    old_id: str
    new_id: str = Field(description="The memory that replaces it (a fact for a fact, a note for a note)")
    note_id: str = Field(description="The note stored with the correction")
    action: str = Field(description="superseded (a fact), replaced (a note), or reinforced (the same value again)")
    message: str

    def text(self) -> str:
        return self.message


def replace(
    svc: MemoryService, old_id: Any, text: Any = None, *, value: Any = None, reason: Any = None, who: str | None = None
) -> ReplaceResult:
    """Replace memory `old_id`: a fact by `value` (its note `text`, optional), a note by `text`. `who`, when given,
    is the person making the correction: its writes carry `client:<who>` (as a team client's do) and the messages
    and a replaced note's forget reason end `by <who>`."""
    target = memory_id(old_id)
    tags = [TAG] + ([f"{CLIENT_TAG}{who}"] if who else [])
    by = f", by {who}" if who else ""
    old = latest_revision(svc.store, get_or_fail(svc.store, target))
    if old.expired_at is not None or (old.invalid_at is not None and old.invalid_at <= svc.now()):
        raise InvalidInput(f"{target} is no longer current: only a current memory can be replaced")
    if old.kind == "fact":
        assert old.subject is not None and old.predicate is not None
        new_value = require_text(value, "value", 2000).strip()
        note = require_text(text, "text", svc.settings.max_content_chars) if text else fact_sentence(
            old.subject, old.predicate, new_value
        )
        fact = {"subject": old.subject, "predicate": old.predicate, "object": new_value}
        made = remember(svc, note, project=old.project, facts=[fact], tags=tags)
        if not made.facts:
            why = made.refused_facts[0].reason if made.refused_facts else "it was not stored"
            raise InvalidInput(f"the new value was refused: {why}")
        result = made.facts[0]
        action = "reinforced" if result.action == "reinforced" else "superseded"
        return ReplaceResult(
            old_id=target, new_id=result.id, note_id=made.id, action=action,
            message=f"{old.subject} · {old.predicate} is now {new_value!r} ({result.action}{by}); "
            f"{target} stays in history.",
        )
    new_text = require_text(text, "text", svc.settings.max_content_chars)
    made = remember(svc, new_text, project=old.project, tags=tags, paths=list(old.paths) or None)
    why = f"replaced by {made.id}" + (f": {str(reason).strip()}" if reason else "") + (f" (by {who})" if who else "")
    forget(svc, target, why)
    return ReplaceResult(
        old_id=target, new_id=made.id, note_id=made.id, action="replaced",
        message=f"{made.id} replaces {target}, which is forgotten ({why}) and stays in history.",
    )
