"""The one exception type every layer raises for a failure the caller can act on.

Its message is a single human-readable line. The MCP server turns it into a tool
error; the CLI prints it and exits non-zero. Anything else escaping a tool is a bug.
"""

from __future__ import annotations


class ChronomemError(Exception):
    """A failure with a one-line reason the caller can act on."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))


class InvalidInput(ChronomemError):
    """The caller's arguments are wrong: missing, too long, unparseable, or unknown."""


class NotFound(ChronomemError):
    """An id or slot that the store does not hold."""


class ModelUnavailable(ChronomemError):
    """The embedding model could be neither found locally nor downloaded."""


class StoreError(ChronomemError):
    """The store directory cannot be opened or is not a chronomem store."""


class InvalidStoreLocation(InvalidInput, ValueError):
    """`--store` / CHRONOMEM_HOME / CHRONOMEM_STORAGE_OPTIONS cannot name a store (a bucket name the provider would
    refuse, no bucket, options that are not a JSON object). Also a `ValueError`: settings are read before any
    command runs, where the CLI reports a `ValueError` in one line."""
