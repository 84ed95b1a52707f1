"""Retrieval: rank live memories for a query — dense and lexical channels, fused, gated, budgeted.

Plain functions over storage records: testable without a server. Never imports MCP.
"""
