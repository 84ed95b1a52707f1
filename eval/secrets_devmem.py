"""Regression check for the secret scanner on the DevMem notes: which notes would redaction change.

    python -m eval.secrets_devmem [--data ../shared/data] [--before /path/to/other/checkout]

DevMem is natural coding-agent text with secret *locations* in it ("Vault path
`secret/data/br/pagerduty-api-token`", "the PagerDuty API token is in 1Password") and no secret
values, so every note the scanner changes is a false positive. It scans each note's content as
`remember` would, and in agent mode each slot's facts (subject = project, predicate = slot as a
name, object = the value), in both DevMem splits. With `--before ROOT` it runs the same count with
the scanner of another checkout (this file run with ROOT first on the import path) and prints
what changed between the two. Prints to stdout; writes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

SPLITS = ("devmem", "devmem_validation")


def load_texts(data_dir: Path) -> list[tuple[str, str, str, bool]]:
    """(split, item id, text, read as a name) for every note and every agent-mode fact field."""
    out: list[tuple[str, str, str, bool]] = []
    for split in SPLITS:
        folder = data_dir / split
        with (folder / "writes.jsonl").open(encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    row = json.loads(line)
                    out.append((split, row["id"], row["content"], False))
        with (folder / "slots.jsonl").open(encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    continue
                row = json.loads(line)
                out.append((split, f"{row['project']}/{row['slot']}:predicate", row["slot"], True))
                for i, value in enumerate(row["values"]):
                    out.append((split, f"{row['project']}/{row['slot']}:object[{i}]", value, False))
    return out


def changed(texts: list[tuple[str, str, str, bool]]) -> dict[str, str]:
    """Item key → the text as the scanner importable here would store it, for items it changes."""
    from chronomem.safety.secrets import redact, scan

    out = {}
    for split, item, text, name in texts:
        found = scan(text, name=name)
        if found:
            out[f"{split}:{item}"] = redact(text, found)
    return out


def _run_elsewhere(root: str, data_dir: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=root)
    done = subprocess.run(
        [sys.executable, __file__, "--data", str(data_dir), "--dump"],
        env=env, capture_output=True, text=True, check=True, cwd=root,
    )
    result: dict[str, str] = json.loads(done.stdout)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--before", help="another checkout whose scanner to compare with")
    parser.add_argument("--dump", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--examples", type=int, default=8)
    args = parser.parse_args(argv)
    data_dir = Path(os.environ.get("CHRONOMEM_SHARED", "")) / "data" if not Path(args.data).is_dir() else Path(args.data)
    texts = load_texts(data_dir)
    now = changed(texts)
    if args.dump:
        print(json.dumps(now))
        return 0
    notes = sum(1 for t in texts if not t[3] and ":" not in t[1])
    facts = len(texts) - notes
    print(f"{notes} notes and {facts} agent-mode fact fields in {', '.join(SPLITS)}")
    print(f"changed by this checkout's scanner: {len(now)}")
    if args.before:
        before = _run_elsewhere(args.before, data_dir)
        new = sorted(set(now) - set(before))
        gone = sorted(set(before) - set(now))
        print(f"changed by the scanner in {args.before}: {len(before)}")
        print(f"newly changed: {len(new)}; no longer changed: {len(gone)}")
        for key in new[: args.examples]:
            print(f"  new  {key}: {now[key][:200]!r}")
        for key in gone[: args.examples]:
            print(f"  gone {key}: {before[key][:200]!r}")
    for key in sorted(now)[: args.examples]:
        print(f"  now  {key}: {now[key][:200]!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
