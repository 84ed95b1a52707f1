"""`forget`: end a memory's validity (or retract it as never true) and keep the row.

The reason is stored with the row, exported and echoed back, so it passes the same secret
scan as `remember`'s text (chronomem/safety/secrets.py) before anything is written.

Invalidating closes the valid-time interval through a revision row; retracting sets
the transaction-time end (`expired_at`). Either way `as_of` before that moment still
sees the memory, and `history` shows why it ended. Facts derived only from a
forgotten chunk are forgotten with it.

`SPEC` is the tool as MCP publishes it (title, description for the model, hints, input schema,
the alias `memory_id` for `id`); the CLI calls `forget` directly.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from chronomem.errors import InvalidInput
from chronomem.records import MemoryRecord
from chronomem.safety.secrets import SecretGuard, describe
from chronomem.service import MemoryService
from chronomem.storage import Filter, MemoryStore
from chronomem.timeparse import iso, parse_time
from chronomem.tools.lookup import get_or_fail, latest_revision
from chronomem.tools.results import ForgetResult, Redaction
from chronomem.tools.spec import Hints, ToolSpec
from chronomem.tools.validate import memory_id, require_text

MAX_REASON_CHARS = 1000


def forget(
    svc: MemoryService,
    id: Any,
    reason: Any = None,
    *,
    retract: bool = False,
    at: Any = None,
) -> ForgetResult:
    """End memory `id` at `at` (default now), or with `retract=True` mark it as never true."""
    target_id = memory_id(id)
    why = require_text(reason, "reason", MAX_REASON_CHARS).strip() if reason is not None else "forgotten on request"
    guard = SecretGuard(svc.settings.secrets_mode)  # the reason is stored, exported and echoed: same scan as remember
    why = guard.clean(why, "reason")
    if not isinstance(retract, bool):
        raise InvalidInput("retract must be true or false")
    if retract and at is not None:
        raise InvalidInput("a retraction has no end time: pass either retract=true or at, not both")
    store = svc.store
    with svc.writing():
        now = svc.now()
        end = parse_time(at, now, field="at") if at is not None else now
        row = latest_revision(store, get_or_fail(store, target_id))
        if row.expired_at is not None:
            return ForgetResult(
                id=target_id,
                action="unchanged",
                message=f"{target_id} was already retracted at {iso(row.expired_at)} ({row.reason}); nothing changed.",
            )
        if not retract and row.invalid_at is not None and row.invalid_at <= end:
            return ForgetResult(
                id=target_id,
                action="unchanged",
                message=f"{target_id} already stopped being valid at {iso(row.invalid_at)}; nothing changed.",
            )
        if not retract and end < row.valid_at:
            raise InvalidInput(
                f"at {iso(end)} is before {target_id} became valid ({iso(row.valid_at)}); "
                "use retract=true if it was never true"
            )
        targets = [row] + (_derived_facts(store, row, now) if row.kind == "chunk" else [])
        writes: list[MemoryRecord] = []
        revision_id = None
        for item in targets:
            if retract:
                writes.append(MemoryStore.expired(item, now=now, reason=f"retracted: {why}"))
            else:
                item_end = max(end, item.valid_at)
                revision = MemoryStore.revision(item, invalid_at=item_end, now=now, reason=why)
                writes.append(MemoryStore.expired(item, now=now, reason=f"revised as {revision.id}: {why}"))
                writes.append(revision)
                if item is row:
                    revision_id = revision.id
        store.upsert(writes)

    also = [t.id for t in targets[1:]]
    if retract:
        message = f"Retracted {target_id} as never true ({why}); as_of with known_at before now still shows it."
    else:
        message = f"{target_id} is no longer valid from {iso(end)} ({why}); as_of earlier still shows it."
    if also:
        message += f" Also forgot {len(also)} fact(s) derived from it: {', '.join(also)}."
    if guard.total:
        message += f" Redacted {describe(guard.counts)} from the reason before storing it."
    return ForgetResult(
        redacted=[Redaction(kind=k, count=n) for k, n in sorted(guard.counts.items())],
        id=target_id,
        action="retracted" if retract else "invalidated",
        revision_id=revision_id,
        also=also,
        message=message,
    )


def _derived_facts(store: MemoryStore, chunk: MemoryRecord, now: Any) -> list[MemoryRecord]:
    """Live facts whose only source is this chunk."""
    ids = [chunk.id] + ([chunk.revision_of] if chunk.revision_of else [])
    rows = store.find(Filter().projects([chunk.project]).derived_from(ids).kinds(["fact"]).known(now), with_vectors=True)
    return [r for r in rows if set(r.source_ids) <= set(ids) and (r.invalid_at is None or r.invalid_at > now)]


# ---------------------------------------------------------------------------------------------- over MCP


def mcp_arguments(
    id: Annotated[str | None, Field(description="Id of the memory, from recall/as_of/history.")] = None,
    reason: Annotated[str | None, Field(description="Why it is no longer true; shown in history.")] = None,
    retract: Annotated[
        bool, Field(description="True if it was never true (a mistake), rather than true until now.")
    ] = False,
    at: Annotated[str | None, Field(description="When it stopped being true; default now.")] = None,
) -> dict[str, Any]:
    """`forget`'s MCP parameters (the input schema) as the handler's keyword arguments."""
    return {"id": id, "reason": reason, "retract": retract, "at": at}


DESCRIPTION = """\
Mark a memory as no longer true. Nothing is deleted.

Call it when the user says something stopped being true or was wrong, e.g. id="01J…" (from
recall, as_of or history), reason="we dropped Redis". By default its validity ends now: recall
stops returning it, while as_of before that moment and history still show it, with the reason.
retract=true records that it was never true. Facts derived only from a forgotten memory are
forgotten with it. A later `remember` of the same statement makes it current again.

Returns the id, what happened (invalidated, retracted, or unchanged when it had already ended)
and the ids of the facts forgotten with it. Forgetting the same memory again changes nothing."""

SPEC = ToolSpec(
    name="forget",
    title="Forget",
    description=DESCRIPTION,
    # Not destructive: it closes a validity interval by adding rows (a revision with the end time, or the
    # retraction's expiry); every earlier state stays readable through as_of and history, so nothing is lost.
    # Idempotent: a second call on an ended memory answers `unchanged`.
    hints=Hints(read_only=False, destructive=False, idempotent=True),
    handler=forget,
    result=ForgetResult,
    arguments=mcp_arguments,
    aliases={"memory_id": "id"},
)
