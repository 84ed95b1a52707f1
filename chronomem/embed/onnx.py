"""The default model (all-MiniLM-L6-v2) run from a local folder: onnxruntime and tokenizers, the two libraries
fastembed runs it with, called directly.

Why not fastembed here: importing it costs ~0.6 s of a starting server's CPU (most of it huggingface_hub's
client, for downloads a local folder never makes), held under the GIL, on the path of the first recall. Its steps
for this model (fastembed 0.9, `PooledNormalizedEmbedding`) are few and are reproduced exactly:
- the tokenizer of `tokenizer.json`, truncating at the smaller of `tokenizer_config.json`'s `model_max_length`
  and `max_length`, its special tokens registered, padding to the batch's longest;
- the model's `input_ids`, `attention_mask` and `token_type_ids` (zeros), its first output;
- mean pooling over the attention mask (summed in float64), then L2 normalisation, cast back to float32.
tests/embed/test_onnx.py holds the vectors to fastembed's own, text by text and batch by batch. Other models
(another pooling: CLS, or none) and downloads by name stay fastembed's (`embedder.FastEmbedder`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np


class SentenceEncoder:
    """One onnxruntime session of a mean-pooled sentence-transformers export, and its tokenizer."""

    def __init__(self, folder: Path, threads: int | None = None) -> None:
        import onnxruntime as ort

        self.tokenizer = _tokenizer(folder)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads is not None:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = threads
        self.session = ort.InferenceSession(
            str(folder / "model.onnx"), providers=["CPUExecutionProvider"], sess_options=options
        )
        self._inputs = {node.name for node in self.session.get_inputs()}
        # onnxruntime's CPU arena keeps the largest run's buffers for good: one batch of 64 texts of 256 tokens
        # left a process at 1.15 GB, against ~0.25 GB with the arena's unused chunks handed back after each run
        # (a one-text query embedding took 5.27 ms either way, 600 of each alternating on 2 cores)
        self._run_options = ort.RunOptions()
        self._run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> Iterator[np.ndarray]:
        """One unit vector per text, in order, `batch_size` texts to a run of the model."""
        for start in range(0, len(texts), batch_size):
            yield from self._run(list(texts[start : start + batch_size]))

    def _run(self, texts: list[str]) -> np.ndarray:
        encoded = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed: dict[str, np.ndarray] = {"input_ids": ids}
        if "attention_mask" in self._inputs:
            feed["attention_mask"] = mask
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        tokens = self.session.run(None, feed, self._run_options)[0]
        pooled = np.sum(tokens, axis=1, where=mask[:, :, np.newaxis].astype(bool), dtype=np.float64)
        pooled /= np.maximum(np.sum(mask, axis=1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return np.asarray(pooled / norms).astype(tokens.dtype, copy=False)


def _tokenizer(folder: Path) -> Any:
    """The folder's tokenizer, set up as fastembed 0.9's `load_tokenizer` sets it up."""
    from tokenizers import AddedToken, Tokenizer

    config = _json(folder / "config.json")
    tokenizer_config = _json(folder / "tokenizer_config.json")
    limits = [
        value
        for value in (tokenizer_config.get("model_max_length"), tokenizer_config.get("max_length"))
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**63
    ]
    if not limits:
        raise ValueError(f"{folder}/tokenizer_config.json states no maximum length (model_max_length)")
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    truncation = tokenizer.truncation or {}
    tokenizer.enable_truncation(
        max_length=min(limits),
        direction=tokenizer_config.get("truncation_side") or truncation.get("direction", "right"),
    )
    for values in _json(folder / "special_tokens_map.json").values():
        for token in values if isinstance(values, list) else [values]:
            if isinstance(token, str):
                tokenizer.add_special_tokens([token])
            elif isinstance(token, dict):
                tokenizer.add_special_tokens([AddedToken(**token)])
    padding = tokenizer.padding or {}
    pad_token = padding.get("pad_token") or tokenizer_config.get("pad_token")
    if pad_token is None:
        raise ValueError(f"{folder} names no pad token")
    pad_id = padding.get("pad_id", config.get("pad_token_id"))
    if pad_id is None:
        pad_id = tokenizer.token_to_id(pad_token)
    if pad_id is None:
        raise ValueError(f"{folder}'s pad token {pad_token!r} has no id")
    tokenizer.enable_padding(
        direction=tokenizer_config.get("padding_side") or padding.get("direction", "right"),
        pad_id=pad_id,
        pad_type_id=padding.get("pad_type_id", 0),
        pad_token=pad_token,
        pad_to_multiple_of=padding.get("pad_to_multiple_of"),
        length=None,
    )
    return tokenizer


def _json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    with path.open(encoding="utf-8") as handle:
        loaded = json.load(handle)
    return loaded if isinstance(loaded, dict) else {}
