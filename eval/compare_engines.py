"""One store, two engines: the in-memory read index (search/readindex.py) against LanceDB's own indexes
(search/lance.py) — the top-k each returns for the same queries, lexical and dense.

    python -m eval.compare_engines [--data ../shared/data/devmem] [--k 10] [--queries 300]

Loads the data set's notes as chunks (random unit vectors: the dense comparison needs no meaning, only the
same vectors in both engines), folds every row into LanceDB's indexes, then for each query compares the two
top-k lists: the share of ids they have in common, how often their first result is the same, how often the
lists are identical, and how often they are the same up to ties (the same scores place by place, the same rows
above the k-th score: rows tied at the k-th place may differ). The scores of the rows both return are compared
too (the largest relative difference). Prints a small table (Markdown).

Lexically both read the `terms` column (search.terms.row_terms): LanceDB's full-text index over it, split on
spaces and folded no further, is the reference; the read index is its cache.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
from datetime import datetime
from pathlib import Path

DIM = 32
#: Relative score difference under which two BM25 or cosine scores are the same (float32 sums in two orders).
SAME = 1e-4


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    shared = Path(os.environ.get("CHRONOMEM_SHARED") or Path(__file__).resolve().parents[2] / "shared")  # as .ci/run
    parser.add_argument("--data", default=str(shared / "data" / "devmem"))
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    print(compare(Path(args.data), args.k, args.queries))


Pair = tuple[list[tuple[str, float]], list[tuple[str, float]]]


def compare(data: Path, k: int, n_queries: int) -> str:
    from chronomem.records import UTC, MemoryRecord, new_id
    from chronomem.search import lance
    from chronomem.search.engine import open_store
    from chronomem.storage import Filter

    rng = random.Random(7)
    writes = [json.loads(line) for line in (data / "writes.jsonl").read_text().splitlines() if line.strip()]
    queries = [json.loads(line)["query"] for line in (data / "queries.jsonl").read_text().splitlines() if line.strip()]
    queries = queries[:n_queries]
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / "s", DIM, "compare", read_index_rows=100_000)
        rows = []
        for w in writes:
            t = datetime.fromisoformat(w["t"].replace("Z", "+00:00")).astimezone(UTC)
            vector = [rng.gauss(0, 1) for _ in range(DIM)]
            rows.append(MemoryRecord(id=new_id(t), kind="chunk", project=w["project"], content=w["content"],
                                     valid_at=t, created_at=t, vector=vector, embed_model="compare"))
        store.add(rows)
        store.optimize()  # every row in LanceDB's full-text index
        assert store.wait_for_read_index()
        index, table, flt = store.read_index, store.table, Filter()
        lexical: list[Pair] = []
        dense: list[Pair] = []
        for q in queries:
            lexical.append(([(r.id, s) for r, s in index.text_search(q, flt, k)],
                            [(r.id, s) for r, s in lance.text_search(table, q, flt, k)]))
            v = [rng.gauss(0, 1) for _ in range(DIM)]
            dense.append(([(r.id, s) for r, s in index.vector_search(v, flt, k)],
                          [(r.id, s) for r, s in lance.vector_search(table, v, flt, k)]))
    lines = [f"{len(writes)} notes, {len(queries)} queries, top {k}", "",
             "| channel | overlap@k | same first | identical lists | same up to ties | largest score difference "
             "| read index empty | LanceDB empty |",
             "|---|---|---|---|---|---|---|---|"]
    for name, pairs in (("lexical (`terms` column)", lexical), ("dense", dense)):
        both = [(a, b) for a, b in pairs if a and b]
        ids = [([i for i, _ in a], [i for i, _ in b]) for a, b in both]
        overlap = sum(len(set(a) & set(b)) / max(len(a), len(b)) for a, b in ids) / max(len(both), 1)
        first = sum(a[0] == b[0] for a, b in ids) / max(len(both), 1)
        same = sum([i for i, _ in a] == [i for i, _ in b] for a, b in pairs) / len(pairs)
        tied = sum(_same_up_to_ties(a, b) for a, b in pairs) / len(pairs)
        gap = max((_score_gap(a, b) for a, b in both), default=0.0)
        lines.append(f"| {name} | {overlap:.3f} | {first:.3f} | {same:.3f} | {tied:.3f} | {gap:.1e} | "
                     f"{sum(not a for a, _ in pairs)} | {sum(not b for _, b in pairs)} |")
    return "\n".join(lines)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= SAME * max(abs(a), abs(b), 1e-12)


def _same_up_to_ties(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> bool:
    """The same scores place by place, and the same rows scored above the last place's score."""
    if len(a) != len(b) or not all(_close(x, y) for (_, x), (_, y) in zip(a, b, strict=True)):
        return False
    if not a:
        return True
    last = a[-1][1]
    return {i for i, s in a if s > last and not _close(s, last)} == {i for i, s in b if s > last and not _close(s, last)}


def _score_gap(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> float:
    """The largest relative difference between the two engines' scores of a row both return."""
    theirs = dict(b)
    return max((abs(s - theirs[i]) / max(abs(s), 1e-12) for i, s in a if i in theirs), default=0.0)


if __name__ == "__main__":
    main()
