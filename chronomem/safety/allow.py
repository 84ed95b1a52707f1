"""What must never be redacted: the high-entropy strings a coding agent needs to remember.

Checksums (go.sum `h1:`, SRI `sha512-…`, `sha256:` digests, nix hashes), SSH public keys and
fingerprints, certificates and public keys, pytest node ids with their parameters, inline
images, and the example keys vendors print in their documentation (AWS's `…EXAMPLE`). These are
structures, so they are found by shape, never by the words around them. `protected(text)`
gives their spans; a finding inside one is dropped. Git SHAs, UUIDs and ULIDs are recognised by
`is_identifier`: they never count as high-entropy strings, but a password, token or key word that
assigns one (`HEROKU_API_KEY=<uuid>`, `the Datadog API key is <32 hex>`) still marks it, because
those vendors' keys have exactly that shape.
"""

from __future__ import annotations

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
