"""The int8 form of the embedding model: the one the package ships, and the recipe that makes it.

`packaged_model_dir()` is the int8 all-MiniLM-L6-v2 inside the package (chronomem/embed/model/, made by
scripts/build_model.py with `quantize` below, carried by pyproject's package-data): the default
embedder loads it with nothing set, offline. Its `chronomem-model.json` says what it is; any model
folder holding such a manifest with precision int8 runs as it is.

A float32 folder given by CHRONOMEM_MODEL_PATH (with the default CHRONOMEM_EMBED_PRECISION=int8) still
runs as its int8 copy, made once into CHRONOMEM_CACHE_DIR; that path is opt-in, never the default.

Owns onnxruntime's quantisation. The copy holds the weights of every MatMul as int8 with a
scale per output channel (dynamic quantisation: activations are quantised as they flow), the
rest of the graph in float32. For all-MiniLM-L6-v2 on a 2-core x86 machine it embeds a query in
a third of the float32 model's time and, one text at a time (see `FastEmbedder.embed`), 1.8x as
many texts per second as float32 in batches; its vectors keep a median cosine of 0.99 to the
float32 ones and retrieve about as well (LoCoMo dense R@10 equal, MRR -0.003:
eval/results/embed_precision.md), so both kinds of vector can share a store.

The copy lives in a cache folder keyed by the source file's path, size and modification time
and by the recipe; it is written under a temporary name and renamed into place, so processes
that make it at once never see half a file.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from chronomem.config import EMBED_PRECISIONS

log = logging.getLogger(__name__)

INT8, FLOAT32 = EMBED_PRECISIONS

MODEL_FILE = "model.onnx"
#: The file beside a model saying what it is (model, dim, precision, recipe, checksums): scripts/build_model.py.
MANIFEST = "chronomem-model.json"
#: Changes whenever the way the copy is made changes, so an old copy is never reused.
RECIPE = "dynamic-int8-matmul-per-channel-1"


def packaged_model_dir() -> Path:
    """The int8 all-MiniLM-L6-v2 shipped inside the package (may be absent in a checkout without it)."""
    return Path(__file__).resolve().parent / "model"


def manifest(folder: Path) -> dict[str, object]:
    """The folder's chronomem-model.json, or {} when it has none or it does not read."""
    import json

    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def folder_precision(folder: Path) -> str:
    """int8 when the folder's manifest says its model already is, else float32 (an ONNX export as published)."""
    return INT8 if manifest(folder).get("precision") == INT8 else FLOAT32


def default_cache_root() -> Path:
    """CHRONOMEM_CACHE_DIR, else the user's cache directory (XDG_CACHE_HOME on Linux)."""
    configured = os.environ.get("CHRONOMEM_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    from platformdirs import user_cache_path

    return user_cache_path("chronomem", appauthor=False)


def copy_folder(source: Path, cache_root: Path) -> Path:
    """Where the int8 copy of `source` (a folder holding model.onnx) lives or will live."""
    model = source / MODEL_FILE
    stat = model.stat()
    key = f"{model.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{RECIPE}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_root / "models" / f"{source.name}-int8-{digest}"


def int8_copy(source: Path, cache_root: Path | None = None) -> Path:
    """A folder holding the int8 copy of `source`'s model.onnx beside copies of its other files.

    Made on first use (~1-2 s for MiniLM), found on every later one. Raises OSError
    when the cache cannot be written and ImportError when onnx is missing; the caller falls back
    to the float32 model.
    """
    target = copy_folder(source, cache_root or default_cache_root())
    if (target / MODEL_FILE).is_file():
        return target
    target.mkdir(parents=True, exist_ok=True)
    for item in source.iterdir():
        if item.is_file() and item.name != MODEL_FILE and not item.name.startswith("."):
            _place(target / item.name, lambda tmp, item=item: shutil.copyfile(item, tmp))
    _place(target / MODEL_FILE, lambda tmp: quantize(source / MODEL_FILE, tmp))
    log.info("made the int8 copy of %s in %s", source / MODEL_FILE, target)
    return target


def quantize(model: Path, out: Path) -> None:
    """Write the int8 form of the float32 ONNX `model` to `out` (the recipe RECIPE names; deterministic)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _without_preprocessing_advice():
        quantize_dynamic(
            str(model),
            str(out),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
        )


class _PreprocessingAdvice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in str(record.msg)


@contextmanager
def _without_preprocessing_advice() -> Iterator[None]:
    """Keep the quantiser's advice to pre-process the graph off stderr.

    It logs through the root logger, which would also install a stderr handler on a process that
    has none; the pre-processing (ORT's graph optimisations, applied anyway when the session
    loads) gives the same vectors here and costs ~2 s more.
    """
    root = logging.getLogger()
    quiet, placeholder = _PreprocessingAdvice(), logging.NullHandler()
    added = not root.handlers
    if added:
        root.addHandler(placeholder)
    root.addFilter(quiet)
    try:
        yield
    finally:
        root.removeFilter(quiet)
        if added:
            root.removeHandler(placeholder)


def _place(final: Path, write: Callable[[Path], object]) -> None:
    """Write through `write(tmp)` to a temporary name beside `final`, then rename it into place."""
    fd, name = tempfile.mkstemp(prefix=f".{final.name}.", dir=final.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        write(tmp)
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
