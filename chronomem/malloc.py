"""The process's memory upkeep (the server's, and the store's after a read index build): glibc's malloc
arenas capped, freed memory handed back, and the long-lived heap taken out of the cyclic garbage
collector's sight (`settle_heap`).

glibc gives each thread that contends for the allocator its own arena (up to 8 per core) and
keeps freed memory in it. LanceDB's and onnxruntime's worker threads allocate and free
large buffers on every search, so a server's resident memory grew by ~250 MB over its first
few hundred recalls on a 10k-row store (415 → 670 MB) and stayed there. With two arenas the
same searches add ~100 MB and run as fast (eval/bench_latency.py measures the server's RSS).

`MALLOC_ARENA_MAX` in the environment still wins: glibc read it at start-up.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys

log = logging.getLogger(__name__)

#: glibc's mallopt parameter number for the arena cap (malloc.h: M_ARENA_MAX).
M_ARENA_MAX = -8
#: Arenas the server keeps: one for the event loop, one shared by the worker threads.
SERVER_ARENAS = 2


def limit_arenas(count: int = SERVER_ARENAS) -> bool:
    """Cap glibc's malloc arenas at `count` (call before worker threads start); True when applied.

    A no-op off Linux, under another C library, or when MALLOC_ARENA_MAX is set.
    """
    if not sys.platform.startswith("linux") or os.environ.get("MALLOC_ARENA_MAX"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
        mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        applied = bool(mallopt(M_ARENA_MAX, count))
    except (OSError, AttributeError):  # no mallopt in this process's C library
        return False
    log.debug("malloc arenas capped at %d: %s", count, applied)
    return applied


def release_free_memory() -> bool:
    """Give memory glibc holds freed back to the system (`malloc_trim`); True when it released some.

    For after a one-off burst of allocations (the read index build) that would otherwise stay in the
    process's resident size. A no-op off glibc.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        trim = ctypes.CDLL(None).malloc_trim
        trim.argtypes = [ctypes.c_size_t]
        return bool(trim(0))
    except (OSError, AttributeError):
        return False


def settle_heap() -> None:
    """After a one-off build of long-lived objects (the read index): collect once, then `gc.freeze()` every
    object alive, and hand freed memory back (`release_free_memory`).

    Every full collection walks all tracked objects; with a 100k-row read index in the heap, that made each
    MCP round trip ~2 ms slower (tools/list 3.1 ms frozen against 6.7 ms not, medians). Frozen objects are
    still freed by reference counting; only cycles among them would wait for `gc.unfreeze()`.
    """
    import gc

    gc.collect()
    gc.freeze()
    release_free_memory()
