"""Secrets found by what the text says about them: `NAME=value` where NAME says secret, and prose.

Two rules, both reading the words of the text rather than the value's format:

- **Assignment** — a code-like name (`API_TOKEN`, `djangoSecretKey`, `--db-password`,
  `PrivateKey`) that names a secret (password, passphrase, secret, token, credential, DSN, or a
  key qualified as api/secret/private/access/signing/… key), then `=`, `:`, `:=` or `=>`, then a
  value. A name that says it holds something *about* a secret (`…_PATH`, `…_FILE`, `…_ID`,
  `…_TTL`, `…_LENGTH`, `…_LOCATION`, …) assigns no secret.
- **Prose** — a secret word (`password`, `passphrase`, `token`, `API key`, …), up to six more
  words, a connector (`is`, `was`, `:`, `=`, `set to`, `changed to`, …), then a value; or a secret
  word directly followed by a value (`passphrase purple-otter-lamp-42`). Prose is full of those
  words with no secret after them ("the token is stored in 1Password", "password reset flow"), so
  the value must look like a credential: not an English word or a name, not a path, URL,
  reference or placeholder; a value made of common words (`hunter2`, `Summer2024!`) counts only
  after a password word and at the end of its clause, and a run of three or more words joined
  by `-`, `_` or `.` counts after a password or passphrase word (a diceware passphrase).

Both rules apply to a git SHA or UUID too: vendors' keys have those shapes (Heroku, Datadog).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from chronomem.safety.allow import is_filler
from chronomem.search.english import common_word

KEYWORD = "password-assignment"
PROSE = "password-in-text"

#: Components of a name (split at `_ - .` and case changes) that make it name a secret.
_SECRET_PARTS = frozenset(
    "password passwd pwd pass passphrase passcode secret token credential credentials creds dsn apikey "
    "authtoken accesstoken privatekey secretkey".split()
)
#: Qualifiers that make `key` a secret key (`API_KEY`, `signing_key`, `PrivateKey`); `key` alone is not.
_KEY_QUALIFIERS = frozenset(
    "api secret access private signing sign encryption encrypt master auth app client service account admin "
    "deploy license licence webhook hmac ingest sdk write read consumer session jwt aes gpg pgp ssh".split()
)
#: Head nouns that make a name describe a secret (where it is, how long it lives) rather than hold it:
#: `SECRET_KEY_ID`, `TOKEN_TTL`, `PASSWORD_FILE`, `secret_location`, `passwordHash`.
_ABOUT_PARTS = frozenset(
    "path file filename files dir folder url uri endpoint host hostname name names id ids arn location loc ref refs "
    "env var vars ttl expiry expires expiration expire rotation length len type types format header headers algorithm "
    "alg region count max min timeout enabled enable required policy version versions store manager provider mount "
    "field scope scopes hint reset hash hashed fingerprint kid size bits mode source backend prefix suffix label "
    "description help regex pattern placeholder example strategy validator validation rule rules lifetime age class "
    "kind schema permissions permission issuer audience list usage count limit err error errors".split()
)
#: Trailing parts that qualify a secret name without changing what it holds (`SECRET_KEY_BASE`, `DB_PASSWORD_PROD`).
_MODIFIERS = frozenset("base value val str string plain raw b64 base64 hex enc old new prod production dev live test staging local ci".split())

_NAME_ASSIGN = re.compile(
    r"(?<![\w$.\-{=])(?P<dash>--?)?(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*[A-Za-z0-9_])[\"']?[ \t]*"
    r"(?P<op>:=|=>|==|=|:(?!//))[ \t]*"
)
_FLAG_SPACE = re.compile(r"(?<![\w\-])--(?P<name>[a-z][a-z0-9\-]*)[ \t]+(?=[^\s\-])")

_KW = (
    r"pass(?:word|phrase|code|wd)s?|pwd|secrets?|tokens?|credentials?|api[ _\-]?keys?|"
    r"(?:" + "|".join(sorted(_KEY_QUALIFIERS)) + r")[ _\-]keys?"
)
_CONNECTOR = (
    r"(?::=|=>|=|:(?=[ \t\"'`]|$)|\b(?:is|was|are|were)(?:[ \t]+(?:now|still|currently|just|literally|simply))?\b|"
    r"\b(?:set|changed|rotated|updated|reset)[ \t]+to\b|\bbecomes\b|\bequals\b|\breads\b)"
)
_PROSE = re.compile(
    r"(?i)(?<![\w\-])(?P<kw>" + _KW + r")(?![\w\-])"
    r"(?P<gap>(?:[ \t]+[^\s.;!?:=,()\[\]{}\"'`]+){0,6}?)[ \t]*(?P<conn>" + _CONNECTOR + r")[ \t]*"
)
_BARE = re.compile(r"(?i)(?<![\w\-])(?P<kw>" + _KW + r")[ \t]+(?=\S)")

_PASSWORD_WORD = re.compile(r"(?i)^(?:pass(?:word|phrase|code|wd)s?|pwd)$")
_PASSPHRASE_WORD = re.compile(r"(?i)^pass(?:phrase|word)s?$")

#: Values that are references, types or placeholders, not secrets.
_NOT_A_VALUE = re.compile(
    r"^(?:none|null|nil|true|false|yes|no|on|off|str|string|bytes|int|bool|optional|required|undefined|redacted|"
    r"x{3,}|\*+|\.\.\.+|…|changeme|example|placeholder|secret|password|passwd|token|hidden|masked|unset|empty|"
    r"your[_\-].*|my[_\-].*|<.*|\{.*|\[.*|\$.*|%.*%|@.*|&.*|os\.environ.*|env\..*|process\.env.*|ENV\[.*|"
    r"getenv.*|secrets\..*|vault:.*|op://.*|ref\+.*|arn:.*|sm://.*|projects/.*)$",
    re.IGNORECASE,
)
_CALL_OR_ATTR = re.compile(r"^[A-Za-z_][\w.]*[(\[].*|^[a-z_][a-z0-9_]*(?:\.[A-Za-z_]\w*)+$")
_IDENT = re.compile(r"^[a-z_][a-z0-9_]*$")
#: `FEATURE_FLAG_SDK_KEY`: the name of an environment variable, which is where a secret lives, not the secret.
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.\-]*://")
_EMAIL = re.compile(r"^[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+$")
_VERSION = re.compile(r"^v?\d+(?:\.\d+)+(?:[\-+][\w.]+)?$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+Z?)?$")
_PATH_PART = re.compile(r"^(?:[a-z0-9]+(?:[\-_.][a-z0-9]+)*|[A-Z][a-z]+|\d+|[A-Z0-9_]+|\.{1,2}|~)$")
_CAMEL = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_LETTER_RUNS = re.compile(r"[A-Za-z]+")
_CLAUSE_END = re.compile(
    r"^(?:$|[.,;:!?)\]—–\"'`]|[ \t]+(?:[—–\-(]|(?:and|or|but|for|on|in|at|to|so|which|that|if|when|until|because|"
    r"since|with|from|as|then|while|though|although|unless)(?!\w)))",
    re.IGNORECASE,
)
_LETTERS = re.compile(r"^[A-Za-z]+(?:[\-_.][A-Za-z]+)*$")
_RUN = re.compile(r"\S{0,2049}")
_MAX_VALUE = 2048
_TRAILING = ".,;:)]}>\"'`"
_QUOTES = {'"': '"', "'": "'", "`": "`"}


@dataclass(frozen=True)
class Span:
    kind: str
    start: int
    end: int


def name_says_secret(name: str) -> bool:
    """Whether an identifier names a secret's value (`DJANGO_SECRET_KEY`, `apiToken`, `db-pass`)."""
    parts = [p.lower() for chunk in re.split(r"[_\-.]+", name) for p in _CAMEL.findall(chunk)]
    while parts and (parts[-1] in _MODIFIERS or parts[-1].isdigit()):
        parts.pop()
    if not parts or parts[-1] in _ABOUT_PARTS:
        return False
    head = parts[-1]
    if head in _SECRET_PARTS:
        return True
    return head in ("key", "keys") and len(parts) > 1 and parts[-2] in _KEY_QUALIFIERS


def _code_like(name: str, dash: str | None, op: str, tight: bool, name_mode: bool) -> bool:
    """`API_TOKEN`, `apiToken`, `--password`, `password=…`: code or config, not a word in a sentence
    (`the token = …`, `password: …` are read as prose)."""
    return name_mode or bool(dash) or (tight and op in ("=", ":=")) or "_" in name or name.isupper() or (
        any(c.isupper() for c in name[1:]) and any(c.islower() for c in name)
    )


def find(line: str, name_mode: bool = False) -> Iterator[Span]:
    """Secret values assigned or stated in one line of text."""
    taken: list[tuple[int, int]] = []
    for m in _NAME_ASSIGN.finditer(line):
        name, op = m.group("name"), m.group("op")
        if not name_says_secret(name) or not _code_like(name, m.group("dash"), op, m.end("name") == m.start("op"), name_mode):
            continue
        value = _value_at(line, m.end())
        if value is None or _overlaps(value, taken):
            continue
        start, end, text = value
        if _assigned_secret(text, name_mode):
            taken.append((start, end))
            yield Span(KEYWORD, start, end)
    for m in _FLAG_SPACE.finditer(line):  # `--password hunter2!` on a command line
        if name_says_secret(m.group("name")):
            value = _value_at(line, m.end())
            if value and _assigned_secret(value[2], name_mode) and not _overlaps(value, taken):
                taken.append(value[:2])
                yield Span(KEYWORD, value[0], value[1])
    if name_mode:
        return  # a fact's subject or predicate is a name: "secret_location:PagerDuty API token"
    for m in _PROSE.finditer(line):
        gap = m.group("gap").split()
        if gap and gap[0].lower().strip("'s") in _ABOUT_PARTS:
            continue  # "the token id is …", "the password length is …": about the secret, not it
        value = _value_at(line, m.end())
        if value is None or _overlaps(value, taken):
            continue
        start, end, text = value
        quoted = start > 0 and line[start - 1] in _QUOTES
        if _stated_secret(text, m.group("kw"), strong=True, quoted=quoted, after=line[end:]):
            taken.append((start, end))
            yield Span(PROSE, start, end)
    for m in _BARE.finditer(line):
        value = _value_at(line, m.end())
        if value is None or _overlaps(value, taken):
            continue
        start, end, text = value
        quoted = start > 0 and line[start - 1] in _QUOTES
        if _stated_secret(text, m.group("kw"), strong=False, quoted=quoted, after=line[end:]):
            taken.append((start, end))
            yield Span(PROSE, start, end)


def _overlaps(value: tuple[int, int, str] | tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    return any(value[0] < e and s < value[1] for s, e in spans)


def _value_at(line: str, pos: int) -> tuple[int, int, str] | None:
    """The value starting at `pos`: a quoted string's contents, or the next run of non-space characters."""
    if pos >= len(line):
        return None
    if line[pos] in _QUOTES:
        close = line.find(_QUOTES[line[pos]], pos + 1)
        if close == -1 or close - pos > 200:
            return None
        return (pos + 1, close, line[pos + 1 : close]) if close > pos + 1 else None
    end = _RUN.match(line, pos).end()  # type: ignore[union-attr]  # \S* always matches
    while end > pos and line[end - 1] in _TRAILING:
        end -= 1
    if end - pos > _MAX_VALUE:
        return None  # a blob, not a credential (formats still find a long token in it)
    return (pos, end, line[pos:end]) if end > pos else None


def _reference(value: str) -> bool:
    return bool(
        _NOT_A_VALUE.match(value)
        or _ENV_NAME.match(value)
        or name_says_secret(value) and (_IDENT.match(value) or _ENV_NAME.match(value) or value.isidentifier())
        or _CALL_OR_ATTR.match(value)
        or _URL.match(value)
        or _EMAIL.match(value)
        or _VERSION.match(value)
        or _DATE.match(value)
        or is_filler(value)
        or _path(value)
    )


def _path(value: str) -> bool:
    """`secret/data/br/pagerduty-api-token`, `~/.ssh/id_ed25519`, `./certs/key.pem`: a place, not a value."""
    if value.startswith(("/", "~/", "./", "../")) and " " not in value:
        return True
    if "/" not in value and "\\" not in value:
        return False
    parts = [p for p in re.split(r"[/\\]+", value) if p]
    return len(parts) >= 2 and all(_PATH_PART.match(p) for p in parts)


def _assigned_secret(value: str, name_mode: bool) -> bool:
    """A value assigned to a secret name in code or config."""
    value = value.strip()
    if len(value) < 6 or _reference(value):
        return False
    if _IDENT.match(value) and any(w in value for w in ("pass", "secret", "token", "key", "pwd", "cred")):
        return False  # `password=db_password`: a variable, not a literal
    if value.isdigit() and len(value) < 8:
        return False
    if name_mode and value.replace(" ", "").isalpha():
        return False
    if value.isalpha() and value.islower() and common_word(value):
        return False  # `password: required`, `token: rotated`
    return True


def _stated_secret(value: str, keyword: str, strong: bool, quoted: bool, after: str) -> bool:
    """A value a sentence gives for a secret word: it must look like a credential, not like words."""
    if len(value) < 6 or _reference(value):
        return False
    password = bool(_PASSWORD_WORD.match(keyword))
    ends_clause = bool(_CLAUSE_END.match(after))
    if quoted and " " in value:
        return password and strong and len(value.split()) >= 3  # "the passphrase is 'correct horse battery staple'"
    if " " in value:
        return False
    if value.isdigit():
        return strong and len(value) >= 8
    if _PASSPHRASE_WORD.match(keyword) and _passphrase(value):
        return True
    if _LETTERS.match(value):
        # words (`case-sensitive`, `JWT-based`, `Bitwarden`), unless a part is long, mixed-case and no word
        return strong and any(
            len(p) >= 12 and any(c.isupper() for c in p[1:]) and any(c.islower() for c in p) and not _all_words(p)
            for p in re.split(r"[\-_.]", value)
        )
    if _all_words(value):
        # `hunter2`, `Summer2024!`, `1Password`: a weak password only where a password word states it
        return password and strong and ends_clause
    if not strong:
        return _mixed_classes(value) >= 3 and len(value) >= 8
    return _mixed_classes(value) >= 2


def _passphrase(value: str) -> bool:
    parts = [p for p in re.split(r"[\-_.]", value) if p]
    return len(parts) >= 3 and all(p.isalpha() or p.isdigit() for p in parts) and sum(p.isalpha() for p in parts) >= 3


def _mixed_classes(value: str) -> int:
    return sum(
        [
            any(c.islower() for c in value),
            any(c.isupper() for c in value),
            any(c.isdigit() for c in value),
            any(not c.isalnum() for c in value),
        ]
    )


def _all_words(value: str) -> bool:
    """Every run of letters (split at case changes) is a common English word: `hunter2`, `BuildAndPush`."""
    runs = [w for run in _LETTER_RUNS.findall(value) for w in _CAMEL.findall(run)]
    return bool(runs) and all(len(w) >= 3 and common_word(w.lower()) for w in runs)


