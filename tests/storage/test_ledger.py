"""The acknowledgement ledger's journal (storage/ledger.py): appended per write, folded on read, rewritten whole
when it has grown, readable after a torn append, and shared by processes writing one store."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

from chronomem.storage import ledger


def test_acknowledgements_are_appended_and_fold_to_the_newest(tmp_path: Path) -> None:
    for version in range(1, 21):
        ledger.acknowledge(tmp_path, version, version * 2, [f"id-{version}-a", f"id-{version}-b"])
    lines = ledger.ledger_path(tmp_path).read_bytes().splitlines()
    assert len(lines) == 20  # the first write wrote the ledger whole, every later one appended a line
    acked = ledger.read(tmp_path)
    assert acked is not None and (acked.version, acked.rows) == (20, 40)
    assert acked.recent_ids() == [f"id-{v}-{x}" for v in range(1, 21) for x in "ab"]
    assert acked.ids_after(18) == ["id-19-a", "id-19-b", "id-20-a", "id-20-b"]


def test_the_journal_is_rewritten_whole_once_it_has_grown(tmp_path: Path) -> None:
    line = len(json.dumps([1000, 1000, "2026-11-27T00:00:00+00:00", ["x" * 26]])) + 1
    writes = ledger.COMPACT_BYTES // line + 50
    for version in range(1, writes + 1):
        ledger.acknowledge(tmp_path, version, version, ["x" * 22 + f"{version:04d}"])
    size = ledger.ledger_path(tmp_path).stat().st_size
    assert size < ledger.COMPACT_BYTES // 2  # rewritten once on the way: only the last ~50 lines follow the ledger
    acked = ledger.read(tmp_path)
    assert acked is not None and acked.version == writes
    assert len(acked.recent) == ledger.RECENT_COMMITS and acked.recent[-1][1] == ["x" * 22 + f"{writes:04d}"]


def test_a_torn_last_line_is_skipped_and_the_next_write_still_lands(tmp_path: Path) -> None:
    ledger.acknowledge(tmp_path, 1, 1, ["first"])
    ledger.acknowledge(tmp_path, 2, 2, ["second"])
    with open(ledger.ledger_path(tmp_path), "ab") as handle:
        handle.write(b'[3,3,"2026-11-27T00:00:00+00:00",["thi')  # a crash mid-append: that write never returned
    acked = ledger.read(tmp_path)
    assert acked is not None and acked.version == 2 and acked.recent_ids() == ["first", "second"]
    ledger.acknowledge(tmp_path, 4, 4, ["fourth"])
    acked = ledger.read(tmp_path)
    assert acked is not None and acked.version == 4 and acked.recent_ids() == ["first", "second", "fourth"]


def test_a_ledger_written_whole_before_the_journal_is_read_and_continued(tmp_path: Path) -> None:
    before = {"version": 7, "rows": 9, "at": "2026-11-01T00:00:00+00:00", "recent": [[7, ["old"]]], "losses": [],
              "based": 0}
    ledger.ledger_path(tmp_path).write_text(json.dumps(before))  # one object, no newline at its end
    ledger._checked.pop(str(ledger.ledger_path(tmp_path)), None)
    acked = ledger.read(tmp_path)
    assert acked is not None and (acked.version, acked.rows, acked.recent_ids()) == (7, 9, ["old"])
    ledger.acknowledge(tmp_path, 8, 10, ["new"])
    ledger.acknowledge(tmp_path, 9, 11, ["newer"])
    acked = ledger.read(tmp_path)
    assert acked is not None and (acked.version, acked.rows) == (9, 11)
    assert acked.recent_ids() == ["old", "new", "newer"]


def test_a_file_that_does_not_parse_is_started_afresh(tmp_path: Path) -> None:
    ledger.ledger_path(tmp_path).write_text("not json at all\n")
    assert ledger.read(tmp_path) is None
    ledger.acknowledge(tmp_path, 3, 3, ["kept"])
    acked = ledger.read(tmp_path)
    assert acked is not None and acked.version == 3 and acked.recent_ids() == ["kept"]


def _writer(store: str, name: str, count: int) -> None:
    for n in range(count):
        ledger.acknowledge(Path(store), n, n, [f"{name}-{n}"])


def test_two_processes_appending_lose_no_acknowledgement(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")  # fresh processes: no shared `_checked`
    writers = [context.Process(target=_writer, args=(str(tmp_path), name, 100)) for name in ("a", "b")]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(120)
        assert writer.exitcode == 0
    acked = ledger.read(tmp_path)
    assert acked is not None
    assert sorted(acked.recent_ids()) == sorted(f"{name}-{n}" for name in "ab" for n in range(100))


def test_rebase_folds_the_journal_and_drops_newer_commits(tmp_path: Path) -> None:
    for version in range(1, 6):
        ledger.acknowledge(tmp_path, version, version, [f"id-{version}"])
    ledger.rebase(tmp_path, 3, 3, lost=["id-4"], lost_rows=1)
    assert len(ledger.ledger_path(tmp_path).read_bytes().splitlines()) == 1
    acked = ledger.read(tmp_path)
    assert acked is not None and (acked.version, acked.based) == (3, 3)
    assert acked.recent_ids() == ["id-1", "id-2", "id-3"] and acked.losses[-1]["ids"] == ["id-4"]
    ledger.acknowledge(tmp_path, 4, 4, ["again"])
    assert ledger.read(tmp_path).recent_ids()[-1] == "again"  # type: ignore[union-attr]
