"""Rule-based fact extraction from what coding agents write: pure functions over text, no store.

Recognised (one family per sentence, first match wins):

- changes of value: "the test command is now `nox -s tests`", "we changed the build
  script to make all", "the deploy target was switched to fly.io";
- moves: "we moved from X to Y", "switched the CI provider from CircleCI to Buildkite",
  "X was replaced by Y";
- deprecations: "X is deprecated, use Y" / "in favour of Y";
- ports: "X listens on port N", "X runs on localhost:N", "port for X is N", "X's port is N";
- versions: "bumped X to 1.2.3", "X pinned at 1.2.3", "upgraded X from 1.1 to 1.2",
  "we're on X 1.2.3", "X version is 1.2.3";
- retractions: "ignore what I said about X", "disregard my note that X is A",
  "correction: X is not A … the right value is B", "I was wrong: X was never A. Use B."

Precision before recall. A sentence is skipped when it asks, hedges, plans, reports
someone else's setup, or negates ("maybe", "should we", "will", "someone on a forum",
"not", "?"); an attribute must end in a known attribute noun (command, port, version,
owner, …) and a value must look like one (not "happy", not a pronoun). What is not
clearly a statement of the current value yields nothing: the verbatim chunk is still
stored and searchable.

Subjects default to the project; "<attribute> of/for <thing>" makes <thing> the subject,
as do ports and versions ("checkout-api" · port, "numpy" · version). Predicates are
normalized (`test_command`, `port`, `version`, `status`, `replaced_by`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from chronomem.records import UTC, normalize_predicate, normalize_subject

ExtractionKind = Literal["fact", "replace", "retract"]

#: At most this many extractions from one chunk (a long log pasted as a memory is not a list of facts).
MAX_PER_CHUNK = 12
#: Sentences longer than this are skipped: rules only trust short, direct statements.
MAX_SENTENCE_CHARS = 300


@dataclass(frozen=True)
class Extraction:
    """One thing a chunk states.

    - `fact`: (subject, predicate, object) holds from `valid_from` (None = the chunk's time);
      `old_value` is the value it replaced, when the sentence names it.
    - `replace`: whatever live fact of the project has the value `old_value` now has `object`
      (from "we moved from X to Y", where the attribute is not named).
    - `retract`: the live fact about `topic` (with value `old_value`, if stated) was never
      true; `object`, if given, is the right value.
    """

    kind: ExtractionKind
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    old_value: str | None = None
    topic: str | None = None
    valid_from: datetime | None = None
    rule: str = ""
    evidence: str = ""


# --------------------------------------------------------------------------- vocabulary
#: Nouns an attribute phrase may end in ("the test *command*", "the owning *team*").
ATTRIBUTE_HEADS = frozenset(
    """
    command cmd script port version url uri endpoint address host hostname domain path directory dir folder
    file branch owner owners maintainer maintainers lead manager runner framework library database db datastore
    cache queue broker provider tool formatter linter checker image registry region bucket key variable var
    timeout limit channel name target runtime language interpreter server platform system engine convention
    style process procedure workflow pipeline location setting config configuration entrypoint editor ide shell
    compiler bundler orm client backend frontend cluster namespace account team email license strategy method
    format schedule interval size threshold ttl model mode level flag policy prefix template scheme protocol
    transport driver adapter ci cd repo repository stack toolchain sdk api service owner contact
    """.split()
)
#: Attribute nouns whose qualifier names the thing itself: "python version" is (python, version).
ENTITY_HEADS = frozenset({"version", "port", "owner", "owners", "maintainer", "maintainers", "lead", "url", "endpoint"})
#: Settings that get "bumped to 1.5" but are not packages with versions.
NOT_PACKAGES = frozenset(
    """
    it this that these those version versions everything all deps dependencies we us timeout timeouts limit
    threshold budget size count rate ttl interval retries retry memory cpu replicas workers score coverage
    percentage number value default priority severity level
    """.split()
)
PRONOUNS = frozenset(
    "it this that these those there he she they we i you everything something nothing anything which what who "
    "all each both one".split()
)
#: Words that are states, not values: "the team is now happy" states nothing to remember as a fact.
STATE_WORDS = frozenset(
    """
    happy unhappy busy blocked unblocked aware done ready fixed broken green red stable flaky slow fast faster
    slower better worse fine good bad ok okay working live up down complete completed finished gone obsolete
    outdated stale required optional available unavailable same different empty full large small bigger smaller
    larger longer shorter higher lower correct incorrect wrong right clear unclear healthy unhealthy passing
    failing merged closed open resolved unresolved deprecated here there back away over possible impossible
    important needed necessary true false clean dirty
    """.split()
)

_HEDGE = re.compile(
    r"\b(?:maybe|might|may|could|should|would|perhaps|possibly|probably|consider|considering|considered|"
    r"propose|proposed|proposal|proposes|suggest|suggested|suggests|suggestion|recommend|recommended|recommends|"
    r"plan|plans|planned|planning|going to|want to|wants to|wanted to|will|wonder|wondering|whether|if|unless|"
    r"todo|someday|some day|hypothetically|hypothetical|e\.g\.|for example|for instance|example|not sure|unsure|"
    r"guess|assume|assuming|unclear|idea|draft|discuss|discussed|discussing|debate|debating|option|options|"
    r"alternative|alternatively|wish|hope|hopefully|eventually|soon|later|next week|next month|tomorrow)\b",
    re.IGNORECASE,
)
_REPORTED = re.compile(
    r"\b(?:blog|forum|article|tutorial|stack ?overflow|upstream|someone|somebody|asked|asks|asking|question|"
    r"experiment|experimenting|experimented|tried|trying|not ours|over in|other project|another project|"
    r"elsewhere|in theory|vendor|readme of|their|theirs|other team's|competitor)\b",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"\b(?:not|never|no longer|no|nothing|none|cannot|nor)\b|n't\b|\bnot\b", re.IGNORECASE
)

_VER = r"v?\d+(?:\.\d+){1,3}(?:[-+.]?(?:rc|alpha|beta|a|b|post|dev|pre)\.?\d*)?"
_VER_END = r"(?!\w|\.\w)"
_PKG = r"@?[A-Za-z][\w.\-]*(?:/[\w.\-]+)*"
_PKG_NOUN = r"(?:(?:dependency|package|crate|module|library|gem|lib)\s+)?"
_THING = r"[\w.@/\-]+(?:\s+[\w.@/\-]+){0,3}?"
_DATE = re.compile(r"\b(?:since|as of|starting|effective|from)\s+(\d{4}-\d{2}-\d{2})\b", re.IGNORECASE)
_SCOPE = re.compile(r"^\s*(?:\[(?P<a>[^\]]{1,60})\]|(?:[Ii]n|[Ff]or)\s+(?P<b>[A-Z][\w.\-]*)\s*(?:,|:|\s[-–—]))")
_CODE_FENCE = re.compile(r"```.*?```", re.DOTALL)
_CODE_LIKE = re.compile(r"`[^`]*`|\b[a-z][\w+.-]*://\S+|\S*[\w.-]/\S*|\S+\.[a-z]{2,}\b\S*|(?<!\w)--?[\w-]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\[`\"'(#@/0-9])|\n+")
_PREFIX = re.compile(
    r"^\s*(?:\[[^\]]{1,60}\]\s*)?(?:(?:in|for|on|re)\s+[\w.\-]+\s*(?:,|:|\s[-–—])\s*|"
    r"(?:note|update|fyi|heads up|ps|status|info|psa|[A-Z][\w.\-]{0,30})\s*(?::|\s[-–—])\s+)?",
    re.IGNORECASE,
)


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# --------------------------------------------------------------------------- patterns
_PORT = [
    _rx(
        rf"^(?:the\s+)?(?P<x>{_THING})\s+(?:now\s+)?(?:listens|is listening|runs|is running|serves|is served|"
        r"is exposed|is bound|binds|is available|is reachable|is hosted|lives)\s+(?:now\s+)?(?:on|at)\s+"
        r"(?:(?:tcp\s+)?port\s+|(?:https?://)?(?:localhost|127\.0\.0\.1|0\.0\.0\.0)?:)(?P<port>\d{2,5})\b"
    ),
    _rx(
        r"^(?:the\s+)?(?:(?:tcp|http|https|listening|default|local)\s+)?port\s+(?:for|of)\s+(?:the\s+)?"
        rf"(?P<x>{_THING})\s+(?:is|=|:)\s+(?:now\s+)?(?P<port>\d{{2,5}})\b"
    ),
    _rx(
        rf"^(?:the\s+)?(?P<x>{_THING})(?:'s|’s)?\s+(?:(?:listening|default|local|http|tcp)\s+)?port\s+"
        r"(?:is|=|:)\s+(?:now\s+)?(?P<port>\d{2,5})\b"
    ),
    _rx(r"^(?:the\s+)?(?:(?:listening|default|local|server|http)\s+)?port\s+(?:is|=)\s+(?:now\s+)?(?P<port>\d{2,5})\b"),
]
_VERSION = [
    _rx(
        r"^(?:(?:we|i)\s+)?(?:have\s+|'ve\s+|just\s+|finally\s+)*(?:bumped|upgraded|updated|downgraded|pinned|"
        rf"raised|lowered|locked|moved)\s+(?:the\s+)?(?P<pkg>{_PKG})\s+{_PKG_NOUN}(?:version\s+)?"
        rf"(?:from\s+(?:version\s+)?(?P<old>{_VER})\s+)?(?:to|at|on)\s+(?:version\s+)?(?P<ver>{_VER}){_VER_END}"
    ),
    _rx(
        rf"^(?:the\s+)?(?P<pkg>{_PKG})\s+{_PKG_NOUN}(?:version\s+)?(?:is\s+|are\s+|was\s+|has been\s+|got\s+)?"
        r"(?:now\s+)?(?:bumped|upgraded|updated|downgraded|pinned|raised|lowered|locked)\s+"
        rf"(?:from\s+(?:version\s+)?(?P<old>{_VER})\s+)?(?:to|at|on)\s+(?:version\s+)?(?P<ver>{_VER}){_VER_END}"
    ),
    _rx(
        rf"^(?:we're|we are)\s+(?:now\s+)?(?:on|using|running)\s+(?P<pkg>{_PKG})\s+(?:version\s+)?"
        rf"(?P<ver>{_VER}){_VER_END}"
    ),
    _rx(rf"^(?:the\s+)?(?P<pkg>{_PKG})\s+version\s+(?:is|=)\s+(?:now\s+)?(?P<ver>{_VER}){_VER_END}"),
    _rx(
        rf"^(?:the\s+)?(?:pinned|current)\s+version\s+of\s+(?P<pkg>{_PKG})\s+is\s+(?:now\s+)?(?P<ver>{_VER}){_VER_END}"
    ),
]
_DEPRECATED = [
    _rx(
        r"^(?:the\s+)?(?P<x>[^,;:]{1,60}?)\s+(?:is|are|has been|have been|was|got)\s+(?:now\s+|officially\s+)*"
        r"deprecated\b(?P<rest>.*)$"
    ),
    _rx(r"^(?:we\s+)?(?:have\s+)?deprecated\s+(?P<x>[^,;:]{1,60}?)\s+in\s+favou?r\s+of\s+(?P<y>.+)$"),
]
_DEPRECATED_USE = _rx(
    r"^\s*(?:[,;:\-–—.]\s*)?(?:(?:please|so|and)\s+)?(?:in\s+favou?r\s+of|replaced\s+by|superseded\s+by|use|"
    r"switch\s+to|move\s+to|migrate\s+to)\s+(?P<y>.+)$"
)
_MOVE = [
    _rx(
        r"^(?:(?:we|i|the team|they)\s+)?(?:have\s+|'ve\s+|just\s+|finally\s+|now\s+)*(?:moved|migrated|switched|"
        r"changed|transitioned|went|ported|converted)\s+(?:(?:over|away)\s+)?(?:(?P<attr>[^,;]{1,60}?)\s+)?"
        r"from\s+(?P<old>.+?)\s+(?:over\s+)?to\s+(?P<new>.+)$"
    ),
    _rx(
        r"^(?:the\s+|our\s+)?(?P<attr>[^,;:]{1,60}?)\s+(?:was|were|has been|have been|got)\s+(?:moved|migrated|"
        r"switched|changed|updated)\s+from\s+(?P<old>.+?)\s+to\s+(?P<new>.+)$"
    ),
    _rx(r"^(?:the\s+|our\s+)?(?P<attr>[^,;:]{1,60}?)\s+changed\s+from\s+(?P<old>.+?)\s+to\s+(?P<new>.+)$"),
    _rx(r"^(?:(?:we|i)\s+)?(?:have\s+|'ve\s+|just\s+)*replaced\s+(?P<old>.+?)\s+with\s+(?P<new>.+)$"),
    _rx(r"^(?P<old>[^,;:]{1,60}?)\s+(?:was|has been|got)\s+replaced\s+(?:by|with)\s+(?P<new>.+)$"),
]
_NOW = [
    _rx(
        r"^(?:the\s+|our\s+|a\s+)?(?P<attr>[^,;:]{2,60}?)\s+(?:is|are|has been|have been)\s+(?:now|currently)\s+"
        r"(?:set\s+to\s+|changed\s+to\s+)?(?P<val>.+)$"
    ),
    _rx(r"^(?:the\s+|our\s+)?(?P<attr>[^,;:]{2,60}?)\s+(?:is|are)\s+(?P<val>[^,;]+?)\s+now$"),
    _rx(
        r"^(?:(?:we|i)\s+)?(?:have\s+|'ve\s+|just\s+)*(?:changed|updated|set|switched)\s+(?:the\s+|our\s+)?"
        r"(?P<attr>[^,;:]{2,60}?)\s+to\s+(?P<val>.+)$"
    ),
    _rx(
        r"^(?:the\s+|our\s+)?(?P<attr>[^,;:]{2,60}?)\s+(?:was|has been|got)\s+(?:changed|updated|set|switched)\s+to\s+"
        r"(?P<val>.+)$"
    ),
    _rx(r"^(?:the\s+|our\s+)?(?P<attr>[^,;:]{2,60}?)\s+changed\s+to\s+(?P<val>.+)$"),
]

# Retractions: a cue that the speaker takes back an earlier statement, then its structure.
_RETRACT_CUE = _rx(
    r"\b(?:ignore|disregard|scratch|strike|forget|drop)\s+(?:what\s+(?:i|we)\s+(?:said|wrote|noted|told you)|"
    r"my\s+(?:earlier\s+|previous\s+|last\s+|prior\s+|old\s+)?(?:note|notes|comment|statement|message|update|entry))|"
    r"^(?:correction|retracting|retraction|erratum)\s*[:\-–—]|\b(?:i|we)\s+(?:was|were)\s+wrong\b"
)
_RETRACT_FORMS = [
    # "ignore what I said about <body>" / "disregard my note that <body>" / "scratch my note on <body>"
    _rx(
        r"\b(?:ignore|disregard|scratch|strike|forget|drop)\s+(?:what\s+(?:i|we)\s+(?:said|wrote|noted|told you)|"
        r"my\s+(?:earlier\s+|previous\s+|last\s+|prior\s+|old\s+)?(?:note|notes|comment|statement|message|update|entry))"
        r"\s+(?:about|on|regarding|re:?|concerning|that|saying|where\s+i\s+said)\s+(?P<body>.+)$"
    ),
    # "correction: <body>" / "retracting: <body>" / "I was wrong (earlier): <body>"
    _rx(r"^(?:correction|retracting|retraction|erratum)\s*[:\-–—]\s*(?P<body>.+)$"),
    _rx(r"\b(?:i|we)\s+(?:was|were)\s+wrong(?:\s+(?:earlier|before|yesterday|about this))?\s*[:,\-–—]\s*(?P<body>.+)$"),
]
_WRONG_TAIL = _rx(
    r"\s*(?:[;,.\-–—]\s*|\s+)(?:that|it|this|which)?\s*(?:was|is)\s+(?:wrong|incorrect|outdated|a\s+mistake|a\s+guess|"
    r"not\s+right|false|not\s+true|mistaken|a\s+typo)\b.*$"
)
_BODY_SPLIT = [
    _rx(r"^(?P<topic>.+?)\s+(?:was\s+never|is\s+not|isn't|was\s+not|wasn't|never\s+was)\s+(?P<wrong>.+)$"),
    _rx(r"^(?P<topic>.+?)\s+(?:being|=|is|was|are|were)\s+(?P<wrong>.+)$"),
    _rx(r"^(?P<topic>.+?)\s*\((?P<wrong>[^()]+)\)\s*$"),
    _rx(r"^(?P<topic>.+?)\s*:\s*(?P<wrong>.+)$"),
]
_REPLACEMENT = [
    _rx(r"\b(?:it's|it is|it was|that's|that is)\s+actually\s+(?P<new>.+)$"),
    _rx(r"\b(?:the\s+)?(?:right|correct|real|actual)\s+(?:value|one|answer|name|number)\s+is\s+(?P<new>.+)$"),
    _rx(r"\bit\s+should\s+(?:be|have\s+been)\s+(?P<new>.+)$"),
    _rx(r"^(?:please\s+)?use\s+(?P<new>.+?)(?:\s+instead)?$"),
    _rx(r"^(?:it's|it\s+is)\s+(?P<new>.+)$"),
]
_NO_REPLACEMENT = _rx(r"\b(?:don't|do not)\s+know|\bneed\s+to\s+(?:confirm|check|verify)|\bnot\s+sure\b|\bunknown\b|\btbd\b")


# --------------------------------------------------------------------------- public entry point
def extract(text: str, project_subject: str) -> list[Extraction]:
    """Everything the rules read in `text`; facts about unnamed things get `project_subject` as subject."""
    subject = normalize_subject(project_subject)
    sentences = split_sentences(text)
    out: list[Extraction] = []
    skip_next = False
    for i, sentence in enumerate(sentences):
        if skip_next:
            skip_next = False
            continue
        if _scoped_elsewhere(sentence, subject):
            continue
        following = sentences[i + 1] if i + 1 < len(sentences) else None
        retraction, used_next = _retraction(sentence, following)
        if retraction is not None:
            out.append(retraction)
            skip_next = used_next
            continue
        out.extend(_facts(sentence, subject))
        if len(out) >= MAX_PER_CHUNK:
            break
    return out[:MAX_PER_CHUNK]


def _scoped_elsewhere(sentence: str, project_subject: str) -> bool:
    """True when the sentence opens by naming another project: "[Other] …", "In Other, …", "For Other - …"."""
    m = _SCOPE.match(sentence)
    if not m:
        return False
    name = normalize_subject(m.group("a") or m.group("b") or "")
    return bool(name) and name != project_subject and name.replace(" ", "-") != project_subject


def split_sentences(text: str) -> list[str]:
    """Sentences of prose; fenced code is dropped (code is not a statement)."""
    prose = _CODE_FENCE.sub("\n", text)
    lines = [ln for ln in prose.splitlines() if not ln.lstrip().startswith((">", "$ ", "#!", "//"))]
    parts = _SENTENCE_END.split("\n".join(lines))
    return [p.strip() for p in parts if p and p.strip()]


# --------------------------------------------------------------------------- facts
def asks(text: str) -> bool:
    """Whether a text asks something: a question mark outside its code, paths and addresses (`?page=2` asks nothing)."""
    return "?" in _CODE_LIKE.sub(" X ", text)


def statement_body(sentence: str) -> str | None:
    """The sentence without its opening label ("Note:", "[Repo]", "so,"), or None when it is not a plain
    statement of how things are: too long to be one, or it asks, hedges, plans, reports someone else's setup
    or negates (the words above)."""
    if len(sentence) > MAX_SENTENCE_CHARS or asks(sentence):
        return None
    body = _PREFIX.sub("", sentence, count=1).strip()
    body = re.sub(r"^(?:so|now|also|and|ok|okay|fyi|btw|heads up)\s*[,:]?\s+", "", body, flags=re.IGNORECASE)
    masked = _CODE_LIKE.sub(" X ", body)  # "example.com", `--no-cache` and paths are not words of the sentence
    if not body or _HEDGE.search(masked) or _REPORTED.search(masked) or _NEGATION.search(masked):
        return None
    return body


def _facts(sentence: str, project_subject: str) -> list[Extraction]:
    body = statement_body(sentence)
    if body is None:
        return []
    valid_from = _date(body)
    core = _DATE.sub("", body).strip(" ,")
    core = re.sub(r"^(?:as\s+of\s+today|from\s+now\s+on|starting\s+today|today)\s*,?\s*", "", core, flags=re.I)
    for family in (_port, _version, _deprecation, _move, _now):
        found = family(core, project_subject)
        if found:
            return [_with(e, valid_from=valid_from, evidence=sentence) for e in found]
    return []


def _with(e: Extraction, **changes: object) -> Extraction:
    from dataclasses import replace

    return replace(e, **changes)  # type: ignore[arg-type]


def _port(s: str, project_subject: str) -> list[Extraction]:
    for i, pattern in enumerate(_PORT):
        m = pattern.match(s)
        if not m:
            continue
        port = int(m.group("port"))
        if not 1 <= port <= 65535:
            return []
        thing = m.groupdict().get("x")
        if thing is not None:
            thing = _entity(thing)
            if thing is None:
                continue  # "The port is 8080": the next form reads it without a thing
        return [Extraction("fact", thing or project_subject, "port", str(port), rule=f"port/{i}")]
    return []


def _version(s: str, project_subject: str) -> list[Extraction]:
    for i, pattern in enumerate(_VERSION):
        m = pattern.match(s)
        if not m:
            continue
        pkg = m.group("pkg").strip(".-/").lower()
        if pkg in NOT_PACKAGES or pkg in PRONOUNS or not pkg:
            return []
        old = m.groupdict().get("old")
        return [Extraction("fact", normalize_subject(pkg), "version", m.group("ver"), old_value=old, rule=f"version/{i}")]
    return []


def _deprecation(s: str, project_subject: str) -> list[Extraction]:
    for i, pattern in enumerate(_DEPRECATED):
        m = pattern.match(s)
        if not m:
            continue
        thing = _value(m.group("x"), max_words=5)
        if thing is None or thing.lower() in PRONOUNS:
            return []
        replacement = m.groupdict().get("y")
        rest = m.groupdict().get("rest")
        if replacement is None and rest and rest.strip(" .,;:"):
            use = _DEPRECATED_USE.match(rest)
            if use is None:
                return []  # "X is deprecated because …": keep only clear statements
            replacement = use.group("y")
        out = [Extraction("fact", normalize_subject(thing), "status", "deprecated", rule=f"deprecated/{i}")]
        new = _value(re.sub(r"\s+instead\b.*$", "", replacement), max_words=6) if replacement else None
        if new:
            out.append(Extraction("fact", normalize_subject(thing), "replaced_by", new, rule=f"deprecated/{i}"))
            out.append(Extraction("replace", object=new, old_value=thing, rule=f"deprecated/{i}"))
        return out
    return []


def _move(s: str, project_subject: str) -> list[Extraction]:
    for i, pattern in enumerate(_MOVE):
        m = pattern.match(s)
        if not m:
            continue
        attr = m.groupdict().get("attr")
        new_text = m.group("new")
        purpose = re.match(r"^(?P<new>.+?)\s+for\s+(?P<attr>(?:the|our)\s+.+|\S+(?:'s|’s)\s+.+)$", new_text, re.I)
        if purpose and not attr and _slot(_value(purpose.group("attr"), 8) or "", project_subject):
            new_text, attr = purpose.group("new"), _value(purpose.group("attr"), 8)  # "… to Y for the build command"
        old = _value(m.group("old"), max_words=6)
        new = _value(re.sub(r"\s+for\s+.*$", "", new_text), max_words=6)
        if old is None or new is None or normalize_subject(old) == normalize_subject(new):
            return []
        rule = f"move/{i}"
        if attr:
            attr = re.sub(r"^(?:the|our|a|an)\s+", "", attr.strip(), flags=re.IGNORECASE)
            if re.fullmatch(_PKG, attr) and re.fullmatch(_VER, old) and re.fullmatch(_VER, new):
                pkg = attr.lower()
                if pkg in NOT_PACKAGES:
                    return []
                return [Extraction("fact", normalize_subject(pkg), "version", new, old_value=old, rule=rule)]
            slot = _slot(attr, project_subject)
            if slot is not None:
                return [Extraction("fact", slot[0], slot[1], new, old_value=old, rule=rule)]
            # An attribute we cannot name ("the team that owns reporting"): only the value moves.
            return [Extraction("replace", object=new, old_value=old, rule=rule)]
        return [
            Extraction("fact", normalize_subject(old), "replaced_by", new, rule=rule),
            Extraction("replace", object=new, old_value=old, rule=rule),
        ]
    return []


def _now(s: str, project_subject: str) -> list[Extraction]:
    for i, pattern in enumerate(_NOW):
        m = pattern.match(s)
        if not m:
            continue
        slot = _slot(m.group("attr"), project_subject)
        value = _value(_cut_value(m.group("val")), max_words=14, max_chars=160)
        if slot is None or value is None:
            return []
        if " " not in value and value.lower().strip(".") in STATE_WORDS:
            return []
        return [Extraction("fact", slot[0], slot[1], value, rule=f"now/{i}")]
    return []


# --------------------------------------------------------------------------- retractions
def _retraction(sentence: str, following: str | None) -> tuple[Extraction | None, bool]:
    """A retraction in `sentence` (its right value may sit in the next sentence); and whether that was used."""
    if "?" in _CODE_LIKE.sub(" X ", sentence) or len(sentence) > MAX_SENTENCE_CHARS:
        return None, False
    text = re.sub(r"^\s*\[[^\]]{1,60}\]\s*", "", sentence)
    text = re.sub(r"^(?:in|for)\s+[\w.\-]+\s*[,:\-–—]\s*", "", text, flags=re.IGNORECASE)
    text = re.sub(r"^[A-Z][\w.\-]{0,30}\s*:\s+(?=(?:i|we|please|ignore|disregard|scratch)\b)", "", text, flags=re.I)
    if not _RETRACT_CUE.search(text):
        return None, False
    body = None
    for form in _RETRACT_FORMS:
        m = form.search(text)
        if m:
            body = m.group("body")
            break
    if body is None:
        return None, False

    # The right value: after the wrong-marker in this sentence, or in the next one.
    replacement: str | None = None
    used_next = False
    tail = ""
    wrong_marker = _WRONG_TAIL.search(body)
    if wrong_marker:
        tail = body[wrong_marker.end() :]
        body = body[: wrong_marker.start()]
    clauses = [c for c in re.split(r"[;.]\s+|,\s+(?=(?:i|it|the|use|please)\b)", body + " ", flags=re.I) if c.strip()]
    body = clauses[0].strip() if clauses else body
    candidates = [c.strip() for c in clauses[1:]] + ([tail.strip(" .;,")] if tail.strip(" .;,") else [])
    if not any(_NO_REPLACEMENT.search(c) for c in candidates + [following or ""]):
        replacement = _replacement(candidates)
        if replacement is None and following is not None and not _RETRACT_CUE.search(following):
            replacement = _replacement([following])
            used_next = replacement is not None

    topic, wrong = _split_body(body.strip(" .;,"))
    if topic is None:
        return None, False
    return (
        Extraction("retract", object=replacement, old_value=wrong, topic=topic, rule="retract", evidence=sentence),
        used_next,
    )


def _split_body(body: str) -> tuple[str | None, str | None]:
    for pattern in _BODY_SPLIT:
        m = pattern.match(body)
        if m:
            topic = _phrase(m.group("topic"), max_words=12, max_chars=120)
            wrong = _phrase(m.group("wrong"), max_words=14, max_chars=160)
            if topic and wrong:
                return topic, wrong
    return _phrase(body, max_words=12, max_chars=120), None


def _replacement(candidates: list[str]) -> str | None:
    for clause in candidates:
        clause = clause.strip(" .;,")
        for pattern in _REPLACEMENT:
            m = pattern.search(clause)
            if m:
                return _phrase(m.group("new"), max_words=14, max_chars=160)
    return None


# --------------------------------------------------------------------------- helpers
def _slot(attr: str, project_subject: str) -> tuple[str, str] | None:
    """(subject, predicate) for an attribute phrase, or None when it does not name an attribute."""
    phrase = re.sub(r"[`\"]", "", attr.strip()).strip().replace("’", "'")
    phrase = re.sub(r"^(?:the|our|a|an|this\s+project's|the\s+project's)\s+", "", phrase, flags=re.IGNORECASE)
    phrase = re.sub(r"^(?:current|new|latest|updated)\s+", "", phrase, flags=re.IGNORECASE)
    if not phrase or len(phrase.split()) > 7:
        return None
    head, entity = phrase, None
    m = re.match(r"^(?P<head>.+?)\s+(?:of|for)\s+(?:the\s+|our\s+)?(?P<entity>.+)$", phrase, flags=re.IGNORECASE)
    owner = re.match(r"^(?P<entity>[\w.@/\-]+(?:\s+[\w.@/\-]+)?)(?:'s|’s)\s+(?P<head>.+)$", phrase)
    if m:
        head, entity = m.group("head"), m.group("entity")
    elif owner:
        head, entity = owner.group("head"), owner.group("entity")  # "the user's editor", "redis's port"
    words = head.lower().split()
    if not words or words[0] in PRONOUNS or words[-1] not in ATTRIBUTE_HEADS or len(words) > 4:
        return None
    if entity is not None:
        thing = _entity(entity)
        if thing is None:
            return None
        return thing, normalize_predicate(head)
    if words[-1] in ENTITY_HEADS and len(words) >= 2:
        return normalize_subject(" ".join(words[:-1])), words[-1]
    return project_subject, normalize_predicate(head)


def _entity(text: str) -> str | None:
    thing = re.sub(r"^(?:the|our|a|an)\s+", "", text.strip(" `'\"").strip(), flags=re.IGNORECASE)
    thing = thing.strip(" `'\"")
    if not thing or thing.lower() in {"the", "our", "a", "an"} or thing.lower() in PRONOUNS or thing.lower().split()[0] in PRONOUNS or len(thing.split()) > 4:
        return None
    return normalize_subject(thing)


def _cut_value(value: str) -> str:
    """Drop what follows the value: "(was X)", ", previously X", "instead of X", "because …"."""
    value = re.sub(
        r"\s*\((?:was|previously|formerly|before|used\s+to\s+be|instead\s+of|replacing|not|from)\b[^)]*\)?.*$",
        "", value, flags=re.IGNORECASE,
    )
    value = re.sub(
        r"\s*[,;]\s*(?:was|previously|formerly|before\s+that|it\s+used\s+to\s+be|used\s+to\s+be|instead\s+of|"
        r"replacing|down\s+from|up\s+from|because|since|as)\b.*$",
        "", value, flags=re.IGNORECASE,
    )
    value = re.sub(r"\s+(?:instead\s+of|replacing|rather\s+than|down\s+from|up\s+from|because|since)\b.*$", "", value,
                   flags=re.IGNORECASE)
    return value


def _value(text: str | None, max_words: int = 6, max_chars: int = 80) -> str | None:
    """A cleaned value, or None when it does not look like one."""
    if text is None:
        return None
    value = text.strip()
    value = re.sub(r"\s+(?:now|instead|too|as well|for now)\s*[.!]*$", "", value, flags=re.IGNORECASE)
    value = re.sub(r"\s+(?:because|since|so that|which|but|for\s+(?:now|the|our|better|faster))\b.*$", "", value,
                   flags=re.IGNORECASE)
    value = re.sub(r"\s*(?:[;—–]|\s-\s).*$", "", value)
    value = re.sub(
        r"\s+(?:last\s+(?:week|month|year|night|sprint)|this\s+(?:week|month|morning|afternoon|sprint)|yesterday|"
        r"today|recently|earlier|on\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
        r"in\s+(?:january|february|march|april|may|june|july|august|september|october|november|december))\b.*$",
        "", value, flags=re.IGNORECASE,
    )
    value = re.sub(r"^the\s+(?=\S)", "", value, flags=re.IGNORECASE)
    value = value.rstrip(" .,;:!")
    if value.count("`") == 2 and value.startswith("`") and value.endswith("`"):
        value = value[1:-1].strip()
    elif len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1].strip()
    if not value or len(value) > max_chars or len(value.split()) > max_words:
        return None
    first = value.split()[0].lower().strip("`'\"")
    if first in PRONOUNS or first in {"a", "an", "very", "really", "much", "more", "less", "too", "so", "quite"}:
        return None
    if first in STATE_WORDS and not value.startswith("`"):
        return None  # "happy with the results", "ready for review": a state, not a value
    return value


def _phrase(text: str, max_words: int, max_chars: int) -> str | None:
    """A topic or stated value, trimmed but not cut short: "the config key for the timeout" stays whole."""
    phrase = re.sub(r"^(?:the|our|a|an)\s+", "", text.strip(), flags=re.IGNORECASE).rstrip(" .,;:!")
    if phrase.count("`") == 2 and phrase.startswith("`") and phrase.endswith("`"):
        phrase = phrase[1:-1].strip()
    if not phrase or len(phrase) > max_chars or len(phrase.split()) > max_words:
        return None
    if phrase.lower().split()[0] in PRONOUNS:
        return None
    return phrase


def _date(text: str) -> datetime | None:
    m = _DATE.search(text)
    if not m:
        return None
    try:
        return datetime.fromisoformat(m.group(1)).replace(tzinfo=UTC)
    except ValueError:
        return None
