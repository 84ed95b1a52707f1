"""Result models of the tools: structured (MCP structured content, `--json`) and readable (`text()`)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from chronomem.consolidate.marks import conflicts_of, user_tags
from chronomem.records import MemoryRecord
from chronomem.timeparse import iso


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
    paths: list[str] = Field(default_factory=list)
    reason: str | None = None
    score: float | None = Field(default=None, description="Fused relevance score (recall / as_of)")
    channels: list[str] = Field(default_factory=list, description="Which retrieval channels matched")
    conflicts_with: list[str] = Field(
        default_factory=list, description="Live facts that disagree with this one (see `history`)"
    )

    @classmethod
    def of(cls, record: MemoryRecord, score: float | None = None, channels: list[str] | None = None) -> MemoryItem:
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
            tags=user_tags(record.tags),
            conflicts_with=conflicts_of(record.tags),
            paths=record.paths,
            reason=record.reason,
            score=None if score is None else round(score, 6),
            channels=channels or [],
        )

    def line(self) -> str:
        interval = f"valid {_day(self.valid_at)} → {_day(self.invalid_at) if self.invalid_at else 'now'}"
        extras = [interval, self.source]
        if self.supersedes:
            extras.append(f"supersedes {self.supersedes}")
        if self.source_ids:
            extras.append("from " + ", ".join(self.source_ids))
        if self.score is not None:
            extras.append(f"score {self.score:.4f} via {'+'.join(self.channels) or '-'}")
        return f"[{self.kind} {self.id}] {self.text}\n    " + " · ".join(extras)


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


class Redaction(BaseModel):
    kind: str = Field(description="What was found, e.g. aws-key, github-token, password-in-url, private-key")
    count: int


class RememberResult(BaseModel):
    id: str = Field(description="Id of the stored chunk")
    project: str
    valid_at: str
    created_at: str
    facts: list[FactResult] = Field(default_factory=list)
    redacted: list[Redaction] = Field(
        default_factory=list,
        description="Secrets replaced by [REDACTED:<kind>] before anything was embedded or stored (kinds, never values)",
    )
    message: str

    def text(self) -> str:
        lines = [self.message]
        for f in self.facts:
            tail = f" (supersedes {f.supersedes})" if f.supersedes else ""
            lines.append(f"  fact {f.id}: {f.subject} {f.predicate} = {f.object!r} → {f.action}{tail}")
        return "\n".join(lines)


class RecallResult(BaseModel):
    query: str
    projects: list[str] | None = Field(description="Projects searched; null = all")
    at: str = Field(description="Valid time of the slice searched")
    known_at: str = Field(description="Transaction time of the slice searched")
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
            lines.append(f"  {_day(e.valid_at)} → {end}  {label!r}  [{e.status}] {e.id}{tail}")
        return "\n".join(lines)
