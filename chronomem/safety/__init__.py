"""Safety: what keeps a developer's data from leaking — secret scanning on the write path.

Plain functions over strings; imports neither storage, MCP nor the embedder, so the
tools call it before anything is embedded or stored.
"""
