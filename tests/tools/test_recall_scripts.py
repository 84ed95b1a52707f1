"""The lexical channel reads every script: a note in Hebrew, Arabic, Russian or Chinese (words apart) is
found by recall, through the real tool function, from one exact word of it — among English notes whose
meaning the English embedding model reads far better — whichever engine answers: the read index, or LanceDB's
own full-text index (the read index off), which reads the same `terms` column."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronomem.config import DEFAULT_READ_INDEX_ROWS, Settings
from chronomem.search.terms import terms
from chronomem.service import MemoryService
from chronomem.tools import recall, remember
from tests.conftest import model_dir

NOTES = {
    "hebrew": ("השרת רץ על פורט 8080", "השרת"),
    "arabic": ("الخادم يعمل على المنفذ 8080", "الخادم"),
    "russian": ("Сервер Базы данных работает на порту 5432", "базы"),
    "chinese": ("服务器 运行 在 端口 9090", "服务器"),
    "arabic, vowelled query": ("الخادم يعمل على المنفذ 8080", "الخادمُ"),
}
ENGLISH = [
    "The build uses uv and Python 3.12.",
    "Deploys go out on Tuesdays after the standup.",
    "The staging database host is db-staging.internal.",
    "Flaky test: test_upload_retry times out on CI.",
]


def test_words_of_every_script_are_terms() -> None:
    assert terms("השרת רץ על פורט 8080") == ["השרת", "רץ", "על", "פורט", "8080"]
    assert terms("الخادمُ يعمل") == ["الخادم", "يعمل"]  # a short vowel mark does not cut the word
    assert terms("Сервер БАЗЫ") == ["сервер", "базы"]  # case-folded, not stemmed: the stemmer is English's
    assert terms("服务器 在 端口") == ["服务器", "在", "端口"]  # a CJK word of one character counts
    assert terms("a café, ports") == ["cafe", "port"]  # English as before: single ASCII letters dropped, stemmed


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["read index", "LanceDB"])
def test_recall_finds_a_note_by_an_exact_word_of_its_script(tmp_path: Path, embedder, clock, engine: str) -> None:
    rows = DEFAULT_READ_INDEX_ROWS if engine == "read index" else 0
    settings = Settings(store_path=tmp_path / "store", model_path=model_dir(), project="proj", read_index_rows=rows)
    svc = MemoryService(settings, embedder=embedder, clock=clock)
    for text in ENGLISH:
        remember(svc, text)
    ids = {name: remember(svc, note).id for name, (note, _) in NOTES.items() if name != "arabic, vowelled query"}
    ids["arabic, vowelled query"] = ids["arabic"]
    assert (svc.store.read_index is not None) == (engine == "read index")
    for script, (_, word) in NOTES.items():
        result = recall(svc, word)
        assert result.results, f"recall of {word!r} abstained: {result.message}"
        assert result.results[0].id == ids[script], script
        assert "lexical" in result.results[0].channels, script
