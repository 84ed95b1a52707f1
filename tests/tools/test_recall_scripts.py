"""The lexical channel reads every script: a note in Hebrew, Arabic, Russian or Chinese (words apart) is
found by recall, through the real tool function, from one exact word of it — among English notes whose
meaning the English embedding model reads far better."""

from __future__ import annotations

import pytest

from chronomem.search.terms import terms
from chronomem.service import MemoryService
from chronomem.tools import recall, remember

NOTES = {
    "hebrew": ("השרת רץ על פורט 8080", "השרת"),
    "arabic": ("الخادم يعمل على المنفذ 8080", "الخادم"),
    "russian": ("Сервер Базы данных работает на порту 5432", "базы"),
    "chinese": ("服务器 运行 在 端口 9090", "服务器"),
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
@pytest.mark.parametrize("script", sorted(NOTES))
def test_recall_finds_a_note_by_an_exact_word_of_its_script(svc: MemoryService, script: str) -> None:
    for text in ENGLISH:
        remember(svc, text)
    ids = {name: remember(svc, note).id for name, (note, _) in NOTES.items()}
    _, word = NOTES[script]
    result = recall(svc, word)
    assert result.results, f"recall of {word!r} abstained: {result.message}"
    assert result.results[0].id == ids[script]
    assert "lexical" in result.results[0].channels
