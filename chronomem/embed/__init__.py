"""Embeddings: turn text into normalised vectors, loading the model lazily or in the background.

Owns fastembed. Never imports storage, MCP or the tools.
"""

from chronomem.embed.embedder import Embedder, FastEmbedder

__all__ = ["Embedder", "FastEmbedder"]
