"""The opt-in int8 copy of the embedding model (CHRONOMEM_EMBED_PRECISION=int8): made once, kept, close to float32,
and never in the way."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from chronomem.config import Settings
from chronomem.embed import FastEmbedder
from chronomem.embed.quantize import copy_folder, int8_copy
from tests.conftest import fp32_model_dir as model_dir

SENTENCES = [
    "We moved the CI cache from Redis to the filesystem to cut flaky timeouts.",
    "The release branch is cut every second Tuesday.",
    "Caroline went to an LGBTQ support group and found it powerful.",
    "pytest fixtures live in tests/conftest.py and load the real model.",
]
QUERIES = ["where is the CI cache kept", "when is the release branch cut", "who went to a support group"]


@pytest.mark.slow
def test_the_copy_is_made_once_with_the_tokenizer_beside_it(tmp_path: Path) -> None:
    folder = int8_copy(model_dir(), tmp_path)
    assert folder == copy_folder(model_dir(), tmp_path)
    for name in ("model.onnx", "tokenizer.json", "config.json"):
        assert (folder / name).is_file()
    source_size = (model_dir() / "model.onnx").stat().st_size
    assert (folder / "model.onnx").stat().st_size < source_size / 1.4  # the MatMul weights are a byte each
    made = (folder / "model.onnx").stat().st_mtime_ns
    assert int8_copy(model_dir(), tmp_path) == folder
    assert (folder / "model.onnx").stat().st_mtime_ns == made
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".")]  # no temporary file left


@pytest.mark.slow
def test_quantising_keeps_its_advice_off_the_log(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG):
        int8_copy(model_dir(), tmp_path)
    assert not [r for r in caplog.records if "pre-processing" in r.getMessage()]


@pytest.mark.slow
def test_int8_vectors_stay_close_to_float32_and_rank_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHRONOMEM_CACHE_DIR", str(tmp_path))
    fast = FastEmbedder(model_path=model_dir(), precision="int8")
    exact = FastEmbedder(model_path=model_dir())  # float32, the default
    a, b = np.array(fast.embed(SENTENCES)), np.array(exact.embed(SENTENCES))
    assert fast.precision == "int8" and fast.name.endswith("#int8")
    assert exact.precision == "float32" and exact.name == exact.model_name
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-3)
    assert float(np.min(np.sum(a * b, axis=1))) > 0.97
    qa, qb = np.array(fast.embed(QUERIES)), np.array(exact.embed(QUERIES))
    assert list(np.argmax(qa @ a.T, axis=1)) == list(np.argmax(qb @ b.T, axis=1)) == [0, 1, 2]


@pytest.mark.slow
def test_an_int8_vector_depends_on_its_text_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHRONOMEM_CACHE_DIR", str(tmp_path))
    embedder = FastEmbedder(model_path=model_dir(), precision="int8")
    long_one = "A much longer statement about the deployment pipeline, " * 8
    together = np.array(embedder.embed([SENTENCES[0], long_one, *SENTENCES[1:]]))
    alone = np.array([embedder.embed([text])[0] for text in SENTENCES])
    assert np.allclose(np.delete(together, 1, axis=0), alone, atol=1e-6)


def test_a_cache_that_cannot_be_written_falls_back_to_float32(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache folder should be")
    monkeypatch.setenv("CHRONOMEM_CACHE_DIR", str(blocker))
    embedder = FastEmbedder(model_path=model_dir(), precision="int8")
    with caplog.at_level(logging.WARNING, logger="chronomem"):
        vector = embedder.embed(["still embeds"])[0]
    assert len(vector) == 384
    assert embedder.precision == "float32" and embedder.name == embedder.model_name
    assert any("float32" in r.getMessage() for r in caplog.records)


def test_precision_setting() -> None:
    assert Settings.from_env(store="/s", environ={}).embed_precision == "float32"
    assert Settings.from_env(store="/s", environ={"CHRONOMEM_EMBED_PRECISION": " INT8 "}).embed_precision == "int8"
    assert Settings.from_env(store="/s", environ={"CHRONOMEM_EMBED_PRECISION": "fp4"}).embed_precision == "float32"
    with pytest.raises(ValueError, match="not one of int8, float32"):
        FastEmbedder(model_path=model_dir(), precision="fp16")


@pytest.mark.slow
def test_the_int8_copy_of_the_shipped_model_is_quantised_from_its_float32_weights(tmp_path: Path) -> None:
    """CHRONOMEM_EMBED_PRECISION=int8 on the shipped model (float16-stored weights): the copy's MatMuls are int8,
    made from the weights cast back to float32, and it keeps no float16 initializer nor the shipped manifest."""
    import onnx
    from onnx import TensorProto

    from chronomem.embed.packaged import MANIFEST, packaged_model_dir

    folder = int8_copy(packaged_model_dir(), tmp_path)
    graph = onnx.load(str(folder / "model.onnx")).graph
    ops = {node.op_type for node in graph.node}
    assert "MatMulInteger" in ops and "DynamicQuantizeLinear" in ops
    assert not [i.name for i in graph.initializer if i.data_type == TensorProto.FLOAT16]
    assert not (folder / MANIFEST).exists() and (folder / "tokenizer.json").is_file()


def test_a_named_model_the_hub_cannot_serve_is_one_line_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another fastembed name, not cached, hub unreachable: one ModelUnavailable line, no retries, no ERROR spam."""
    from chronomem.embed import embedder as embedder_module
    from chronomem.errors import ModelUnavailable

    monkeypatch.setenv("FASTEMBED_CACHE_PATH", str(tmp_path / "fastembed"))
    monkeypatch.setattr(embedder_module, "_HUB", ("127.0.0.1", 9))  # the discard port: nothing listens
    named = FastEmbedder(model_name="BAAI/bge-small-en-v1.5")
    with pytest.raises(ModelUnavailable) as caught:
        named.embed(["x"])
    message = str(caught.value)
    assert "\n" not in message and "unreachable" in message and "CHRONOMEM_MODEL_PATH" in message
