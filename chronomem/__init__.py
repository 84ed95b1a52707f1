"""chronomem: a local-first, bi-temporal long-term memory server for coding agents, spoken to over MCP."""

__version__ = "0.1.0"
