"""One store, two engines: the in-memory read index answers what LanceDB's own indexes answer.

Dense: the read index's top-k is LanceDB's (flat, exact cosine) — the same rows, the same scores.
Lexical: LanceDB's full-text index on the `terms` column (`search.terms.row_terms`, split on spaces, nothing
folded again) is the reference; the read index, which reads the same column, returns the same rows with the same
BM25 scores — whatever the query holds (paths, dotted names, quotes, query-syntax characters, every script) and
whatever the filter — so which engine answers never changes the ranking (eval/results/engines.md).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta

import pytest

from chronomem.records import UTC, MemoryRecord, new_id
from chronomem.search import lance
from chronomem.search.engine import open_store
from chronomem.search.terms import indexed_terms, row_terms
from chronomem.storage import Filter, MemoryStore
from chronomem.storage.schema import FTS_INDEX, OLD_FTS_INDEX

DIM = 16
K = 5
T0 = datetime(2024, 3, 1, tzinfo=UTC)
NOTES = [
    "The payments-api listens on port 8443 behind nginx.",
    "parseHTTPDate lives in src/util/http_dates.py and owns the date parsing.",
    "Infra owns the catalog module; ask them before changing catalog-svc.",
    "ERR_LEDGER_TIMEOUT means the ledger service did not answer within 5 s.",
    "We pinned Python 3.12 and uv 0.4 for the build (see pyproject.toml).",
    "The flaky test test_upload_retry times out on CI about once a week.",
    "Deploys of payments-api go out on Tuesdays after the standup.",
    'The config key "retry.max_attempts" in settings.yaml is 7; callers read it via config.get("retry").',
    "Run `make migrate-db` before `pytest -k \"ledger and not slow\"` or the fixtures fail.",
    "The staging database host is db-staging.internal, port 5432.",
    "Owner of webhooks: Growth. The webhooks code is in libs/webhooks/.",
    "Catalog search results are cached for ten minutes in Redis.",
    "The ledger module is served by ledger-svc on port 7001.",
    "k8s/overlays/prod/kustomization.yaml pins the image to ghcr.io/acme/ledger:1.14.2.",
    "Use http://localhost:9000/health (not /healthz) for the readiness probe.",
    "Café menu service: the crème brûlée endpoint is /v2/desserts.",
    "השרת רץ על פורט 8080 ואת הסיסמה שומרים בכספת",
    "الخادمُ يعمل على المنفذ 8080 في بيئة الاختبار",
    "服务器 运行 在 端口 9090 日志 在 /var/log/app",
    "Сервер базы данных работает на порту 5432",
    "Straße names are stored in the addresses table (column street_name).",
    "TODO(alice): replace the O(n^2) loop in utils.dedupe() with a set.",
    "The the the the the.",  # nothing but a stop word: a row with no terms
]
QUERIES = [
    "which port does payments-api use",
    "who owns catalog",
    "where is parseHTTPDate",
    "ERR_LEDGER_TIMEOUT",
    "what python version do we pin",
    "flaky upload test",
    "database host for staging",
    "ledger port",
    "webhooks owner",
    # paths, dotted names, URLs, versions
    "src/util/http_dates.py",
    "libs/webhooks/",
    "k8s/overlays/prod/kustomization.yaml",
    "ghcr.io/acme/ledger:1.14.2",
    "http://localhost:9000/health",
    "retry.max_attempts",
    "settings.yaml",
    # quotes, parentheses and what a query parser would take as syntax
    '"retry.max_attempts"',
    'config.get("retry")',
    "utils.dedupe()",
    "TODO(alice)",
    "O(n^2)",
    'pytest -k "ledger and not slow"',
    "ledger AND NOT port",
    "ledger OR catalog",
    "title:ledger",
    "ledger^2 catalog~1",
    "led*",
    "+ledger -catalog",
    "`make migrate-db`",
    "(catalog-svc)",
    "[payments-api]",
    "{webhooks}",
    "ledger\\ port",
    # other scripts (a Hebrew prefix word, Arabic with and without its short vowels, CJK words apart)
    "פורט",
    "בכספת",
    "الخادم",
    "الخادمُ",
    "المنفذ",
    "端口",
    "日志",
    "порту",
    "cafe creme brulee",
    "strasse",
    # a query with no terms at all
    "the",
    "?!",
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> MemoryStore:
    rng = random.Random(3)
    opened = open_store(tmp_path_factory.mktemp("engines") / "s", DIM, "test", read_index_rows=10_000)
    rows = []
    for i, text in enumerate(NOTES * 3):  # repeated notes: document frequencies above one
        t = T0 + timedelta(hours=i)
        kind = "fact" if i % 4 == 0 else "chunk"
        project = "p" if i % 3 else "q"
        invalid_at = t + timedelta(days=1) if i % 5 == 0 else None
        rows.append(
            MemoryRecord(id=new_id(t), kind=kind, project=project, content=text, valid_at=t, created_at=t,
                         invalid_at=invalid_at, vector=[rng.gauss(0, 1) for _ in range(DIM)], embed_model="test")
        )
    opened.add(rows[: len(rows) // 2])
    opened.add(rows[len(rows) // 2 :])
    opened.optimize()  # every row in LanceDB's full-text index
    assert opened.wait_for_read_index()
    return opened


def both(store: MemoryStore, query: str, flt: Filter, limit: int) -> tuple[dict[str, float], dict[str, float]]:
    """(read index, LanceDB): id → BM25 score of the top `limit` rows for `query`."""
    index = store.read_index
    assert index is not None
    mine = {r.id: s for r, s in index.text_search(query, flt, limit)}
    theirs = {r.id: s for r, s in lance.text_search(store.table, query, flt, limit)}
    return mine, theirs


def assert_same_top_k(mine: dict[str, float], theirs: dict[str, float], k: int, what: str) -> None:
    """The same top-k: the same scores, place by place, and the same rows above the k-th score (rows tied at the
    k-th place may differ: each engine keeps some of them, in its own order)."""
    a, b = sorted(mine.values(), reverse=True)[:k], sorted(theirs.values(), reverse=True)[:k]
    assert a == pytest.approx(b, rel=1e-4), what
    if a:
        last = a[-1]
        above = lambda found: {i for i, s in found.items() if s > last * (1 + 1e-4)}  # noqa: E731
        assert above(mine) == above(theirs), what


@pytest.mark.parametrize(
    "flt",
    [Filter(), Filter().kinds(["chunk"]), Filter().projects(["p"]), Filter().live(T0 + timedelta(hours=200), T0 + timedelta(hours=200))],
    ids=["all", "chunks", "project", "live"],
)
def test_the_read_index_returns_lancedb_s_lexical_rows_and_scores(store: MemoryStore, flt: Filter) -> None:
    total = store.count()
    for query in QUERIES:
        mine, theirs = both(store, query, flt, total)  # every row that matches at all
        assert set(mine) == set(theirs), query
        for memory_id, score in mine.items():
            assert theirs[memory_id] == pytest.approx(score, rel=1e-4), query
        assert_same_top_k(*both(store, query, flt, K), K, query)


def test_paths_names_quotes_and_every_script_find_their_note(store: MemoryStore) -> None:
    """A query is only terms: the characters a query language would read (`" ( ) : ^ ~ * + - AND NOT`) neither
    break the search nor change it, and words of every script find the note that holds them, in both engines."""
    wanted = {
        "src/util/http_dates.py": "parseHTTPDate lives",
        "ghcr.io/acme/ledger:1.14.2": "k8s/overlays",
        '"retry.max_attempts"': "The config key",
        "utils.dedupe()": "TODO(alice)",
        "http://localhost:9000/health": "Use http://localhost",
        "פורט": "השרת",
        "בכספת": "השרת",
        "الخادمُ": "الخادمُ",
        "المنفذ": "الخادمُ",
        "端口": "服务器",
        "порту": "Сервер",
        "cafe creme brulee": "Café",
        "strasse": "Straße",
    }
    for query, start in wanted.items():
        for name, found in zip(("read index", "LanceDB"), both(store, query, Filter(), 3), strict=True):
            assert found, f"{name} found nothing for {query!r}"
            best = max(found, key=lambda i: found[i])
            assert store.get(best).content.startswith(start), (name, query)  # type: ignore[union-attr]
    for query in ("the", "?!", "ledger AND NOT port"):
        mine, theirs = both(store, query, Filter(), K)
        assert bool(mine) == bool(theirs) == (query not in ("the", "?!")), query


def test_rows_appended_after_the_index_was_built_are_found_by_both(store: MemoryStore) -> None:
    """Rows not yet folded into LanceDB's index (upkeep's optimize does that) are searched flat: both engines
    find them; the scores agree again once the index holds them."""
    t = T0 + timedelta(days=30)
    new = MemoryRecord(id=new_id(t), kind="chunk", project="p", content="The ledger-svc canary runs in eu-west-1.",
                       valid_at=t, created_at=t, vector=[1.0] * DIM, embed_model="test")
    store.add([new])
    assert store.unindexed_rows() == 1
    mine, theirs = both(store, "ledger-svc canary", Filter(), store.count())
    assert new.id in mine and new.id in theirs and set(mine) == set(theirs)
    store.optimize()
    assert store.unindexed_rows() == 0
    mine, theirs = both(store, "ledger-svc canary", Filter(), store.count())
    assert set(mine) == set(theirs)
    for memory_id, score in mine.items():
        assert theirs[memory_id] == pytest.approx(score, rel=1e-4)


def test_every_row_holds_its_terms_and_only_they_are_indexed(store: MemoryStore) -> None:
    rows = store.table.to_arrow().to_pylist()
    assert all(r["terms"] == row_terms(r["content"], r["kind"]) for r in rows)
    fact = next(r for r in rows if r["kind"] == "fact" and r["content"].startswith("The the"))
    assert fact["terms"] == ""
    assert indexed_terms("cache port cache", "fact") == ["cach", "port"]  # a fact's terms once
    assert indexed_terms("cache port cache", "chunk") == ["cach", "port", "cach"]
    names = {idx.name: idx.columns for idx in store.table.list_indices()}
    assert names.get(FTS_INDEX) == ["terms"] and OLD_FTS_INDEX not in names


def test_dense_top_k_is_lancedb_s(store: MemoryStore) -> None:
    rng = random.Random(11)
    index = store.read_index
    for _ in range(20):
        vector = [rng.gauss(0, 1) for _ in range(DIM)]
        mine = index.vector_search(vector, Filter(), 10)
        theirs = lance.vector_search(store.table, vector, Filter(), 10)
        assert [r.id for r, _ in mine] == [r.id for r, _ in theirs]
        assert [s for _, s in mine] == pytest.approx([s for _, s in theirs], abs=1e-4)
