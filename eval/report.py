"""Writing results: the run's environment, Markdown tables, and the JSON + Markdown files under eval/results/."""

from __future__ import annotations

import json
import os
import platform
import subprocess
from collections.abc import Sequence
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from chronomem.config import Settings
from eval.common import REPO_ROOT, RESULTS_DIR

_PACKAGES = ("chronomem", "lancedb", "fastembed", "onnxruntime", "pyarrow")


def environment() -> dict[str, Any]:
    """Date, versions, commit and machine of this run."""
    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "python": platform.python_version(),
        "versions": versions,
        "git": _git_state(),
        "model": os.environ.get("CHRONOMEM_MODEL", "sentence-transformers/all-MiniLM-L6-v2"),
        "model_path": os.environ.get("CHRONOMEM_MODEL_PATH"),
        "embed_precision": Settings.from_env(store=".").embed_precision,
        "cpus": os.cpu_count(),
    }


def _git_state() -> dict[str, Any]:
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=5, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    status = git("status", "--porcelain", "--", "chronomem")
    return {"commit": git("rev-parse", "HEAD"), "chronomem_dirty": bool(status) if status is not None else None}


def fmt(value: Any, digits: int = 3) -> str:
    """A table cell: floats rounded, None as an en dash."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(fmt(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def env_lines(env: dict[str, Any]) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in env["versions"].items() if v)
    commit = (env["git"].get("commit") or "?")[:12]
    dirty = " (chronomem/ has uncommitted changes)" if env["git"].get("chronomem_dirty") else ""
    return (
        f"Run {env['date']} · Python {env['python']} · {versions} · commit {commit}{dirty} · "
        f"model {env['model']}{' (' + env['embed_precision'] + ')' if env.get('embed_precision') else ''} · {env['cpus']} CPUs"
    )


def write_results(name: str, payload: dict[str, Any], markdown: str, out_dir: Path = RESULTS_DIR) -> tuple[Path, Path]:
    """Write `<name>.json` and `<name>.md` atomically (through `.tmp` files)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = (out_dir / f"{name}.json", out_dir / f"{name}.md")
    texts = (json.dumps(payload, indent=1, ensure_ascii=False) + "\n", markdown.rstrip() + "\n")
    for path, text in zip(paths, texts, strict=True):
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    return paths
