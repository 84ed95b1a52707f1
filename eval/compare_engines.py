"""One store, two engines: the in-memory read index (search/readindex.py) against LanceDB's own indexes
(search/lance.py) — the top-k each returns for the same queries, lexical and dense.

    python -m eval.compare_engines [--data ../shared/data/devmem] [--k 10] [--queries 300]

Loads the data set's notes as chunks (random unit vectors: the dense comparison needs no meaning, only the
same vectors in both engines), then for each query compares the two top-k lists: the share of ids they
have in common, and how often their first result is the same. Prints a small table (Markdown).

A third row tries the way to one lexical engine: LanceDB's full-text index over the read index's own terms
(`search.terms`, joined by spaces in a side table) with its whitespace tokenizer and no folding of its own —
what a `terms` column of the table, indexed so, would answer.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    shared = Path(os.environ.get("CHRONOMEM_SHARED") or Path(__file__).resolve().parents[2] / "shared")  # as .ci/run
    parser.add_argument("--data", default=str(shared / "data" / "devmem"))
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    print(compare(Path(args.data), args.k, args.queries))


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
        side = _terms_table(Path(tmp) / "side", rows)
        lexical, dense, same_terms = [], [], []
        for q in queries:
            mine = [r.id for r, _ in index.text_search(q, flt, k)]
            theirs = [r.id for r, _ in lance.text_search(table, q, flt, k)]
            lexical.append((mine, theirs))
            same_terms.append((mine, _search_terms(side, q, k)))
            v = [rng.gauss(0, 1) for _ in range(DIM)]
            dense.append(([r.id for r, _ in index.vector_search(v, flt, k)],
                          [r.id for r, _ in lance.vector_search(table, v, flt, k)]))
    lines = [f"{len(writes)} notes, {len(queries)} queries, top {k}", "",
             "| channel | overlap@k | same first | identical lists | read index empty | LanceDB empty |",
             "|---|---|---|---|---|---|"]
    for name, pairs in (("lexical", lexical), ("dense", dense), ("lexical, LanceDB over the same terms", same_terms)):
        both = [(a, b) for a, b in pairs if a and b]
        overlap = sum(len(set(a) & set(b)) / max(len(a), len(b)) for a, b in both) / max(len(both), 1)
        first = sum(a[0] == b[0] for a, b in both) / max(len(both), 1)
        same = sum(a == b for a, b in pairs) / len(pairs)
        lines.append(f"| {name} | {overlap:.3f} | {first:.3f} | {same:.3f} | "
                     f"{sum(not a for a, _ in pairs)} | {sum(not b for _, b in pairs)} |")
    return "\n".join(lines)


def _terms_table(path: Path, rows: list) -> object:
    """A LanceDB table of (id, the row's terms joined by spaces) with a full-text index that splits on spaces
    only and folds nothing: its tokens are exactly `search.terms`'s."""
    import lancedb
    import pyarrow as pa
    from lancedb.index import FTS

    from chronomem.search.readindex import _indexed_terms

    data = pa.table({"id": [r.id for r in rows], "terms": [" ".join(_indexed_terms(r.content, r.kind)) for r in rows]})
    table = lancedb.connect(str(path)).create_table("t", data=data)
    table.create_index("terms", config=FTS(base_tokenizer="whitespace", lower_case=False, stem=False,
                                           remove_stop_words=False, ascii_folding=False, max_token_length=None))
    return table


def _search_terms(table: object, text: str, k: int) -> list[str]:
    from lancedb.query import MatchQuery

    from chronomem.search.terms import terms

    asked = " ".join(dict.fromkeys(terms(text)))
    if not asked:
        return []
    found = table.search(MatchQuery(asked, "terms"), query_type="fts").limit(k).select(["id", "_score"]).to_list()
    found.sort(key=lambda row: (-row["_score"], row["id"]))
    return [row["id"] for row in found]


if __name__ == "__main__":
    main()
