"""Retrieval: rank a query's candidates — fusion, time slice, supersession, scope, abstention, context, second
hop, token budget — as plain functions over the search component's candidates (`search.candidates`).

Imports neither storage nor the consolidator nor MCP (import-linter contracts in pyproject.toml): the rows it
needs beyond the pool come through a `search.candidates.Searcher` it is handed.
"""
