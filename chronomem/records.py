"""Record types: one `MemoryRecord` per row of the `memories` table, and the fact input.

A row is *live at (T, K)* when ``valid_at <= T < invalid_at`` (valid time) and
``created_at <= K < expired_at`` (transaction time); ``None`` means open.
Changing what we believe never rewrites a row's valid time in place: the old row is
expired and a *revision* (``revision_of`` = old id) is appended carrying the closed
interval, so any past state of knowledge can be read back exactly.

A row is written once: afterwards only `invalid_at`, `expired_at` and `reason` are set (storage/store.py
refuses anything else). What happens to a memory later — recall hits, restatements, later conflicting
facts — is a `Usage` state in the `usage` side table (storage/usage.py), which reads attach to the record
(`MemoryRecord.with_usage`) so readers see one memory; `to_row` and `raw` still give the row as stored.
"""

from __future__ import annotations

import re
from functools import lru_cache
import struct
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Kind = Literal["chunk", "fact"]
Source = Literal["agent", "rules", "llm", "import", "structure"]

UTC = timezone.utc


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id(at: datetime | None = None) -> str:
    """A ULID: unique, and sortable by the time it was made."""
    from ulid import ULID

    if at is None:
        return str(ULID())
    return str(ULID.from_datetime(at))


@dataclass
class MemoryRecord:
    """One row of `memories`: a verbatim chunk or an atomic fact, with both time axes."""

    id: str
    kind: Kind
    project: str
    content: str
    valid_at: datetime
    created_at: datetime
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    vector: list[float] | None = None
    embed_model: str | None = None
    invalid_at: datetime | None = None
    expired_at: datetime | None = None
    supersedes: str | None = None
    revision_of: str | None = None
    source_ids: list[str] = field(default_factory=list)
    source: str = "agent"
    tags: list[str] = field(default_factory=list)
    salience: float = 1.0
    confidence: float = 1.0
    paths: list[str] = field(default_factory=list)
    commit: str | None = None
    reason: str | None = None
    #: Code anchors: base-relative file path → its git blob id when the row was written (chronomem/codebase.py).
    anchors: dict[str, str] = field(default_factory=dict)
    #: Facts this one disagrees with while both stay live (set on the fact written later; see consolidate/apply.py).
    conflicts_with: list[str] = field(default_factory=list)
    #: The encoding gate's signals when the chunk was written (consolidate/gate.py); None before schema 3 and on facts.
    novelty: float | None = None
    event_salience: float | None = None
    prediction_error: float | None = None
    #: The gate's decision: `kept` or `demoted` (None: written before the gate existed, or a fact).
    gate: str | None = None

    #: What happened to the row after it was written (recall hits, restatements), from the `usage` side table;
    #: not a column. Set by `with_usage`, which also folds it into the fields it adds to; `raw` undoes that.
    usage = None  # type: Usage | None
    _raw = None  # type: dict[str, Any] | None

    def __post_init__(self) -> None:
        if not isinstance(self.anchors, dict):  # a column value: a list of {path, blob}
            self.anchors = anchor_map(self.anchors)

    def is_valid_at(self, t: datetime) -> bool:
        return self.valid_at <= t and (self.invalid_at is None or t < self.invalid_at)

    def is_known_at(self, k: datetime) -> bool:
        return self.created_at <= k and (self.expired_at is None or k < self.expired_at)

    def to_row(self) -> dict[str, Any]:
        """The row as stored: every column, anchors as a list of {path, blob} (never the usage view)."""
        row = {name: getattr(self, name) for name in _RECORD_FIELDS}
        if self._raw is not None:
            row.update(self._raw)
        row["anchors"] = [{"path": p, "blob": b} for p, b in sorted(row["anchors"].items())]
        return row

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> MemoryRecord:
        names = _FIELD_SET
        data = {k: v for k, v in row.items() if k in names}
        for key in ("valid_at", "created_at", "invalid_at", "expired_at"):
            value = data.get(key)
            if isinstance(value, datetime):
                data[key] = value.astimezone(UTC)
        for key in ("source_ids", "tags", "paths", "conflicts_with"):
            data[key] = list(data.get(key) or [])
        data["anchors"] = anchor_map(data.get("anchors"))
        vector = data.get("vector")
        if vector is not None and not isinstance(vector, list):
            data["vector"] = list(vector)
        return cls(**data)

    def copy(self, **changes: Any) -> MemoryRecord:
        """A new record with `changes`: a row to write, with any usage view taken as its values (a revision
        carries what its predecessor had gathered)."""
        return replace(self, **changes)

    def with_usage(self, usage: Usage | None) -> MemoryRecord:
        """This record as readers see it: `usage`'s salience boost, restating chunks, paths, refreshed
        anchors and later conflicting facts added to its own (in place; returns self). `to_row` and `raw` still give the stored row."""
        if usage is None:
            return self
        if self._raw is None:
            self._raw = {"salience": self.salience, "source_ids": list(self.source_ids), "paths": list(self.paths),
                         "anchors": dict(self.anchors), "conflicts_with": list(self.conflicts_with)}
        raw = self._raw
        self.salience = _float32(float(raw["salience"]) + usage.boost)  # as a column would hold it (export → import)
        self.source_ids = list(dict.fromkeys([*raw["source_ids"], *usage.restated_by]))
        self.paths = list(dict.fromkeys([*raw["paths"], *usage.paths]))
        self.anchors = {**raw["anchors"], **usage.anchors}
        self.conflicts_with = list(dict.fromkeys([*raw["conflicts_with"], *usage.conflicts_with]))
        self.usage = usage
        return self

    def raw(self) -> MemoryRecord:
        """The record as stored (without the usage view): what an expiry writes back, changing only validity."""
        if self._raw is None:
            return self.copy()
        return replace(self, **self._raw)


_RECORD_FIELDS = tuple(f.name for f in fields(MemoryRecord))
_FIELD_SET = frozenset(_RECORD_FIELDS)


@dataclass
class Usage:
    """The latest state of one memory in the `usage` side table: what changed about it after it was written,
    kept beside the row so the row is never rewritten (storage/usage.py)."""

    id: str
    at: datetime  # when this state was recorded (readers take the latest per id)
    seen_at: datetime | None = None  # the last recall hit
    hits: int = 0  # recall hits so far
    boost: float = 0.0  # salience added since the row was written (recall hits, restatements)
    restated_by: list[str] = field(default_factory=list)  # chunks that stated the fact again
    paths: list[str] = field(default_factory=list)  # paths a restatement added
    anchors: dict[str, str] = field(default_factory=dict)  # anchors a restatement refreshed (path → blob id)
    conflicts_with: list[str] = field(default_factory=list)  # later facts that disagree with it (their own rows name it)


def _float32(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


def anchor_map(value: Any) -> dict[str, str]:
    """Anchors as path → blob id, from a column value (a list of {path, blob}) or a mapping."""
    if not value:
        return {}
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    return {item["path"]: item["blob"] for item in value}
_SPACES = re.compile(r"\s+")


def normalize_subject(subject: str) -> str:
    """Slot key for a subject: case- and whitespace-insensitive."""
    return _SPACES.sub(" ", subject.strip()).lower()


def normalize_predicate(predicate: str) -> str:
    """Slot key for a predicate: `Test Command`, `test-command` and `test_command` are one slot."""
    return re.sub(r"[\s\-]+", "_", predicate.strip().lower()).strip("_")


def normalize_object(value: str) -> str:
    """Comparison key for an object value: equal objects reinforce rather than supersede."""
    return _SPACES.sub(" ", value.strip()).strip(" .`'\"").lower()


_VALUE_TOKEN = re.compile(r"\d")
#: A word shaped like a value: a digit, a slash, or punctuation inside it (`8443`, `/api/x`, `checkout-api`).
_VALUE_SHAPED = re.compile(r"\d|/|\w[-_:.]\w")
#: An object of one value-shaped word and at most two more (`port 8443`, `the checkout-api service`) has that
#: value's kind; a longer one is a sentence (the issue's decorated objects, #44, add one or two words).
_MAX_DECORATED_WORDS = 3
_VERSION_V = re.compile(r"^v(?=\d)")
_WORDS = re.compile(r"[^\s`'\"()\[\],;]+")
_ISO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[t ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?)?$")


def value_words(value: str) -> list[str]:
    """An object's words as compared: lower-cased, quotes, backticks and brackets off, a `v` before a version
    number off (`v1.2.3` is `1.2.3`), a leading `:` off (`:8443`), a trailing full stop off."""
    words = [w.rstrip(".").lstrip(":") for w in _WORDS.findall(value.lower())]
    return [_VERSION_V.sub("", w) for w in words if w]


def same_value(a: str, b: str) -> bool:
    """True when two objects state one value: equal once normalised (`normalize_object`, `value_words`), or
    carrying the same values (the words with a digit) where one's words are all among the other's, so a
    word of decoration around the value (`port 8443` / `8443`, `Node 18` / `18`) does not make it another
    value, while `Node 18` / `Python 18` (neither within the other) stays two."""
    if normalize_object(a) == normalize_object(b):
        return True
    wa, wb = value_words(a), value_words(b)
    if not wa or not wb:
        return False
    if wa == wb:
        return True
    values_a = {w for w in wa if _VALUE_TOKEN.search(w)}
    values_b = {w for w in wb if _VALUE_TOKEN.search(w)}
    if not values_a or values_a != values_b:
        return False
    return set(wa) <= set(wb) or set(wb) <= set(wa)


#: A code span, backticks and all (`ruff format .`).
CODE_SPAN = re.compile(r"`[^`]*`")
_TEXT_TOKEN = re.compile(r"`[^`]*`|[^\s`]+")
_VALUE_SHAPE = re.compile(r"\d|\w[-./:@_#]\w|^[-~$/.]")


_AROUND_WORD = ".,;:!?()\"'"


def _split_frame(text: str) -> tuple[list[str], list[str]]:
    """A text's words that are not values (punctuation off) and its values (code spans with their backticks, and
    words with a digit or inner punctuation: versions, paths, identifiers, durations), as written."""
    words: list[str] = []
    values: list[str] = []
    for token in _TEXT_TOKEN.findall(text):
        bare = token.strip(_AROUND_WORD)
        if CODE_SPAN.fullmatch(token) or _VALUE_SHAPE.search(bare):
            values.append(bare)
        else:
            word = token.strip(_AROUND_WORD + "*-")
            if word:
                words.append(word)
    return words, values


@lru_cache(maxsize=4096)  # ranking compares a pool's texts with its best one's, query after query
def _frame(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`_split_frame`, lower-cased."""
    words, values = _split_frame(text)
    return tuple(w.lower() for w in words), tuple(v.lower() for v in values)


def differs_only_in_values(old: str, new: str) -> bool:
    """True when two texts say the same words around different values (`Full check: ./scripts/test (~20s)` and
    `(~23s)`; `Upgrade certifi to 2026.7.22` and `to 2026.9.1`): the structure of an update, in any wording.

    Two or more values changed in place are one thing's update only when an old one is still said ("from 80 to
    8080" → "from 8080 to 9090"); else they name another thing and its value ("loyalty-jobs serves HTTP on port
    8730" and "contracts-server … on port 7340": the service's name is a value too)."""
    old_words, old_values = _frame(old)
    if new.isascii():
        lowered = new.lower()
        if not all(word in lowered for word in old_words):
            return False  # a word of the old text is not in the new one: not the same words (read before framing it)
    new_words, new_values = _frame(new)
    if len(old_values) == len(new_values):
        changed = [was for was, now in zip(old_values, new_values) if was != now]
        if len(changed) > 1 and not set(changed) & set(new_values):
            return False
    framed = len(new_words) >= 2 or (_labelled(old) and _labelled(new))
    return framed and old_words == new_words and bool(new_values) and old_values != new_values


def value_in_place(old: str, new: str, value: str) -> str | None:
    """The value `new` says where `old` says `value`, when the two say the same words around different values
    (`differs_only_in_values`): `uv run --frozen ruff format .` for the `uv run ruff format .` of "- Format: `uv run
    ruff format .`" and "- Format: `uv run --frozen ruff format .`". As written in `new` (case kept, backticks and
    the punctuation around a word off); None when `new` keeps `value` or says nothing in its place."""
    if not differs_only_in_values(old, new):
        return None
    was, now = _unquoted_values(old), _unquoted_values(new)
    if len(was) != len(now):
        return None
    for before, after in zip(was, now, strict=True):
        if same_value(before, value) and not same_value(after, value):
            return after
    return None


def _unquoted_values(text: str) -> list[str]:
    """A text's values as `_frame` reads them, as written, code spans without their backticks."""
    return [v.strip("`").strip() if CODE_SPAN.fullmatch(v) else v for v in _split_frame(text)[1]]


# a line that is a label and its value ("- Format: `ruff format .`", "**Port**: 8080"): one word frames it
_LABEL_LINE = re.compile(r"^[\s>*+#-]*(?:\d+[.)]\s*)?\**[^\W\d_][\w-]*\**\s*:\s*\S")


def _labelled(text: str) -> bool:
    """Whether a text is one label and its value: a lone word is then the name of what the value is (a key
    written once per line, as in a list of settings), not a stray word beside a value."""
    return _LABEL_LINE.match(text) is not None


_QUANTITY = re.compile(r"^[~≈]?\d+(?:[.,]\d+)?\s*([^\d\s]+)$")


def value_kind(value: str) -> str:
    """The shape of an object, which one attribute of one thing keeps from value to value: `integer` (a port, a
    limit), `version`, `quantity:<unit>` (`44 min`, `1909 ms`), `url`, `handle` (`#team-x`, `@bot`), `path`,
    `dotted` (a host, `flag.x`), `identifier` (`checkout-worker`), `word`, `name` (capitalised words: a person,
    a team, a product), or `text`. Values of two kinds are never two values of one slot."""
    words = value_words(value)
    text = " ".join(words)
    if not text:
        return "text"
    if re.fullmatch(r"\d+", text):
        return "integer"
    if re.fullmatch(r"\d+(?:\.\d+)+\S*", text):
        return "version"
    quantity = _QUANTITY.match(text)
    if quantity:
        return f"quantity:{quantity.group(1)}"
    if "://" in text:
        return "url"
    if len(words) == 1:
        word = words[0]
        if word[0] in "#@":
            return "handle"
        if "/" in word:
            return "path"
        if re.search(r"\w\.\w", word):
            return "dotted"
        if re.search(r"\w[-_:]\w", word):
            return "identifier"
        return "name" if value.strip(" `'\"")[:1].isupper() else "word"
    original = [w for w in re.split(r"\s+", value.strip(" `'\".")) if w]
    if len(original) <= 4 and all(w[:1].isupper() for w in original):
        return "name"
    shaped = [w for w in words if _VALUE_SHAPED.search(w)]
    if len(shaped) == 1 and len(words) <= _MAX_DECORATED_WORDS:
        return value_kind(shaped[0])  # one value with a word of decoration: `port 7494`, `GET /api/v2/x`, `Node 18`
    return "text"


_CAPITALISED_RUN = re.compile(r"\b[A-Z][\w-]*(?:\s+[A-Z][\w-]*){0,3}")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;|\]\u2014\u2013-])\W*$")


def values_of_kind(text: str, kind: str) -> list[str]:
    """The values of one `value_kind` a text states (`dispatch-jobs → port 5381.` has the integer `5381`);
    none for free text and plain words, whose kind says nothing."""
    if kind in ("text", "word"):
        return []
    if kind.startswith("quantity:"):
        unit = re.escape(kind.split(":", 1)[1])
        return [m.group(0) for m in re.finditer(rf"[~≈]?\d+(?:[.,]\d+)?\s*{unit}\b", text.lower())]
    if kind == "name":  # a capital that only starts a sentence (or a line, after a label) names nothing
        return [m.group(0) for m in _CAPITALISED_RUN.finditer(text) if not _SENTENCE_START.search(text[: m.start()])]
    return [w for w in value_words(text) if value_kind(w) == kind]


def names_value(text: str, value: str) -> bool:
    """Whether `text` states `value` as a value: one of its values of that kind is the same (`same_value`: the
    `8445` of "from port 8445 to 5720" is `:8445`), or the value's words stand in it in order (free text:
    "switches from Cache-Control headers only to Redis" names `Cache-Control headers only.`)."""
    wanted = value_words(value)
    if not wanted or len("".join(wanted)) < 3:  # two letters or digits ("on", "3 s") stand in many a sentence
        return False
    if any(same_value(v, value) for v in values_of_kind(text, value_kind(value))):
        return True
    words = value_words(text)
    return any(words[i : i + len(wanted)] == wanted for i in range(len(words) - len(wanted) + 1))


def is_time_value(value: str) -> bool:
    """True when an object is a date or a time of day on a date (ISO 8601), the value of an event (`flaky on
    2026-03-02`), not of a state: such facts accumulate instead of replacing each other."""
    return bool(_ISO_TIME.match(" ".join(value_words(value))))


def fact_sentence(subject: str, predicate: str, obj: str) -> str:
    """One readable sentence for a fact slot, used as its content and embedded.

    The predicate may be normalized (`service_port`) or as the agent wrote it (`port:inventory-api`):
    either way underscores read as spaces and its own hyphens stay, so the names in it match verbatim.
    """
    return f"{subject} {' '.join(predicate.split()).replace('_', ' ')}: {obj}"


class FactInput(BaseModel):
    """A structured fact an agent hands to `remember`: (subject, predicate, object)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    subject: str = Field(min_length=1, max_length=500, description="What the fact is about, e.g. the project or a module.")
    predicate: str = Field(
        min_length=1, max_length=200, description="The attribute, e.g. `test_command`, `port`, `owner`."
    )
    object: str = Field(min_length=1, max_length=4000, description="The value, e.g. `nox -s tests`.")
    valid_from: str | None = Field(
        default=None,
        description="When the fact became true (ISO 8601 or a phrase like '2 days ago'); defaults to the memory's time.",
    )
    kind: Literal["state", "event"] | None = Field(
        default=None,
        description="`state`: a new value replaces the old (a port, a version, an owner). `event`: each one counts "
        "and none replaces another (a flaky report, an incident, a deploy). Default: an object that is a date or "
        "time is an event, anything else a state.",
    )

    @field_validator("subject", "predicate", "object")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()
