"""One store, two engines: the in-memory read index answers what LanceDB's own indexes answer.

Dense: the read index's top-k is LanceDB's (flat, exact cosine) — the same rows, the same scores.
Lexical: LanceDB's BM25 over the read index's own terms (`search.terms`, split on spaces, nothing folded
again) gives every row the read index's score — the same tokenizer, the same scores — so a `terms` column
indexed that way makes LanceDB's full-text index the reference the read index caches (eval/results/engines.md).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path

import lancedb
import pyarrow as pa
import pytest
from lancedb.index import FTS
from lancedb.query import MatchQuery

from chronomem.records import UTC, MemoryRecord, new_id
from chronomem.search import lance
from chronomem.search.engine import open_store
from chronomem.search.readindex import _indexed_terms
from chronomem.search.terms import terms
from chronomem.storage import Filter, MemoryStore

DIM = 16
T0 = datetime(2024, 3, 1, tzinfo=UTC)
NOTES = [
    "The payments-api listens on port 8443 behind nginx.",
    "parseHTTPDate lives in src/util/http_dates.py and owns the date parsing.",
    "Infra owns the catalog module; ask them before changing catalog-svc.",
    "ERR_LEDGER_TIMEOUT means the ledger service did not answer within 5 s.",
    "We pinned Python 3.12 and uv 0.4 for the build.",
    "The flaky test test_upload_retry times out on CI about once a week.",
    "Deploys of payments-api go out on Tuesdays after the standup.",
    "השרת רץ על פורט 8080",
    "The staging database host is db-staging.internal, port 5432.",
    "Owner of webhooks: Growth. The webhooks code is in libs/webhooks/.",
    "Catalog search results are cached for ten minutes in Redis.",
    "The ledger module is served by ledger-svc on port 7001.",
]
QUERIES = [
    "which port does payments-api use",
    "who owns catalog",
    "where is parseHTTPDate",
    "ERR_LEDGER_TIMEOUT",
    "what python version do we pin",
    "flaky upload test",
    "פורט",
    "database host for staging",
    "ledger port",
    "webhooks owner",
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> MemoryStore:
    rng = random.Random(3)
    opened = open_store(tmp_path_factory.mktemp("engines") / "s", DIM, "test", read_index_rows=10_000)
    rows = []
    for i, text in enumerate(NOTES * 3):  # repeated notes: document frequencies above one
        t = T0 + timedelta(hours=i)
        kind = "fact" if i % 4 == 0 else "chunk"
        rows.append(
            MemoryRecord(id=new_id(t), kind=kind, project="p", content=text, valid_at=t, created_at=t,
                         vector=[rng.gauss(0, 1) for _ in range(DIM)], embed_model="test")
        )
    opened.add(rows)
    opened.optimize()
    assert opened.wait_for_read_index()
    return opened


def test_dense_top_k_is_lancedb_s(store: MemoryStore) -> None:
    rng = random.Random(11)
    index = store.read_index
    for _ in range(20):
        vector = [rng.gauss(0, 1) for _ in range(DIM)]
        mine = index.vector_search(vector, Filter(), 10)
        theirs = lance.vector_search(store.table, vector, Filter(), 10)
        assert [r.id for r, _ in mine] == [r.id for r, _ in theirs]
        assert [s for _, s in mine] == pytest.approx([s for _, s in theirs], abs=1e-4)


def test_lancedb_bm25_over_the_same_terms_scores_every_row_as_the_read_index(
    store: MemoryStore, tmp_path: Path
) -> None:
    rows = store.find(Filter())
    data = pa.table({"id": [r.id for r in rows], "terms": [" ".join(_indexed_terms(r.content, r.kind)) for r in rows]})
    side = lancedb.connect(str(tmp_path / "side")).create_table("t", data=data)
    side.create_index("terms", config=FTS(base_tokenizer="whitespace", lower_case=False, stem=False,
                                          remove_stop_words=False, ascii_folding=False, max_token_length=None))
    for query in QUERIES:
        mine = dict((r.id, s) for r, s in store.read_index.text_search(query, Filter(), len(rows)))
        asked = " ".join(dict.fromkeys(terms(query)))
        found = side.search(MatchQuery(asked, "terms"), query_type="fts").limit(len(rows)).to_list()
        theirs = {row["id"]: row["_score"] for row in found}
        assert mine, query
        assert set(mine) == set(theirs), query
        for memory_id, score in mine.items():
            assert theirs[memory_id] == pytest.approx(score, rel=1e-4), query
