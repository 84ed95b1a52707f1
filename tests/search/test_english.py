"""English word frequencies from the cached arrays: the same answers as wordfreq's, for plain words and the rest,
and a cache that a second process reads instead of wordfreq."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from wordfreq import available_languages, read_cBpack, zipf_frequency

from chronomem.search import english

ODD_WORDS = ["dashmap", "pnpm", "cached", "linter", "2024", "v1.2.3", "3.11", "billing-api", "sign-off", "k8s", "火",
             "kp", "", "don't", "café", "Golden", "TV", "naïve", "x", "zzz"]


@pytest.fixture(scope="module")
def sample() -> list[str]:
    listed = [w for bucket in read_cBpack(available_languages("best")["en"]) for w in bucket]
    small = [w for bucket in read_cBpack(available_languages("small")["en"]) for w in bucket]
    rng = random.Random(3)
    words = rng.sample(listed, 3000) + listed[:50] + listed[-50:] + rng.sample(small, 1000)
    words += [w + "qz" for w in words[:500]] + [w + "42" for w in words[:500]] + [w.upper() for w in words[:300]]
    return words + ODD_WORDS


def test_a_coined_word_is_exactly_one_wordfreq_rates_zero(sample: list[str]) -> None:
    """For the list's own words, words it lacks, digits (rated apart), compounds, other scripts and case."""
    assert [w for w in sample if english.coined_word(w) != (zipf_frequency(w, "en") == 0.0)] == []
    assert english.coined_word("dashmap") and not english.coined_word("linter") and english.coined_word("qzxv-frob")


def test_a_words_zipf_and_commonness_are_wordfreqs_small_list(sample: list[str]) -> None:
    wrong = [w for w in sample if english.word_zipf(w) != float(zipf_frequency(w, "en", wordlist="small"))]
    assert wrong == []
    assert english.common_word("golden") and english.common_word("tv") and not english.common_word("dashmap")
    assert not english.common_word("storybook")


def test_the_lists_are_kept_in_the_cache_folder_and_read_back_by_another_process(tmp_path: Path) -> None:
    """A second process answers from the file without importing wordfreq; a file that does not read is made
    again."""
    env = {**os.environ, "CHRONOMEM_CACHE_DIR": str(tmp_path)}
    probe = (
        "import json, sys\n"
        "from chronomem.search import english\n"
        "answers = [english.coined_word('dashmap'), english.coined_word('linter'), english.word_zipf('golden')]\n"
        "print(json.dumps({'answers': answers, 'wordfreq': 'wordfreq' in sys.modules}))\n"
    )

    def run() -> dict[str, object]:
        done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
        result: dict[str, object] = json.loads(done.stdout)
        return result

    first = run()
    files = list((tmp_path / "wordlists").glob("english-*.npz"))
    assert len(files) == 1 and first["wordfreq"] is True
    expected = [True, False, float(zipf_frequency("golden", "en", wordlist="small"))]
    assert first["answers"] == expected
    second = run()
    assert second == {"answers": expected, "wordfreq": False}
    files[0].write_bytes(b"not an npz file")
    assert run() == {"answers": expected, "wordfreq": True}
    assert run() == {"answers": expected, "wordfreq": False}
