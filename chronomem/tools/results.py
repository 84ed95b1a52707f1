"""Result models of the tools: structured (MCP structured content, `--json`) and readable (`text()`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from chronomem.codebase import Change, short
from chronomem.records import MemoryRecord
from chronomem.timeparse import iso


class StaleFile(BaseModel):
    path: str = Field(description="A file the memory is anchored to, relative to the repository")
    status: str = Field(description="`modified` (its content changed) or `deleted`")


class Stale(BaseModel):
    """Why a result may be out of date: files it is about have changed since it was remembered."""

    files: list[str] = Field(description="The anchored files that changed since the memory was written")
    changes: list[StaleFile] = Field(default_factory=list)
    since_commit: str | None = Field(default=None, description="HEAD when the memory was written")

    @classmethod
    def of(cls, found: list[Change], commit: str | None) -> Stale:
        return cls(
            files=[c.path for c in found],
            changes=[StaleFile(path=c.path, status=c.status) for c in found],
            since_commit=commit,
        )

    def line(self) -> str:
        parts = [c.path + (" (deleted)" if c.status == "deleted" else "") for c in self.changes]
        when = f"commit {short(self.since_commit)}" if self.since_commit else "it was remembered"
        return "stale: " + _few(parts) + f" changed since {when}"


def _few(names: list[str], shown: int = 5) -> str:
    """`a, b, c` — or the first `shown` and how many more."""
    head = ", ".join(names[:shown])
    return head if len(names) <= shown else f"{head} and {len(names) - shown} more"


class MemoryItem(BaseModel):
    """One memory as a tool returns it, with the ids to pass back to `history` or `forget`."""

    id: str
    kind: str = Field(description="`fact` (an atomic claim) or `chunk` (text as remembered)")
    project: str
    text: str
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    valid_at: str = Field(description="When it became true (valid time)")
    invalid_at: str | None = Field(default=None, description="When it stopped being true; null = still true")
    created_at: str = Field(description="When chronomem recorded it (transaction time)")
    expired_at: str | None = Field(default=None, description="When the record was retracted or revised")
    source: str = Field(description="Who stated it: agent, rules, llm or import")
    source_ids: list[str] = Field(default_factory=list, description="Chunks a fact was derived from")
    supersedes: str | None = Field(default=None, description="Id of the fact this one replaced")
    revision_of: str | None = Field(default=None, description="Id of the record this row restates")
    tags: list[str] = Field(default_factory=list)
    paths: list[str] = Field(default_factory=list, description="Files or globs it is about, relative to the repository")
    commit: str | None = Field(default=None, description="The repository's HEAD commit when it was written")
    stale: Stale | None = Field(
        default=None, description="Set when files it is about changed since it was written (it is then ranked lower)"
    )
    reason: str | None = None
    score: float | None = Field(default=None, description="Fused relevance score (recall / as_of)")
    channels: list[str] = Field(
        default_factory=list,
        description="Which retrieval channels matched: dense, lexical, entity (a name the query gives), slot (a stated "
        "fact's subject and predicate named), slot meaning (... meant), dated (began in the day or month the query names), bridge (found through the best match), context (written next to a match), answer type (holds the kind of answer asked for: someone for who, a path for which folder, an address for what URL, a number for which port), "
        "later word (leads because it replaces or takes back the value of the best match)",
    )
    conflicts_with: list[str] = Field(
        default_factory=list, description="Live facts that disagree with this one (see `history`)"
    )
    note: str | None = Field(
        default=None, description="For a fact: the note it was derived from, verbatim (it often says more)"
    )
    novelty: float | None = Field(default=None, description="Encoding gate: 1 − similarity to what was stored before it")
    salience: float | None = Field(default=None, description="Encoding gate: what the statement says on its own (0–1)")
    prediction_error: float | None = Field(
        default=None, description="Encoding gate: 1 changed a current fact, 0.5 added one, 0 neither"
    )
    gate: str | None = Field(default=None, description="The gate's decision when it was written: kept or demoted")

    @classmethod
    def of(
        cls,
        record: MemoryRecord,
        score: float | None = None,
        channels: list[str] | None = None,
        stale: Stale | None = None,
        note: str | None = None,
        note_record: MemoryRecord | None = None,
    ) -> MemoryItem:
        """`note_record`: the note a fact came from; a fact has no gate signals of its own, its statement's are shown."""
        signals = note_record if record.novelty is None and note_record is not None else record
        return cls(
            id=record.id,
            kind=record.kind,
            project=record.project,
            text=record.content,
            subject=record.subject,
            predicate=record.predicate,
            object=record.object,
            valid_at=iso(record.valid_at) or "",
            invalid_at=iso(record.invalid_at),
            created_at=iso(record.created_at) or "",
            expired_at=iso(record.expired_at),
            source=record.source,
            source_ids=record.source_ids,
            supersedes=record.supersedes,
            revision_of=record.revision_of,
            tags=list(record.tags),
            conflicts_with=list(record.conflicts_with),
            paths=record.paths,
            commit=record.commit,
            stale=stale,
            reason=record.reason,
            score=None if score is None else round(score, 6),
            channels=channels or [],
            note=note if note and note != record.content else None,
            novelty=None if signals.novelty is None else round(signals.novelty, 4),
            salience=None if signals.event_salience is None else round(signals.event_salience, 4),
            prediction_error=None if signals.prediction_error is None else round(signals.prediction_error, 4),
            gate=signals.gate,
        )

    def line(self) -> str:
        interval = f"valid {_day(self.valid_at)} → {_day(self.invalid_at) if self.invalid_at else 'now'}"
        extras = [interval, self.source]
        if self.supersedes:
            extras.append(f"supersedes {self.supersedes}")
        if self.source_ids:
            extras.append("from " + ", ".join(self.source_ids))
        if self.paths:
            extras.append("about " + _few(self.paths, 3))
        if self.commit:
            extras.append(f"at commit {short(self.commit)}")
        if self.score is not None:
            extras.append(f"score {self.score:.4f} via {'+'.join(self.channels) or '-'}")
        out = f"[{self.kind} {self.id}] {self.text}\n    " + " · ".join(extras)
        if self.note:
            out += f"\n    note: {self.note}"
        if self.stale is not None:
            out += "\n    " + self.stale.line()
        return out


def _day(value: str | None) -> str:
    if not value:
        return ""
    return value[:10] if value[11:19] == "00:00:00" else value[:19].replace("T", " ")


class FactResult(BaseModel):
    id: str
    action: str = Field(description="added, superseded, placed_in_past, reinforced, or conflict (kept beside a disagreeing live fact)")
    subject: str
    predicate: str
    object: str
    supersedes: str | None = None
    conflicts_with: list[str] = Field(default_factory=list, description="Live facts it disagrees with; both stay live")
    named: str | None = Field(
        default=None,
        description="The slot as you named it, when it was filed under an existing slot of another name (subject and "
        "predicate above are the slot it was filed under: reuse them)",
    )
    possibly_same_as: list[str] = Field(
        default_factory=list,
        description="Existing slots close to this one but not merged with it, with their score: if one is the same "
        "thing, name it so next time (or pass supersedes)",
    )


#: What a probable update rests on, strongest first (measured on the noisy agent's DevMem replays, 2026-11-30, as
#: the share that named a memory of the note's own slot: `old value named` 52 of 52 on dev and 56 of 56 on
#: devmem_validation, `same slot by meaning` 11 of 13 and 14 of 15, `new value for its attribute` 10 of 31 and 7 of
#: 22; `same text but for a value` 8 of 53, 4 of 37 and on agentfiles_validation 7 of 26, where most of the
#: others are notes the data gives no slot: a chat note repeated with a new time, a line of a file edited).
UpdateBasis = Literal["old value named", "same slot by meaning", "new value for its attribute", "same text but for a value"]


class ProbableUpdate(BaseModel):
    id: str = Field(
        description="A current memory this note probably updates; if it does, forget(id, superseded_by=<this note's "
        "id>) ends it and keeps its slot current (or pass it in `supersedes` next time)"
    )
    reason: str
    basis: UpdateBasis = Field(
        description="What the guess rests on: `old value named` (the note names the memory's value beside a new "
        "one) and `same slot by meaning` are seldom wrong; `new value for its attribute` (the note names the thing, "
        "its attribute and another value) is also what a question or a rejected idea says: check before confirming"
    )


class Redaction(BaseModel):
    kind: str = Field(description="What was found, e.g. aws-key, github-token, password-in-url, private-key")
    count: int


class Anchor(BaseModel):
    path: str = Field(description="A file the memory is about, relative to the repository")
    blob: str = Field(description="Its git blob id (content hash) when the memory was written")


class RefusedFact(BaseModel):
    """A structured fact of a `remember` call that was not stored; the note itself was."""

    index: int = Field(description="Its place in the call's `facts` list (0-based)")
    reason: str = Field(description="What was wrong with it")


class GateReport(BaseModel):
    """The encoding gate's signals for one write and what its policy decided (consolidate/gate.py)."""

    novelty: float = Field(description="1 − the best cosine similarity to the project's stored notes (1 = unlike any)")
    salience: float = Field(description="What the statement says on its own: identifiers, numbers, rare words (0–1)")
    prediction_error: float = Field(description="1 changes or contradicts a current fact, 0.5 adds a new one, 0 neither")
    decision: str = Field(description="kept, demoted (stored, ranked lower) or skipped (not stored)")
    policy: str = Field(description="The gate policy in force: record, demote or skip")
    below_thresholds: bool = Field(description="Whether the statement fell below the gate's thresholds")
    reasons: list[str] = Field(default_factory=list, description="Why it fell below them")
    nearest: str | None = Field(default=None, description="The stored note most like it")
    changes: list[str] = Field(default_factory=list, description="The fact slots it changes or opens")


class RememberResult(BaseModel):
    id: str | None = Field(description="Id of the stored chunk; null when the gate's skip policy did not store it")
    gate: GateReport | None = Field(default=None, description="The encoding gate's signals and decision")
    project: str
    valid_at: str
    created_at: str
    facts: list[FactResult] = Field(default_factory=list)
    superseded: list[str] = Field(
        default_factory=list, description="Memories this note ended, as `supersedes` asked (as_of before it still shows them)"
    )
    probable_updates: list[ProbableUpdate] = Field(
        default_factory=list,
        description="Current memories this note probably updates although `supersedes` did not name them: confirm "
        "with forget(id, superseded_by=<this note's id>) if so",
    )
    refused_facts: list[RefusedFact] = Field(
        default_factory=list, description="Facts that were not stored, and why (the note was stored all the same)"
    )
    commit: str | None = Field(default=None, description="The repository's HEAD commit, recorded with the memory")
    paths: list[str] = Field(default_factory=list, description="The paths as stored, relative to the repository")
    anchors: list[Anchor] = Field(
        default_factory=list, description="Files whose content hashes were recorded; recall flags the memory stale when they change"
    )
    redacted: list[Redaction] = Field(
        default_factory=list,
        description="Secrets replaced by [REDACTED:<kind>] before anything was embedded or stored (kinds, never values)",
    )
    message: str

    def text(self) -> str:
        lines = [self.message]
        for f in self.facts:
            tail = f" (supersedes {f.supersedes})" if f.supersedes else ""
            tail += f" (you named it {f.named})" if f.named else ""
            lines.append(f"  fact {f.id}: {f.subject} {f.predicate} = {f.object!r} → {f.action}{tail}")
            for near in f.possibly_same_as:
                lines.append(f"    possibly the same as {near}")
        for ended in self.superseded:
            lines.append(f"  superseded {ended}")
        for update in self.probable_updates:
            lines.append(f"  probably updates {update.id}: {update.reason}")
        for r in self.refused_facts:
            lines.append(f"  facts[{r.index}] refused: {r.reason}")
        return "\n".join(lines)


class GitRef(BaseModel):
    """A commit, tag or branch that a time argument named, as resolved in the project's repository."""

    ref: str = Field(description="As given, e.g. v1.4.0")
    commit: str = Field(description="The commit it names")
    time: str = Field(description="That commit's committer time, the moment used")


class RecallResult(BaseModel):
    query: str | None = Field(default=None, description="The query; null when recalling by paths alone")
    paths: list[str] = Field(default_factory=list, description="The paths asked about (recall by paths)")
    projects: list[str] | None = Field(description="Projects searched; null = all")
    at: str = Field(description="Valid time of the slice searched")
    known_at: str = Field(description="Transaction time of the slice searched")
    at_ref: GitRef | None = Field(default=None, description="The git ref `at` named, when it named one")
    known_at_ref: GitRef | None = Field(default=None, description="The git ref `known_at` named, when it named one")
    abstained: bool = Field(description="True when nothing relevant is stored")
    message: str
    results: list[MemoryItem]
    tokens: int = Field(description="Estimated tokens of the returned texts")
    truncated: bool = Field(description="True when budget_tokens left relevant results out")

    def text(self) -> str:
        if not self.results:
            return self.message
        body = "\n".join(f"{i}. {item.line()}" for i, item in enumerate(self.results, start=1))
        return f"{self.message}\n{body}"


class ForgetResult(BaseModel):
    id: str = Field(description="The memory that was forgotten")
    action: str = Field(description="invalidated, retracted, or unchanged")
    revision_id: str | None = Field(default=None, description="The row that now carries the closed interval")
    also: list[str] = Field(default_factory=list, description="Facts derived from it that were forgotten with it")
    carried: list[FactResult] = Field(
        default_factory=list,
        description="With superseded_by: its facts whose new value the successor gives in the same place, filed from "
        "the successor (each supersedes the old value, so the slot stays current)",
    )
    redacted: list[Redaction] = Field(
        default_factory=list, description="Secrets masked in the reason before it was stored (kinds and counts only)"
    )
    message: str

    def text(self) -> str:
        return self.message


class HistoryEntry(BaseModel):
    id: str
    text: str
    object: str | None = None
    status: str = Field(description="current, ended, retracted or pending")
    valid_at: str
    invalid_at: str | None = None
    created_at: str
    expired_at: str | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    revision_of: str | None = None
    source: str
    reason: str | None = None
    commit: str | None = Field(default=None, description="The repository's HEAD commit when this row was written")
    conflicts_with: list[str] = Field(
        default_factory=list, description="Facts flagged as disagreeing with this one while both stay live"
    )


class HistoryResult(BaseModel):
    project: str
    kind: str
    subject: str | None = None
    predicate: str | None = None
    entries: list[HistoryEntry]
    message: str

    def text(self) -> str:
        lines = [self.message]
        for e in self.entries:
            end = _day(e.invalid_at) if e.invalid_at else "now"
            tail = f" — {e.reason}" if e.reason and e.status != "current" else ""
            label = e.object if e.object is not None else e.text
            if e.conflicts_with:
                tail += " — conflicts with " + ", ".join(e.conflicts_with)
            at_commit = f" @{short(e.commit)}" if e.commit else ""
            lines.append(f"  {_day(e.valid_at)} → {end}  {label!r}  [{e.status}] {e.id}{at_commit}{tail}")
        return "\n".join(lines)
