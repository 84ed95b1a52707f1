"""Secret scanner benchmark: detection and false-positive rates, and the cost per remember.

    python -m eval.secrets [--data ../shared/data] [--per-kind 4]

The corpus in `eval/secret_corpus.py` in two parts, dev (what the rules were written
against) and held-out (other sentences around every vendor format and context-only secret,
and look-alikes a coding agent must keep): recall counts a case only when no 8 consecutive
characters of any secret in it survive redaction; a look-alike counts as altered when anything
in it is found. Also natural text with no secrets: every DevMem note and LoCoMo turn in
../shared/data. Writes eval/results/secrets.{json,md}.
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
from eval.secret_corpus import (
    BenignCase,
    SecretCase,
    benign_cases,
    held_out_benign_cases,
    held_out_secret_cases,
    secret_cases,
)


#: A case counts as redacted only if no run of this many characters of its secret survives.
LEAK_WINDOW = 8


def leaks(secret: str, cleaned: str, window: int = LEAK_WINDOW, original: str = "") -> bool:
    """True when any `window` consecutive characters of `secret` are still in `cleaned` — other than
    runs the `original` text also holds outside the secret (`rubygems` in "the rubygems key is …")."""
    if len(secret) <= window:
        return secret in cleaned
    rest = original.replace(secret, "\0")
    return any(
        secret[i : i + window] in cleaned and secret[i : i + window] not in rest for i in range(len(secret) - window + 1)
    )


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


def measure(positives: list[SecretCase], benign: list[BenignCase], timings: list[float] | None = None) -> dict[str, Any]:
    """Recall (a case counts only when no 8 characters of its secrets survive) and look-alikes altered."""
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    misses = []
    for case in positives:
        found, seconds = _timed_scan(case.text)
        if timings is not None:
            timings.append(seconds)
        cleaned = redact(case.text, found)
        ok = bool(found) and not any(leaks(s, cleaned, original=case.text) for s in case.secrets)
        by_kind[case.kind][0] += int(ok)
        by_kind[case.kind][1] += 1
        if not ok:
            misses.append({"kind": case.kind, "reported": sorted({f.kind for f in found})})
    fp_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    false_positives = []
    for case in benign:
        found, seconds = _timed_scan(case.text)
        if timings is not None:
            timings.append(seconds)
        fp_kind[case.kind][0] += int(bool(found))
        fp_kind[case.kind][1] += 1
        if found:
            false_positives.append({"kind": case.kind, "reported": sorted({f.kind for f in found})})
    detected = sum(v[0] for v in by_kind.values())
    fp = sum(v[0] for v in fp_kind.values())
    return {
        "kinds": len(by_kind),
        "positives": {"cases": len(positives), "detected": detected, "recall": detected / len(positives)},
        "benign": {"cases": len(benign), "altered": fp, "rate": fp / len(benign)},
        "per_kind": {k: {"detected": v[0], "cases": v[1]} for k, v in sorted(by_kind.items())},
        "benign_per_kind": {k: {"flagged": v[0], "cases": v[1]} for k, v in sorted(fp_kind.items())},
        "misses": misses,
        "false_positive_examples": false_positives[:20],
    }


#: Case counts of the two corpus parts (cases per kind); the tests assert the held-out figures on these.
DEV_PER_KIND = 4
HELD_OUT_SECRETS_PER_KIND = 3
HELD_OUT_BENIGN_PER_KIND = 4


def held_out() -> tuple[list[SecretCase], list[BenignCase]]:
    return held_out_secret_cases(per_kind=HELD_OUT_SECRETS_PER_KIND), held_out_benign_cases(per_kind=HELD_OUT_BENIGN_PER_KIND)


def run(data_dir: Path | None, per_kind: int) -> dict[str, Any]:
    scan("warm up: import detect-secrets and compile its patterns")
    timings: list[float] = []
    dev = measure(secret_cases(per_kind=per_kind), benign_cases(per_kind=per_kind), timings)
    held = measure(*held_out(), timings)
    benign = benign_cases(per_kind=per_kind) + held_out()[1]

    natural: dict[str, dict[str, Any]] = {}
    natural_timings: list[float] = []
    for name, texts in (natural_texts(data_dir) if data_dir else {}).items():
        flagged = []
        for text in texts:
            found, seconds = _timed_scan(text)
            natural_timings.append(seconds)
            if found:
                flagged.append({"reported": sorted({f.kind for f in found}), "text": redact(text, found)[:160]})
        natural[name] = {"texts": len(texts), "flagged": len(flagged), "rate": len(flagged) / len(texts), "examples": flagged[:10]}

    big = " ".join(case.text for case in benign)[:32_000]
    big_runs = [_timed_scan(big)[1] for _ in range(5)]
    all_timings = timings + natural_timings
    return {
        "environment": environment(),
        "detector_kinds": detector_kinds(),
        "dev": dev,
        "held_out": held,
        "natural_text": natural,
        "scan_ms": {
            "texts": len(all_timings),
            "median": round(statistics.median(all_timings) * 1000, 3),
            "p95": round(sorted(all_timings)[int(0.95 * (len(all_timings) - 1))] * 1000, 3),
            "max": round(max(all_timings) * 1000, 3),
            "32k_chars_median": round(statistics.median(big_runs) * 1000, 2),
        },
    }


def render(p: dict[str, Any]) -> str:
    cost = p["scan_ms"]
    rows = []
    for part in ("dev", "held_out"):
        r = p[part]
        name = part.replace("_", "-")
        rows.append([name, f"fake secrets, {r['kinds']} kinds: recall (fully redacted)", r["positives"]["cases"], f"{r['positives']['recall']:.1%}"])
        rows.append([name, "look-alikes altered", r["benign"]["cases"], f"{r['benign']['rate']:.1%}"])
    rows += [["natural text", f"{name}: altered", h["texts"], f"{h['rate']:.2%}"] for name, h in p["natural_text"].items()]
    lines = [
        "# Secret scanning on write",
        "",
        env_lines(p["environment"]),
        "",
        "`python -m eval.secrets` · scanner: `chronomem/safety/` (detect-secrets 1.5 detectors, the vendor formats in "
        "`formats.py`, the context rules in `context.py`, high entropy only in context, the allow-list in `allow.py`) · "
        "corpus: `eval/secret_corpus.py` (generated real-format FAKE keys, seeded).",
        "",
        "## Headline",
        "",
        md_table(["part", "set", "cases", "rate"], rows),
        "",
        f"Scan cost per text (all {cost['texts']} texts above, the size of one remember): median "
        f"{cost['median']} ms, p95 {cost['p95']} ms, max {cost['max']} ms; a 32,000-character content "
        f"(the largest remember accepts): {cost['32k_chars_median']} ms.",
        "",
        "*Dev* is the corpus the rules were written against. *Held-out* puts every vendor format and the "
        "context-only secrets in other sentences, with look-alikes a coding agent must keep (go.sum lines, lockfile "
        "checksums, pytest node ids with parameters, documented example keys, secret locations); it was written "
        "apart from the rules and measured once they were done (one fix since: the measurement counted a service "
        "name in the sentence, `rubygems`, as a leak of the `rubygems_` prefix). Natural text (DevMem notes, "
        "LoCoMo turns) holds no secrets: everything altered there is a false positive.",
    ]
    for part in ("held_out", "dev"):
        r = p[part]
        lines += [
            "",
            f"## {part.replace('_', '-')}: detection by kind",
            "",
            md_table(["kind", "detected", "cases"], [[k, v["detected"], v["cases"]] for k, v in r["per_kind"].items()]),
            "",
            f"## {part.replace('_', '-')}: look-alikes by kind",
            "",
            md_table(["kind", "altered", "cases"], [[k, v["flagged"], v["cases"]] for k, v in r["benign_per_kind"].items()]),
        ]
        if r["misses"]:
            lines += ["", "Misses:", "", *[f"- {m['kind']} (reported: {', '.join(m['reported']) or 'nothing'})" for m in r["misses"]]]
        if r["false_positive_examples"]:
            lines += ["", "Look-alikes altered:", "", *[f"- {e['kind']}: {', '.join(e['reported'])}" for e in r["false_positive_examples"]]]
    examples = [e for h in p["natural_text"].values() for e in h["examples"]]
    if examples:
        lines += ["", "## Natural text altered", ""] + [f"- ({', '.join(e['reported'])}): {e['text']!r}" for e in examples]
    lines += ["", "## Kinds the scanner reports", "", ", ".join(f"`{k}`" for k in p["detector_kinds"])]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(REPO_ROOT.parent / "shared" / "data"), help="folder with devmem/ and locomo/")
    parser.add_argument("--per-kind", type=int, default=DEV_PER_KIND, help="generated cases per kind")
    args = parser.parse_args(argv)
    try:
        data_dir: Path | None = resolve_data_dir(args.data)
    except SystemExit:
        data_dir = None
    payload = run(data_dir, args.per_kind)
    json_path, md_path = write_results("secrets", payload, render(payload))
    parts = [
        f"{part}: recall {r['positives']['detected']}/{r['positives']['cases']} ({r['positives']['recall']:.1%}), "
        f"look-alikes altered {r['benign']['altered']}/{r['benign']['cases']} ({r['benign']['rate']:.1%})"
        for part, r in (("dev", payload["dev"]), ("held-out", payload["held_out"]))
    ]
    natural = ", ".join(f"{h['flagged']}/{h['texts']} {n}" for n, h in payload["natural_text"].items())
    print("; ".join(parts) + f"; natural text altered {natural}; scan median {payload['scan_ms']['median']} ms → "
          f"{md_path.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
