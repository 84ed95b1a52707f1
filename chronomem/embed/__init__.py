"""Embeddings: turn text into normalised vectors, loading the model lazily or in the background.

Owns fastembed and onnxruntime. Never imports storage, MCP or the tools.

onnxruntime (1.32) writes a telemetry store, `~/.cache/Microsoft/DeveloperTools/.onnxruntime/{deviceid,
onnxruntime.db}` (under `$XDG_CACHE_HOME` when set), as it is *imported*, unless `ORT_DISABLE_TELEMETRY` is set
by then; `onnxruntime.disable_telemetry_events()` comes too late (the files are there already), and so would
any session option. So it is set here, before any module of this package can import onnxruntime (directly, or
through fastembed): chronomem writes nothing outside its store and its cache. A value the user set is kept.
tests/embed/test_packaged.py checks it in a fresh process with an empty HOME.
"""

import os

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from chronomem.embed.embedder import Embedder, FastEmbedder  # noqa: E402  (after the variable is set)

__all__ = ["Embedder", "FastEmbedder"]
