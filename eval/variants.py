"""Which queries a ranking variant wins and loses against another, on each split.

`python -m eval.devmem --rankers MODULE:LIST` keeps every ranker's answers per query
(`ranker_queries` in its JSON). A change to ranking is taken only if it helps on dev and on
devmem_validation, and a macro figure hides what moved: this lists, for two of the rankers, the
queries whose first answer became right (won) or wrong (lost), by type, with the question and both first
answers, so the losses can be read before the change is kept.

    python -m eval.variants RESULT.json [RESULT.json ...] --base base --variant restate [--type current]

Each result file is read with the queries and notes of the data set it names (`args.data`).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.common import read_jsonl
from eval.metrics import top1_in


@dataclass(frozen=True)
class Change:
    qid: str
    type: str
    query: str
    won: bool  # the variant's first answer is right and the base's is not (else the reverse)
    base: str | None  # the first answer's text
    variant: str | None


def changes(result: dict[str, Any], queries: dict[str, dict[str, Any]], notes: dict[str, str], base: str,
            variant: str) -> list[Change]:
    """The queries where exactly one of `base` and `variant` has a right first answer (a gold note)."""
    answers = result.get("ranker_queries") or {}
    missing = [name for name in (base, variant) if name not in answers]
    if missing:
        kept = ", ".join(answers) or "none"
        raise ValueError(f"no answers kept for {', '.join(missing)}; rankers in the file: {kept}")
    out = []
    for qid, base_ranking in answers[base].items():
        query = queries.get(qid)
        if query is None or not query.get("gold_ids"):
            continue  # abstention questions have no right answer to win or lose
        variant_ranking = answers[variant].get(qid) or []
        won = top1_in(variant_ranking, query["gold_ids"])
        if top1_in(base_ranking, query["gold_ids"]) == won:
            continue
        first = (notes.get(r[0]) if r else None for r in (base_ranking, variant_ranking))
        out.append(Change(qid, query["type"], query["query"], won, *first))
    return out


def report(path: Path, base: str, variant: str, only: str | None = None) -> str:
    """A split's wins and losses for `variant` against `base`, counted by type, then listed."""
    result = json.loads(path.read_text(encoding="utf-8"))
    data = Path(result["args"]["data"])
    queries = {q["qid"]: q for q in read_jsonl(data / "queries.jsonl")}
    notes = {w["id"]: w["content"] for w in read_jsonl(data / "writes.jsonl")}
    found = [c for c in changes(result, queries, notes, base, variant) if only is None or c.type == only]
    won, lost = Counter(c.type for c in found if c.won), Counter(c.type for c in found if not c.won)
    lines = [f"## {data.name}: {variant} against {base}", ""]
    lines += [f"- {t}: +{won[t]} / -{lost[t]}" for t in sorted(won.keys() | lost.keys())] or ["- no first answer moved"]
    for c in sorted(found, key=lambda c: (c.won, c.type, c.qid)):
        lines += ["", f"{'won' if c.won else 'lost'} {c.qid} ({c.type}) {c.query}",
                  f"    {base}: {c.base}", f"    {variant}: {c.variant}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.variants", description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", type=Path, help="eval.devmem JSON files written with --rankers")
    parser.add_argument("--base", required=True, help="the ranker to compare against")
    parser.add_argument("--variant", required=True, help="the ranker whose wins and losses are listed")
    parser.add_argument("--type", dest="only", help="only this query type (current, as_of, multi_hop, ...)")
    args = parser.parse_args(argv)
    try:
        print("\n\n".join(report(path, args.base, args.variant, args.only) for path in args.results))
    except (OSError, ValueError, KeyError) as error:
        parser.exit(2, f"eval.variants: {error}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
