"""A note with no facts that gives a slot the project already has a new value: the fact it implies. Pure functions.

A calling model skips facts on some notes (issue #44), and the rules read no pattern in most sentences, yet such
a note often says a new value of a slot another note filled: "peak memory of the importer went from 1273 MB to
1484 MB" when (`peak memory of the importer`, `latest_measurement`) holds `2223 MB`. Left alone, the older value
stays current in its slot and outranks the note. A sentence restates a slot when

- it is a plain statement (`extract_rules.statement_body`: it does not ask, hedge, plan, report or negate);
- the note reads like the slot's fact (their embeddings' cosine ≥ `RESTATES_FACT`);
- it (or the sentence before it) names the slot's thing outside the values it states: the subject's words that the
  note stating the slot's value said (a model adds words around a name: `the feeds module` for "feeds"), for a slot
  about the project as a whole the predicate's words; the `carts` inside `carts-backend` names nothing;
- it states exactly one value of the slot's value kind (`records.value_kind`: a port, a version, a size, a path,
  a host, an identifier, a person or team) other than the slot's value. Free text and plain words have no shape
  to tell a value by, so slots holding them are never restated.

A note that says the words of the note stating the slot's value around another value (`records.value_in_place`:
"- Tool: `uv run --frozen pyright`" after "- Tool: `uv run pyright`", a line of an agent file edited in place)
restates it too: the words around the value are how that note named the thing, whatever they are; unless it asks.

Of the slots a note restates, one whose current value the note also names wins ("from A to B"); otherwise there
must be only one. Nothing here reads the store: `stage_rules` finds the candidate slots and writes the fact.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from chronomem.consolidate.extract_rules import asks, split_sentences, statement_body
from chronomem.facts import phrase_words, subject_form
from chronomem.records import same_value, value_in_place, value_kind, values_of_kind
from chronomem.search.terms import STOP_WORDS

#: Value kinds with no shape: a slot holding one is never restated from prose.
SHAPELESS_KINDS = frozenset({"text", "word"})


#: How close a note must read to the slot's fact (cosine of their embeddings) to restate it. Fitted on the dev split's
#: noisy agent: each note the rules above let through, against each slot they matched, with the truth from the data's
#: slots. The right ones read ≥ 0.63 like the fact, the wrong ones (a bug report naming the module, "the billing
#: module lives in …" for the analytics module's path) ≤ 0.58; devmem_validation: right ≥ 0.59, wrong ≤ 0.51.
RESTATES_FACT = 0.60


@dataclass(frozen=True)
class SlotView:
    """What a restatement is checked against: the slot's key, its one live value, and its thing's words."""

    key: tuple[str, str]
    value: str
    words: tuple[str, ...]
    stated_in: str = ""  # the text of the note that stated the value


@dataclass(frozen=True)
class SlotClue:
    """What ties a fact-less note to a slot before its value is read: the slot's thing's words (`thing_words`) and
    the text of the note that stated its value."""

    words: tuple[str, ...]
    stated_in: str = ""


@dataclass(frozen=True)
class Restatement:
    """A note's new value for a slot; `names_old` when the note also names the value it replaces."""

    slot: tuple[str, str]
    value: str
    names_old: bool


_WORD = re.compile(r"\w+")


def said_words(text: str) -> set[str]:
    """The words a text says, punctuation off (`feeds.` says `feeds`, `invites-server` says `invites` and `server`)."""
    return set(_WORD.findall(text.lower()))


def content_words(phrase: str) -> list[str]:
    return [w for w in _WORD.findall(phrase.lower()) if w not in STOP_WORDS]


def names_thing(words: Sequence[str], said: set[str]) -> bool:
    """Every one of a thing's words (`thing_words`) is said."""
    return bool(words) and all(w in said for w in words)


def thing_words(subject: str, predicate: str, project: str, stated_in: str = "") -> list[str]:
    """The words a note must say to be about a slot: its subject's, or for the project itself its predicate's; only
    those the note that stated the slot's value says (`stated_in`), when it says any: a model adds words around a
    name (`the analytics module` for "analytics"), and `module` alone would name every module."""
    form = subject_form(subject, project)
    words = content_words(predicate) if form == subject_form(project, project) else content_words(form)
    said = said_words(stated_in)
    grounded = [w for w in words if w in said]
    return grounded or words


def mentions_slot(note: str, words: Sequence[str]) -> bool:
    """Whether a note says a slot's thing (`thing_words`) at all: a cheap first cut before `restated_value`."""
    return bool(words) and names_thing(words, said_words(note))


def _stated(body: str, kind: str) -> list[str]:
    """The values of `kind` a sentence states, as written there (case kept)."""
    out: list[str] = []
    for value in values_of_kind(body, kind):
        found = re.search(re.escape(value), body, flags=re.IGNORECASE)
        out.append(found.group(0) if found else value)
    return out


def restated_value(
    sentence: str, slot: SlotView, project: str, before: str = ""
) -> tuple[str, bool] | None:
    """(new value, whether the sentence names the slot's value too) when `sentence` restates the slot, else None. The
    thing may be named in the sentence `before` it instead ("Had to change invites-server's port. New port: 8663.")."""
    subject, current, words = slot.key[0], slot.value, slot.words
    kind = value_kind(current)
    if kind in SHAPELESS_KINDS:
        return None
    body = statement_body(sentence)
    if body is None:
        return None
    own = set(phrase_words(subject)) | set(phrase_words(project))
    stated = [v for v in _stated(body, kind) if not set(phrase_words(v)) <= own]  # the thing's own name is no value of it
    new: list[str] = []
    for value in stated:
        if not same_value(value, current) and not any(same_value(value, seen) for seen in new):
            new.append(value)
    if len(new) != 1:
        return None
    rest = body
    for value in stated:
        rest = re.sub(re.escape(value), " ", rest, flags=re.IGNORECASE)
    if not words:
        return None
    if not names_thing(words, said_words(rest)) and not names_thing(words, said_words(before)):
        return None
    return new[0], any(same_value(value, current) for value in stated)


def restatements(note: str, slots: Sequence[SlotView], project: str) -> list[Restatement]:
    """Every (slot, new value) a note gives: in place of the value in the words of the note that stated it
    (`value_in_place`), else in a sentence that names the slot's thing."""
    out: list[Restatement] = []
    in_place: dict[tuple[str, str], str] = {}
    # a question in the stating note's words ("- Tool: `uv run --frozen pyright`?") asks whether it changed
    asked = asks(note)
    for slot in slots:
        value = value_in_place(slot.stated_in, note, slot.value) if slot.stated_in and not asked else None
        if value is not None:  # the place gives the value its shape: free text too ("- Tool: `uv run pyright`")
            in_place[slot.key] = value
            out.append(Restatement(slot.key, value, False))
    sentences = split_sentences(note)
    for i, sentence in enumerate(sentences):
        for slot in slots:
            if slot.key in in_place:
                continue
            found = restated_value(sentence, slot, project, sentences[i - 1] if i else "")
            if found is not None:
                out.append(Restatement(slot.key, found[0], found[1]))
    return out


def pick(found: Sequence[Restatement]) -> Restatement | None:
    """The one restatement to act on: the slot whose old value the note names, else the only slot named; None
    when the note points at two slots alike, or gives one slot two values."""
    pool = [r for r in found if r.names_old] or list(found)
    slots = {r.slot for r in pool}
    if len(slots) != 1:
        return None
    values: list[str] = []
    for r in pool:
        if not any(same_value(r.value, v) for v in values):
            values.append(r.value)
    return pool[0] if len(values) == 1 else None
