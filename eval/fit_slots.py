"""Fit the slot matcher's thresholds: how alike two namings of one slot are, against two different slots.

For every slot of a DevMem-format split that holds a value, every way the noisy agent (eval/agent_style.py)
can name it — each subject alias with each predicate paraphrase — is a *naming*. Two namings of one slot
should resolve to one slot (a positive pair); two namings of different slots of one project must never
merge (a negative pair). For each candidate threshold this reports what consolidate/slots.py would do
with each pair, using its own rules: the normal forms (`subject_form`, `predicate_form`) first, then the
model's cosine between slot phrases, with different identifiers always distinct.

A threshold is taken from dev (the lowest at which no negative pair merges) and confirmed on the
validation splits; the README of consolidate/slots.py quotes the figures.

    python -m eval.fit_slots --data ../shared/data/devmem [--data ../shared/data/devmem_validation ...]
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from chronomem.consolidate.slots import (
    grounded_subject,
    identifiers,
    predicate_form,
    predicate_words,
    subject_form,
    subject_words,
)
from chronomem.facts import slot_phrase
from chronomem.records import normalize_predicate, normalize_subject, value_kind
from eval.agent_style import ENTITY_NOUN, PREDICATES, entity_aliases, project_aliases
from eval.common import make_embedder, read_jsonl, resolve_data_dir

#: The grid searched: (subject threshold, predicate threshold).
SUBJECT_THRESHOLDS = (0.60, 0.65, 0.70, 0.75, 0.80, 0.85, 0.90)
PREDICATE_THRESHOLDS = (0.50, 0.55, 0.60, 0.65, 0.70, 0.75, 0.80, 0.85)


def namings(project: str, slot: str) -> list[tuple[str, str]]:
    """Every (subject, predicate) the noisy agent may give `slot`, normalised as `remember` stores them."""
    stype, _, qualifier = slot.partition(":")
    paraphrases = PREDICATES.get(stype) or (stype.replace("_", " "), stype)
    if qualifier and stype in ENTITY_NOUN:
        subjects = entity_aliases(qualifier, ENTITY_NOUN[stype])
    else:
        subjects = project_aliases(project)
        if qualifier:
            facet = qualifier.replace("_", " ")
            paraphrases = tuple(f"{p} ({facet})" for p in paraphrases)
    return sorted({(normalize_subject(s), normalize_predicate(p)) for s, p in itertools.product(subjects, paraphrases)})


def _unit(texts: list[str], vectors: dict[str, Any]) -> np.ndarray:
    matrix = np.asarray([vectors[t] for t in texts], dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def fit(data: Path, embedder: Any) -> dict[str, Any]:
    by_project: dict[str, list[tuple[str, tuple[str, str]]]] = defaultdict(list)
    for chain in read_jsonl(data / "slots.jsonl"):
        if all(v is None for v in chain["values"]):
            continue
        for naming in namings(chain["project"], chain["slot"]):
            by_project[chain["project"]].append((chain["slot"], naming))
    words = sorted({w for items in by_project.values() for _, n in items for w in (subject_words(n[0]), predicate_words(n[1]))})
    vectors = dict(zip(words, embedder.embed(words), strict=True))
    grid = list(itertools.product(SUBJECT_THRESHOLDS, PREDICATE_THRESHOLDS))
    merged_pos = dict.fromkeys(grid, 0)
    merged_neg = dict.fromkeys(grid, 0)
    pos = neg = 0
    closest: list[tuple[float, float, str, str]] = []
    for project, items in by_project.items():
        subjects = [n[0] for _, n in items]
        predicates = [n[1] for _, n in items]
        s_forms = [subject_form(s, project) for s in subjects]
        p_forms = [predicate_form(p) for p in predicates]
        ids = [identifiers(s) for s in subjects]
        s_sims = _unit([subject_words(s) for s in subjects], vectors)
        s_sims = s_sims @ s_sims.T
        p_sims = _unit([predicate_words(p) for p in predicates], vectors)
        p_sims = p_sims @ p_sims.T
        for i, j in zip(*np.triu_indices(len(items), k=1), strict=True):
            same_slot = items[i][0] == items[j][0]
            pos += same_slot
            neg += not same_slot
            s_equal = s_forms[i] == s_forms[j]
            p_equal = p_forms[i] == p_forms[j]
            if not s_equal and ids[i] != ids[j]:
                continue
            if not p_equal and identifiers(predicates[i]) != identifiers(predicates[j]):
                continue
            ss = 1.0 if s_equal else float(s_sims[i, j])
            ps = 1.0 if p_equal else float(p_sims[i, j])
            for ts, tp in grid:
                if ss >= ts and ps >= tp:
                    merged_pos[(ts, tp)] += same_slot
                    merged_neg[(ts, tp)] += not same_slot
            if not same_slot and ss >= 0.7 and ps >= 0.6:
                closest.append((round(ss, 3), round(ps, 3), slot_phrase(*items[i][1]), slot_phrase(*items[j][1])))
    closest = sorted(set(closest), key=lambda c: -min(c[0], c[1]))
    return {
        "data": data.name,
        "positive_pairs": pos,
        "negative_pairs": neg,
        "grid": [
            {"subject": ts, "predicate": tp, "positive_merged": round(merged_pos[(ts, tp)] / max(pos, 1), 3),
             "negative_merged": merged_neg[(ts, tp)]}
            for ts, tp in grid
        ],
        "closest_negatives": closest[:20],
    }


#: Predicate floors tried for two namings whose grounded subjects are one and whose values are of one kind.
KIND_PREDICATE_THRESHOLDS = (0.0, 0.2, 0.3, 0.4, 0.5, 0.6, 0.75)


def fit_kinds(data: Path, embedder: Any) -> dict[str, Any]:
    """The rule with values: a naming whose subject, grounded in its note (`grounded_subject`), is another's and
    whose value is of the same kind (`value_kind`) merges at a lower predicate floor. Each naming is paired with
    a note of its slot's chain and that note's value (round robin), as an agent names the fact of that note."""
    writes = {row["id"]: row for row in read_jsonl(data / "writes.jsonl")}
    by_project: dict[str, list[tuple[str, tuple[str, str], str, str]]] = defaultdict(list)
    for chain in read_jsonl(data / "slots.jsonl"):
        stated = [(n, v) for n, v in zip(chain["note_ids"], chain["values"], strict=True) if v is not None]
        if not stated:
            continue
        for i, naming in enumerate(namings(chain["project"], chain["slot"])):
            note, value = stated[i % len(stated)]
            by_project[chain["project"]].append((chain["slot"], naming, writes[note]["content"], value))
    words = sorted({w for items in by_project.values() for _, n, _, _ in items for w in (subject_words(n[0]), predicate_words(n[1]))})
    vectors = dict(zip(words, embedder.embed(words), strict=True))
    merged_pos = dict.fromkeys(KIND_PREDICATE_THRESHOLDS, 0)
    merged_neg = dict.fromkeys(KIND_PREDICATE_THRESHOLDS, 0)
    pos = neg = 0
    wrong: dict[float, list[tuple[str, str]]] = defaultdict(list)
    for project, items in by_project.items():
        grounded = [grounded_subject(n[0], note, project) for _, n, note, _ in items]
        s_forms = [subject_form(n[0], project) for _, n, _, _ in items]
        p_forms = [predicate_form(n[1]) for _, n, _, _ in items]
        kinds = [value_kind(v) for _, _, _, v in items]
        s_ids = [identifiers(n[0]) for _, n, _, _ in items]
        p_ids = [identifiers(n[1]) for _, n, _, _ in items]
        s_unit = _unit([subject_words(n[0]) for _, n, _, _ in items], vectors)
        p_unit = _unit([predicate_words(n[1]) for _, n, _, _ in items], vectors)
        s_sims, p_sims = s_unit @ s_unit.T, p_unit @ p_unit.T
        for i, j in zip(*np.triu_indices(len(items), k=1), strict=True):
            same_slot = items[i][0] == items[j][0]
            pos += same_slot
            neg += not same_slot
            s_equal = s_forms[i] == s_forms[j] or grounded[i] == grounded[j]
            p_equal = p_forms[i] == p_forms[j]
            if (not s_equal and s_ids[i] != s_ids[j]) or (not p_equal and p_ids[i] != p_ids[j]):
                continue
            ss = 1.0 if s_equal else float(s_sims[i, j])
            ps = 1.0 if p_equal else float(p_sims[i, j])
            base = ss >= 0.80 and ps >= 0.75
            for t in KIND_PREDICATE_THRESHOLDS:
                if base or (s_equal and kinds[i] == kinds[j] != "text" and ps >= t):
                    merged_pos[t] += same_slot
                    merged_neg[t] += not same_slot
                    if not same_slot and len(wrong[t]) < 6:
                        wrong[t].append((slot_phrase(*items[i][1]) + " = " + items[i][3], slot_phrase(*items[j][1]) + " = " + items[j][3]))
    return {
        "data": data.name,
        "positive_pairs": pos,
        "negative_pairs": neg,
        "kind_rule": [
            {"predicate_floor": t, "positive_merged": round(merged_pos[t] / max(pos, 1), 3), "negative_merged": merged_neg[t],
             "examples_of_wrong_merges": wrong[t][:3]}
            for t in KIND_PREDICATE_THRESHOLDS
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.fit_slots", description=__doc__.splitlines()[0])
    parser.add_argument("--data", action="append", default=None, help="a DevMem-format split (repeatable)")
    args = parser.parse_args(argv)
    embedder = make_embedder()
    for data in args.data or ["../shared/data/devmem"]:
        print(json.dumps(fit(resolve_data_dir(data), embedder), indent=1))
        print(json.dumps(fit_kinds(resolve_data_dir(data), embedder), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
