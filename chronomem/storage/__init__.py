"""Storage: the LanceDB table `memories` (rows written once), its schema and upgrades (`migrate`), the `usage`
side table beside it (`usage`), safe filters and bi-temporal writes;
export/import/purge (`portable`) and health checks and repair (`doctor`); keeps the search component's read
index in step with the table's version (it is handed the builder, it never imports search/).

Owns every LanceDB call but the searches (search/lance.py). Never imports MCP, the embedder, search,
ranking or the tools.
"""

from chronomem.storage.lazy_imports import defer_namespace_client

defer_namespace_client()  # before anything below imports LanceDB

from chronomem.storage.filters import Filter  # noqa: E402
from chronomem.storage.store import MemoryStore  # noqa: E402

__all__ = ["Filter", "MemoryStore"]
