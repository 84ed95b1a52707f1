"""Bulk embedding (`embed_many`): the int8 copy on single-thread runs side by side, the same vectors `embed` gives,
in order; float32 (the default) in batches on its one session."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from chronomem.embed import FastEmbedder
from chronomem.embed.embedder import BULK_CHUNK
from tests.conftest import fp32_model_dir, model_dir

TEXTS = [
    f"[{day} May 2023] {who}: note {day} about the {topic} ({'detail ' * (day % 7)})"
    for day, (who, topic) in enumerate(
        [("Caroline", "CI cache"), ("Melanie", "release branch"), ("Dev", "pytest fixtures")] * 14, start=1
    )
]


@pytest.fixture(scope="module")
def int8_embedder() -> FastEmbedder:
    """The shipped model's opt-in int8 copy (CHRONOMEM_EMBED_PRECISION=int8), made in this run's cache folder."""
    made = FastEmbedder(precision="int8")
    made.wait()
    assert made.precision == "int8" and made.source == "shipped"
    return made


@pytest.mark.slow
def test_many_texts_embed_side_by_side_to_the_vectors_one_at_a_time_gives(int8_embedder: FastEmbedder) -> None:
    embedder = int8_embedder
    assert len(TEXTS) >= 2 * BULK_CHUNK and embedder.bulk_workers >= 2
    seen: set[str] = set()
    solo_embed = None

    many = embedder.embed_many(TEXTS)
    solo = embedder._solo
    assert solo is not None  # the single-thread session served the call
    solo_embed = solo.embed

    def watched(texts, **kwargs):  # records which threads embed; the real session still does the work
        seen.add(threading.current_thread().name)
        return solo_embed(texts, **kwargs)

    solo.embed = watched
    try:
        again = embedder.embed_many(TEXTS)
    finally:
        del solo.embed
    alone = embedder.embed(TEXTS)
    assert len(many) == len(TEXTS)
    assert np.allclose(np.array(many), np.array(alone), atol=1e-6)
    assert np.allclose(np.array(again), np.array(alone), atol=1e-6)
    assert len(seen) >= 2 and all(name.startswith("chronomem-embed") for name in seen)


@pytest.mark.slow
def test_a_few_texts_or_one_worker_embed_on_the_calling_thread(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CHRONOMEM_CACHE_DIR", str(tmp_path))
    single = FastEmbedder(model_path=model_dir(), bulk_workers=1, precision="int8")
    vectors = single.embed_many(TEXTS)
    assert single.precision == "int8" and single._solo is None and len(vectors) == len(TEXTS)
    few = FastEmbedder(model_path=model_dir(), precision="int8")
    assert len(few.embed_many(TEXTS[: 2 * BULK_CHUNK - 1])) == 2 * BULK_CHUNK - 1
    assert few._solo is None


@pytest.mark.slow
def test_the_float32_model_embeds_many_as_it_embeds_one(tmp_path, monkeypatch, embedder: FastEmbedder) -> None:
    monkeypatch.setenv("CHRONOMEM_CACHE_DIR", str(tmp_path))
    exact = FastEmbedder(model_path=fp32_model_dir(), precision="float32")
    many = exact.embed_many(TEXTS)
    assert exact._solo is None
    assert np.allclose(np.array(many), np.array(exact.embed(TEXTS)), atol=1e-5)
    shipped = embedder.embed_many(TEXTS)  # the default: the shipped model, float32, in batches
    assert embedder.precision == "float32" and embedder._solo is None
    assert np.allclose(np.array(shipped), np.array(embedder.embed(TEXTS)), atol=1e-5)
