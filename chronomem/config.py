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
        return StoreURI(text.rstrip("/"), _storage_options(env.get("CHRONOMEM_STORAGE_OPTIONS")))
    if sep and head.lower() == "file":
        return Path(text[len("file://") :])
    return Path(text)


#: S3 and Google Cloud Storage bucket names: 3-63 lower-case letters, digits, dots and hyphens, starting and
#: ending with a letter or digit (the providers' naming rules; object_store panics on some names outside them).
_BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


def _check_bucket(scheme: str, bucket: str, uri: str) -> None:
    """A store URI's bucket (or container) must be there, and for s3:// and gs:// be a valid bucket name."""
    if not bucket:
        raise ValueError(f"{uri} names no bucket: write {scheme}://BUCKET/PREFIX")
    if scheme in ("s3", "s3+ddb", "gs") and not _BUCKET_NAME.fullmatch(bucket):
        raise ValueError(
            f"{bucket!r} in {uri} is not a valid bucket name (3-63 lower-case letters, digits, dots and hyphens, "
            "starting and ending with a letter or digit)"
        )


def _storage_options(value: str | None) -> tuple[tuple[str, str], ...]:
    """CHRONOMEM_STORAGE_OPTIONS (a JSON object of LanceDB storage options) as sorted pairs; unset → none."""
    if not value:
        return ()
    import json

    try:
        data = json.loads(value)
    except ValueError:
        raise ValueError("CHRONOMEM_STORAGE_OPTIONS is not a JSON object of storage options") from None
    if not isinstance(data, dict):
        raise ValueError("CHRONOMEM_STORAGE_OPTIONS is not a JSON object of storage options")
    return tuple(sorted((str(k).lower(), str(v)) for k, v in data.items()))


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
