"""Server: the MCP surface. `app.py` registers the tools listed in `chronomem.tools.SPECS` (each tool's
title, description, annotations and aliases live in its own module) and gives the `initialize`
instructions; `brief.py` offers the session brief as a resource and a prompt; `roots.py` takes a
session's default project from the client's workspace roots; `transports.py` and `security.py` serve
stdio, SSE and streamable HTTP (bearer token, Host/Origin checks); `ui.py` adds the local page (`webui/`)
and its JSON API to the streamable-HTTP app, behind `uiauth.py`'s login and CSRF gate.

Works through `chronomem.tools`, `chronomem.service` and the background consolidator
(`chronomem.consolidate.runner`); never LanceDB.
"""
