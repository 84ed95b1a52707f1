"""Tools: remember · recall · as_of · forget · history · entity — the functions the MCP server and the CLI call.

One module per tool. Each handler takes a `MemoryService` and plain arguments, validates them
(raising `InvalidInput` / `NotFound` with a one-line reason), and returns a pydantic result
(results.py) that is both structured and renderable as text. Beside it, the module's `SPEC`
(spec.py) is the tool as MCP publishes it: title, description for the calling model, behaviour
hints, input schema and argument aliases; `SPECS` lists them in the order the server lists its tools.
`brief.py` is the session brief, which the server offers as a resource and a prompt, not a tool.
For the local page and the command line, not MCP: `timeline.py` (a fact's values as bars on a time axis),
`overview.py` (counts per project) and `correct.py` ("this replaces that", from remember and forget).
Tools reach LanceDB only through `chronomem.storage` and `chronomem.search`.
"""

from chronomem.tools.as_of import SPEC as AS_OF
from chronomem.tools.as_of import as_of
from chronomem.tools.entity import SPEC as ENTITY
from chronomem.tools.entity import entity
from chronomem.tools.forget import SPEC as FORGET
from chronomem.tools.forget import forget
from chronomem.tools.history import SPEC as HISTORY
from chronomem.tools.history import history
from chronomem.tools.recall import SPEC as RECALL
from chronomem.tools.recall import recall
from chronomem.tools.remember import SPEC as REMEMBER
from chronomem.tools.remember import remember
from chronomem.tools.spec import ToolSpec

#: Every tool the MCP server publishes, in the order `tools/list` shows them.
SPECS: tuple[ToolSpec, ...] = (REMEMBER, RECALL, AS_OF, FORGET, HISTORY, ENTITY)

__all__ = ["SPECS", "ToolSpec", "as_of", "entity", "forget", "history", "recall", "remember"]
