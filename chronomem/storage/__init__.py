"""Storage: the one LanceDB table `memories`, its schema, safe filters and bi-temporal writes;
export/import/purge (`portable`) and health checks and repair (`doctor`).

Owns every LanceDB call in the project. Never imports MCP, the embedder or the tools.
"""

from chronomem.storage.filters import Filter
from chronomem.storage.store import MemoryStore

__all__ = ["Filter", "MemoryStore"]
