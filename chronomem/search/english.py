"""English word frequencies (wordfreq's lists) as compact arrays kept in the cache folder: how common a word
is, and whether English has it at all.

Ranking asks this of every query word (`rank.gate_names`: is `dashmap` a coined name? is `golden` common?), so
a starting server needs it before its first recall. Importing wordfreq (with ftfy, langcodes and regex) and
reading its lists costs ~0.5 s of CPU held under the GIL, beside the main thread's imports; the arrays here load
in milliseconds. They are made once from wordfreq's own lists and written to CHRONOMEM_CACHE_DIR,
keyed by the installed wordfreq, so an upgrade makes them again.

A plain word (`[a-z]+`, what most query words are) is answered from the arrays alone; any other word (digits,
other scripts, compounds) goes through wordfreq's own steps, importing it on first need.
tests/search/test_english.py holds both answers to wordfreq's.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import tempfile
import threading
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

from chronomem.config import default_cache_root

log = logging.getLogger(__name__)

#: The zipf frequency (log10 of occurrences per billion words) from which a word is part of English's common
#: vocabulary: 3, once per million words, the zipf scale's own line between low- and high-frequency words
#: (van Heuven et al., 2014). wordfreq's "small" English list holds exactly the words at or above it.
COMMON_ZIPF = 3.0

#: Changes whenever what the cached arrays hold changes, so an old file is never read.
FORMAT = 1

#: Words wordfreq's English tokenizer leaves as they are (one token, nothing folded or smashed).
_PLAIN = re.compile(r"[a-z]+\Z")

#: Zipf 0 as a frequency (once per billion words): `zipf_frequency`'s default floor.
_ZIPF_ZERO = 1e-9


def word_key(word: str) -> int:
    """A 64-bit hash of the word's UTF-8 bytes that is the same in every process (Python's own `hash` is not); two
    of the list's words sharing one (odds ~3e-9) would only rate one by the other's frequency."""
    return int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little", signed=True)


@dataclass(frozen=True)
class WordLists:
    """wordfreq's "best" English list (its large one: 321k words) as sorted keys beside each word's bucket
    (centibels below the top), and the plain words of its "small" list beside their zipf frequency (x100)."""

    best_keys: Any
    best_ranks: Any
    small_keys: Any
    small_zipf: Any

    def frequency(self, word: str) -> float | None:
        """The word's frequency in the best list (`wordfreq.cB_to_freq` of its bucket), None when it lacks it."""
        at = _find(self.best_keys, word_key(word))
        return None if at is None else float(10.0 ** (-int(self.best_ranks[at]) / 100.0))

    def small_list_zipf(self, plain_word: str) -> float:
        """`zipf_frequency(plain_word, "en", wordlist="small")`, for a plain word."""
        at = _find(self.small_keys, word_key(plain_word))
        return 0.0 if at is None else int(self.small_zipf[at]) / 100.0


def _find(keys: Any, key: int) -> int | None:
    at = int(keys.searchsorted(key))
    return at if at < len(keys) and int(keys[at]) == key else None


@lru_cache(maxsize=65536)
def word_zipf(word: str) -> float:
    """wordfreq's zipf frequency of one English word in its "small" list (0 below the list's floor, COMMON_ZIPF)."""
    if _PLAIN.match(word):
        return word_lists().small_list_zipf(word)
    from wordfreq import zipf_frequency

    return float(zipf_frequency(word, "en", wordlist="small"))


def common_word(word: str) -> bool:
    """Whether English uses the single word `word` commonly (`tv`, `golden`, `john`): such a word a memory may
    say in other words; a rare one (`dashmap`, `kafka`, `storybook`) names something. Only for single words:
    wordfreq rates a compound by its parts, so `billing-api` would look as common as `sign-off`."""
    return word_zipf(word) >= COMMON_ZIPF


@lru_cache(maxsize=65536)
def coined_word(word: str) -> bool:
    """Whether `word` is no English word at all — none of wordfreq's corpora has it at a measurable rate
    (`dashmap`, `pnpm`; not `cached`, `linter`): written in lower case, it can only be a name.

    Exactly `wordfreq.zipf_frequency(word, "en") == 0.0`, by `wordfreq._word_frequency`'s steps (tokens, digits
    smashed and rated apart, frequencies combined, rounded) over the best list; a plain word is its own one token."""
    lists = word_lists()
    if _PLAIN.match(word):
        return _rates_zero([lists.frequency(word)])
    from wordfreq import digit_freq, lossy_tokenize, smash_numbers

    freqs: list[float | None] = []
    for token in lossy_tokenize(word, "en"):
        smashed = smash_numbers(token)
        freq = lists.frequency(smashed)
        freqs.append(freq * digit_freq(token) if freq is not None and smashed != token else freq)
    return _rates_zero(freqs)


def _rates_zero(freqs: list[float | None]) -> bool:
    """Whether tokens of these frequencies (None: not in the list) make a word of zipf 0, as wordfreq rounds it."""
    if not freqs or None in freqs:
        return True
    freq = max(1.0 / sum(1.0 / f for f in freqs if f is not None), _ZIPF_ZERO)
    rounded = round(freq, math.floor(-math.log(freq, 10)) + 3)
    return round(math.log(rounded, 10) + 9, 2) == 0.0  # wordfreq.freq_to_zipf


_lock = threading.Lock()
_loaded: list[WordLists] = []


def word_lists() -> WordLists:
    """The arrays: from the cache folder when they are there, else made from wordfreq (and written there)."""
    if _loaded:
        return _loaded[0]
    with _lock:  # the warm-up thread and a first query may both ask: one makes them
        if not _loaded:
            _loaded.append(_load_or_make(_cache_file()))
    return _loaded[0]


def _cache_file() -> Path | None:
    """The cache file for the installed wordfreq, named by its package file's size and time (no import)."""
    import importlib.util

    spec = importlib.util.find_spec("wordfreq")
    if spec is None or spec.origin is None:
        return None
    stat = Path(spec.origin).stat()
    key = f"{Path(spec.origin).resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{FORMAT}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return default_cache_root() / "wordlists" / f"english-{digest}.npz"


def _load_or_make(path: Path | None) -> WordLists:
    import numpy as np

    if path is not None and path.is_file():
        try:
            with np.load(path) as arrays:
                return WordLists(**{field.name: arrays[field.name] for field in fields(WordLists)})
        except (OSError, ValueError, KeyError):
            log.debug("the cached word lists at %s do not read; making them again", path, exc_info=True)
    lists = _make()
    if path is not None:
        try:
            _write(path, lists)
        except OSError:
            log.debug("could not keep the word lists in %s", path, exc_info=True)
    return lists


def _make() -> WordLists:
    import numpy as np
    from wordfreq import available_languages, read_cBpack, zipf_frequency

    best = read_cBpack(available_languages("best")["en"])
    count = sum(len(bucket) for bucket in best)
    keys = np.fromiter((word_key(w) for bucket in best for w in bucket), dtype=np.int64, count=count)
    ranks = np.fromiter((i for i, bucket in enumerate(best) for _ in bucket), dtype=np.int16, count=count)
    order = np.argsort(keys, kind="stable")
    small = sorted({w for bucket in read_cBpack(available_languages("small")["en"]) for w in bucket if _PLAIN.match(w)})
    small_keys = np.array([word_key(w) for w in small], dtype=np.int64)
    small_zipf = np.array([round(zipf_frequency(w, "en", wordlist="small") * 100) for w in small], dtype=np.uint16)
    small_order = np.argsort(small_keys, kind="stable")
    return WordLists(keys[order], ranks[order], small_keys[small_order], small_zipf[small_order])


def _write(path: Path, lists: WordLists) -> None:
    """Write the arrays under a temporary name beside `path`, then rename: readers never see half a file."""
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".npz", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, **{field.name: getattr(lists, field.name) for field in fields(WordLists)})
        os.replace(name, path)
    finally:
        Path(name).unlink(missing_ok=True)
