"""`export_project`: one project's memories as `chronomem export` writes them (JSON lines, ordered by id).

For the local page's download; the rows come from `chronomem.storage.portable.export_lines`, the
same lines the command writes (no vectors; each row as reads see it). Not an MCP tool.
"""

from __future__ import annotations

import json

from chronomem.service import MemoryService


def export_project(svc: MemoryService, project: str | None) -> str:
    """The export lines of `project` (every project when None or empty), each ending in a newline."""
    from chronomem.storage.portable import export_lines

    lines = export_lines(svc.store)
    if project:
        lines = (line for line in lines if json.loads(line).get("project") == project)
    return "".join(line + "\n" for line in lines)
