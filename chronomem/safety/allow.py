"""What must never be redacted: the high-entropy strings a coding agent needs to remember.

Checksums (go.sum `h1:`, SRI `sha512-…`, `sha256:` digests, nix hashes), SSH public keys and
fingerprints, certificates and public keys, pytest node ids with their parameters, inline
images, and the example keys vendors print in their documentation (AWS's `…EXAMPLE`). These are
structures, so they are found by shape, never by the words around them. `protected(text)`
gives their spans; a finding inside one is dropped. Git SHAs, UUIDs and ULIDs are recognised by
`is_identifier`: they never count as high-entropy strings, but a password, token or key word that
assigns one (`HEROKU_API_KEY=<uuid>`, `the Datadog API key is <32 hex>`) still marks it, because
those vendors' keys have exactly that shape.

Two values are never secrets whatever finds them, by what they are: a reference to where the secret lives
(`is_reference`: `$PGPASSWORD`, `${PGPASSWORD}`, `%DB_PASSWORD%`, `{{ db_password }}`, as in
`postgres://$PGUSER:$PGPASSWORD@db/app`), and a JWT's header on its own (`is_jose_header`): a token is
header.payload.signature, and the header, `{"alg":"HS256","typ":"JWT"}` base64url-encoded, is the same public
text in every token of its kind.
"""

from __future__ import annotations

import base64
import binascii
import json
import re

_PROTECTED = re.compile(
    "|".join(
        [
            r"\bh1:[A-Za-z0-9+/]{43}=",  # go.sum and go.work.sum module hashes
            r"\b(?i:sha1|sha224|sha256|sha384|sha512|md5|blake2b|blake3)[-:][A-Za-z0-9+/_\-]{16,}={0,2}",  # SRI, digests
            r"\b(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d+|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com)"
            r"\s+AAAA[A-Za-z0-9+/]+={0,3}",  # SSH public keys
            r"-----BEGIN (?:CERTIFICATE|PUBLIC KEY|RSA PUBLIC KEY|PGP PUBLIC KEY BLOCK|X509 CRL|CERTIFICATE REQUEST)-----"
            r"[\s\S]*?(?:-----END [A-Z0-9 ]+-----|\Z)",
            r"(?<![\w./\-])[\w./\-]*\.py(?:::[\w.\-]+)+(?:\[[^\]\n]*\])?",  # pytest node ids, parameters included
            r"data:[\w.+\-]+/[\w.+\-]+;base64,[A-Za-z0-9+/=]+",  # inline images and fonts
            r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]*EXAMPLE[A-Za-z0-9+/_\-]*",  # documented example keys (AWS, …)
        ]
    )
)

_HEX = re.compile(r"^[0-9a-fA-F]+$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_ULID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
#: A value made of one repeated character after its prefix (`ghp_xxxxxxxx…`, `sk-…0000`) is a placeholder.
_FILLER = re.compile(r"^(?:[A-Za-z]+[_\-.])*([xX*0.])\1{7,}$")
#: A whole value that names a variable holding the secret: shell `$NAME`, `${NAME}`, `${NAME:?message}` or
#: `${NAME:-}` (an empty default: a default that is not empty is a literal), Windows `%NAME%`, Make or Azure
#: Pipelines `$(NAME)`, and a template's `{{ expression }}` (Jinja, Go, GitHub Actions' `${{ secrets.X }}`).
_REFERENCE = re.compile(
    r"^(?:\$[A-Za-z_]\w*|\$\{[A-Za-z_]\w*(?::?\?[^}]*|:?-)?\}|%[A-Za-z_]\w*%|\$\([A-Za-z_]\w*\)|\$?\{\{[^{}]+\}\})$"
)
#: One base64url segment of a JSON object (`eyJ…`), nothing before or after it but an optional trailing dot.
_ONE_SEGMENT = re.compile(r"^eyJ[A-Za-z0-9_\-]+={0,2}\.?$")
#: The header parameters of a JWS or JWE (RFC 7515 §4.1, RFC 7516 §4.1, RFC 7797): a header holds nothing else.
_JOSE_PARAMETERS = frozenset("alg enc zip jku jwk kid x5u x5c x5t x5t#S256 typ cty crit b64 epk apu apv iv tag p2s p2c".split())


def protected(text: str) -> list[tuple[int, int]]:
    """Spans of `text` that hold checksums, public keys, test ids, inline data or documented examples."""
    return [(m.start(), m.end()) for m in _PROTECTED.finditer(text)]


def is_identifier(token: str) -> bool:
    """A git SHA or other hex digest, a UUID or a ULID (any case)."""
    bare = token.strip("\"'`")
    return bool(_HEX.match(bare) or _UUID.match(bare) or (len(bare) == 26 and _ULID.match(bare.upper())))


def is_filler(token: str) -> bool:
    """`ghp_xxxxxxxxxxxx`, `********`: a placeholder written in a token's shape."""
    return bool(_FILLER.match(token))


def is_reference(value: str) -> bool:
    """`$PGPASSWORD`, `${DB_PASSWORD}`, `%DB_PASSWORD%`, `{{ db_password }}`: the name of where a secret is kept
    (an environment variable, a template's value), standing for the secret. A default given inline
    (`${DB_PASSWORD:-hunter2}`) is a literal, so that is not one."""
    return bool(_REFERENCE.match(value.strip("\"'`")))


def is_jose_header(value: str) -> bool:
    """A JWT's (or JWE's) header alone, `eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9`: one base64url segment, without
    the payload and signature a token has, decoding to a JSON object whose keys are all JOSE header parameters,
    `alg` among them. Other base64 JSON (a service account's key file) is not one."""
    bare = value.strip("\"'`")
    if not _ONE_SEGMENT.match(bare):
        return False
    segment = bare.rstrip(".").rstrip("=")
    try:
        decoded = json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    except (binascii.Error, ValueError):
        return False
    return isinstance(decoded, dict) and "alg" in decoded and set(decoded) <= _JOSE_PARAMETERS
