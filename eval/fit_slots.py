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

from chronomem.consolidate.slots import identifiers, predicate_form, predicate_words, subject_form, subject_words
from chronomem.facts import slot_phrase
from chronomem.records import normalize_predicate, normalize_subject
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.fit_slots", description=__doc__.splitlines()[0])
    parser.add_argument("--data", action="append", default=None, help="a DevMem-format split (repeatable)")
    args = parser.parse_args(argv)
    embedder = make_embedder()
    for data in args.data or ["../shared/data/devmem"]:
        print(json.dumps(fit(resolve_data_dir(data), embedder), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
