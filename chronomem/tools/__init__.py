"""Tools: remember · recall · forget · as_of · history — the functions the MCP server and the CLI call.

Each takes a `MemoryService` and plain arguments, validates them (raising
`InvalidInput` / `NotFound` with a one-line reason), and returns a pydantic result
that is both structured and renderable as text. Tools reach LanceDB only through
`chronomem.storage`.
"""

from chronomem.tools.as_of import as_of
from chronomem.tools.forget import forget
from chronomem.tools.history import history
from chronomem.tools.recall import recall
from chronomem.tools.remember import remember

__all__ = ["as_of", "forget", "history", "recall", "remember"]
