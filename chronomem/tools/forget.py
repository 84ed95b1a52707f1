"""`forget`: end a memory's validity (or retract it as never true) and keep the row.

The reason is stored with the row, exported and echoed back, so it passes the same secret
scan as `remember`'s text (chronomem/safety/secrets.py) before anything is written.

Invalidating closes the valid-time interval through a revision row; retracting sets
the transaction-time end (`expired_at`). Either way `as_of` before that moment still
sees the memory, and `history` shows why it ended. Facts derived only from a
forgotten chunk are forgotten with it, except that when a newer memory replaces it
(`superseded_by`, also what `remember(supersedes=…)` passes) each fact whose new value
the newer memory gives is carried over to it (`carry_facts`), so the slot stays current.

`SPEC` is the tool as MCP publishes it (title, description for the model, hints, input schema,
the alias `memory_id` for `id`); the CLI calls `forget` directly.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

from pydantic import Field

from chronomem.consolidate.apply import resolve_and_commit
from chronomem.consolidate.pending import fact_row
from chronomem.consolidate.restate import SlotView, pick, restatements, thing_words
from chronomem.errors import InvalidInput
from chronomem.facts import STRUCTURE_SOURCE
from chronomem.project import display_name
from chronomem.records import MemoryRecord, fact_sentence
from chronomem.safety.secrets import SecretGuard, describe
from chronomem.service import MemoryService
from chronomem.storage import Filter, MemoryStore
from chronomem.timeparse import iso, parse_time
from chronomem.tools.lookup import get_or_fail, latest_revision
from chronomem.tools.results import FactResult, ForgetResult, Redaction
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
    superseded_by: Any = None,
) -> ForgetResult:
    """End memory `id` at `at` (default now, or the valid time of `superseded_by`), or with `retract=True` mark it
    as never true. `superseded_by` names the memory that replaces it: its facts whose new value that memory gives in
    the same place (`carry_facts`) are filed from it, so their slots stay current."""
    target_id = memory_id(id)
    successor_id = memory_id(superseded_by) if superseded_by is not None else None
    why = require_text(reason, "reason", MAX_REASON_CHARS).strip() if reason is not None else (
        f"superseded by {successor_id}" if successor_id else "forgotten on request"
    )
    guard = SecretGuard(svc.settings.secrets_mode)  # the reason is stored, exported and echoed: same scan as remember
    why = guard.clean(why, "reason")
    if not isinstance(retract, bool):
        raise InvalidInput("retract must be true or false")
    if retract and at is not None:
        raise InvalidInput("a retraction has no end time: pass either retract=true or at, not both")
    if retract and successor_id is not None:
        raise InvalidInput("a retraction is never true, so nothing supersedes it: pass either retract=true or superseded_by")
    store = svc.store
    carried: list[FactResult] = []
    if successor_id is not None:
        current = latest_revision(store, get_or_fail(store, target_id))
        successor = successor_of(store, current, successor_id)
        at = at if at is not None else iso(successor.valid_at)
        if current.expired_at is None and current.invalid_at is None and parse_time(at, svc.now(), field="at") >= current.valid_at:
            # before the memory ends: each carried fact supersedes its old value (history links the two)
            carried = carry_facts(svc, current, successor)
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
            if carried:  # a fact, which the fact carried from its successor has just superseded
                return ForgetResult(
                    id=target_id, action="invalidated", carried=carried,
                    message=f"{target_id} is no longer valid from {iso(row.invalid_at)}: superseded by {carried[0].id} "
                    f"({carried[0].subject} {carried[0].predicate} = {carried[0].object}), filed from {successor_id}.",
                )
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
    if carried:
        message += " Filed from " + f"{successor_id}: " + "; ".join(
            f"{f.subject} {f.predicate} = {f.object}" + (f" (supersedes {f.supersedes})" if f.supersedes else "")
            for f in carried
        ) + "."
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
        carried=carried,
        message=message,
    )


def successor_of(store: MemoryStore, target: MemoryRecord, successor_id: str) -> MemoryRecord:
    """The memory `superseded_by` names (its latest revision), checked: it exists, is another memory than `target`
    (the latest revision of the memory being forgotten) under any of its ids, is of `target`'s project, and became
    valid no earlier than `target`."""
    successor = latest_revision(store, get_or_fail(store, successor_id))
    if successor.id == target.id:
        raise InvalidInput("superseded_by names the memory being forgotten; name the memory that replaces it")
    if successor.project != target.project:
        raise InvalidInput(
            f"superseded_by: {successor_id} belongs to project {successor.project}, not {target.project}"
        )
    if successor.valid_at < target.valid_at:
        raise InvalidInput(
            f"superseded_by: {successor_id} became valid at {iso(successor.valid_at)}, before the memory being "
            f"forgotten ({iso(target.valid_at)}); a memory is replaced by a later one"
        )
    return successor


def carry_facts(svc: MemoryService, target: MemoryRecord, successor: MemoryRecord) -> list[FactResult]:
    """The facts of `target` (a fact, or the live facts derived from a chunk) whose value `successor` gives in the
    same place, filed from `successor` at its valid time: "- Format: `uv run ruff format .`" with its fact
    (format command = `uv run ruff format .`), replaced by "- Format: `uv run --frozen ruff format .`", leaves the
    format command `uv run --frozen ruff format .` (`value_in_place`: the same words around other values), or
    otherwise the one new value of the fact's kind the successor gives its thing (`_restated`). A slot the successor
    already fills is left to it."""
    store = svc.store
    now = svc.now()
    if target.kind == "fact":
        sources = store.find(Filter().ids(list(target.source_ids))) if target.source_ids else []
        pairs = [(target, source.content) for source in sources[:1]]
    else:
        pairs = [(fact, target.content) for fact in _derived_facts(store, target, now)]
    own = {
        (r.subject, r.predicate)
        for r in store.find(Filter().projects([successor.project]).derived_from([successor.id]).kinds(["fact"]).known(now))
    }
    found: list[tuple[MemoryRecord, str]] = []
    for fact, old_text in pairs:
        if not fact.subject or not fact.predicate or not fact.object or (fact.subject, fact.predicate) in own:
            continue
        if fact.source_ids and fact.source_ids[0] == successor.id:
            continue
        value = _restated(fact, old_text, successor)
        if value is not None:
            found.append((fact, value))
    if not found:
        return []
    sentences = [fact_sentence(fact.subject or "", fact.predicate or "", value) for fact, value in found]
    vectors = svc.embedder.embed(sentences)
    with svc.writing():
        now = svc.now()
        records = [  # shaped like the consolidator's structure facts; the old fact's tags keep its kind (an event)
            replace(
                fact_row(
                    successor, fact.subject or "", fact.predicate or "", value, valid_at=successor.valid_at, now=now,
                    vector=vector, embed_model=svc.embedder.name, source=STRUCTURE_SOURCE,
                ),
                tags=list(fact.tags),
            )
            for (fact, value), vector in zip(found, vectors, strict=True)
        ]
        outcomes = resolve_and_commit(store, records, now)
    return [
        FactResult(id=o.fact_id, action=o.action, subject=o.subject, predicate=o.predicate, object=o.object,
                   supersedes=o.supersedes, conflicts_with=list(o.conflicts_with))
        for o in outcomes
    ]


def _restated(fact: MemoryRecord, stated_in: str, successor: MemoryRecord) -> str | None:
    """The one new value `successor` gives the fact (`restate`: in place of the value in the words of the note that
    stated it, `stated_in`; or of the fact's kind, naming its thing: "dispatch-jobs → port 5381" for the port 5589
    of "dispatch-jobs listens on 5589"); the consolidator makes the same reading of a note without facts, but only
    while the slot is still current, which ending `fact` first would prevent."""
    project = display_name(fact.project)
    words = tuple(thing_words(fact.subject or "", fact.predicate or "", project, stated_in))
    view = SlotView((fact.subject or "", fact.predicate or ""), fact.object or "", words, stated_in)
    chosen = pick(restatements(successor.content, [view], project))
    return chosen.value if chosen is not None else None


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
    superseded_by: Annotated[
        str | None,
        Field(
            description="Id of the memory that replaces it (e.g. the note whose reply listed it in probable_updates): "
            "it ends at that memory's valid time, and a fact of it whose new value that memory gives in its place "
            "is filed from that memory, so the slot stays current."
        ),
    ] = None,
) -> dict[str, Any]:
    """`forget`'s MCP parameters (the input schema) as the handler's keyword arguments."""
    return {"id": id, "reason": reason, "retract": retract, "at": at, "superseded_by": superseded_by}


DESCRIPTION = """\
Mark a memory as no longer true. Nothing is deleted.

Call it when the user says something stopped being true or was wrong, e.g. id="01J…" (from
recall, as_of or history), reason="we dropped Redis". By default its validity ends now: recall
stops returning it, while as_of before that moment and history still show it, with the reason.
retract=true records that it was never true. Facts derived only from a forgotten memory are
forgotten with it. A later `remember` of the same statement makes it current again.

When a newer memory replaces it (a reply's probable_updates listed it), pass superseded_by="01J…"
(the newer one's id): it ends at that memory's time, and its facts whose new value the newer memory
gives in the same place ("Format: `ruff format .`" → "Format: `ruff format --check .`") are filed
from the newer memory, so the slot stays current. They are listed in `carried`.

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
