"""Secret scanning on the write path: find credentials in text before it is embedded or stored.

Detection is detect-secrets (Yelp's maintained scanner): its format detectors (AWS, GitHub,
GitLab, Slack, Stripe, OpenAI, SendGrid, Twilio, npm, PyPI, JWT, Discord, Telegram, Azure,
Mailchimp, Square, Artifactory, IBM, SoftLayer, Cloudant, private keys, passwords in URLs)
and its keyword detector (`password = …`, `API_KEY: …`), plus a few token formats it
predates (Anthropic, Google, Hugging Face, GitHub fine-grained, OpenAI project keys,
DigitalOcean, Shopify, bearer headers, `?token=` query parameters) and a generic
high-entropy check (Shannon entropy, as detect-secrets measures it).

Coding memories are full of hashes and ids, so the high-entropy check is narrower than
detect-secrets' own: a token must be 20+ characters of the base64/base64url alphabet, mix
upper case, lower case and digits, and not be hex (git SHAs, digests), a UUID, a ULID or
an SRI hash (`sha512-…`); a line that names a hash (digest, checksum, sha256, etag, …) is
not searched for entropy at all. `python -m eval.secrets` measures detection and false
positives on a corpus of fake keys and benign look-alikes, and the cost: ~0.2 ms for a
typical memory, ~20 ms for the largest content `remember` accepts, under 1 s for adversarial
32,000-character input built to make the patterns backtrack.

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

MODES = ("redact", "reject", "allow")
DEFAULT_MODE = "redact"

#: Generic kinds rank below format-specific ones when two findings overlap.
KEYWORD = "password-assignment"
HIGH_ENTROPY = "high-entropy-string"
PRIVATE_KEY = "private-key"
_GENERIC = {HIGH_ENTROPY: 0, KEYWORD: 1}

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

#: Formats newer than detect-secrets 1.5, each with the group that holds the secret.
_EXTRA_PATTERNS: tuple[tuple[str, str, int], ...] = (
    ("anthropic-key", r"\bsk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_\-]{32,}", 0),
    ("openai-key", r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{32,}", 0),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]+\.eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-+/=]*", 0),
    ("aws-key", r"(?i)\baws.{0,20}?(?:secret|key).{0,20}?[=:]\s*[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])", 1),
    ("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}", 0),
    ("github-token", r"\bgithub_pat_[A-Za-z0-9_]{60,}", 0),
    ("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}", 0),
    ("digitalocean-token", r"\bdo[opr]_v1_[a-f0-9]{64}\b", 0),
    ("shopify-token", r"\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b", 0),
    ("stripe-key", r"\b[rs]k_(?:live|test)_[0-9a-zA-Z]{24,}", 0),
    ("slack-webhook", r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_\-]{20,}", 0),
    ("password-in-url", r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+:([^\s@/]{3,})@", 1),
    ("bearer-token", r"(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{16,}=*)", 1),
    (
        "token-in-url",
        r"(?i)[?&](?:access_token|api_?key|apikey|auth|client_secret|key|password|passwd|pwd|secret|sig|signature|token)"
        r"=([^&\s#\"'<>]{8,})",
        1,
    ),
)

_PRIVATE_KEY_BLOCK = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY( BLOCK)?-----.*?(?:-----END \1PRIVATE KEY\2-----|\Z)", re.DOTALL
)
_PRIVATE_KEY_END = re.compile(r"(?:END[^\n]*PRIVATE KEY|Private-MAC:)[^\n]*")

_MARKER = re.compile(r"\[REDACTED:[a-z0-9\-]+\]")
_TOKEN = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{20,}={0,2}(?![A-Za-z0-9+/_\-=])")
_HEX = re.compile(r"^[0-9a-fA-F]+$")
#: CamelCase or ALLCAPS words and short numbers: `HTTPServer2ConnectionPool` is a name, not a key.
_WORDY = re.compile(r"^(?:[A-Z]?[a-z]{2,}|[A-Z]{2,}(?![a-z])|[A-Z](?=[A-Z\d]|$)|\d{1,4})+$")
_ULID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
_SRI = re.compile(r"^(?:sha1|sha224|sha256|sha384|sha512|md5)[-_]", re.IGNORECASE)
_NAMES_A_HASH = re.compile(
    r"(?i)(?:hash|digest|checksum|sha-?(?:1|224|256|384|512)\b|integrity|etag|md5|fingerprint|blake2|"
    r"\bcommit\b|\bsri\b)"
)
#: Values after `password =` that are references or types, not secrets.
_NOT_A_VALUE = re.compile(
    r"^(?:none|null|nil|true|false|str|string|bytes|int|bool|optional|required|undefined|redacted|xxx+|\*+|\.\.\.|"
    r"changeme|example|placeholder|secret|password|your[_\-].*|<.*>|\{.*\}|\$.*|%.*%|os\.environ.*|env\..*|process\.env.*)$",
    re.IGNORECASE,
)
#: Keyword values this short are words, not passwords ("password: must be set").
_MIN_KEYWORD_VALUE = 6
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
    keyword: Any
    private_key: Any
    keyword_groups: list[dict[Any, int]]
    extras: list[tuple[str, re.Pattern[str], int]]


@lru_cache(maxsize=1)
def _detectors() -> _Detectors:
    """Instantiate the detect-secrets detectors once (importing it costs ~0.1 s)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.keyword import (
        CONFIG_DENYLIST_REGEX_TO_GROUP,
        QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP,
        KeywordDetector,
    )
    from detect_secrets.plugins.private_key import PrivateKeyDetector

    regex = []
    for cls in get_mapping_from_secret_type_to_class().values():
        kind = _DETECTOR_KINDS.get(cls.__name__)
        if kind is not None:
            regex.append((kind, cls()))
    return _Detectors(
        regex=sorted(regex, key=lambda pair: pair[0]),
        keyword=KeywordDetector(),
        private_key=PrivateKeyDetector(),
        keyword_groups=[QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP, CONFIG_DENYLIST_REGEX_TO_GROUP],
        extras=[(kind, re.compile(pattern), group) for kind, pattern, group in _EXTRA_PATTERNS],
    )


def detector_kinds() -> list[str]:
    """Every kind this scanner can report."""
    d = _detectors()
    kinds = {k for k, _ in d.regex} | {k for k, _, _ in d.extras} | {KEYWORD, HIGH_ENTROPY, PRIVATE_KEY}
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

    `name=True` reads `text` as a name (a fact's subject or predicate): there a word of letters after a
    keyword (`secret_location:PagerDuty API token`) is part of the name, not an assigned password, so the
    keyword detector takes only values with a digit or a symbol. Every other detector runs as usual.
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
    markers = [(m.start(), m.end()) for m in _MARKER.finditer(text)]
    if markers:  # text redacted before: its markers are not secrets
        found = [f for f in found if not _inside(f.start, f.end, markers)]
    return _merge(found)


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
                if end > start:
                    out.append(Finding(kind, offset + start, offset + end))
    for kind, pattern, group in d.extras:
        for m in pattern.finditer(line):
            out.append(Finding(kind, offset + m.start(group), offset + m.end(group)))
    out.extend(_keyword_findings(line, offset, d, name))
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


def _keyword_findings(line: str, offset: int, d: _Detectors, name: bool = False) -> Iterator[Finding]:
    from detect_secrets.filters.heuristic import is_indirect_reference

    if "=" not in line and ":" not in line:
        return
    if is_indirect_reference(line):
        return
    for groups in d.keyword_groups:
        for raw in set(d.keyword.analyze_string(line, denylist_regex_to_group=groups)):
            value = _keyword_value(raw)
            if value is None or (name and value.isalpha()):
                continue
            for p in _positions(line, value):
                yield Finding(KEYWORD, offset + p, offset + p + len(value))


def _keyword_value(raw: str) -> str | None:
    """The first token after `password =`, when it looks like a credential and not prose or a reference."""
    parts = raw.strip().split()
    if not parts:
        return None
    value = parts[0].strip("\"'`,;)")
    if len(value) < _MIN_KEYWORD_VALUE or _NOT_A_VALUE.match(value):
        return None
    classes = sum(
        [any(c.islower() for c in value), any(c.isupper() for c in value), any(c.isdigit() for c in value)]
    ) + (1 if any(not c.isalnum() for c in value) else 0)
    if len(value) < 12 and classes < 2:
        return None  # a single plain word: "password: required", "secret: rotated"
    return value


def _entropy_findings(line: str, offset: int) -> Iterator[Finding]:
    if _NAMES_A_HASH.search(line):
        return
    for m in _TOKEN.finditer(line):
        token = m.group()
        if _looks_like_an_id(token) or line.endswith(";base64,", 0, m.start()):
            continue  # ids, hashes, names, and data: URIs (inline images) are not credentials
        core = token.rstrip("=")
        if not (any(c.isupper() for c in core) and any(c.islower() for c in core) and any(c.isdigit() for c in core)):
            continue
        limit = min(_ENTROPY_LIMIT, math.log2(len(core)) - 0.6)
        if shannon_entropy(core) >= limit:
            yield Finding(HIGH_ENTROPY, offset + m.start(), offset + m.end())


def _looks_like_an_id(token: str) -> bool:
    bare = token.replace("-", "")
    if _HEX.match(bare):
        return True  # git SHAs, digests, UUIDs, hex ids
    if _ULID.match(token.upper()) and len(token) == 26:
        return True
    if _SRI.match(token) or _WORDY.match(token.rstrip("=")):
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

    def clean_list(self, values: list[str], field_name: str) -> list[str]:
        return [self.clean(v, field_name) for v in values]

    @property
    def total(self) -> int:
        return sum(self.counts.values())
