"""Argument checks shared by the tools: each failure is one `InvalidInput` line."""

from __future__ import annotations

import re
from typing import Any

from chronomem.errors import InvalidInput

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_LIST_ITEMS = 100
MAX_ITEM_CHARS = 500


def require_text(value: Any, field: str, max_chars: int) -> str:
    """A non-blank string within `max_chars`, free of control characters other than tab and newline."""
    if value is None:
        raise InvalidInput(f"{field} is required")
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string, not {type(value).__name__}")
    if not value.strip():
        raise InvalidInput(f"{field} is empty")
    if len(value) > max_chars:
        raise InvalidInput(f"{field} is {len(value):,} characters; the limit is {max_chars:,}")
    bad = _CONTROL.search(value)
    if bad:
        raise InvalidInput(f"{field} contains a control character (U+{ord(bad.group()):04X}); send plain text")
    if _SURROGATE.search(value):
        raise InvalidInput(f"{field} contains an unpaired surrogate: it is not valid Unicode text")
    return value


def string_list(value: Any, field: str) -> list[str]:
    """A short list of short strings (tags, paths)."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple):
        raise InvalidInput(f"{field} must be a list of strings")
    if len(value) > MAX_LIST_ITEMS:
        raise InvalidInput(f"{field} has {len(value)} items; the limit is {MAX_LIST_ITEMS}")
    out = []
    for item in value:
        out.append(require_text(item, f"each of {field}", MAX_ITEM_CHARS).strip())
    return list(dict.fromkeys(out))


def bounded_int(value: Any, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{field} must be a whole number from {low} to {high}")
    if not low <= value <= high:
        raise InvalidInput(f"{field} must be from {low} to {high} (got {value})")
    return value


_ID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")


def looks_like_id(value: Any) -> bool:
    """Whether `value` has a memory id's shape (so a command line's ID|QUERY argument is an id, not words)."""
    return isinstance(value, str) and bool(_ID.match(value.strip().upper()))


def memory_id(value: Any) -> str:
    """A memory id: the 26-character ULID every result carries."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("id is required: pass an id from recall, as_of or history")
    value = value.strip().upper()
    if not _ID.match(value):
        raise InvalidInput(f"{value[:40]!r} is not a memory id (ids are 26-character ULIDs from recall/history)")
    return value
