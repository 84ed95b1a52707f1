"""Secret scanner benchmark: detection and false-positive rates, and the cost per remember.

    python -m eval.secrets [--data ../shared/data] [--per-kind 4]

Three sets: (1) the corpus in `eval/secret_corpus.py` — real-format FAKE credentials of
many kinds, each case counted detected only when no 8 consecutive characters of any secret in
it survive redaction; (2) the corpus's benign look-alikes (git SHAs, UUIDs, ULIDs, SRI and
image hashes, paths, identifiers, URLs without credentials); (3) held-out natural text the
scanner was not tuned on: every DevMem note and every LoCoMo turn in ../shared/data. Any
finding in sets 2 and 3 is a false positive. Writes eval/results/secrets.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from chronomem.safety.secrets import detector_kinds, redact, scan
from eval.common import REPO_ROOT, resolve_data_dir
from eval.report import env_lines, environment, md_table, write_results
from eval.secret_corpus import benign_cases, secret_cases


#: A case counts as redacted only if no run of this many characters of its secret survives.
LEAK_WINDOW = 8


def leaks(secret: str, cleaned: str, window: int = LEAK_WINDOW) -> bool:
    """True when any `window` consecutive characters of `secret` are still in `cleaned`."""
    if len(secret) <= window:
        return secret in cleaned
    return any(secret[i : i + window] in cleaned for i in range(len(secret) - window + 1))


def natural_texts(data_dir: Path) -> dict[str, list[str]]:
    """DevMem notes and LoCoMo turns, as chronomem would be asked to remember them."""
    out: dict[str, list[str]] = {}
    writes = data_dir / "devmem" / "writes.jsonl"
    if writes.is_file():
        with writes.open(encoding="utf-8") as handle:
            out["devmem notes"] = [json.loads(line)["content"] for line in handle if line.strip()]
    locomo = sorted((data_dir / "locomo").glob("*.json"))
    if locomo:
        from eval.locomo import load_conversation

        out["locomo turns"] = [t.content() for path in locomo for t in load_conversation(path).turns]
    return out


def _timed_scan(text: str) -> tuple[list[Any], float]:
    start = time.perf_counter()
    found = scan(text)
    return found, time.perf_counter() - start


def run(data_dir: Path | None, per_kind: int) -> dict[str, Any]:
    scan("warm up: import detect-secrets and compile its patterns")
    timings: list[float] = []

    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses = []
    positives = secret_cases(per_kind=per_kind)
    for case in positives:
        found, seconds = _timed_scan(case.text)
        timings.append(seconds)
        cleaned = redact(case.text, found)
        ok = bool(found) and not any(leaks(s, cleaned) for s in case.secrets)
        by_kind[case.kind][0] += int(ok)
        by_kind[case.kind][1] += 1
        if not ok:
            misses.append({"kind": case.kind, "reported": sorted({f.kind for f in found})})

    fp_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    false_positives = []
    benign = benign_cases(per_kind=per_kind)
    for case in benign:
        found, seconds = _timed_scan(case.text)
        timings.append(seconds)
        fp_kind[case.kind][0] += int(bool(found))
        fp_kind[case.kind][1] += 1
        if found:
            false_positives.append({"kind": case.kind, "reported": sorted({f.kind for f in found})})

    held_out: dict[str, dict[str, Any]] = {}
    natural_timings: list[float] = []
    for name, texts in (natural_texts(data_dir) if data_dir else {}).items():
        flagged = []
        for text in texts:
            found, seconds = _timed_scan(text)
            natural_timings.append(seconds)
            if found:
                flagged.append({"reported": sorted({f.kind for f in found}), "text": redact(text, found)[:160]})
        held_out[name] = {"texts": len(texts), "flagged": len(flagged), "rate": len(flagged) / len(texts), "examples": flagged[:10]}

    big = " ".join(case.text for case in benign)[:32_000]
    big_runs = [_timed_scan(big)[1] for _ in range(5)]

    detected = sum(v[0] for v in by_kind.values())
    fp = sum(v[0] for v in fp_kind.values())
    all_timings = timings + natural_timings
    return {
        "environment": environment(),
        "kinds_in_corpus": len(by_kind),
        "detector_kinds": detector_kinds(),
        "positives": {"cases": len(positives), "detected": detected, "rate": detected / len(positives)},
        "per_kind": {k: {"detected": v[0], "cases": v[1]} for k, v in sorted(by_kind.items())},
        "misses": misses,
        "benign": {"cases": len(benign), "false_positives": fp, "rate": fp / len(benign)},
        "benign_per_kind": {k: {"flagged": v[0], "cases": v[1]} for k, v in sorted(fp_kind.items())},
        "false_positive_examples": false_positives[:20],
        "held_out_natural_text": held_out,
        "scan_ms": {
            "texts": len(all_timings),
            "median": round(statistics.median(all_timings) * 1000, 3),
            "p95": round(sorted(all_timings)[int(0.95 * (len(all_timings) - 1))] * 1000, 3),
            "max": round(max(all_timings) * 1000, 3),
            "32k_chars_median": round(statistics.median(big_runs) * 1000, 2),
        },
    }


def render(p: dict[str, Any]) -> str:
    pos, ben, cost = p["positives"], p["benign"], p["scan_ms"]
    lines = [
        "# Secret scanning on write",
        "",
        env_lines(p["environment"]),
        "",
        "`python -m eval.secrets` · scanner: `chronomem/safety/secrets.py` (detect-secrets 1.5 detectors plus the "
        "formats it predates and a narrowed high-entropy check) · corpus: `eval/secret_corpus.py` (generated "
        "real-format FAKE keys, seeded).",
        "",
        "## Headline",
        "",
        md_table(
            ["set", "cases", "rate"],
            [
                [f"fake credentials, {p['kinds_in_corpus']} kinds: detected and fully redacted", pos["cases"], f"{pos['rate']:.1%}"],
                ["benign look-alikes: false positives", ben["cases"], f"{ben['rate']:.1%}"],
                *[
                    [f"held-out {name}: false positives", h["texts"], f"{h['rate']:.2%}"]
                    for name, h in p["held_out_natural_text"].items()
                ],
            ],
        ),
        "",
        f"Scan cost per text (all {cost['texts']} texts above, the size of one remember): median "
        f"{cost['median']} ms, p95 {cost['p95']} ms, max {cost['max']} ms; a 32,000-character content "
        f"(the largest remember accepts): {cost['32k_chars_median']} ms.",
        "",
        "The corpus sets were written together with the scanner's rules, so their rates show coverage, not an "
        "unbiased estimate; the held-out natural text (DevMem notes, LoCoMo turns) was not looked at while tuning.",
        "",
        "## Detection by kind",
        "",
        md_table(["kind", "detected", "cases"], [[k, v["detected"], v["cases"]] for k, v in p["per_kind"].items()]),
        "",
        "## Benign look-alikes by kind",
        "",
        md_table(["kind", "flagged", "cases"], [[k, v["flagged"], v["cases"]] for k, v in p["benign_per_kind"].items()]),
    ]
    if p["misses"]:
        lines += ["", "## Misses", "", *[f"- {m['kind']} (reported: {', '.join(m['reported']) or 'nothing'})" for m in p["misses"]]]
    examples = [e for h in p["held_out_natural_text"].values() for e in h["examples"]]
    if p["false_positive_examples"] or examples:
        lines += ["", "## False positives", ""]
        lines += [f"- benign {e['kind']}: {', '.join(e['reported'])}" for e in p["false_positive_examples"]]
        lines += [f"- natural text ({', '.join(e['reported'])}): {e['text']!r}" for e in examples]
    lines += ["", "## Kinds the scanner reports", "", ", ".join(f"`{k}`" for k in p["detector_kinds"])]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(REPO_ROOT.parent / "shared" / "data"), help="folder with devmem/ and locomo/")
    parser.add_argument("--per-kind", type=int, default=4, help="generated cases per kind")
    args = parser.parse_args(argv)
    try:
        data_dir: Path | None = resolve_data_dir(args.data)
    except SystemExit:
        data_dir = None
    payload = run(data_dir, args.per_kind)
    json_path, md_path = write_results("secrets", payload, render(payload))
    pos, ben = payload["positives"], payload["benign"]
    print(
        f"detected {pos['detected']}/{pos['cases']} ({pos['rate']:.1%}) across {payload['kinds_in_corpus']} kinds; "
        f"false positives {ben['false_positives']}/{ben['cases']} ({ben['rate']:.1%}) benign, "
        + ", ".join(f"{h['flagged']}/{h['texts']} {n}" for n, h in payload["held_out_natural_text"].items())
        + f"; scan median {payload['scan_ms']['median']} ms → {md_path.relative_to(REPO_ROOT)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
