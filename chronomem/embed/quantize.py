"""The opt-in int8 copy of the embedding model (CHRONOMEM_EMBED_PRECISION=int8), and the recipe that makes it.

The default embedder computes in float32 (the shipped model, `embed/packaged.py`). With
CHRONOMEM_EMBED_PRECISION=int8 the model runs as its int8 copy instead: made once from the model's float32
weights (the shipped model's float16-stored weights made float32 again first, `packaged.float32_weights`; a
float32 folder from CHRONOMEM_MODEL_PATH as it is) into CHRONOMEM_CACHE_DIR. A folder whose manifest says its
model is int8 already runs as it is.

Owns onnxruntime's quantisation. The copy holds the weights of every MatMul as int8 with a
scale per output channel (dynamic quantisation: activations are quantised as they flow), the
rest of the graph in float32. For all-MiniLM-L6-v2 on a 2-core x86 machine it embeds a query in
about a third of the float32 model's time and, one text at a time (see `FastEmbedder.embed`), ~1.8x as
many texts per second as float32 in batches; its vectors keep a median cosine of 0.99 to the
float32 ones, so both kinds of vector can share a store, but it retrieves a little worse (DevMem dev dense
MRR -0.013, LoCoMo hit@5 -0.003: eval/results/embed_precision.md), more than the 0.005 the shipped form may
cost, so it is not the default.

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

from chronomem.config import EMBED_PRECISIONS, default_cache_root
from chronomem.embed.packaged import MANIFEST, MODEL_FILE, float32_weights, is_int8_model

log = logging.getLogger(__name__)

INT8, FLOAT32 = EMBED_PRECISIONS

#: Changes whenever the way the copy is made changes, so an old copy is never reused.
RECIPE = "dynamic-int8-matmul-per-channel-1"


def folder_precision(folder: Path) -> str:
    """int8 when the folder's manifest says its model already is, else float32 (what the model computes in:
    an ONNX export as published, or the shipped model's float16-stored weights cast to float32)."""
    return INT8 if is_int8_model(folder) else FLOAT32


def copy_folder(source: Path, cache_root: Path) -> Path:
    """Where the int8 copy of `source` (a folder holding model.onnx) lives or will live."""
    model = source / MODEL_FILE
    stat = model.stat()
    key = f"{model.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{RECIPE}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return cache_root / "models" / f"{source.name}-int8-{digest}"


def int8_copy(source: Path, cache_root: Path | None = None) -> Path:
    """A folder holding the int8 copy of `source`'s model.onnx beside copies of its other files.

    Made on first use (~2-3 s for MiniLM), found on every later one. Raises OSError
    when the cache cannot be written and ImportError when onnx is missing; the caller falls back
    to the float32 model.
    """
    target = copy_folder(source, cache_root or default_cache_root())
    if (target / MODEL_FILE).is_file():
        return target
    target.mkdir(parents=True, exist_ok=True)
    for item in source.iterdir():  # the tokenizer and config files; not the source's manifest, which is not the copy's
        if item.is_file() and item.name not in (MODEL_FILE, MANIFEST) and not item.name.startswith("."):
            _place(target / item.name, lambda tmp, item=item: shutil.copyfile(item, tmp))
    _place(target / MODEL_FILE, lambda tmp: quantize(source / MODEL_FILE, tmp))
    log.info("made the int8 copy of %s in %s", source / MODEL_FILE, target)
    return target


def quantize(model: Path, out: Path) -> None:
    """Write the int8 form of the ONNX `model` to `out` (the recipe RECIPE names; deterministic).

    The quantiser reads float32 weights: a model with float16-stored ones (the shipped model) is quantised from
    its float32 form (`packaged.float32_weights`), written beside `out` for the while."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = float32_weights(model)
    with tempfile.TemporaryDirectory(prefix=".float32-", dir=out.parent) as scratch:
        source = model
        if graph is not None:
            source = Path(scratch) / MODEL_FILE
            onnx.save(graph, str(source))
        with _without_preprocessing_advice():
            quantize_dynamic(
                str(source),
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
