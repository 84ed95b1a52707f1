"""`remember`: store a statement verbatim at once, and resolve any structured facts it carries.

Code anchors: the project directory's git HEAD is recorded in `commit`, the `paths` are stored
relative to the repository (globs kept as given) and the blob id of each file they name is
recorded in the `anchors` column (path → blob id; chronomem/codebase.py), on the chunk and
on every fact it carries, so `recall` can tell when those files have changed since.

`SPEC` is the tool as MCP publishes it (title, description for the model, hints, input schema,
the alias `text` for `content`); the CLI calls `remember` directly.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any

from pydantic import Field, ValidationError

from chronomem.codebase import Codebase, short
from chronomem.config import MAX_FACTS_PER_CALL
from chronomem.consolidate import gate
from chronomem.consolidate.apply import FactOutcome, resolve_and_commit
from chronomem.consolidate.resolve import EVENT_TAG, STATE_TAG
from chronomem.consolidate.pending import live_facts_near
from chronomem.consolidate.slots import slot_matcher
from chronomem.errors import InvalidInput
from chronomem.records import (
    FactInput,
    MemoryRecord,
    fact_sentence,
    differs_only_in_values,
    is_time_value,
    same_value,
    value_kind,
    values_of_kind,
    new_id,
    normalize_predicate,
    normalize_subject,
)
from chronomem.safety.secrets import SecretGuard, describe
from chronomem.service import MemoryService
from chronomem.timeparse import iso, parse_time
from chronomem.storage import Filter
from chronomem.tools.forget import forget
from chronomem.tools.lookup import get_or_fail, latest_revision
from chronomem.tools.results import (
    Anchor,
    FactResult,
    GateReport,
    ProbableUpdate,
    Redaction,
    RefusedFact,
    RememberResult,
    UpdateBasis,
)
from chronomem.tools.spec import Hints, Project, ToolSpec
from chronomem.tools.validate import require_text, string_list

SOURCES = ("agent", "rules", "llm", "import")
#: Live facts a note is checked against for a probable update: the nearest by meaning or words (the
#: consolidator's own hybrid search, consolidate/pending.py, which reads 20 for the same kind of question).
NEAR_FACTS = 20
#: The cosine above which the nearest note may be "the same text but for a value": the lowest such pair measured
#: with the shipped model was 0.78 (`payments listens on port 8080` / `… 8443`; `Upgrade certifi to 2026.7.22` /
#: `… 2026.9.1` 0.90, `Full check: ./scripts/test (~20s …)` / `(~23s …)` 0.96).
SAME_TEXT_COSINE = 0.75


def parse_facts(facts: Any) -> tuple[list[tuple[int, FactInput]], list[RefusedFact]]:
    """The well-formed facts (each with its place in the list) and the refused ones with why.

    A call whose `facts` is not a list at all, or is longer than the limit, is refused whole; one bad
    item refuses only that item, so the note and its other facts are still stored.
    """
    if facts is None:
        return [], []
    if isinstance(facts, dict | FactInput):
        facts = [facts]
    if not isinstance(facts, list | tuple):
        raise InvalidInput("facts must be a list of {subject, predicate, object, valid_from?} objects")
    if len(facts) > MAX_FACTS_PER_CALL:
        raise InvalidInput(f"facts has {len(facts)} items; the limit is {MAX_FACTS_PER_CALL} per call")
    accepted: list[tuple[int, FactInput]] = []
    refused: list[RefusedFact] = []
    for i, item in enumerate(facts):
        if isinstance(item, FactInput):
            accepted.append((i, item))
            continue
        try:
            accepted.append((i, FactInput.model_validate(item)))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "fact"
            refused.append(RefusedFact(index=i, reason=f"facts[{i}].{where}: {first['msg']}"))
    return accepted, refused


def remember(
    svc: MemoryService,
    content: Any,
    *,
    project: str | None = None,
    valid_from: str | None = None,
    facts: Any = None,
    tags: Any = None,
    paths: Any = None,
    source: str = "agent",
    supersedes: Any = None,
) -> RememberResult:
    """Append `content` as a chunk (embedding + append, no LLM) and resolve its facts before returning.

    `supersedes` names memories this note replaces: each ends at the note's valid time (nothing else does).
    Without it, the reply lists the current memories the note probably updates, for the agent to confirm."""
    text = require_text(content, "content", svc.settings.max_content_chars)
    guard = SecretGuard(svc.settings.secrets_mode)
    guard.check_name(project, "project")
    scope = svc.project(project)
    numbered, refused = parse_facts(facts)
    fact_inputs = [f for _, f in numbered]
    tag_list = string_list(tags, "tags")
    path_list = string_list(paths, "paths")
    if source not in SOURCES:
        raise InvalidInput(f"source must be one of {', '.join(SOURCES)}")
    # Secrets are masked (or refused) here, before anything is embedded or stored.
    text = guard.clean(text, "content")
    fact_inputs = [
        f.model_copy(
            update={
                "subject": guard.clean(f.subject, f"facts[{i}].subject", name=True),
                "predicate": guard.clean(f.predicate, f"facts[{i}].predicate", name=True),
                "object": guard.clean(f.object, f"facts[{i}].object"),
            }
        )
        for i, f in enumerate(fact_inputs)
    ]
    tag_list = guard.clean_list(tag_list, "tags")
    path_list = guard.clean_list(path_list, "paths")
    now = svc.now()
    valid_at = parse_time(valid_from, now, field="valid_from") if valid_from else now
    replaced = superseded_targets(svc, string_list(supersedes, "supersedes"), scope, valid_at)
    codebase = Codebase.at(svc.workdir(project))
    commit = codebase.head() if codebase is not None else None
    notes: list[str] = []
    anchors: dict[str, str] = {}
    if codebase is not None and path_list:
        anchoring = codebase.anchor(path_list)
        path_list, anchors, notes = anchoring.paths, anchoring.anchors, anchoring.notes
    row_tags = tag_list
    fact_times: list[datetime] = []
    kept: list[FactInput] = []
    for (i, _), f in zip(numbered, fact_inputs, strict=True):
        try:
            fact_times.append(parse_time(f.valid_from, now, field=f"facts[{i}].valid_from") if f.valid_from else valid_at)
        except InvalidInput as exc:
            refused.append(RefusedFact(index=i, reason=str(exc)))
            continue
        kept.append(f)
    fact_inputs = kept
    refused.sort(key=lambda r: r.index)

    sentences = [fact_sentence(f.subject, f.predicate, f.object) for f in fact_inputs]
    vectors = svc.embedder.embed([text, *sentences])
    store = svc.store
    settings = svc.settings
    found = gate.signals(svc, scope, text, vectors[0], [(f.subject, f.predicate, f.object) for f in fact_inputs], valid_at, now)
    decided = gate.decide(found, settings.gate_policy, settings.gate_novelty, settings.gate_salience, structured=bool(fact_inputs))
    report = gate_report(decided)
    if decided.decision == "skipped":
        return RememberResult(
            id=None, gate=report, project=scope, valid_at=iso(valid_at) or "", created_at=iso(now) or "",
            refused_facts=refused, commit=commit, paths=path_list,
            redacted=[Redaction(kind=k, count=n) for k, n in sorted(guard.counts.items())],
            message=f"Not stored: the gate's skip policy left it out ({'; '.join(decided.reasons)}). "
            "Pass facts, or say what is new, to keep it.",
        )
    with svc.writing():
        now = svc.now()
        chunk = MemoryRecord(
            id=new_id(now),
            kind="chunk",
            project=scope,
            content=text,
            valid_at=valid_at,
            created_at=now,
            vector=vectors[0],
            embed_model=svc.embedder.name,
            source=source,
            tags=row_tags,
            paths=path_list,
            commit=commit,
            anchors=dict(anchors),
            novelty=found.novelty,
            event_salience=found.salience,
            prediction_error=found.prediction_error,
            gate=decided.decision,
        )
        fact_records = [
            MemoryRecord(
                id=new_id(now),
                kind="fact",
                project=scope,
                content=sentence,
                subject=normalize_subject(f.subject),
                predicate=normalize_predicate(f.predicate),
                object=f.object,
                valid_at=t,
                created_at=now,
                vector=vector,
                embed_model=svc.embedder.name,
                source=source,
                source_ids=[chunk.id],
                tags=fact_tags(row_tags, f),
                paths=path_list,
                commit=commit,
                anchors=dict(anchors),
            )
            for f, t, sentence, vector in zip(fact_inputs, fact_times, sentences, vectors[1:], strict=True)
        ]
        if fact_records:
            outcomes = resolve_and_commit(store, fact_records, now, extra_rows=[chunk], matcher=slot_matcher(svc))
        else:
            store.add([chunk])
            outcomes = []

    ended: list[str] = []
    carried: list[FactResult] = []  # facts of a replaced memory whose new value this note gives in their place
    for target in replaced:
        outcome = forget(svc, target.id, f"superseded by {chunk.id}", at=iso(valid_at), superseded_by=chunk.id)
        ended += [target.id, *outcome.also]
        carried += outcome.carried
    fact_results = [
        FactResult(
            id=o.fact_id, action=o.action, subject=o.subject, predicate=o.predicate, object=o.object, supersedes=o.supersedes,
            conflicts_with=list(o.conflicts_with),
            named=f"{o.named[0]} {o.named[1]}" if o.named else None,
            possibly_same_as=[f"{s} {p} ({score:.2f})" for s, p, score in o.near],
        )
        for o in outcomes
    ] + carried
    # the nearest note is read back only when it is nearly the same text (SAME_TEXT_COSINE): on object storage a
    # read costs tens of milliseconds
    alike = found.nearest if found.nearest and 1.0 - found.novelty >= SAME_TEXT_COSINE else None
    probable = [] if replaced else probable_updates(svc, chunk, alike, outcomes)
    summary = f"Remembered {chunk.id} in project {scope}"
    if fact_results:
        counts: dict[str, int] = {}
        for f in fact_results:
            counts[f.action] = counts.get(f.action, 0) + 1
        summary += "; facts: " + ", ".join(f"{n} {action}" for action, n in counts.items())
    if ended:
        summary += f"; superseded {', '.join(ended)}"
    if probable:
        summary += "; probably updates " + ", ".join(f"{u.id} ({u.reason})" for u in probable) + \
            f": if so, forget(id, superseded_by={chunk.id!r})"
    if anchors:
        noun = "file" if len(anchors) == 1 else "files"
        summary += f"; anchored to {len(anchors)} {noun}"
        summary += f" at commit {short(commit)}" if commit else " (no git commit)"
    elif commit:
        summary += f" at commit {short(commit)}"
    if notes:
        summary += "; " + "; ".join(notes)
    if refused:
        noun = "fact" if len(refused) == 1 else "facts"
        summary += f"; refused {len(refused)} {noun} (" + "; ".join(r.reason for r in refused) + ")"
    if guard.total:
        summary += f"; redacted {describe(guard.counts)} before storing"
    if decided.below:
        summary += f"; gate: {decided.decision} under policy {decided.policy} (" + "; ".join(decided.reasons) + ")"
    return RememberResult(
        gate=report,
        redacted=[Redaction(kind=k, count=n) for k, n in sorted(guard.counts.items())],
        id=chunk.id,
        project=scope,
        valid_at=iso(valid_at) or "",
        created_at=iso(now) or "",
        facts=fact_results,
        superseded=ended,
        probable_updates=probable,
        refused_facts=refused,
        commit=commit,
        paths=path_list,
        anchors=[Anchor(path=p, blob=b) for p, b in sorted(anchors.items())],
        message=summary + ".",
    )


def superseded_targets(svc: MemoryService, ids: list[str], project: str, valid_at: datetime) -> list[MemoryRecord]:
    """The memories `supersedes` names, checked before anything is written: each exists in this project, is
    current, and began before the new note (a note cannot end what starts after it)."""
    targets: list[MemoryRecord] = []
    for memory_id in dict.fromkeys(ids):
        row = latest_revision(svc.store, get_or_fail(svc.store, memory_id))
        if row.project != project:
            raise InvalidInput(f"supersedes: {memory_id} belongs to project {row.project}, not {project}")
        if row.expired_at is not None or (row.invalid_at is not None and row.invalid_at <= valid_at):
            raise InvalidInput(f"supersedes: {memory_id} is no longer current; nothing to supersede")
        if row.valid_at > valid_at:
            raise InvalidInput(
                f"supersedes: {memory_id} became valid at {iso(row.valid_at)}, after this note ({iso(valid_at)})"
            )
        targets.append(row)
    return targets


def probable_updates(
    svc: MemoryService, chunk: MemoryRecord, nearest: str | None, outcomes: list[FactOutcome]
) -> list[ProbableUpdate]:
    """Current memories the note probably updates: the live fact of a slot its fact came close to (a near miss, not
    merged); a live fact among the `NEAR_FACTS` nearest to which the note gives another value
    (`restates_with_new_value`), unless the note names another project of the store; and the most similar current
    note when the two texts differ only in their values (`port 8080` → `port 8443`)."""
    found: dict[str, ProbableUpdate] = {}
    for outcome in outcomes:
        for subject, predicate, score in outcome.near[:1]:
            rows = svc.store.find(Filter().projects([chunk.project]).slot(subject, predicate).live(chunk.valid_at, svc.now()))
            for row in rows:
                if row.kind == "fact":
                    found.setdefault(row.id, ProbableUpdate(
                        id=row.id, reason=f"same thing by meaning: {subject} {predicate} ({score:.2f})",
                        basis="same slot by meaning",
                    ))
    own_slots = {(o.subject, o.predicate) for o in outcomes}
    now = svc.now()
    elsewhere = any(
        names_in(re.findall(r"\w+", name.lower()), chunk.content)
        for key, name in svc.project_names().items() if key != chunk.project
    )
    if elsewhere:  # a note naming another project of the store speaks of that project's values, not this one's
        own_slots = None
    # the live facts nearest the note by meaning or words (a bounded search, not a scan of the project); none to
    # look for in a project holding no fact (the matcher's slot list, read at most every few seconds)
    matcher = slot_matcher(svc)
    has_facts = own_slots is not None and bool(matcher.project_slots(chunk.project, now))
    near = live_facts_near(
        svc.store, chunk.project, chunk.vector, chunk.content, at=chunk.valid_at, now=now, limit=NEAR_FACTS
    ) if has_facts else []
    live = [] if own_slots is None else [
        row for row in near
        if row.subject and row.predicate and (row.subject, row.predicate) not in own_slots and row.valid_at < chunk.valid_at
    ]
    grounded = matcher.groundings(chunk.project, {(r.subject or "", r.predicate or "") for r in live}, now)
    for row in live:
        if row.id in found:
            continue
        restated = restates_with_new_value(row, grounded[(row.subject or "", row.predicate or "")][0], chunk.content)
        if restated:
            found[row.id] = ProbableUpdate(id=row.id, reason=restated[1], basis=restated[0])
    if nearest:
        row = svc.store.get(nearest)
        if (
            row is not None and row.kind == "chunk" and row.is_valid_at(chunk.valid_at) and row.expired_at is None
            and row.valid_at < chunk.valid_at and differs_only_in_values(row.content, chunk.content)
        ):
            found.setdefault(row.id, ProbableUpdate(
                id=row.id, reason="the same text but for a value", basis="same text but for a value",
            ))
    return list(found.values())


_NOTE_TOKEN = re.compile(r"[\w][\w.-]*[\w]|\w")


def names_in(subject: list[str], note: str) -> bool:
    """True when the note says the subject as whole tokens: `contracts jobs` in "Port 8277 belongs to
    contracts-jobs", but not `ingest` in "moved from ingest-svc" (a part of another name)."""
    tokens = [" ".join(re.findall(r"[a-z0-9]+", t)) for t in _NOTE_TOKEN.findall(note.lower())]
    wanted = " ".join(subject)
    for start in range(len(tokens)):
        span = ""
        for token in tokens[start : start + len(subject)]:
            span = f"{span} {token}".strip()
            if span == wanted:
                return True
            if not wanted.startswith(span):
                break
    return False


def restates_with_new_value(fact: MemoryRecord, subject_name: str, note: str) -> tuple[UpdateBasis, str] | None:
    """What `note` probably giving `fact` a new value rests on, and why (or None).

    The note names the fact's subject as whole tokens (`subject_name`: the subject as its own note said it,
    `SlotMatcher.groundings`) and states another value of the same kind as its object (`value_kind`), either
    beside the old value (`feeds moved from invites-server into loyalty-jobs`) or beside all the words of its
    predicate (`dispatch-jobs → port 5381`). Structure, not wording: which words say "moved" or "now" is never
    asked."""
    if not fact.subject or not fact.predicate or not fact.object:
        return None
    said = set(re.findall(r"\w+", note.lower()))
    subject = re.findall(r"\w+", subject_name)
    if not subject or not names_in(subject, note):
        return None
    kind = value_kind(fact.object)
    stated = values_of_kind(note, kind)
    others = [v for v in stated if not same_value(v, fact.object)]
    others = [v for v in others if not set(re.findall(r"\w+", v.lower())) <= set(subject)]
    if not others:
        return None
    if any(same_value(v, fact.object) for v in stated):
        return "old value named", f"names {fact.object!r} and now {others[0]!r} for {fact.subject} {fact.predicate}"
    attribute = [w for w in re.findall(r"[a-z]{3,}", fact.predicate.lower().replace("_", " ")) if w not in subject]
    if attribute and all(w in said for w in attribute):
        return "new value for its attribute", f"gives {fact.subject} {fact.predicate} another value: {others[0]!r}"
    return None


def fact_tags(tags: list[str], fact: FactInput) -> list[str]:
    """A fact row's tags: the note's, and `event` / `state` when the agent said which the fact is (else an
    object that is a date or time marks an event: consolidate/resolve.is_event)."""
    kind = fact.kind or ("event" if is_time_value(fact.object) else None)
    marker = {"event": EVENT_TAG, "state": STATE_TAG}.get(kind or "")
    return [*tags, marker] if marker and marker not in tags else list(tags)


def gate_report(decided: gate.GateDecision) -> GateReport:
    """The gate's signals and decision as `remember` answers them."""
    found = decided.signals
    return GateReport(
        novelty=found.novelty, salience=found.salience, prediction_error=found.prediction_error,
        decision=decided.decision, policy=decided.policy, below_thresholds=decided.below, reasons=decided.reasons,
        nearest=found.nearest, changes=list(found.changes),
    )


# ---------------------------------------------------------------------------------------------- over MCP


def mcp_arguments(
    content: Annotated[str | None, Field(description="The statement to keep, verbatim.")] = None,
    facts: Annotated[
        # each item is checked on its own (parse_facts): a malformed fact is refused and reported, and the
        # note is stored all the same
        list[FactInput | dict[str, Any]] | None,
        Field(
            description="Structured facts the content states, one per value that may change later. subject: "
            "the thing it is about (the project, a module, a service, a test); predicate: which attribute of it "
            "(port, owner, test_command); object: its value now, bare (\"8443\", not \"port 8443\"). E.g. "
            '{"subject": "billing-api", "predicate": "port", "object": "8443"}. A new value for the same subject '
            "and predicate replaces the old one (kept for as_of and history); reuse the names the reply files a "
            "fact under, or `chronomem://slots`' names. kind: `state` (replaces: a port, a version, an owner) or "
            "`event` (each one counts, none replaces another: a flaky report, an incident, a deploy); a date or "
            "time as the object reads as an event. A malformed fact is refused and listed in `refused_facts`; "
            "the note is stored all the same."
        ),
    ] = None,
    valid_from: Annotated[
        str | None,
        Field(description="When it became true: ISO 8601 (2024-05-01) or a phrase ('2 days ago'). Default now."),
    ] = None,
    tags: Annotated[list[str] | None, Field(description="Optional labels for filtering.")] = None,
    paths: Annotated[
        list[str] | None,
        Field(
            description="Optional files or globs the memory is about (relative to the repository). Their "
            "content hashes and the HEAD commit are recorded; recall flags the memory stale when they change."
        ),
    ] = None,
    supersedes: Annotated[
        list[str] | None,
        Field(
            description="Ids of current memories this note replaces (from recall, or from a reply's probable_updates): "
            "each ends at this note's valid_from; as_of before it still shows them."
        ),
    ] = None,
    project: Project = None,
) -> dict[str, Any]:
    """`remember`'s MCP parameters (the input schema) as the handler's keyword arguments."""
    return {
        "content": content, "facts": facts, "valid_from": valid_from, "tags": tags, "paths": paths, "project": project,
        "supersedes": supersedes,
    }


DESCRIPTION = """\
Store something worth remembering about this project, at once.

Call it when you learn a decision, command, convention, version, port, owner, bug or fix that a
later session should know. When the statement sets a value that may change later, also pass
`facts`, e.g. content="Tests now run with `nox -s tests`" with
facts=[{"subject": "myproject", "predicate": "test_command", "object": "nox -s tests"}];
the previous test_command is then invalidated (kept for as_of/history, gone from recall).
Pass `paths` when the memory is about specific files (e.g. paths=["deploy/fabfile.py"]): recall
then says when those files have changed since, and recall(paths=…) finds it.

When the note replaces something recall showed you, pass its id: supersedes=["01J…"] ends exactly
that memory at this note's time. Without it, `probable_updates` in the reply lists current memories
this note probably updates (id, why, and the basis of the guess): confirm one with
forget(id, superseded_by=<this note's id>).

Returns the new memory's id and what happened to each fact (added, superseded, reinforced; the slot it
was filed under, and `possibly_same_as` for close slots it was not merged with; malformed ones in
`refused_facts`). Credentials in any field (API keys, tokens, private keys,
passwords, also in sentences) are stored as [REDACTED:<kind>] and listed in `redacted`: remember
where a secret lives, not its value. Each call adds a memory, so calling it twice stores the statement twice.
`gate` reports the statement's novelty, salience and prediction_error; under the `skip` policy a statement
that restates what is stored or says little is not stored, and the reply says so and why."""

SPEC = ToolSpec(
    name="remember",
    title="Remember",
    description=DESCRIPTION,
    # Writes, but only adds: an older value it supersedes stays readable through as_of and history.
    hints=Hints(read_only=False, destructive=False, idempotent=False),
    handler=remember,
    result=RememberResult,
    arguments=mcp_arguments,
    aliases={"text": "content"},
)
