"""The in-memory read index answers exactly what LanceDB would, and keeps up with every write.

Two `MemoryStore`s open one directory: `indexed` searches its read index, `plain` (index off)
searches LanceDB and plays the other process whose writes the index must catch up with.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from chronomem.config import DEFAULT_READ_INDEX_ROWS, Settings
from chronomem.records import UTC, MemoryRecord, new_id
from chronomem.retrieval.rank import term_set
from chronomem.search import readindex
from chronomem.search.engine import Search, hybrid_search, nearest_ids, open_store, text_search, vector_search
from chronomem.search.terms import terms
from chronomem.storage import Filter, MemoryStore
from chronomem.storage.store import LANCE_CACHE_BEHIND_INDEX, OPEN_BUILD_ROWS

DIM = 16
T0 = datetime(2024, 1, 1, tzinfo=UTC)
WORDS = "ledger billing port deploy cache auth token pytest ruff nox redis postgres queue worker api".split()


def rand_vector(rng: random.Random) -> list[float]:
    return [rng.gauss(0, 1) for _ in range(DIM)]


def make_rows(rng: random.Random, n: int) -> list[MemoryRecord]:
    rows = []
    for i in range(n):
        valid = T0 + timedelta(days=rng.randrange(0, 60))
        created = valid + timedelta(hours=rng.randrange(0, 48))
        rows.append(
            MemoryRecord(
                id=new_id(),
                kind=rng.choice(["chunk", "fact"]),
                project=rng.choice(["alpha", "beta", "gamma"]),
                content=" ".join(rng.choices(WORDS, k=6)) + f" item{i}",
                valid_at=valid,
                created_at=created,
                invalid_at=valid + timedelta(days=rng.randrange(1, 30)) if rng.random() < 0.3 else None,
                expired_at=created + timedelta(days=rng.randrange(1, 30)) if rng.random() < 0.2 else None,
                revision_of=new_id() if rng.random() < 0.1 else None,
                paths=["src/app.py"] if rng.random() < 0.2 else [],
                vector=rand_vector(rng),
                embed_model="test",
            )
        )
    return rows


@pytest.fixture
def pair(tmp_path: Path) -> tuple[MemoryStore, MemoryStore]:
    indexed = open_store(tmp_path / "s", DIM, "test", read_index_rows=10_000)
    assert indexed.wait_for_read_index()
    plain = open_store(tmp_path / "s", DIM, "test", read_index_rows=0)
    return indexed, plain


def filters() -> list[Filter]:
    mid, late = T0 + timedelta(days=30), T0 + timedelta(days=90)
    return [
        Filter(),
        Filter().live(mid, mid),
        Filter().live(late, late).projects(["alpha"]),
        Filter().live(mid, late).kinds(["fact"]),
        Filter().known(mid).began_by(mid),
        Filter().projects(["beta", "gamma"]).originals(),
        Filter().revisions(),
        Filter().ended_by(mid),
        Filter().created_since(mid).with_paths(),
        Filter().projects(["nowhere"]),
        Filter().kinds(["chunk"]).live(T0 - timedelta(days=1), late),
    ]


def ids(found: list[tuple[MemoryRecord, float]]) -> list[str]:
    return [r.id for r, _ in found]


def test_vector_search_equals_lancedb_under_every_filter(pair: tuple[MemoryStore, MemoryStore]) -> None:
    indexed, plain = pair
    rng = random.Random(7)
    rows = make_rows(rng, 400)
    for start in (0, 250, 330, 390):  # four writes: results come from several appended chunks, in score order
        indexed.add(rows[start : {0: 250, 250: 330, 330: 390, 390: 400}[start]])
    assert indexed.read_index is not None and indexed.read_index.version == indexed._table.version
    assert len(indexed.read_index._chunks) == 4
    for flt in filters():
        for _ in range(3):
            query = rand_vector(rng)
            mine = vector_search(indexed, query, flt, 15, with_vectors=True)
            truth = vector_search(plain, query, flt, 15)
            assert ids(mine) == ids(truth), flt.sql()
            assert [s for _, s in mine] == pytest.approx([s for _, s in truth], abs=1e-4)
            assert all(r.vector is not None and len(r.vector) == DIM for r, _ in mine)
            assert [r.to_row() | {"vector": None} for r, _ in mine] == [r.to_row() for r, _ in truth]
            for store in (indexed, plain):  # ids and scores alone (the gate's novelty), from either engine
                nearest = nearest_ids(store, query, flt, 15)
                assert [i for i, _ in nearest] == ids(truth)
                assert [s for _, s in nearest] == pytest.approx([s for _, s in truth], abs=1e-4)


def test_text_search_matches_identifiers_whole_and_split_within_the_filter(pair: tuple[MemoryStore, MemoryStore]) -> None:
    indexed, _ = pair
    rng = random.Random(1)
    code = MemoryRecord(
        id=new_id(), kind="chunk", project="alpha", content="Retry when ERR_LEDGER_TIMEOUT comes from parseHTTPDate",
        valid_at=T0, created_at=T0, vector=rand_vector(rng), embed_model="test",
    )
    other = code.copy(id=new_id(), project="beta")
    noise = code.copy(id=new_id(), content="the queue worker restarts nightly")
    indexed.add([code, other, noise])
    alpha = Filter().projects(["alpha"])
    for query in ("ledger timeout", "err_ledger_timeout", "ERR_LEDGER_TIMEOUT", "http date parsing"):
        assert ids(text_search(indexed, query, alpha, 10)) == [code.id], query
    assert text_search(indexed, "postgres", alpha, 10) == []
    assert text_search(indexed, "the of and", alpha, 10) == []  # stop words only: no lexical evidence


def test_text_search_ranks_by_bm25(pair: tuple[MemoryStore, MemoryStore]) -> None:
    indexed, _ = pair
    rng = random.Random(2)
    rows = [
        MemoryRecord(id=new_id(), kind="chunk", project="p", content=text, valid_at=T0, created_at=T0,
                     vector=rand_vector(rng), embed_model="test")
        for text in ["redis cache", "redis redis cache settings", "postgres settings for the api", "api gateway"]
        + [f"unrelated note {i} about api" for i in range(20)]
    ]
    indexed.add(rows)
    found = text_search(indexed, "redis", Filter(), 10)
    assert ids(found) == [rows[1].id, rows[0].id]  # more occurrences first
    assert found[0][1] > found[1][1] > 0
    rare = text_search(indexed, "postgres api", Filter(), 3)
    assert ids(rare)[0] == rows[2].id  # both terms, one of them rare


def test_a_fact_counts_each_of_its_words_once(pair: tuple[MemoryStore, MemoryStore]) -> None:
    indexed, _ = pair
    rng = random.Random(3)
    texts = ["shop module path:notifications: cmd/notifications/", "shop module owner:notifications: Infra"]
    facts = [
        MemoryRecord(id=new_id(), kind="fact", project="p", content=text, valid_at=T0, created_at=T0,
                     vector=rand_vector(rng), embed_model="test")
        for text in texts
    ]
    chunks = [f.copy(id=new_id(), kind="chunk") for f in facts]
    indexed.add([*facts, *chunks, *(c.copy(id=new_id(), content=f"filler note {i}") for i, c in enumerate(chunks * 5))])
    on_facts = text_search(indexed, "notifications", Filter().kinds(["fact"]), 10)
    assert set(ids(on_facts)) == {f.id for f in facts} and on_facts[0][1] == pytest.approx(on_facts[1][1], rel=0.2)
    on_chunks = text_search(indexed, "notifications", Filter().kinds(["chunk"]), 10)
    assert ids(on_chunks)[0] == chunks[0].id and on_chunks[0][1] > on_chunks[1][1] * 1.2  # a chunk's repeats count


def test_hybrid_search_tells_which_query_terms_each_row_found_contains(pair: tuple[MemoryStore, MemoryStore]) -> None:
    indexed, plain = pair
    rng = random.Random(9)
    rows = make_rows(rng, 300)
    code = rows[0].copy(id=new_id(), content="Retry when ERR_LEDGER_TIMEOUT comes from parseHTTPDate; ports pinned")
    indexed.add(rows[:200])
    indexed.add([*rows[200:], code])  # a second write: its rows' postings are in the tail
    queries = ["ledger port for the billing worker", "err_ledger_timeout http date", "pinning redis ports", "nothing"]
    mid = T0 + timedelta(days=30)
    told = 0
    for query in queries:
        for flt in (Filter(), Filter().projects(["alpha"]), Filter().live(mid, mid)):
            dense, lexical, contains = hybrid_search(indexed, rand_vector(rng), query, flt, 20)
            asked = set(terms(query))
            assert contains is not None and set(contains) == {r.id for r, _ in (*dense, *lexical)}
            for record, _ in (*dense, *lexical):
                assert contains[record.id] == asked & term_set(record.content), (query, record.content)
                told += len(contains[record.id])
    assert told > 50
    assert hybrid_search(plain, rand_vector(rng), queries[0], Filter(), 5)[2] is None  # LanceDB: the ranker tokenizes
    many = " ".join(f"word{i}" for i in range(70))
    assert hybrid_search(indexed, rand_vector(rng), many, Filter(), 5)[2] == {}  # past 64 terms: not told


def test_own_writes_apply_at_once_and_expiry_leaves_the_live_slice(pair: tuple[MemoryStore, MemoryStore]) -> None:
    indexed, plain = pair
    rng = random.Random(3)
    row = make_rows(rng, 1)[0].copy(invalid_at=None, expired_at=None, project="alpha", valid_at=T0, created_at=T0)
    indexed.add([row])
    now = T0 + timedelta(days=100)
    live = Filter().live(now, now).projects(["alpha"])
    [(found, _)] = vector_search(indexed, row.vector, live, 5)
    assert found.id == row.id
    found.content, found.tags = "changed by a caller", found.tags + ["x"]  # callers get their own copies
    [(again, _)] = vector_search(indexed, row.vector, live, 5)
    assert again.content == row.content and again.tags == row.tags
    indexed.upsert([MemoryStore.expired(row, now=now - timedelta(days=1), reason="test")])
    assert indexed.read_index.version == indexed._table.version
    assert vector_search(indexed, row.vector, live, 5) == []
    gone = vector_search(indexed, row.vector, Filter().projects(["alpha"]), 5)
    assert gone[0][0].reason == "test" and gone[0][0].expired_at == now - timedelta(days=1)
    assert ids(vector_search(plain, row.vector, live, 5)) == []


def test_another_process_writes_are_caught_up(pair: tuple[MemoryStore, MemoryStore]) -> None:
    indexed, plain = pair
    rng = random.Random(4)
    first = make_rows(rng, 50)
    indexed.add(first)
    version = indexed.read_index.version
    arrived = make_rows(rng, 30)
    plain.add(arrived)  # another process's write
    target = next(r for r in first if r.expired_at is None)
    plain.upsert([MemoryStore.expired(target, now=target.created_at + timedelta(seconds=1), reason="other")])
    from chronomem.records import Usage

    # salience gained after the write comes from the usage side table (the row stays as written)
    plain.usage.append([Usage(id=arrived[0].id, at=arrived[0].created_at, boost=7.5 - arrived[0].salience)])
    for flt in filters():
        query = rand_vector(rng)
        assert ids(vector_search(indexed, query, flt, 20)) == ids(vector_search(plain, query, flt, 20)), flt.sql()
    assert indexed.read_index.version == plain._table.version > version
    [(salient, _)] = vector_search(indexed, arrived[0].vector, Filter().ids([arrived[0].id]), 1)
    assert salient.salience == pytest.approx(7.5)
    plain.optimize()
    query = rand_vector(rng)
    assert ids(vector_search(indexed, query, Filter(), 20)) == ids(vector_search(plain, query, Filter(), 20))


def test_other_changes_to_a_row_and_a_purge_are_seen(pair: tuple[MemoryStore, MemoryStore]) -> None:
    from chronomem.storage.portable import PurgePlan, erase

    indexed, plain = pair
    rng = random.Random(9)
    rows = make_rows(rng, 20)
    indexed.add(rows)
    plain.upsert([rows[1].copy(invalid_at=rows[1].valid_at + timedelta(days=1), reason="ended")])
    [(got, _)] = vector_search(indexed, rows[1].vector, Filter().ids([rows[1].id]), 1)
    assert got.invalid_at == rows[1].valid_at + timedelta(days=1) and got.reason == "ended"
    erase(plain, PurgePlan(rows=[rows[0]], scrub_reasons=[]))
    assert vector_search(indexed, rows[0].vector, Filter().ids([rows[0].id]), 1) == []
    query = rand_vector(rng)
    assert ids(vector_search(indexed, query, Filter(), 30)) == ids(vector_search(plain, query, Filter(), 30))
    assert indexed.read_index.rows == 19


def test_a_catch_up_diffs_only_what_other_writers_added_or_changed(pair: tuple[MemoryStore, MemoryStore]) -> None:
    """Another process's commit is read from the fragments it added, not by diffing every row of the table: on a
    shared store, where every writer's commit sends the others to catch up, a diff of the whole table made each read
    slower the longer the store's history (issue 48)."""
    from chronomem.storage.portable import PurgePlan, erase

    indexed, plain = pair
    rng = random.Random(12)
    for _ in range(10):
        indexed.add(make_rows(rng, 5))  # ten commits: ten fragments
    plain.add(make_rows(rng, 3))
    query = rand_vector(rng)
    assert ids(vector_search(indexed, query, Filter(), 60)) == ids(vector_search(plain, query, Filter(), 60))
    arrived = make_rows(rng, 2)
    plain.add(arrived)
    assert ids(vector_search(indexed, arrived[0].vector, Filter(), 60)) == ids(vector_search(plain, arrived[0].vector, Filter(), 60))
    assert indexed.read_index.rows_diffed == 2
    target = next(r for r in arrived if r.expired_at is None)
    plain.upsert([MemoryStore.expired(target, now=target.created_at + timedelta(seconds=1), reason="other")])
    [(got, _)] = vector_search(indexed, target.vector, Filter().ids([target.id]), 1)
    assert got.expired_at == target.created_at + timedelta(seconds=1) and got.reason == "other"
    assert indexed.read_index.rows_diffed == 1  # the row Lance wrote again, in a fragment of its own
    plain.optimize()  # compaction rewrites the fragments: every row is read once more, none taken for new
    assert ids(vector_search(indexed, query, Filter(), 60)) == ids(vector_search(plain, query, Filter(), 60))
    assert indexed.read_index.rows == 55
    erase(plain, PurgePlan(rows=[arrived[1]], scrub_reasons=[]))  # a row gone: the count says so, the table is read
    assert vector_search(indexed, arrived[1].vector, Filter().ids([arrived[1].id]), 1) == []
    assert ids(vector_search(indexed, query, Filter(), 60)) == ids(vector_search(plain, query, Filter(), 60))
    assert indexed.read_index.rows == 54


def test_slot_keys_are_lancedbs(pair: tuple[MemoryStore, MemoryStore]) -> None:
    indexed, plain = pair
    rng = random.Random(13)
    rows = make_rows(rng, 40)
    facts = [r.copy(kind="fact", subject=rng.choice(["api", "db", None]), predicate=rng.choice(["port", "owner"]))
             for r in rows[:30]]
    indexed.add(facts + rows[30:])
    plain.add(make_rows(rng, 2))  # the index catches up first
    for flt in filters():
        assert indexed.slot_keys(flt) == plain.slot_keys(flt), flt.sql()
    assert indexed.read_index.slot_keys(Filter().kinds(["fact"])) == {(s, p) for s in ("api", "db") for p in ("port", "owner")}


def test_filters_it_cannot_evaluate_go_to_lancedb(pair: tuple[MemoryStore, MemoryStore]) -> None:
    indexed, plain = pair
    rng = random.Random(5)
    fact = make_rows(rng, 1)[0].copy(kind="fact", subject="api", predicate="port", object="8080", expired_at=None)
    indexed.add([fact] + make_rows(rng, 20))
    slot = Filter().slot("api", "port")
    assert indexed.read_index.mask(slot) is None
    assert ids(vector_search(indexed, fact.vector, slot, 5)) == [fact.id] == ids(vector_search(plain, fact.vector, slot, 5))


def test_a_table_that_outgrows_the_index_is_searched_by_lancedb(tmp_path: Path) -> None:
    small = open_store(tmp_path / "s", DIM, "test", read_index_rows=10)
    assert small.wait_for_read_index()
    rng = random.Random(6)
    rows = make_rows(rng, 25)
    small.add(rows[:8])
    assert small.read_index is not None and small.read_index.rows == 8
    small.add(rows[8:])
    assert small.read_index is None  # dropped before it copied rows beyond its limit
    query = rows[3].vector
    found = vector_search(small, query, Filter(), 1)
    assert ids(found) == [rows[3].id]
    assert small.read_index is None
    reopened = open_store(tmp_path / "s", DIM, "test", read_index_rows=10)
    assert not reopened.wait_for_read_index()  # too big to build: LanceDB answers
    assert ids(vector_search(reopened, query, Filter(), 1)) == [rows[3].id]


def test_folding_changed_rows_and_postings_keeps_answers(pair: tuple[MemoryStore, MemoryStore], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readindex, "MAX_OVERRIDES", 5)
    monkeypatch.setattr(readindex, "TAIL_FOLD", 40)
    monkeypatch.setattr(readindex, "MAX_CHUNKS", 3)
    monkeypatch.setattr(readindex, "MAX_BUILT", 7)  # searches returning more rows than it keeps made
    indexed, plain = pair
    rng = random.Random(8)
    rows = make_rows(rng, 60)
    for start in range(0, 60, 6):
        indexed.add(rows[start : start + 6])
    indexed.upsert([r.copy(invalid_at=r.valid_at + timedelta(days=1 + i), reason=f"r{i}") for i, r in enumerate(rows[:12])])
    assert not indexed.read_index._overrides or len(indexed.read_index._overrides) <= 5
    for r in rows[:12:3]:
        [(got, _)] = vector_search(indexed, r.vector, Filter().ids([r.id]), 1)
        assert got.reason == next(x.reason for x in plain.find(Filter().ids([r.id])))
    for _ in range(3):
        query = rand_vector(rng)
        assert ids(vector_search(indexed, query, Filter(), 12)) == ids(vector_search(plain, query, Filter(), 12))
    for word in WORDS:
        assert set(ids(text_search(indexed, word, Filter(), 100))) == {r.id for r in rows if word in r.content.split()}


def test_settings_read_index_rows() -> None:
    assert Settings.from_env(store="/tmp/x", environ={}).read_index_rows == DEFAULT_READ_INDEX_ROWS
    assert Settings.from_env(store="/tmp/x", environ={"CHRONOMEM_READ_INDEX_ROWS": "0"}).read_index_rows == 0
    assert Settings.from_env(store="/tmp/x", environ={"CHRONOMEM_READ_INDEX_ROWS": "5e3"}).read_index_rows == 5000
    assert Settings.from_env(store="/tmp/x", environ={"CHRONOMEM_READ_INDEX_ROWS": "lots"}).read_index_rows == DEFAULT_READ_INDEX_ROWS
    assert Settings.from_env(store="/tmp/x", environ={"CHRONOMEM_READ_INDEX_ROWS": "-4"}).read_index_rows == 0


def test_a_built_index_and_later_writes_search_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build reads the table in batches whose postings go straight into the sorted block (a small
    last batch and later writes go to the tail): a term's matches are the same wherever they live."""
    monkeypatch.setattr(readindex, "BUILD_BATCH", 1100)  # batches of 1100, 1100, 200
    plain = open_store(tmp_path / "s", DIM, "test", read_index_rows=0)
    rng = random.Random(10)
    rows = make_rows(rng, 2500)
    plain.add(rows[:2400])
    indexed = open_store(tmp_path / "s", DIM, "test", read_index_rows=10_000)
    assert indexed.wait_for_read_index()
    for start in range(2400, 2500, 20):
        indexed.add(rows[start : start + 20])
    for word in WORDS:
        expected = {r.id for r in rows if word in r.content.split()}
        assert set(ids(text_search(indexed, word, Filter(), 2500))) == expected, word
    query = rand_vector(rng)
    assert ids(vector_search(indexed, query, Filter(), 25)) == ids(vector_search(plain, query, Filter(), 25))


def test_a_failed_build_leaves_lancedb_answering_without_retrying(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    attempts = []

    def broken(*args: object, **kwargs: object) -> None:
        attempts.append(args)
        raise OSError("disk went away")

    monkeypatch.setattr(readindex.ReadIndex, "build", broken)
    store = open_store(tmp_path / "s", DIM, "test", read_index_rows=1_000)  # small: built (and failing) at open
    rows = make_rows(random.Random(11), 10)
    store.add(rows)
    assert not store.wait_for_read_index()
    assert ids(vector_search(store, rows[2].vector, Filter().ids([rows[2].id]), 1)) == [rows[2].id]
    assert not store.wait_for_read_index()
    assert len(attempts) == 1
    said = [r for r in caplog.records if r.levelname == "WARNING" and "read index could not be built" in r.getMessage()]
    assert len(said) == 1 and "disk went away" in said[0].getMessage()  # every search slower: not in silence


def test_once_the_index_answers_lancedb_keeps_only_a_small_cache(tmp_path: Path) -> None:
    """A table too big to be copied at open is searched by LanceDB first (its index caches fill); once the
    copy is built the table is reopened on a session with a small index cache, and everything still works."""
    plain = open_store(tmp_path / "s", DIM, "test", read_index_rows=0)
    rng = random.Random(12)
    rows = make_rows(rng, OPEN_BUILD_ROWS + 100)
    plain.add(rows)
    indexed = open_store(tmp_path / "s", DIM, "test", read_index_rows=10_000)
    assert indexed.read_index is None
    first_session = indexed._session
    query = rand_vector(rng)
    assert ids(vector_search(indexed, query, Filter(), 10)) == ids(vector_search(plain, query, Filter(), 10))
    assert indexed.wait_for_read_index()
    assert indexed._session is not first_session
    fact = rows[0].copy(id=new_id(), kind="fact", subject="api", predicate="port", object="8080", expired_at=None)
    indexed.add([fact])
    slot = Filter().slot("api", "port")  # LanceDB answers this one, on the reopened table
    assert ids(vector_search(indexed, fact.vector, slot, 5)) == [fact.id]
    assert indexed._session.size_bytes <= LANCE_CACHE_BEHIND_INDEX


def test_a_search_the_index_fails_is_answered_by_lancedb(pair: tuple[MemoryStore, MemoryStore]) -> None:
    indexed, plain = pair
    rng = random.Random(13)
    rows = make_rows(rng, 60)
    indexed.add(rows)
    indexed.read_index._dense._file.close()  # the spilled float32 rows can no longer be read
    query = rand_vector(rng)
    assert ids(vector_search(indexed, query, Filter(), 10)) == ids(vector_search(plain, query, Filter(), 10))
    assert indexed.read_index is None
    assert not indexed.wait_for_read_index(), "no rebuild loop: LanceDB answers from now on"


def test_a_live_slice_kept_for_later_moments_is_right_at_every_moment_and_after_writes(
    pair: tuple[MemoryStore, MemoryStore],
) -> None:
    indexed, plain = pair
    rng = random.Random(11)
    rows = make_rows(rng, 300)
    indexed.add(rows[:200])
    index = indexed.read_index
    assert index is not None
    reused, appended = 0, 200
    previous = None
    for step in range(0, 24 * 100, 7):  # hour by hour across every row's times, forwards as recall's `now` goes
        moment = T0 + timedelta(hours=step)
        flt = Filter().live(moment, moment).projects(["alpha", "beta"])
        keep = index.mask(flt)
        assert keep is not None and keep.tolist() == index._evaluate(flt.ops).tolist(), moment
        reused += keep is previous
        previous = keep
        if step % (24 * 10) < 7 and appended < 300:  # writes between moments are seen at once: a kept slice
            indexed.add(rows[appended : appended + 10])  # evaluates only the rows appended since, at the new moment
            appended += 10
            query = rows[appended - 5].vector
            assert ids(vector_search(indexed, query, flt, 10)) == ids(vector_search(plain, query, flt, 10))
        if step == 24 * 55:  # a change to a row held (its validity closed) drops what is kept
            closed = indexed.get(rows[3].id)
            assert closed is not None
            indexed.upsert([closed.copy(invalid_at=moment - timedelta(days=1))])
    assert reused > 0 and appended == 300  # the span between two rows' times was used
    with pytest.raises(ValueError):
        keep[0] = not keep[0]  # callers cannot change a kept mask


def test_a_kept_slice_takes_in_appended_rows_at_the_moments_their_times_say(
    pair: tuple[MemoryStore, MemoryStore],
) -> None:
    indexed, _ = pair
    rng = random.Random(5)
    old = make_rows(rng, 50)
    for row in old:  # every row held settled long before the moments asked: a kept slice spans all of them
        row.invalid_at = row.expired_at = None
    indexed.add(old)
    index = indexed.read_index
    assert index is not None
    now = T0 + timedelta(days=200)
    flt = lambda at: Filter().live(at, at).projects(["alpha", "beta", "gamma"])  # noqa: E731
    assert index.mask(flt(now)) is index.mask(flt(now + timedelta(minutes=1)))  # kept
    later, recorded = make_rows(rng, 2)
    later.invalid_at = later.expired_at = recorded.invalid_at = recorded.expired_at = None
    later.valid_at, later.created_at = now + timedelta(hours=1), now  # holds from an hour on
    recorded.valid_at, recorded.created_at = now - timedelta(days=1), now + timedelta(hours=2)  # recorded later
    indexed.add([later, recorded])
    for minutes in (2, 30, 61, 90, 121, 180):
        at = now + timedelta(minutes=minutes)
        keep = index.mask(flt(at))
        assert keep is not None and keep.tolist() == index._evaluate(flt(at).ops).tolist(), minutes
        held = {index._ids[row] for row in keep.nonzero()[0]}
        assert (later.id in held, recorded.id in held) == (minutes > 60, minutes > 120), minutes


def test_adjacent_chunks_are_the_nearest_of_the_same_project_close_in_time_and_alike(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s", DIM, "test", read_index_rows=10_000)
    assert store.wait_for_read_index()
    base = [1.0] + [0.0] * (DIM - 1)
    alike = [0.9, 0.3] + [0.0] * (DIM - 2)
    unlike = [0.0, 0.0, 1.0] + [0.0] * (DIM - 3)

    def row(project: str, kind: str, minutes: float, vector: list[float], expired: bool = False) -> MemoryRecord:
        at = T0 + timedelta(minutes=minutes)
        return MemoryRecord(
            id=new_id(), kind=kind, project=project, content=f"{project} {kind} at {minutes}",  # type: ignore[arg-type]
            valid_at=at, created_at=at, expired_at=at + timedelta(minutes=1) if expired else None,
            vector=vector, embed_model="test",
        )

    first = row("alpha", "chunk", 0, base)
    fact = row("alpha", "fact", 0.5, base)  # derived rows and other projects' chunks are passed over
    other = row("beta", "chunk", 1, base)
    second = row("alpha", "chunk", 2, alike)
    third = row("alpha", "chunk", 3, unlike)  # next to `second`, but about something else
    late = row("alpha", "chunk", 3 + 120, alike)  # next to `third`, two hours on: another session
    gone = row("alpha", "chunk", 3 + 121, alike, expired=True)
    last = row("alpha", "chunk", 3 + 122, alike)  # its neighbour before is `gone`, outside the slice
    for record in (first, fact, other, second, third, late, gone, last):
        store.add([record])
    now = T0 + timedelta(days=1)
    flt = Filter().live(now, now)
    ids = [r.id for r in (first, fact, other, second, third, late, last)]
    found = Search(store, flt).adjacent(ids, timedelta(hours=1), 0.4)
    assert found == {first.id: (second.id,), second.id: (first.id,)}
    assert Search(store, Filter().live(now, now).projects(["beta"])).adjacent(ids, timedelta(hours=1), 0.4) == {}
    everything = Search(store, Filter()).adjacent(ids, timedelta(hours=1), 0.4)
    assert everything[last.id] == (gone.id,)  # in a slice that holds it, the expired chunk is the neighbour
    assert everything[late.id] == (gone.id,)
    plain = open_store(tmp_path / "s", DIM, "test", read_index_rows=0)
    assert Search(plain, flt).adjacent(ids, timedelta(hours=1), 0.4) == {}  # row order is known to the read index only
