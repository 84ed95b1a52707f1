"""Configuration: where the store lives, which model embeds, and the documented limits.

Everything here is read from command-line flags first, then environment variables,
then defaults. Nothing in this module imports a heavy library.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from chronomem.errors import InvalidStoreLocation

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_MODEL_DIM = 384

#: Longest content `remember` accepts, in characters. Longer text is refused, not cut.
MAX_CONTENT_CHARS = 32_000
#: Longest query `recall` / `as_of` accept, in characters.
MAX_QUERY_CHARS = 4_000
#: Most structured facts one `remember` call may carry.
MAX_FACTS_PER_CALL = 50
#: Most results one `recall` may return.
MAX_LIMIT = 100
#: How long a tool call waits for the embedding model to load before it gives up.
DEFAULT_MODEL_WAIT_SECONDS = 120.0
#: Default token budget of the session brief (`chronomem://brief`, the `brief` prompt); CHRONOMEM_BRIEF_TOKENS.
DEFAULT_BRIEF_TOKENS = 1_500
#: Smallest and largest budget a brief accepts: below the minimum not even its heading fits.
MIN_BRIEF_TOKENS = 50
MAX_BRIEF_TOKENS = 100_000
#: Largest table searched from the in-memory read index (search/readindex.py, ~1.9 GB of RAM for the
#: server at 1M rows); larger ones are searched by LanceDB (~5x slower there at 1M). CHRONOMEM_READ_INDEX_ROWS
#: lowers it on small machines; 0 turns the index off.
DEFAULT_READ_INDEX_ROWS = 2_000_000
#: How the embedding model computes: float32 (the shipped model, its weights stored as float16:
#: chronomem/embed/packaged.py), or its opt-in int8 copy (chronomem/embed/quantize.py: ~2x faster, retrieves a
#: little worse; eval/results/embed_precision.md).
EMBED_PRECISIONS = ("int8", "float32")
DEFAULT_EMBED_PRECISION = "float32"
#: The encoding gate's policies (consolidate/gate.py): keep everything and only report (record), keep but rank
#: lower (demote), or do not store (skip) a statement below the thresholds. CHRONOMEM_GATE.
GATE_POLICIES = ("record", "demote", "skip")
DEFAULT_GATE_POLICY = "record"
#: Below the gate: novelty under this (nearly restates a stored memory) or salience under the next, and no fact
#: changed or added. Chosen on DevMem dev, confirmed on validation: eval/results/gate.md. CHRONOMEM_GATE_NOVELTY,
#: CHRONOMEM_GATE_SALIENCE.
DEFAULT_GATE_NOVELTY = 0.05
DEFAULT_GATE_SALIENCE = 0.3


#: URI schemes whose stores live in object storage, opened by LanceDB (`s3+ddb` commits through a DynamoDB table).
REMOTE_SCHEMES = ("s3", "s3+ddb", "gs", "az", "abfs")


@dataclass(frozen=True)
class StoreURI:
    """A store in object storage: `s3://bucket/prefix` (or s3+ddb, gs, az), never a local path.

    `options` are LanceDB / object_store storage options from CHRONOMEM_STORAGE_OPTIONS (a JSON object); the
    standard environment (AWS_ENDPOINT_URL, AWS_ALLOW_HTTP, AWS_ACCESS_KEY_ID, AWS_REGION, GOOGLE_*, AZURE_*) is
    read by LanceDB and object_store themselves. `str()` is the URI, which never holds a secret."""

    uri: str
    options: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        return self.uri

    def __truediv__(self, name: str) -> StoreURI:
        base, sep, query = self.uri.partition("?")  # `s3+ddb://b/p?ddbTableName=t`: the name goes before the query
        return StoreURI(f"{base.rstrip('/')}/{name}{sep}{query}", self.options)

    @property
    def scheme(self) -> str:
        return self.uri.split("://", 1)[0].lower()

    @property
    def name(self) -> str:
        return self.uri.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]

    def expanduser(self) -> StoreURI:
        return self

    def exists(self) -> bool:
        """Always True: whether the bucket and store exist is asked of the store when it opens (one clear line)."""
        return True

    def storage_options(self) -> dict[str, str]:
        return dict(self.options)


#: Where a store lives: a local directory, or a URI in object storage.
StoreLocation = Path | StoreURI


def is_remote(location: object) -> bool:
    """Whether `location` is a store in object storage (a `StoreURI`)."""
    return isinstance(location, StoreURI)


def parse_store(
    value: str | os.PathLike[str], environ: Mapping[str, str] | None = None
) -> StoreLocation:
    """`--store` / CHRONOMEM_HOME as a location: `s3://…`, `s3+ddb://…`, `gs://…`, `az://…` stay URIs (a `Path`
    would collapse their `//`), `file://DIR` and anything else is a local directory."""
    text = os.fspath(value)
    head, sep, rest = text.partition("://")
    if sep and head.lower() in REMOTE_SCHEMES:
        _check_bucket(head.lower(), rest.partition("/")[0].partition("?")[0], text)
        env = os.environ if environ is None else environ
        options = _storage_options(env.get("CHRONOMEM_STORAGE_OPTIONS"))
        if head.lower() in ("s3", "s3+ddb"):
            _check_endpoints(env, options)
        return StoreURI(text.rstrip("/"), options)
    if sep and head.lower() == "file":
        return Path(text[len("file://") :])
    return Path(text)


#: What may name a bucket, per scheme: S3's rules (for s3:// and s3+ddb://) and Google Cloud Storage's (which also
#: allow underscores, and up to 222 characters in dot-separated parts of at most 63). Below us a name outside them
#: fails in ways that do not say so — a one-character name made object_store panic, a dotted IP address stops
#: LanceDB's region detection with advice about regions, `s3:///x` answers with a Rust source path — or it reaches
#: a bucket that real S3 could never have created.
_S3_RULE = ("3-63 lower-case letters, digits, dots and hyphens, starting and ending with a letter or digit, no two "
            "dots in a row, not an IP address")
_GCS_RULE = ("3-63 lower-case letters, digits, dots, hyphens and underscores (up to 222 in dot-separated parts of at "
             "most 63), starting and ending with a letter or digit, not an IP address")
_IP_ADDRESS = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
_LOWER_DIGITS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def bucket_problem(scheme: str, bucket: str) -> str | None:
    """Which naming rule `bucket` breaks for `scheme` (s3, s3+ddb, gs), in a few words; None when it breaks none
    (other schemes: only an empty name). The rules are the providers' (S3: docs.aws.amazon.com/AmazonS3/latest/
    userguide/bucketnamingrules.html; GCS: cloud.google.com/storage/docs/buckets#naming)."""
    scheme = scheme.lower()
    if not bucket:
        return "there is no bucket name"
    if scheme not in ("s3", "s3+ddb", "gs"):
        return None
    gcs = scheme == "gs"
    allowed = _LOWER_DIGITS | set(".-_" if gcs else ".-")
    longest = 222 if gcs and "." in bucket else 63
    if not 3 <= len(bucket) <= longest:
        return f"it is {len(bucket)} character{'s' if len(bucket) != 1 else ''} long, not 3-{longest}"
    upper = list(dict.fromkeys(c for c in bucket if c.isascii() and c.isupper()))
    if upper:
        return f"it has upper-case letters ({', '.join(upper)}); bucket names are lower-case"
    other = list(dict.fromkeys(c for c in bucket if c not in allowed))
    if other:
        return f"it has {', '.join(repr(c) for c in other)}, which bucket names cannot hold"
    if bucket[0] not in _LOWER_DIGITS:
        return f"it starts with {bucket[0]!r}, not a letter or digit"
    if bucket[-1] not in _LOWER_DIGITS:
        return f"it ends with {bucket[-1]!r}, not a letter or digit"
    if ".." in bucket:
        return "it has two dots in a row"
    if gcs and any(len(part) > 63 for part in bucket.split(".")):
        return "a dot-separated part of it is longer than 63 characters"
    if _IP_ADDRESS.fullmatch(bucket):
        return "it is an IP address"
    return None


def _check_bucket(scheme: str, bucket: str, uri: str) -> None:
    """A store URI's bucket (or container) must be there, and for s3://, s3+ddb:// and gs:// follow the provider's
    naming rules: else one line naming the bucket, the rule it breaks and what to write instead."""
    problem = bucket_problem(scheme, bucket)
    if problem is None:
        return
    if not bucket:
        raise InvalidStoreLocation(f"{uri} names no bucket: write {scheme}://BUCKET/PREFIX in --store / CHRONOMEM_HOME")
    provider = "Google Cloud Storage" if scheme == "gs" else "S3"
    raise InvalidStoreLocation(
        f"{bucket!r} in {uri} is not a valid {provider} bucket name: {problem}. A bucket name is "
        f"{_GCS_RULE if scheme == 'gs' else _S3_RULE}: put your bucket's exact name in --store / CHRONOMEM_HOME "
        f"({scheme}://BUCKET/PREFIX)"
    )


#: Where object_store reads an S3 endpoint: environment variables, and the same names as storage options.
_ENDPOINT_VARIABLES = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT")
_ENDPOINT_OPTIONS = ("aws_endpoint_url", "aws_endpoint", "endpoint_url", "endpoint")
_ENDPOINT_URL = re.compile(r"https?://[^\s/?#]+(?:[/?#]\S*)?", re.IGNORECASE)


def _check_endpoints(env: Mapping[str, str], options: tuple[tuple[str, str], ...]) -> None:
    """An S3 endpoint, if one is set, must be an http(s) URL: object_store panics on an empty one or one without
    its scheme (`localhost:9000`) at the first request, LanceDB's and obstore's alike."""
    found = [(name, env[name]) for name in _ENDPOINT_VARIABLES if name in env]
    found += [(f"{key} in CHRONOMEM_STORAGE_OPTIONS", value) for key, value in options if key in _ENDPOINT_OPTIONS]
    for name, value in found:
        if _ENDPOINT_URL.fullmatch(value.strip()):
            continue
        if not value.strip():
            raise InvalidStoreLocation(f"{name} is set but empty: unset it (AWS S3) or set it to your S3 server's URL, "
                                       "e.g. http://localhost:9000")
        example = value.strip() if "://" not in value else "localhost:9000"
        raise InvalidStoreLocation(f"{name} is {value.strip()!r}, not an http(s) URL: write the S3 server's URL with "
                                   f"its scheme, e.g. http://{example}")


def _storage_options(value: str | None) -> tuple[tuple[str, str], ...]:
    """CHRONOMEM_STORAGE_OPTIONS (a JSON object of LanceDB storage options) as sorted pairs; unset → none."""
    if not value:
        return ()
    import json

    try:
        data = json.loads(value)
    except ValueError:
        raise InvalidStoreLocation("CHRONOMEM_STORAGE_OPTIONS is not a JSON object of storage options") from None
    if not isinstance(data, dict):
        raise InvalidStoreLocation("CHRONOMEM_STORAGE_OPTIONS is not a JSON object of storage options")
    return tuple(sorted((str(k).lower(), str(v)) for k, v in data.items()))


def default_cache_root() -> Path:
    """Where chronomem keeps what it makes once and reuses (the int8 model copy, word lists):
    CHRONOMEM_CACHE_DIR, else the user's cache directory (XDG_CACHE_HOME on Linux)."""
    configured = os.environ.get("CHRONOMEM_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    from platformdirs import user_cache_path

    return user_cache_path("chronomem", appauthor=False)


def default_store_path() -> Path:
    """The user's data directory (XDG_DATA_HOME on Linux), never the working directory."""
    from platformdirs import user_data_path

    return user_data_path("chronomem", appauthor=False) / "store"


@dataclass(frozen=True)
class Settings:
    """Resolved settings for one store and one server or CLI process."""

    #: A local directory, or a `StoreURI` in object storage.
    store_path: StoreLocation
    model_name: str = DEFAULT_MODEL
    model_path: Path | None = None
    project: str | None = None
    model_wait_seconds: float = DEFAULT_MODEL_WAIT_SECONDS
    max_content_chars: int = MAX_CONTENT_CHARS
    log_level: str = "WARNING"
    #: What remember, forget and import do with secrets in their input: redact, reject or allow (CHRONOMEM_SECRETS).
    secrets_mode: str = "redact"
    #: Default token budget of the session brief (CHRONOMEM_BRIEF_TOKENS), within MIN/MAX_BRIEF_TOKENS.
    brief_tokens: int = DEFAULT_BRIEF_TOKENS
    #: Largest table the in-memory read index holds (CHRONOMEM_READ_INDEX_ROWS); 0: always search LanceDB.
    read_index_rows: int = DEFAULT_READ_INDEX_ROWS
    #: float32 (default) or int8 (the model's int8 copy, ~2x faster, a little worse): CHRONOMEM_EMBED_PRECISION.
    embed_precision: str = DEFAULT_EMBED_PRECISION
    #: The encoding gate's policy and thresholds (CHRONOMEM_GATE, CHRONOMEM_GATE_NOVELTY, CHRONOMEM_GATE_SALIENCE).
    gate_policy: str = DEFAULT_GATE_POLICY
    gate_novelty: float = DEFAULT_GATE_NOVELTY
    gate_salience: float = DEFAULT_GATE_SALIENCE
    #: A TOML file declaring entity views (CHRONOMEM_ENTITIES); unset: `entities.toml` in the store directory.
    entities_file: Path | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(
        cls,
        store: str | os.PathLike[str] | None = None,
        project: str | None = None,
        environ: dict[str, str] | None = None,
    ) -> Settings:
        env = os.environ if environ is None else environ
        store_path = parse_store(store, env) if store else None
        if store_path is None and env.get("CHRONOMEM_HOME"):
            store_path = parse_store(env["CHRONOMEM_HOME"], env)
        if store_path is None:
            store_path = default_store_path()
        model_path = env.get("CHRONOMEM_MODEL_PATH")
        return cls(
            store_path=store_path.expanduser(),
            model_name=env.get("CHRONOMEM_MODEL", DEFAULT_MODEL),
            model_path=Path(model_path).expanduser() if model_path else None,
            project=project or env.get("CHRONOMEM_PROJECT") or None,
            model_wait_seconds=_float(env.get("CHRONOMEM_MODEL_WAIT"), DEFAULT_MODEL_WAIT_SECONDS),
            max_content_chars=int(_float(env.get("CHRONOMEM_MAX_CONTENT_CHARS"), MAX_CONTENT_CHARS)),
            log_level=env.get("CHRONOMEM_LOG_LEVEL", "WARNING").upper(),
            secrets_mode=env.get("CHRONOMEM_SECRETS", "redact").strip().lower() or "redact",
            brief_tokens=_brief_tokens(env.get("CHRONOMEM_BRIEF_TOKENS")),
            read_index_rows=_read_index_rows(env.get("CHRONOMEM_READ_INDEX_ROWS")),
            embed_precision=_embed_precision(env.get("CHRONOMEM_EMBED_PRECISION")),
            gate_policy=_gate_policy(env.get("CHRONOMEM_GATE")),
            gate_novelty=_unit(env.get("CHRONOMEM_GATE_NOVELTY"), DEFAULT_GATE_NOVELTY),
            gate_salience=_unit(env.get("CHRONOMEM_GATE_SALIENCE"), DEFAULT_GATE_SALIENCE),
            entities_file=Path(env["CHRONOMEM_ENTITIES"]).expanduser() if env.get("CHRONOMEM_ENTITIES") else None,
        )


def _brief_tokens(value: str | None) -> int:
    """CHRONOMEM_BRIEF_TOKENS as a whole number, kept within the accepted range; unreadable → the default."""
    tokens = _float(value, DEFAULT_BRIEF_TOKENS)
    if not math.isfinite(tokens):
        return DEFAULT_BRIEF_TOKENS
    return min(max(int(tokens), MIN_BRIEF_TOKENS), MAX_BRIEF_TOKENS)


def _read_index_rows(value: str | None) -> int:
    """CHRONOMEM_READ_INDEX_ROWS as a whole number ≥ 0; unreadable → the default."""
    rows = _float(value, DEFAULT_READ_INDEX_ROWS)
    if not math.isfinite(rows):
        return DEFAULT_READ_INDEX_ROWS
    return max(int(rows), 0)


def _embed_precision(value: str | None) -> str:
    """CHRONOMEM_EMBED_PRECISION, lower-cased; unset or unknown → the default (`doctor` names an unknown one)."""
    precision = (value or "").strip().lower()
    return precision if precision in EMBED_PRECISIONS else DEFAULT_EMBED_PRECISION


def _gate_policy(value: str | None) -> str:
    """CHRONOMEM_GATE, lower-cased; unset or unknown → the default (record: nothing is ever dropped by mistake)."""
    policy = (value or "").strip().lower()
    return policy if policy in GATE_POLICIES else DEFAULT_GATE_POLICY


def _unit(value: str | None, default: float) -> float:
    """A threshold in [0, 1]; unreadable → the default."""
    number = _float(value, default)
    return min(max(number, 0.0), 1.0) if math.isfinite(number) else default


def _float(value: str | None, default: float) -> float:
    if not value:
        return default
    try:
        return float(value)
    except ValueError:
        return default
