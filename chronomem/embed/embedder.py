"""The `Embedder` interface and its implementation: the default model from a local folder on onnxruntime
(`embed/onnx.py`), any other through fastembed.

The model loads on a background thread (`start()`), so a server can answer
`initialize` and `tools/list` at once; `embed()` waits for it up to a bound and
then fails with a message that says what to do, never hangs and never leaks a
traceback to the caller.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

from chronomem.config import (
    DEFAULT_EMBED_PRECISION,
    DEFAULT_MODEL,
    DEFAULT_MODEL_DIM,
    EMBED_PRECISIONS,
)
from chronomem.embed.packaged import packaged_model_dir
from chronomem.embed.quantize import FLOAT32, INT8, folder_precision, int8_copy
from chronomem.errors import ModelUnavailable

log = logging.getLogger(__name__)

_HINT = (
    "unset CHRONOMEM_MODEL and CHRONOMEM_MODEL_PATH to use the model shipped with chronomem, or set "
    "CHRONOMEM_MODEL_PATH to a folder holding an ONNX export (model.onnx, tokenizer.json, config.json)"
)
#: Where fastembed downloads a named model from; probed once (bounded) before a download is attempted.
_HUB = ("huggingface.co", 443)
_HUB_PROBE_SECONDS = 3.0
_REQUIRED_FILES = ("model.onnx", "tokenizer.json", "config.json")

#: Texts a bulk worker embeds at a time (`FastEmbedder.embed_many`); a call with fewer than two chunks' worth
#: embeds on the calling thread.
BULK_CHUNK = 16
#: Bulk workers at most, whatever the core count: past the cores they only contend.
BULK_WORKERS_MAX = 4


class Embedder(Protocol):
    """Anything that maps texts to unit vectors of a fixed dimension.

    `embed` serves the interactive paths (one query, one statement); `embed_many` the bulk ones (import,
    backfill), where throughput matters more than one text's latency. Both give the same vector for a text.
    """

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_many(self, texts: Sequence[str]) -> list[list[float]]: ...


class FastEmbedder:
    """An ONNX sentence embedding model, from a local folder or fastembed's own download. The default model from
    a folder runs on `embed/onnx.py` (fastembed's steps, without its imports); other models on fastembed.

    With nothing set it loads the all-MiniLM-L6-v2 shipped in the package (`embed/packaged.py`, made by
    scripts/build_model.py: weights stored as float16, computed in float32) as it is: offline, nothing
    written anywhere, vectors those of the float32 export (cosine >= 0.99999), so it is named as that model.
    A folder from CHRONOMEM_MODEL_PATH runs as it is, unless `precision="int8"` (opt-in:
    CHRONOMEM_EMBED_PRECISION=int8) asks for its int8 copy, made on first use in the cache folder from its
    float32 weights (`embed/quantize.py`; the shipped folder's too); a folder whose manifest says int8 runs as
    it is. An int8 model embeds one text at a time (so a text's vector never depends on its batch). Another
    fastembed model name is fastembed's download: found in its cache, else fetched once when the hub answers,
    else one clear error. When the int8 copy cannot be made the float32 model runs, in batches, and
    `precision` says so once loaded.
    """

    def __init__(
        self,
        model_name: str = DEFAULT_MODEL,
        model_path: Path | None = None,
        dim: int | None = None,
        wait_seconds: float = 120.0,
        threads: int | None = None,
        precision: str = DEFAULT_EMBED_PRECISION,
        bulk_workers: int | None = None,
    ) -> None:
        if precision not in EMBED_PRECISIONS:
            raise ValueError(f"embedding precision {precision!r} is not one of {', '.join(EMBED_PRECISIONS)}")
        self.model_name = model_name
        #: The vectors' dimension: given, else known without loading the model (`model_dim`), else the default's.
        self.dim = dim if dim is not None else (model_dim(model_name, model_path) or DEFAULT_MODEL_DIM)
        self.model_path = model_path
        self.wait_seconds = wait_seconds
        self.threads = threads
        self.bulk_workers = bulk_workers if bulk_workers is not None else min(os.cpu_count() or 1, BULK_WORKERS_MAX)
        self.requested_precision = precision
        #: What runs: the requested precision until the load falls back to float32.
        self.precision = precision
        self._model: Any = None
        self._error: ModelUnavailable | None = None
        self._loaded = threading.Event()
        self._start_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._folder: Path | None = None  # the folder the model loaded from (its int8 copy when that runs)
        self._solo: Any = None  # a single-thread session of the same model, for embed_many's workers
        self._solo_lock = threading.Lock()
        self._solo_failed = False

    def start(self) -> None:
        """Begin loading the model on a daemon thread; idempotent."""
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._load, name="chronomem-model", daemon=True)
                self._thread.start()

    @property
    def name(self) -> str:
        """The model as rows record it (`embed_model`): the int8 copy is named as such."""
        return f"{self.model_name}#int8" if self.precision == INT8 else self.model_name

    @property
    def ready(self) -> bool:
        return self._loaded.is_set() and self._error is None

    def _load(self) -> None:
        try:
            self._model = self._build()
        except ModelUnavailable as exc:
            self._error = exc
        except Exception as exc:  # fastembed/onnxruntime raise many types; the caller needs one line
            log.debug("model load failed", exc_info=True)
            where = f"({self.source})"
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            self._error = ModelUnavailable(f"cannot load embedding model {self.model_name} {where}: {first}; {_HINT}")
        finally:
            self._loaded.set()

    def source_folder(self) -> Path | None:
        """The folder the model loads from: CHRONOMEM_MODEL_PATH, else the shipped model for the default
        name, else None (a fastembed download by name)."""
        if self.model_path is not None:
            return self.model_path
        shipped = packaged_model_dir()
        if self.model_name == DEFAULT_MODEL and all((shipped / f).is_file() for f in _REQUIRED_FILES):
            return shipped
        return None

    @property
    def expected_name(self) -> str:
        """`name` as it will be once the model loads, said without loading it (doctor, before a load or when
        it fails): int8 for an int8 folder or the int8 copy of a float32 one, float32 for a download."""
        if self._loaded.is_set() and self._error is None:
            return self.name
        folder = self.source_folder()
        if folder is None:
            return self.model_name
        int8 = folder_precision(folder) == INT8 or self.requested_precision == INT8
        return f"{self.model_name}#int8" if int8 else self.model_name

    @property
    def source(self) -> str:
        """Where the model comes from, for people: `shipped`, a folder, or `fastembed download`."""
        folder = self.source_folder()
        if folder is None:
            return "fastembed download"
        return "shipped" if folder == packaged_model_dir() else str(folder)

    def _build(self) -> Any:
        folder = self.source_folder()
        if folder is not None:
            if not folder.is_dir():
                raise ModelUnavailable(f"CHRONOMEM_MODEL_PATH {folder} is not a directory; {_HINT}")
            missing = [f for f in _REQUIRED_FILES if not (folder / f).is_file()]
            if missing:
                raise ModelUnavailable(f"model folder {folder} lacks {', '.join(missing)}; {_HINT}")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        if folder is not None:
            self._folder = self._model_folder(folder)
            model = self._session(self._folder, self.threads or None)
        else:
            from fastembed import TextEmbedding

            self.precision = FLOAT32
            model = _download(TextEmbedding, self._fastembed_arguments(None, self.threads or None))
        probe = next(iter(model.embed(["probe"])))
        if len(probe) != self.dim:
            raise ModelUnavailable(f"model {self.model_name} makes {len(probe)}-d vectors, expected {self.dim}")
        return model

    def _fastembed_arguments(self, folder: Path | None, threads: int | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model_name": self.model_name}
        if threads:
            kwargs["threads"] = threads
        if folder is not None:
            kwargs["specific_model_path"] = str(folder)
        return kwargs

    def _session(self, folder: Path, threads: int | None) -> Any:
        """A session of the model in `folder`: the default model's own runner (`embed/onnx.py`, without
        fastembed's imports), another model's through fastembed (which knows its pooling)."""
        if self.model_name == DEFAULT_MODEL:
            from chronomem.embed.onnx import SentenceEncoder

            return SentenceEncoder(folder, threads)
        from fastembed import TextEmbedding

        return TextEmbedding(**self._fastembed_arguments(folder, threads))

    def _model_folder(self, folder: Path) -> Path:
        """The folder the model loads from: `folder` itself when it is int8 already or float32 is asked for (the shipped
        model by default), else its int8 copy when that can be made."""
        if folder_precision(folder) == INT8:
            self.precision = INT8
            return folder
        if self.requested_precision != INT8:
            self.precision = FLOAT32
            return folder
        try:
            return int8_copy(folder)
        except Exception as exc:  # no onnx, an unwritable cache, a graph the quantiser refuses: float32 still works
            log.warning("embedding with the float32 model: its int8 copy could not be made (%s)", exc)
            log.debug("int8 copy failed", exc_info=True)
            self.precision = FLOAT32
            return folder

    def wait(self) -> Any:
        """The loaded model, starting the load if needed; raises ModelUnavailable on failure or timeout."""
        self.start()
        if not self._loaded.wait(self.wait_seconds):
            raise ModelUnavailable(
                f"the embedding model {self.model_name} is still loading after {self.wait_seconds:.0f} s "
                f"(a first download can be slow); retry shortly, or {_HINT}"
            )
        if self._error is not None:
            raise self._error
        return self._model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self.wait()
        # The int8 copy quantises activations with one scale per batch tensor, so a text's vector would
        # depend on the texts batched with it (cosine down to 0.977): it embeds each text on its own,
        # which is still ~2x the float32 model's batched throughput.
        batch_size = 1 if self.precision == INT8 else 64
        return [vector.tolist() for vector in model.embed(list(texts), batch_size=batch_size)]

    def embed_many(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed many texts for a bulk path: the int8 copy on one single-thread run per core, side by side.

        One text of the int8 copy is too small a job for a session's own threads to share well; two
        single-thread runs at once embed ~1.6x as many LoCoMo turns a second on 2 cores. A text's vector is
        the one `embed` gives it. The single-thread session loads on the first call big enough to use it
        (so a server that never imports never holds it); the float32 model, one core, a small call, or a
        session that will not load embed as `embed` does.
        """
        if len(texts) < 2 * BULK_CHUNK or self.bulk_workers < 2:
            return self.embed(texts)
        self.wait()
        solo = self._solo_session() if self.precision == INT8 else None
        if solo is None:
            return self.embed(texts)
        chunks = [list(texts[at : at + BULK_CHUNK]) for at in range(0, len(texts), BULK_CHUNK)]

        def embed_chunk(chunk: list[str]) -> list[list[float]]:
            return [vector.tolist() for vector in solo.embed(chunk, batch_size=1)]

        with ThreadPoolExecutor(self.bulk_workers, thread_name_prefix="chronomem-embed") as pool:
            return [vector for part in pool.map(embed_chunk, chunks) for vector in part]

    def _solo_session(self) -> Any:
        """The single-thread session bulk workers share (loaded once), or None when it cannot load."""
        with self._solo_lock:
            if self._solo is None and not self._solo_failed and self._folder is not None:
                try:
                    self._solo = self._session(self._folder, 1)
                except Exception as exc:  # the main session works, so bulk paths still embed, one text at a time
                    log.warning("bulk embedding on one session: a second could not load (%s)", exc)
                    log.debug("single-thread session failed", exc_info=True)
                    self._solo_failed = True
            return self._solo


def known_models() -> dict[str, int]:
    """fastembed's text embedding models by name, with the dimension of their vectors (imports fastembed, ~0.6 s)."""
    from fastembed import TextEmbedding

    return {str(m["model"]): int(m["dim"]) for m in TextEmbedding.list_supported_models()}


def model_dim(model_name: str, model_path: Path | None = None) -> int | None:
    """The dimension of the model's vectors, known without loading it: its folder's manifest
    (chronomem-model.json), the default model's, else fastembed's list; None when nothing says (an unknown name)."""
    from chronomem.embed.packaged import manifest

    if model_path is not None:
        stated = manifest(model_path).get("dim")
        if isinstance(stated, int) and stated > 0:
            return stated
    if model_name == DEFAULT_MODEL:
        return DEFAULT_MODEL_DIM
    try:
        return known_models().get(model_name)
    except Exception:  # fastembed missing or broken: the load says so in one line
        log.debug("fastembed's model list is unavailable", exc_info=True)
        return None


def _download(text_embedding: Any, kwargs: dict[str, Any]) -> Any:
    """fastembed's model by name: from its cache, else one download when the hub answers, else one clear error.

    fastembed alone retries an unreachable hub for tens of seconds, logging an ERROR line each time; a
    machine without the hub gets a single ModelUnavailable line at once instead.
    """
    import socket

    from loguru import logger as fastembed_log

    fastembed_log.disable("fastembed")  # its own ERROR lines on stderr: the failure below says it in one line
    try:
        try:
            return text_embedding(**kwargs, local_files_only=True)
        except Exception:
            log.debug("%s is not in fastembed's cache", kwargs["model_name"], exc_info=True)
        try:
            socket.create_connection(_HUB, timeout=_HUB_PROBE_SECONDS).close()
        except OSError as exc:
            raise ModelUnavailable(
                f"cannot download embedding model {kwargs['model_name']}: {_HUB[0]} is unreachable "
                f"({exc.strerror or exc}); {_HINT}"
            ) from None
        return text_embedding(**kwargs)
    finally:
        fastembed_log.enable("fastembed")
