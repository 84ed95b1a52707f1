"""MkDocs hook: the page's screenshots live in eval/results/ui/ (the browser test refreshes them there), so
the site takes them from there as img/ui/<name> instead of keeping a second copy under docs/."""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

SCREENSHOTS = Path(__file__).resolve().parent.parent / "eval" / "results" / "ui"


def on_files(files, config):  # noqa: ANN001, ANN201 - MkDocs' hook signature
    for image in sorted(SCREENSHOTS.glob("*.png")):
        files.append(File.generated(config, f"img/ui/{image.name}", abs_src_path=str(image)))
    return files
