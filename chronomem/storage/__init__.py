"""Storage: the one LanceDB table `memories`, its schema, safe filters and bi-temporal writes.

Owns every LanceDB call in the project. Never imports MCP, the embedder or the tools.
"""

from chronomem.storage.filters import Filter
from chronomem.storage.store import MemoryStore

__all__ = ["Filter", "MemoryStore"]
