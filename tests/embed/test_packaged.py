"""The shipped model (chronomem/embed/model, weights stored as float16, computed in float32): loads with nothing set,
gives the float32 export's vectors, and is what scripts/build_model.py makes from that export."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from chronomem.config import DEFAULT_MODEL
from chronomem.embed import FastEmbedder
from chronomem.embed.packaged import (
    FLOAT16_WEIGHTS,
    MODEL_FILE,
    float32_weights,
    manifest,
    packaged_model_dir,
    store_weights_float16,
)
from tests.conftest import fp32_model_dir

TEXTS = [
    "We moved the CI cache from Redis to the filesystem to cut flaky timeouts.",
    "The release branch is cut every second Tuesday.",
    "Caroline went to an LGBTQ support group and found it powerful.",
    "pytest fixtures live in tests/conftest.py and load the real model.",
    "where is the CI cache kept",
    "[8 May 2023] Melanie: I painted a sunrise over the lake last weekend, " + "and then some more detail " * 12,
    "x",
]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_shipped_model_loads_with_nothing_set_and_writes_nothing(tmp_path: Path) -> None:
    """The default embedder is the model inside the package, computing in float32: no CHRONOMEM_MODEL_PATH, no
    cache, no hub. A fresh process with an empty HOME (and XDG folders of its own) embeds a text and leaves no
    file behind: not fastembed's cache, not onnxruntime's telemetry store (~/.cache/Microsoft/, written when
    onnxruntime is imported unless chronomem.embed has set ORT_DISABLE_TELEMETRY first)."""
    home, xdg, work = tmp_path / "home", tmp_path / "xdg", tmp_path / "work"
    for folder in (home, xdg, work):
        folder.mkdir()
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("CHRONOMEM_", "XDG_", "HF_", "FASTEMBED_", "ORT_"))
    }
    env.update(
        HOME=str(home),
        CHRONOMEM_CACHE_DIR=str(tmp_path / "cache"),
        **{f"XDG_{kind}_HOME": str(xdg / kind.lower()) for kind in ("CACHE", "CONFIG", "DATA", "STATE")},
    )
    code = (
        "import json, sys\n"
        "from chronomem.config import Settings\n"
        "from chronomem.embed import FastEmbedder\n"
        f"settings = Settings.from_env(store={str(tmp_path / 'store')!r})\n"
        "e = FastEmbedder(settings.model_name, settings.model_path, precision=settings.embed_precision)\n"
        "v = e.embed(['shipped with the package'])[0]\n"
        "print(json.dumps({'dim': len(v), 'source': e.source, 'precision': e.precision, 'name': e.name,\n"
        "                  'expected_name': e.expected_name, 'onnxruntime': 'onnxruntime' in sys.modules}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=work, timeout=180)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {"dim": 384, "source": "shipped", "precision": "float32", "name": DEFAULT_MODEL,
                    "expected_name": DEFAULT_MODEL, "onnxruntime": True}  # the float32 model's vectors, named as it
    stated = manifest(packaged_model_dir())
    assert stated["precision"] == FLOAT16_WEIGHTS and stated["computes_in"] == "float32"
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if not p.is_dir()) == []
    assert not (tmp_path / "cache").exists() and not (tmp_path / "store").exists()


def test_the_shipped_vectors_are_the_float32_exports(embedder: FastEmbedder) -> None:
    """Weights rounded to float16, computed in float32: every vector within cosine 0.9999 of the float32 export's,
    so stores written by either need nothing moved."""
    exact = FastEmbedder(model_path=fp32_model_dir(), precision="float32")
    shipped, reference = np.array(embedder.embed(TEXTS)), np.array(exact.embed(TEXTS))
    assert embedder.source == "shipped" and embedder.precision == exact.precision == "float32"
    assert embedder.name == exact.name
    assert np.allclose(np.linalg.norm(shipped, axis=1), 1.0, atol=1e-4)
    assert float(np.min(np.sum(shipped * reference, axis=1))) >= 0.9999
    one_at_a_time = np.array([embedder.embed([text])[0] for text in TEXTS])
    assert float(np.min(np.sum(one_at_a_time * reference, axis=1))) >= 0.9999


def test_the_shipped_model_is_what_build_model_makes_from_the_float32_export(tmp_path: Path) -> None:
    """scripts/build_model.py's recipe on ../shared's float32 model gives the shipped file byte for byte, half the
    source's size; the manifest's checksums are the files'."""
    source, shipped = fp32_model_dir(), packaged_model_dir()
    recorded = manifest(shipped)
    assert sha256(shipped / MODEL_FILE) == recorded["model_sha256"]
    if sha256(source / MODEL_FILE) != recorded["source_model_sha256"]:
        pytest.skip(f"{source} is not the model the shipped one was made from")
    made = tmp_path / MODEL_FILE
    store_weights_float16(source / MODEL_FILE, made)
    assert sha256(made) == recorded["model_sha256"]
    assert made.stat().st_size < (source / MODEL_FILE).stat().st_size * 0.55


def test_float32_weights_are_the_exports_rounded_to_float16(tmp_path: Path) -> None:
    """Undoing the storage gives every weight of the float32 export as float16 rounds it, as float32 initializers."""
    import onnx
    from onnx import TensorProto, numpy_helper

    restored = float32_weights(packaged_model_dir() / MODEL_FILE)
    export = onnx.load(str(fp32_model_dir() / MODEL_FILE))
    assert float32_weights(fp32_model_dir() / MODEL_FILE) is None  # nothing stored as float16 there
    assert not [i.name for i in restored.graph.initializer if i.data_type != TensorProto.FLOAT]
    assert len(restored.graph.node) == len(export.graph.node)
    weights = {i.name: numpy_helper.to_array(i) for i in restored.graph.initializer}
    for initializer in export.graph.initializer:
        expected = numpy_helper.to_array(initializer)
        if expected.ndim >= 2:
            expected = expected.astype(np.float16).astype(np.float32)
        assert np.array_equal(weights[initializer.name], expected), initializer.name
