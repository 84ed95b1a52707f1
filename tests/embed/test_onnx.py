"""embed/onnx.py runs the default model as fastembed does, without fastembed: the same vectors, text by text and
batch by batch, for the shipped model and its int8 copy; and the default embedder never imports fastembed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from chronomem.config import DEFAULT_MODEL
from chronomem.embed.onnx import SentenceEncoder
from chronomem.embed.packaged import packaged_model_dir

TEXTS = [
    "Tests run with pytest.",
    "",
    "x",
    "CamelCaseIdentifier src/foo/bar.py:12 --flag=3 and a URL https://example.test/a?b=c",
    "שלום עולם · مرحبا بالعالم · 東京都",
    "a note far past the model's 512-token limit, so truncation decides its vector " * 60,
    "  leading and trailing whitespace, tabs\tand\nnewlines  ",
]


def fastembed_vectors(folder: Path, batch_size: int, model=None) -> np.ndarray:
    from fastembed import TextEmbedding

    model = model or TextEmbedding(model_name=DEFAULT_MODEL, specific_model_path=str(folder))
    return np.array(list(model.embed(TEXTS, batch_size=batch_size)))


@pytest.fixture(scope="module")
def shipped_encoder() -> SentenceEncoder:
    """Our encoder of the shipped model, loaded once for the module (embedding keeps no state between calls)."""
    return SentenceEncoder(packaged_model_dir())


@pytest.fixture(scope="module")
def shipped_fastembed():
    """fastembed's model over the same folder, loaded once for the module."""
    from fastembed import TextEmbedding

    return TextEmbedding(model_name=DEFAULT_MODEL, specific_model_path=str(packaged_model_dir()))


@pytest.mark.parametrize("batch_size", [1, 64])
def test_the_shipped_model_gives_fastembeds_vectors(batch_size: int, shipped_encoder, shipped_fastembed) -> None:
    folder = packaged_model_dir()
    ours = np.array(list(shipped_encoder.embed(TEXTS, batch_size=batch_size)))
    theirs = fastembed_vectors(folder, batch_size, shipped_fastembed)
    assert ours.dtype == theirs.dtype == np.float32
    assert ours.shape == theirs.shape == (len(TEXTS), 384)
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_a_long_text_is_truncated_not_refused(shipped_encoder: SentenceEncoder) -> None:
    encoder = shipped_encoder
    long, longer = "word " * 600, "word " * 600 + "tail " * 100
    a, b = encoder.embed([long, longer], batch_size=1)
    np.testing.assert_allclose(a, b, atol=1e-6)  # both past the limit: the same first 512 tokens


@pytest.mark.slow
def test_the_int8_copy_gives_fastembeds_vectors(tmp_path: Path) -> None:
    from chronomem.embed.quantize import int8_copy

    folder = int8_copy(packaged_model_dir(), cache_root=tmp_path)
    ours = np.array(list(SentenceEncoder(folder).embed(TEXTS, batch_size=1)))
    np.testing.assert_array_equal(ours, fastembed_vectors(folder, 1))


def test_the_default_embedder_does_not_import_fastembed() -> None:
    """fastembed's import (~0.6 s of CPU, mostly huggingface_hub) stays off a starting server's path."""
    code = (
        "import json, sys\n"
        "from chronomem.embed import FastEmbedder\n"
        "e = FastEmbedder()\n"
        "v = e.embed(['Tests run with pytest.'])[0]\n"
        "print(json.dumps({'dim': len(v), 'fastembed': 'fastembed' in sys.modules, 'source': e.source}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {"dim": 384, "fastembed": False, "source": "shipped"}


def test_a_large_batch_does_not_leave_its_buffers_resident() -> None:
    """onnxruntime's arena hands back what one run of 64 long texts needed (1.4 GB held for good without it): a
    fresh process's private memory stays far below that after the batch."""
    code = (
        "from chronomem.embed.onnx import SentenceEncoder\n"
        "from chronomem.embed.packaged import packaged_model_dir\n"
        "encoder = SentenceEncoder(packaged_model_dir(), threads=2)\n"
        "def anon():\n"
        "    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('RssAnon')) // 1024\n"
        "list(encoder.embed(['warm up']))\n"
        "before = anon()\n"
        "list(encoder.embed(['word ' * 300 + str(i) for i in range(64)]))\n"
        "print(before, anon())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    before, after = map(int, done.stdout.split())
    assert after - before < 300, f"{after - before} MB still held after the batch"
