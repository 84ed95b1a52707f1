"""Import the reference MCP memory server's knowledge graph (`memory.jsonl`) into a project.

The reference server (`@modelcontextprotocol/server-memory`) keeps one JSON object per line:

    {"type": "entity", "name": "John_Smith", "entityType": "person", "observations": ["Speaks Spanish"]}
    {"type": "relation", "from": "John_Smith", "to": "Anthropic", "relationType": "works_at"}

Mapping (every row gets source `import`, tag `memory-jsonl`, and valid time = the import's
time, since the file records none):

- each observation → a chunk `"<name> (<entityType>): <observation>"` (verbatim, searchable);
- an entity's type is carried by the label of its observation chunks, not stored as a fact:
  an `is_a` fact per entity would outrank the observations themselves in every recall about
  that entity while saying almost nothing. An entity without observations becomes one chunk
  `"<name> is a <entityType>."`, so no entity is lost;
- each relation → a fact (from, relationType, to) with a chunk `"<from> <relation words> <to>."`.
  A graph's relations all hold at once, so their predicates are multi-valued here
  (`resolve_and_commit(multi_valued=…)`): `knows` bob and `knows` carol both stay live.

Facts go through the normal resolve path (`consolidate.apply.resolve_and_commit`), so a fact
the store already holds is reinforced, not duplicated. Text passes the secret guard first
(CHRONOMEM_SECRETS), as `remember` does. Items are embedded and committed in batches
(`BATCH_SIZE`), one commit per batch under the write lock.

Re-importing is a no-op: an item whose chunk text the project already holds (or that
appeared earlier in the file) is skipped with its fact. Bad lines (not JSON, not an object,
unknown `type`, missing or mistyped fields, over the length limits, a secret under
`CHRONOMEM_SECRETS=reject`) are counted and reported by line number; the rest is imported.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from chronomem.consolidate.apply import resolve_and_commit
from chronomem.errors import InvalidInput
from chronomem.records import MemoryRecord, fact_sentence, new_id, normalize_predicate, normalize_subject
from chronomem.safety.secrets import SecretGuard
from chronomem.storage import Filter
from chronomem.storage.store import SCAN_LIMIT

#: Items (observations, entity types, relations) embedded and committed together.
BATCH_SIZE = 256
#: Tag on every imported row, so an import can be found (and purged) as a whole.
TAG = "memory-jsonl"
#: Lines looked at to recognise the format.
SNIFF_LINES = 20
_MAX_SUBJECT, _MAX_PREDICATE, _MAX_OBJECT = 500, 200, 4000  # FactInput's limits


@dataclass(frozen=True)
class BadLine:
    line: int
    error: str


@dataclass
class Item:
    """One thing to store: a chunk, and the fact it states (if any)."""

    line: int
    text: str
    fact: tuple[str, str, str] | None = None  # (subject, predicate, object) as written
    relation: bool = False


@dataclass
class Parsed:
    items: list[Item] = field(default_factory=list)
    bad: list[BadLine] = field(default_factory=list)
    entities: int = 0
    relations: int = 0


@dataclass
class ImportReport:
    """What an import read and wrote."""

    project: str
    entities: int = 0
    relations: int = 0
    chunks: int = 0
    facts: int = 0
    reinforced: int = 0
    skipped: int = 0
    bad_lines: list[BadLine] = field(default_factory=list)
    redacted: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "entities": self.entities,
            "relations": self.relations,
            "chunks": self.chunks,
            "facts": self.facts,
            "reinforced": self.reinforced,
            "skipped": self.skipped,
            "bad_lines": [{"line": b.line, "error": b.error} for b in self.bad_lines],
            "redacted": dict(self.redacted),
        }

    def text(self) -> str:
        line = (
            f"imported {self.entities} entities and {self.relations} relations into project {self.project}: "
            f"{self.chunks} chunks, {self.facts} facts"
        )
        if self.reinforced:
            line += f" ({self.reinforced} facts already known, reinforced)"
        if self.skipped:
            line += f"; {self.skipped} items already in the store, skipped"
        if self.redacted:
            line += f"; redacted {sum(self.redacted.values())} secrets"
        if self.bad_lines:
            line += f"; {len(self.bad_lines)} bad lines skipped"
        return line


def looks_like_memory_jsonl(lines: Iterable[str]) -> bool:
    """True when the first non-blank lines include a reference-server entity or relation."""
    seen = 0
    for line in lines:
        if not line.strip():
            continue
        seen += 1
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict) and data.get("type") in ("entity", "relation"):
            return True
        if seen >= SNIFF_LINES:
            break
    return False


def _text(data: dict[str, Any], key: str, limit: int) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string" if key in data else f"{key} is missing")
    value = value.strip()
    if not value:
        raise ValueError(f"{key} is empty")
    if len(value) > limit:
        raise ValueError(f"{key} is {len(value)} characters; the limit is {limit}")
    return value


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def parse(lines: Iterable[str], max_chars: int = 32_000) -> Parsed:
    """The items of a memory.jsonl, in file order; bad lines named, never raised."""
    out = Parsed()
    for number, raw in enumerate(lines, start=1):
        line = raw.lstrip("\ufeff") if number == 1 else raw
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            out.bad.append(BadLine(number, f"not JSON ({exc.msg})"))
            continue
        if not isinstance(data, dict):
            out.bad.append(BadLine(number, f"expected a JSON object, got {type(data).__name__}"))
            continue
        try:
            if data.get("type") == "entity":
                items = _entity(number, data, max_chars)
                out.entities += 1
            elif data.get("type") == "relation":
                items = [_relation(number, data)]
                out.relations += 1
            else:
                raise ValueError(f"type must be entity or relation (got {data.get('type')!r})")
        except ValueError as exc:
            out.bad.append(BadLine(number, str(exc)))
            continue
        out.items.extend(items)
    return out


def _entity(number: int, data: dict[str, Any], max_chars: int) -> list[Item]:
    name = _text(data, "name", _MAX_SUBJECT)
    kind = data.get("entityType", "")
    if not isinstance(kind, str):
        raise ValueError("entityType must be a string")
    kind = kind.strip()
    if len(kind) > _MAX_OBJECT:
        raise ValueError(f"entityType is {len(kind)} characters; the limit is {_MAX_OBJECT}")
    observations = data.get("observations", [])
    if not isinstance(observations, list) or not all(isinstance(o, str) for o in observations):
        raise ValueError("observations must be a list of strings")
    items = []
    label = f"{name} ({kind})" if kind else name
    for i, observation in enumerate(o.strip() for o in observations):
        if not observation:
            continue
        text = f"{label}: {observation}"
        if len(text) > max_chars:
            raise ValueError(f"observations[{i}] makes a {len(text)}-character memory; the limit is {max_chars}")
        items.append(Item(number, text))
    if not items:
        items.append(Item(number, f"{name} is {_article(kind)} {kind}." if kind else f"{name} is an entity."))
    return items


def _relation(number: int, data: dict[str, Any]) -> Item:
    source = _text(data, "from", _MAX_SUBJECT)
    target = _text(data, "to", _MAX_OBJECT)
    relation = _text(data, "relationType", _MAX_PREDICATE)
    words = " ".join(relation.replace("_", " ").replace("-", " ").split())
    return Item(number, f"{source} {words} {target}.", (source, relation, target), relation=True)


def existing_chunks(store: Any, project: str, now: Any) -> set[str]:
    """The text of every chunk the project holds (as known now): what a re-import must not add again."""
    sql = Filter().projects([project]).kinds(["chunk"]).known(now).sql()
    table = store._table.search().select(["content"]).where(sql).limit(SCAN_LIMIT).to_arrow()
    return set(table.column("content").to_pylist())


def import_memory_jsonl(
    svc: Any,
    lines: Iterable[str],
    project: str | None = None,
    progress: Callable[[int], None] | None = None,
    on_parsed: Callable[[int], None] | None = None,
    batch_size: int = BATCH_SIZE,
) -> ImportReport:
    """Import a memory.jsonl into `project` (default: the service's project) of `svc`'s store."""
    SecretGuard(svc.settings.secrets_mode).check_name(project, "project")
    scope = svc.project(project)
    parsed = parse(lines, svc.settings.max_content_chars)
    report = ImportReport(scope, parsed.entities, parsed.relations, bad_lines=list(parsed.bad))
    if on_parsed is not None:
        on_parsed(len(parsed.items))

    guard = SecretGuard(svc.settings.secrets_mode)
    cleaned: list[Item] = []
    for item in parsed.items:
        try:
            text = guard.clean(item.text, "observation")
            fact = None
            if item.fact is not None:
                s, p, o = (
                    guard.clean(part, name, name=name != "object")
                    for part, name in zip(item.fact, ("subject", "predicate", "object"), strict=True)
                )
                fact = (s, p, o)
        except InvalidInput as exc:  # CHRONOMEM_SECRETS=reject
            report.bad_lines.append(BadLine(item.line, str(exc)))
            if progress is not None:
                progress(1)
            continue
        cleaned.append(Item(item.line, text, fact, item.relation))
    report.redacted = dict(guard.counts)
    report.bad_lines.sort(key=lambda b: b.line)

    store = svc.store
    seen = existing_chunks(store, scope, svc.now())
    wrote = False
    for start in range(0, len(cleaned), batch_size):
        batch = cleaned[start : start + batch_size]
        fresh = []
        for item in batch:
            if item.text in seen:
                report.skipped += 1
                continue
            seen.add(item.text)
            fresh.append(item)
        if fresh:
            _write_batch(svc, store, scope, fresh, report)
            wrote = True
        if progress is not None:
            progress(len(batch))
    if wrote:
        with svc.writing():
            store.optimize()  # fold the new rows into the full-text index
    return report


def _write_batch(svc: Any, store: Any, scope: str, items: list[Item], report: ImportReport) -> None:
    """Embed one batch (chunks and fact sentences together) and commit it."""
    stated = [(i, it.fact) for i, it in enumerate(items) if it.fact is not None]
    sentences = [fact_sentence(s, p, o) for _, (s, p, o) in stated]
    vectors = svc.embedder.embed_many([it.text for it in items] + sentences)
    with svc.writing():
        now = svc.now()
        chunks = [
            MemoryRecord(
                id=new_id(now), kind="chunk", project=scope, content=item.text, valid_at=now, created_at=now,
                vector=vector, embed_model=svc.embedder.name, source="import", tags=[TAG],
            )
            for item, vector in zip(items, vectors[: len(items)], strict=True)
        ]
        facts = []
        multi: set[str] = set()
        for (index, (subject, predicate, obj)), sentence, vector in zip(stated, sentences, vectors[len(items) :], strict=True):
            predicate = normalize_predicate(predicate)
            if items[index].relation:
                multi.add(predicate)
            facts.append(MemoryRecord(
                id=new_id(now), kind="fact", project=scope, content=sentence, subject=normalize_subject(subject),
                predicate=predicate, object=obj, valid_at=now, created_at=now, vector=vector,
                embed_model=svc.embedder.name, source="import", source_ids=[chunks[index].id], tags=[TAG],
            ))
        if facts:
            outcomes = resolve_and_commit(store, facts, now, extra_rows=chunks, multi_valued=frozenset(multi))
        else:
            store.add(chunks)
            outcomes = []
    report.chunks += len(chunks)
    report.reinforced += sum(1 for o in outcomes if o.action == "reinforced")
    report.facts += sum(1 for o in outcomes if o.action != "reinforced")
