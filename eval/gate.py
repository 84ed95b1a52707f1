"""The encoding gate on DevMem: how much noise each policy removes and what recall it costs (issue 26).

    python -m eval.gate run --data ../shared/data/devmem --policy record   # one replay (~7 min), signals + scores
    python -m eval.gate report                                             # eval/results/gate.md from every run

`run` replays one split in text mode exactly as eval/devmem.py does (its `Replay`, consolidator after every write,
no ablation rankers) with CHRONOMEM_GATE set to the policy, then reads back, for every write, the gate's signals
and decision from the chunk's row (a skipped write has no row). The data's own labels (`kind`: noise, fact, bug,
fix, retraction) are used only here, to score: *noise removed* is the share of noise notes the policy skipped or
demoted, *notes lost* the share of the other notes it did, and the DevMem figures say what recall it cost.

`report` also sweeps the thresholds over the `record` run's signals (which hold what every write would score),
so a threshold pair can be judged before a full replay; the default is picked on dev and checked on validation.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from eval.common import RESULTS_DIR, make_embedder, median_ms, read_jsonl, resolve_data_dir, temp_service

KEPT_FIGURES = (
    "macro_hit@1", "current_hit@1", "stale_leak_changed", "as_of_accuracy", "multi_hop_both@5", "history_kendall_tau",
    "identifier_hit@1", "paraphrase_hit@1", "abstain_recall", "abstain_precision", "isolation_error",
)


def run(data: str, policy: str, novelty: float | None, salience: float | None, out: Path) -> Path:
    os.environ["CHRONOMEM_GATE"] = policy
    if novelty is not None:
        os.environ["CHRONOMEM_GATE_NOVELTY"] = str(novelty)
    if salience is not None:
        os.environ["CHRONOMEM_GATE_SALIENCE"] = str(salience)
    from eval.devmem import SYSTEM, Query, Replay, Upkeep, Write, agent_steps, score

    started = time.perf_counter()
    data_dir = resolve_data_dir(data)
    fields = ("id", "project", "t", "content", "slot", "kind")
    writes = [Write(**{k: row[k] for k in fields}) for row in read_jsonl(data_dir / "writes.jsonl")]
    queries = [Query.of(row) for row in read_jsonl(data_dir / "queries.jsonl")]
    slots = read_jsonl(data_dir / "slots.jsonl")
    project_of = {w.id: w.project for w in writes}
    embedder = make_embedder()
    rows: list[dict[str, Any]] = []
    with temp_service("devmem", embedder) as svc:
        settings = svc.settings
        replay = Replay(svc, False, agent_steps(slots), [], Upkeep(svc))
        replay.play(writes, queries, started)
        for w in writes:
            chunk_id = replay.memories[w.id][0]
            record = svc.store.get(chunk_id) if chunk_id else None
            rows.append({
                "id": w.id, "kind": w.kind, "decision": "skipped" if record is None else record.gate,
                "novelty": None if record is None else record.novelty,
                "salience": None if record is None else record.event_salience,
                "prediction_error": None if record is None else record.prediction_error,
            })
    system = score(queries, replay.answers[SYSTEM], project_of)
    payload = {
        "split": data_dir.name, "policy": policy,
        "thresholds": {"novelty": settings.gate_novelty, "salience": settings.gate_salience},
        "system": {k: system[k] for k in KEPT_FIGURES}, "writes": rows,
        "gold": sorted({g for q in queries for g in q.gold_ids}),
        "run_seconds": round(time.perf_counter() - started, 1),
        "write_median_ms": median_ms(replay.write_seconds),
    }
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"gate-{data_dir.name}-{policy}.json"
    path.write_text(compact(payload))
    print(f"wrote {path} ({payload['run_seconds']} s)", file=sys.stderr)
    return path


def compact(payload: dict[str, Any]) -> str:
    """The run as JSON: the summary readable, each write one short line (signals to 4 decimals)."""
    head = {k: v for k, v in payload.items() if k not in ("writes", "gold")}
    rows = [json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}, separators=(",", ":"))
            for row in payload["writes"]]
    body = json.dumps(head, indent=1)[:-2]
    return body + ',\n "gold": ' + json.dumps(payload["gold"]) + ',\n "writes": [\n' + ",\n".join(rows) + "\n]}\n"


def removal(rows: list[dict[str, Any]], removed: Any, gold: set[str]) -> dict[str, float]:
    """Share of noise notes, of other notes and of notes some query needs (gold) that `removed(row)` takes out."""
    noise = [r for r in rows if r["kind"] == "noise"]
    other = [r for r in rows if r["kind"] != "noise"]
    needed = [r for r in rows if r["id"] in gold]
    share = lambda group: round(sum(1 for r in group if removed(r)) / max(len(group), 1), 3)  # noqa: E731
    return {"noise_removed": share(noise), "notes_lost": share(other), "gold_lost": share(needed)}


def _worse(key: str, value: float | None, base: float | None) -> bool:
    """Whether `value` is worse than `base` for figure `key` (lower is better for leaks and errors)."""
    if value is None or base is None:
        return False
    lower_better = key in ("stale_leak_changed", "isolation_error")
    return value > base + 1e-9 if lower_better else value < base - 1e-9


def below(row: dict[str, Any], novelty: float, salience: float) -> bool:
    """The gate's rule (consolidate/gate.decide) replayed on stored signals: no fact changed or added, and a
    near-restatement or little said."""
    if row["novelty"] is None:
        return False
    return row["prediction_error"] == 0 and (row["novelty"] < novelty or row["salience"] < salience)


def report(out: Path) -> str:
    runs = {(p["split"], p["policy"]): p for p in (json.loads(f.read_text()) for f in sorted(out.glob("gate-*.json")))}
    splits = [s for s in ("devmem", "devmem_validation") if any(k[0] == s for k in runs)]
    lines = ["# Encoding gate on DevMem (text mode)", ""]
    lines.append("Replays of each split through `remember`/`recall` with the gate's policy set (`python -m eval.gate run`); "
                 "*noise removed* = share of the data's noise notes skipped (skip) or demoted (demote), *notes lost* = "
                 "the same for every other note, *gold lost* = for the notes some query expects. `record` keeps every "
                 "note and does not use the signals in ranking: its figures are recall's own.")
    lines.append("")
    header = "| policy | measure | " + " | ".join(s for s in splits) + " |"
    lines += [header, "|---|---|" + "---|" * len(splits)]
    for policy in ("record", "demote", "skip"):
        if not any((s, policy) in runs for s in splits):
            continue
        cells: dict[str, list[str]] = {}
        for split in splits:
            run_ = runs.get((split, policy))
            base = runs.get((split, "record"))
            if run_ is None:
                for values in cells.values():
                    values.append("–")
                continue
            gold = set(run_["gold"])
            effect = removal(run_["writes"], lambda r: r["decision"] in ("skipped", "demoted"), gold)
            for key, value in effect.items():
                cells.setdefault(key.replace("_", " "), []).append(f"{value:.3f}")
            cells.setdefault("remember median ms", []).append(str(run_.get("write_median_ms", "–")))
            for key in KEPT_FIGURES:
                value = run_["system"][key]
                if value is None:
                    cells.setdefault(key, []).append("–")
                    continue
                delta = "" if base is None or policy == "record" else f" ({value - base['system'][key]:+.3f})"
                cells.setdefault(key, []).append(f"{value:.3f}{delta}")
        thresholds = next(runs[(s, policy)]["thresholds"] for s in splits if (s, policy) in runs)
        label = policy if policy == "record" else f"{policy} (novelty < {thresholds['novelty']}, salience < {thresholds['salience']})"
        for key, values in cells.items():
            lines.append(f"| {label} | {key} | " + " | ".join(values) + " |")
    lines += ["", "## The default", ""]
    for policy in ("demote", "skip"):
        worse = [f"{split} {key} {runs[(split, policy)]['system'][key] - runs[(split, 'record')]['system'][key]:+.3f}"
                 for split in splits if (split, policy) in runs and (split, "record") in runs
                 for key in KEPT_FIGURES if _worse(key, runs[(split, policy)]["system"][key], runs[(split, "record")]["system"][key])]
        verdict = "costs recall (" + ", ".join(worse) + ")" if worse else "costs nothing measured here"
        lines.append(f"- `{policy}` {verdict}.")
    lines.append("- A policy that costs recall on either split is not the default: `record` is (signals reported and stored, "
                 "used by the brief, not by ranking).")
    lines += ["", "## Threshold sweep over the `record` runs' signals", "",
              "What each threshold pair would take out (skip or demote), from the signals every write scored.", ""]
    lines += ["| novelty < | salience < | " + " | ".join(f"{s} noise removed / notes lost / gold lost" for s in splits) + " |",
              "|---|---|" + "---|" * len(splits)]
    for novelty in (0.0, 0.05, 0.1, 0.15, 0.2, 0.3):
        for salience in (0.0, 0.3, 0.5, 0.6, 0.7):
            if novelty == salience == 0.0:
                continue
            cells_ = []
            for split in splits:
                base = runs.get((split, "record"))
                if base is None:
                    cells_.append("–")
                    continue
                e = removal(base["writes"], lambda r, n=novelty, s=salience: below(r, n, s), set(base["gold"]))
                cells_.append(f"{e['noise_removed']:.3f} / {e['notes_lost']:.3f} / {e['gold_lost']:.3f}")
            lines.append(f"| {novelty} | {salience} | " + " | ".join(cells_) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.gate", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="replay one split under one policy")
    r.add_argument("--data", default="../shared/data/devmem")
    r.add_argument("--policy", choices=("record", "demote", "skip"), default="record")
    r.add_argument("--novelty", type=float, default=None, help="threshold (default: the shipped one)")
    r.add_argument("--salience", type=float, default=None, help="threshold (default: the shipped one)")
    r.add_argument("--out", type=Path, default=RESULTS_DIR)
    p = sub.add_parser("report", help="write gate.md from the runs in --out")
    p.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    if args.command == "run":
        run(args.data, args.policy, args.novelty, args.salience, args.out)
        return 0
    text = report(args.out)
    (args.out / "gate.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
