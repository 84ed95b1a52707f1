"""Text mode, the ideal agent and the noisy agent side by side, per split, from eval.devmem's result files.

Reads `<split>-<mode>.json` (mode text, agent, agent-noisy, agent-noisy-confirming) from a results folder and
writes `agent_modes.md` there: current hit@1, stale-leak on changed slots, as_of accuracy and macro hit@1, with
the commit each run was made on. A missing run is a dash.

    python -m eval.agent_modes --results eval/results
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from eval.report import md_table

SPLITS = ("devmem", "devmem_validation", "agentfiles_validation")
MODES = (
    ("text", "text only"),
    ("agent", "ideal agent (one name per slot, every fact)"),
    ("agent-noisy", "noisy agent (eval/agent_style.py)"),
    ("agent-noisy-confirming", "noisy agent confirming the reply's probable updates"),
    ("agent-noisy-confirming-strong", "noisy agent confirming only the updates of a strong basis"),
)
COLUMNS = (("current", "current_hit@1"), ("stale-leak (changed)", "stale_leak_changed"), ("as_of", "as_of_accuracy"), ("macro", "macro_hit@1"))


def render(folder: Path) -> str:
    rows = []
    for split in SPLITS:
        for mode, label in MODES:
            path = folder / f"{split}-{mode}.json"
            if not path.is_file():
                rows.append([split, label, *("–" for _ in COLUMNS), "–"])
                continue
            payload = json.loads(path.read_text())
            system = payload["system"]
            git = payload.get("environment", {}).get("git", {})
            commit = (git.get("commit") or "?")[:7] + ("+" if git.get("chronomem_dirty") else "")
            rows.append([split, label, *(system.get(key) for _, key in COLUMNS), commit])
    return "\n".join([
        "# Text, ideal agent and noisy agent",
        "",
        "From `python -m eval.devmem` runs (see each `<split>-<mode>.md` for every metric). The noisy agent passes no "
        "fact on 30% of notes, names subjects among aliases and predicates among 3-5 paraphrases per slot type, and "
        "decorates 20% of objects (seed 0); `confirming` also ends each probable update a reply lists, as `remember` asks. "
        "A `+` after the commit: chronomem/ had uncommitted changes then. Runs from fed4d37 on ask history questions "
        "through `history(query=…)`, earlier ones through `recall`: macro hit@1 (which averages history's hit@1 in) "
        "moves with that; the other columns do not. From ab78271 on, `history(query=…)` tells what it finds as a "
        "timeline, oldest first: the order of a history is right more often (Kendall tau) and its first entry is more "
        "often an older neighbour than the first value, so history's hit@1, and with it macro hit@1, is lower in the "
        "rows from ab78271 than in older ones.",
        "",
        md_table(["split", "mode", *(label for label, _ in COLUMNS), "commit"], rows),
        "",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.agent_modes", description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args(argv)
    text = render(args.results)
    (args.results / "agent_modes.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
