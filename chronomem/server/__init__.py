"""Server: the MCP surface — tool registration and transports (stdio, SSE, streamable HTTP).

Calls only `chronomem.tools` and `chronomem.service`; never LanceDB.
"""
