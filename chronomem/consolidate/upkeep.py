"""Store upkeep decisions: when to refresh the indexes and when to (re)build the vector index.

`optimize()` (compaction, folding new rows into the full-text and vector indexes, and
dropping table versions older than an hour) runs once `UPKEEP_MIN_UNINDEXED` rows are
not covered by the full-text index: LanceDB searches those flat. It waits for a quiet
moment, except in a burst of writes: every append commits one small fragment, and LanceDB
writes every fragment into each new manifest, so a commit costs more the more fragments
the table has (an append on a 100k-row store: ~3.8 ms at 10 small fragments, ~6.2 ms at
100). After `BURST_UPKEEP_COMMITS` appends the consolidator compacts while calls flow
(0.2–1.3 s under the write lock at 100k rows, so one write in that many waits for it) —
only where that is quick: `optimize()` also folds the new rows into the full-text and
vector indexes, which at 1M rows took ~18 s, so past `BURST_UPKEEP_MAX_ROWS` rows, or once
an optimize took over `BURST_UPKEEP_MAX_SECONDS`, upkeep waits for a quiet moment again.

Vector search is exact (flat) until the table holds `VECTOR_INDEX_MIN_ROWS` rows; then
the consolidator trains an IVF_HNSW_SQ index (cosine). That takes tens of seconds at
50k rows on 2 cores (it uses both; measured ~40 s), so it runs on the consolidator
thread without the write lock: tool calls keep being answered (reads from the current
version, writes appended beside it) and rows added meanwhile are folded in by the next
`optimize()`, incrementally. The index is retrained when the table has grown
`VECTOR_REINDEX_GROWTH` times since training, so its partitions keep fitting the data.
Below the threshold an ANN index costs recall for no speed: a flat scan of 50k 384-d
vectors takes ~20 ms.
"""

from __future__ import annotations

from collections.abc import Callable

#: Unindexed rows that make a full-text index refresh worthwhile.
UPKEEP_MIN_UNINDEXED = 50
#: Unindexed rows at which upkeep goes before extraction (a long backlog writes many small fragments).
UPKEEP_BACKLOG = 400
#: Appends since the last `optimize()` after which upkeep runs without waiting for a quiet moment.
BURST_UPKEEP_COMMITS = 64
#: ... as long as the table has at most this many rows,
BURST_UPKEEP_MAX_ROWS = 250_000
#: ... and this process's last `optimize()` (when there was one) took at most this long.
BURST_UPKEEP_MAX_SECONDS = 2.0
#: Table size from which vector search goes through an ANN index.
VECTOR_INDEX_MIN_ROWS = 50_000
#: Growth factor (rows now / rows at training) that triggers retraining the vector index.
VECTOR_REINDEX_GROWTH = 4.0


def needs_burst_upkeep(
    commits_since_optimize: int,
    rows: Callable[[], int],
    last_optimize_seconds: float | None,
    threshold: int = BURST_UPKEEP_COMMITS,
) -> bool:
    """Whether to compact during a burst of writes; `rows` (the table's row count) is asked last."""
    if commits_since_optimize < threshold:
        return False
    if last_optimize_seconds is not None and last_optimize_seconds > BURST_UPKEEP_MAX_SECONDS:
        return False
    return rows() <= BURST_UPKEEP_MAX_ROWS


def needs_vector_index(
    total_rows: int,
    trained_rows: int | None,
    min_rows: int = VECTOR_INDEX_MIN_ROWS,
    growth: float = VECTOR_REINDEX_GROWTH,
) -> bool:
    """True when the vector index should be built (none yet, table large) or retrained (table grew a lot)."""
    if total_rows < min_rows:
        return False
    if trained_rows is None or trained_rows <= 0:
        return True
    return total_rows >= growth * trained_rows
