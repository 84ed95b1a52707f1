"""Secret scanning on the write path: find credentials in text before it is embedded or stored.

Four sources of findings, then one allow-list:

1. **Known formats** — detect-secrets (Yelp's maintained scanner, pure Python) for the formats it
   knows (AWS, GitHub, GitLab, Slack, Stripe, Twilio, npm, PyPI, JWT, Discord, Telegram, Azure
   storage, Mailchimp, Square, Artifactory, IBM, SoftLayer, Cloudant, private keys, passwords in
   URLs), and `chronomem/safety/formats.py` for the ~90 vendor-documented token structures it
   predates or lacks (clouds, code hosts and CI, package registries, chat, payment, mail,
   observability, AI APIs, age identities, Sentry DSNs, Postman, Docker …).
2. **Private key blocks** — PEM, OpenSSH, PGP and PuTTY, each redacted whole.
3. **Context** (`chronomem/safety/context.py`) — `NAME=value` where the name says secret
   (`API_TOKEN=…`, `DJANGO_SECRET_KEY='…'`), and prose ("the root password on the old box is …",
   "passphrase purple-…"), with the value judged by its shape.
4. **High entropy, in context only** — a random-looking token (20+ base64 characters mixing
   cases and digits) on a line that speaks of a password, secret, token, credential or key, or
   that holds a known format. Without such words a high-entropy string is taken for what coding
   notes are full of: hashes, ids, checksums.

`chronomem/safety/allow.py` then drops every finding inside what must never be redacted:
go.sum `h1:` hashes, SRI and `sha256:` digests, SSH public keys, certificates, pytest node ids
with their parameters, inline data, documented example keys (`…EXAMPLE`); and every finding that
is a variable's name (`postgres://$PGUSER:$PGPASSWORD@db/app`) or a JWT's header without its
payload and signature; git SHAs, UUIDs and ULIDs never count as high-entropy strings. `python -m eval.secrets` measures recall and the
share of look-alikes altered on a dev and a held-out corpus (eval/secret_corpus.py), and the
cost; `python -m eval.secrets_devmem` checks the DevMem notes stay untouched.

Modes (`CHRONOMEM_SECRETS`): `redact` (default) replaces each match with
`[REDACTED:<kind>]`; `reject` refuses the write; `allow` stores text as given. Results and
errors name the kinds and counts of what was found, never the secret.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from chronomem.errors import InvalidInput
from chronomem.safety import context, formats
from chronomem.safety.allow import is_filler, is_identifier, is_jose_header, is_reference, protected

MODES = ("redact", "reject", "allow")
DEFAULT_MODE = "redact"

#: Generic kinds rank below format-specific ones when two findings overlap.
KEYWORD = context.KEYWORD
PROSE = context.PROSE
HIGH_ENTROPY = "high-entropy-string"
PRIVATE_KEY = "private-key"
_GENERIC = {HIGH_ENTROPY: 0, PROSE: 1, KEYWORD: 2}

#: detect-secrets detector class name → the kind chronomem reports.
_DETECTOR_KINDS = {
    "AWSKeyDetector": "aws-key",
    "ArtifactoryDetector": "artifactory-token",
    "AzureStorageKeyDetector": "azure-storage-key",
    "BasicAuthDetector": "password-in-url",
    "CloudantDetector": "cloudant-credential",
    "DiscordBotTokenDetector": "discord-bot-token",
    "GitHubTokenDetector": "github-token",
    "GitLabTokenDetector": "gitlab-token",
    "IbmCloudIamDetector": "ibm-cloud-iam-key",
    "IbmCosHmacDetector": "ibm-cos-hmac-key",
    "JwtTokenDetector": "jwt",
    "MailchimpDetector": "mailchimp-key",
    "NpmDetector": "npm-token",
    "OpenAIDetector": "openai-key",
    "PypiTokenDetector": "pypi-token",
    "SendGridDetector": "sendgrid-key",
    "SlackDetector": "slack-token",
    "SoftlayerDetector": "softlayer-key",
    "SquareOAuthDetector": "square-oauth-secret",
    "StripeDetector": "stripe-key",
    "TelegramBotTokenDetector": "telegram-bot-token",
    "TwilioKeyDetector": "twilio-key",
}

_PRIVATE_KEY_BLOCK = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY( BLOCK)?-----.*?(?:-----END \1PRIVATE KEY\2-----|\Z)", re.DOTALL
)
_PRIVATE_KEY_END = re.compile(r"(?:END[^\n]*PRIVATE KEY|Private-MAC:)[^\n]*")

_MARKER = re.compile(r"\[REDACTED:[a-z0-9\-]+\]")
_TOKEN = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{20,}={0,2}(?![A-Za-z0-9+/_\-=])")
#: CamelCase or ALLCAPS words and short numbers: `HTTPServer2ConnectionPool` is a name, not a key.
_WORDY = re.compile(r"^(?:[A-Z]?[a-z]{2,}|[A-Z]{2,}(?![a-z])|[A-Z](?=[A-Z\d]|$)|\d{1,4})+$")
#: A line that speaks of a credential: only there is a random-looking string taken for one.
_CREDENTIAL_WORDS = re.compile(
    r"(?i)(?<![a-z])(?:pass(?:word|phrase|wd|code)?|pwd|secret|token|credential|creds|auth|bearer|dsn|"
    r"(?:api|private|access|secret|signing|encryption|master|client|service|account|deploy|webhook|hmac)[_\- ]?key)"
)
_ENTROPY_LIMIT = 4.5


@dataclass(frozen=True)
class Finding:
    """One secret found in a text: its kind and where it is (never its value, outside this module)."""

    kind: str
    start: int
    end: int


@dataclass
class _Detectors:
    regex: list[tuple[str, Any]]
    private_key: Any


@lru_cache(maxsize=1)
def _detectors() -> _Detectors:
    """Instantiate the detect-secrets detectors once (importing it costs ~0.1 s)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.private_key import PrivateKeyDetector

    regex = []
    for cls in get_mapping_from_secret_type_to_class().values():
        kind = _DETECTOR_KINDS.get(cls.__name__)
        if kind is not None:
            regex.append((kind, cls()))
    return _Detectors(regex=sorted(regex, key=lambda pair: pair[0]), private_key=PrivateKeyDetector())


def detector_kinds() -> list[str]:
    """Every kind this scanner can report."""
    d = _detectors()
    kinds = {k for k, _ in d.regex} | formats.kinds() | {KEYWORD, PROSE, HIGH_ENTROPY, PRIVATE_KEY}
    return sorted(kinds)


def shannon_entropy(text: str) -> float:
    """Bits per character of `text` (detect-secrets' measure)."""
    if not text:
        return 0.0
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def scan(text: str, name: bool = False) -> list[Finding]:
    """Every secret in `text`, as non-overlapping spans in order.

    `name=True` reads `text` as a name (a fact's subject or predicate, a project): there a word of
    letters after a keyword (`secret_location:PagerDuty API token`) is part of the name, not an
    assigned password, and prose is not read as sentences. Every format detector runs as usual.
    """
    if not text:
        return []
    d = _detectors()
    found: list[Finding] = []
    covered = _private_key_spans(text, d)
    found.extend(Finding(PRIVATE_KEY, s, e) for s, e in covered)
    offset = 0
    for line in text.split("\n"):
        if line.strip() and not _inside(offset, offset + len(line), covered):
            found.extend(_scan_line(line, offset, d, name))
        offset += len(line) + 1
    keep = protected(text)
    keep += [(m.start(), m.end()) for m in _MARKER.finditer(text)]  # text redacted before: its markers are not secrets
    if keep:
        found = [f for f in found if f.kind == PRIVATE_KEY or not _inside(f.start, f.end, keep)]
    # Whatever found it, a variable's name (`$PGPASSWORD`) or a JWT's header alone is not a secret (allow.py).
    found = [f for f in found if f.kind == PRIVATE_KEY or not _stands_for_no_secret(text[f.start : f.end])]
    return _merge(found)


def _stands_for_no_secret(value: str) -> bool:
    return is_reference(value) or is_jose_header(value)


def _inside(start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    return any(s <= start and end <= e for s, e in spans)


def _private_key_spans(text: str, d: _Detectors) -> list[tuple[int, int]]:
    spans = [(m.start(), m.end()) for m in _PRIVATE_KEY_BLOCK.finditer(text)]
    # Headers detect-secrets knows that are not PEM blocks (PuTTY, SSH2): to the end marker or the end.
    for header in set(d.private_key.analyze_string(text)):
        for start in _positions(text, header):
            if _inside(start, start + len(header), spans):
                continue
            line_start = text.rfind("\n", 0, start) + 1
            end_match = _PRIVATE_KEY_END.search(text, start + len(header))
            spans.append((line_start, end_match.end() if end_match else len(text)))
    return spans


def _positions(line: str, value: str) -> Iterator[int]:
    if not value:
        return
    start = line.find(value)
    while start != -1:
        yield start
        start = line.find(value, start + len(value))


def _scan_line(line: str, offset: int, d: _Detectors, name: bool = False) -> list[Finding]:
    out: list[Finding] = []
    for kind, detector in d.regex:
        # The detectors' own `analyze_string` yields regex groups, which for some patterns is only a prefix
        # (`ghp` of a GitHub token): take the spans from their patterns instead.
        for regex in detector.denylist:
            for m in regex.finditer(line):
                start, end = m.span(1) if kind == "password-in-url" else _secret_span(m)
                if end > start and not is_filler(line[start:end]):
                    out.append(Finding(kind, offset + start, offset + end))
    for kind, pattern, group in formats.COMPILED:
        for m in pattern.finditer(line):
            if m.end(group) > m.start(group) and not is_filler(m.group(group)):
                out.append(Finding(kind, offset + m.start(group), offset + m.end(group)))
    out.extend(Finding(s.kind, offset + s.start, offset + s.end) for s in context.find(line, name))
    if out or _CREDENTIAL_WORDS.search(line):
        out.extend(_entropy_findings(line, offset))
    return out


def _secret_span(m: re.Match[str]) -> tuple[int, int]:
    """The secret in a detector match: its longest group when that is 8+ characters (a password in a URL,
    a quoted key), else the whole match without the delimiters some patterns include."""
    groups = [(m.start(i), m.end(i)) for i in range(1, (m.re.groups or 0) + 1) if m.group(i)]
    if groups:
        start, end = max(groups, key=lambda g: g[1] - g[0])
        if end - start >= 8:
            return start, end
    start, end, text = m.start(), m.end(), m.string
    while start < end and text[start] in _DELIMITERS:
        start += 1
    while end > start and text[end - 1] in _DELIMITERS:
        end -= 1
    return start, end


_DELIMITERS = " \t\"'`=:[]"


def _entropy_findings(line: str, offset: int) -> Iterator[Finding]:
    for m in _TOKEN.finditer(line):
        token = m.group()
        if _looks_like_an_id(token):
            continue  # ids, hashes and names are not credentials
        core = token.rstrip("=")
        if not (any(c.isupper() for c in core) and any(c.islower() for c in core) and any(c.isdigit() for c in core)):
            continue
        limit = min(_ENTROPY_LIMIT, math.log2(len(core)) - 0.6)
        if shannon_entropy(core) >= limit:
            yield Finding(HIGH_ENTROPY, offset + m.start(), offset + m.end())


def _looks_like_an_id(token: str) -> bool:
    if is_identifier(token) or is_identifier(token.replace("-", "")):
        return True  # git SHAs, digests, UUIDs, ULIDs, hex ids
    if _WORDY.match(token.rstrip("=")):
        return True
    # A path or identifier: every slash- or dash-separated part is a short plain word.
    parts = [p for p in re.split(r"[/_\-]+", token.strip("/")) if p]
    return len(parts) > 2 and all(p.isalpha() or p.isdigit() or (p.isalnum() and p.islower()) for p in parts)


def _merge(found: list[Finding]) -> list[Finding]:
    """Non-overlapping spans; where two overlap, the union keeps the more specific kind."""
    out: list[Finding] = []
    for f in sorted(found, key=lambda f: (f.start, -f.end)):
        if out and f.start <= out[-1].end:
            last = out[-1]
            kind = last.kind if _GENERIC.get(last.kind, 9) >= _GENERIC.get(f.kind, 9) else f.kind
            out[-1] = Finding(kind, last.start, max(last.end, f.end))
        else:
            out.append(f)
    return out


def marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def redact(text: str, findings: list[Finding]) -> str:
    """`text` with each finding replaced by `[REDACTED:<kind>]`."""
    parts: list[str] = []
    pos = 0
    for f in sorted(findings, key=lambda f: f.start):
        parts.append(text[pos : f.start])
        parts.append(marker(f.kind))
        pos = f.end
    parts.append(text[pos:])
    return "".join(parts)


def check_mode(mode: str | None) -> str:
    value = (mode or DEFAULT_MODE).strip().lower()
    if value not in MODES:
        raise InvalidInput(f"CHRONOMEM_SECRETS must be one of {', '.join(MODES)} (got {mode!r})")
    return value


def describe(counts: dict[str, int]) -> str:
    """`2 secrets (aws-key ×1, github-token ×1)` — kinds and counts only."""
    total = sum(counts.values())
    noun = "secret" if total == 1 else "secrets"
    return f"{total} {noun} (" + ", ".join(f"{k} ×{n}" for k, n in sorted(counts.items())) + ")"


@dataclass
class SecretGuard:
    """Applies one mode to every text field of a write and tallies what it redacted."""

    mode: str = DEFAULT_MODE
    counts: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.mode = check_mode(self.mode)

    def clean(self, text: str, field_name: str, name: bool = False) -> str:
        """`text` as it may be stored: redacted, unchanged, or refused (InvalidInput) by mode.

        `name=True` for a fact's subject and predicate (see `scan`): redacting a word of a slot's name
        would merge different slots (`secret_location:PagerDuty API token`, `…:Sentry API token`) into one.
        """
        if self.mode == "allow" or not text:
            return text
        findings = scan(text, name)
        if not findings:
            return text
        counts = Counter(f.kind for f in findings)
        if self.mode == "reject":
            raise InvalidInput(
                f"{field_name} contains {describe(dict(counts))}; nothing was stored. Remove them, or ask the user "
                "to set CHRONOMEM_SECRETS=redact to store the rest with the secrets masked"
            )
        for kind, n in counts.items():
            self.counts[kind] = self.counts.get(kind, 0) + n
        return redact(text, findings)

    def check_name(self, text: str | None, field_name: str) -> None:
        """Refuse a name (a project) holding a secret, in `redact` mode too: a redacted project name would
        file the memory under another project, where its own project never finds it. Anything but a string is
        left to the argument's own validation, which refuses it in one line."""
        if self.mode == "allow" or not isinstance(text, str) or not text:
            return
        findings = scan(text, name=True)
        if findings:
            counts = Counter(f.kind for f in findings)
            raise InvalidInput(
                f"{field_name} contains {describe(dict(counts))}; nothing was stored. A {field_name} is a name: "
                "pass one without a credential in it"
            )

    def clean_list(self, values: list[str], field_name: str) -> list[str]:
        return [self.clean(v, field_name) for v in values]

    @property
    def total(self) -> int:
        return sum(self.counts.values())
