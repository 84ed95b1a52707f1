"""A fact's timeline as an image file (`chronomem history … --plot out.png|.svg`), drawn with matplotlib.

The same bars as the page's timeline (tools/timeline.py): one row per value, a bar over its valid
time in its status's colour (the current value green and opaque, ended ones grey and paler; an open
bar runs from its start up to now, and no bar is thinner than `MIN_SHARE` of the axis, so a value
that became current minutes ago after years of history still shows, in its colour), a diamond where
chronomem learned it (transaction time), and at each end the cause (superseded by whom, or the
forget's reason). matplotlib is imported here only, when a plot is asked for, with the
non-interactive Agg backend (no display needed); the format follows the file's suffix.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from chronomem.errors import InvalidInput
from chronomem.tools.timeline import TimelineResult

FORMATS = (".png", ".svg")
#: Colours by status (current green, ended grey, retracted red, pending blue): the page uses the same.
COLOURS = {"current": "#2e7d32", "ended": "#9e9e9e", "retracted": "#c62828", "pending": "#1565c0", "revised": "#9e9e9e"}
#: The narrowest a bar is drawn, as a share of the time axis (a bar that held for minutes of a year stays visible).
MIN_SHARE = 0.015
#: Longest value label drawn beside its bar.
LABEL_CHARS = 48


@dataclass
class Plotted:
    """What was drawn: the file, and the value of each bar, oldest first."""

    path: Path
    values: list[str] = field(default_factory=list)
    figure: Any = None


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _config_dir_of_our_own() -> None:
    """matplotlib keeps its font list and config in ~/.cache/matplotlib and ~/.config/matplotlib unless MPLCONFIGDIR
    says where; chronomem writes nothing outside its store (issue 46), so a process that plots and has not set it
    gets a temporary one, removed at exit (the font list is made again each time: ~0.5 s of a plot)."""
    if "MPLCONFIGDIR" in os.environ or "matplotlib" in sys.modules:
        return
    folder = tempfile.mkdtemp(prefix="chronomem-matplotlib-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    os.environ["MPLCONFIGDIR"] = folder


def draw_timeline(drawn: TimelineResult) -> Plotted:
    """A matplotlib figure of `drawn`'s bars (not saved); `values` lists what each bar shows."""
    _config_dir_of_our_own()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt

    now = _time(drawn.now)
    bars = drawn.bars
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.6 * max(1, len(bars))), layout="constrained")
    values: list[str] = []
    by_id = {b.id: b for b in bars}
    first = min([mdates.date2num(_time(b.start)) for b in bars] + [mdates.date2num(now)])
    span = max(mdates.date2num(now) - first, 1.0)  # days on the axis (at least one)
    for row, bar in enumerate(bars):
        start = mdates.date2num(_time(bar.start))
        end = mdates.date2num(_time(bar.end) if bar.end else now)
        # an open value holds up to now; one that held (or has held) for minutes of years stays visible, drawn
        # from its start a little past its end (an open one still holds past now)
        width = max(end - start, MIN_SHARE * span)
        colour = COLOURS.get(bar.status, "#616161")
        ax.barh(
            row, width, left=start, height=0.45, color=colour, alpha=1.0 if bar.status in ("current", "pending") else 0.55,
            edgecolor="#333", gid=f"bar-{bar.id}",
        )
        learned = _time(bar.learned_at)
        ax.plot([mdates.date2num(learned)], [row], marker="D", color="#000", markersize=5, zorder=3)
        said = f"{bar.status} · {bar.start[:10]} → {bar.end[:10] if bar.end else 'now'} · {bar.by or bar.source}"
        ax.annotate(said, (mdates.date2num(_time(bar.start)), row - 0.27), fontsize=8, va="bottom", color="#333")
        cause = _cause(bar, by_id)
        if bar.end and cause:
            ax.annotate(_cut(cause), (end, row + 0.27), fontsize=7, va="top", ha="left", color="#555")
        values.append(bar.value)
    ax.axvline(mdates.date2num(now), color="#1565c0", linestyle=":", linewidth=1)
    ax.set_yticks(range(len(bars)), [_cut(v) for v in values])
    ax.set_ylim(-0.8, len(bars) - 0.2)
    ax.invert_yaxis()  # oldest on top, as history lists them
    ax.margins(x=0.08)
    ax.xaxis_date()
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(ax.xaxis.get_major_locator()))
    ax.set_title(f"{drawn.subject} · {drawn.predicate} ({drawn.project}) — bar: valid time · ◆: learned · dotted: now", fontsize=10)
    return Plotted(path=Path(), values=values, figure=fig)


def _cut(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def _cause(bar: Any, by_id: dict[str, Any]) -> str | None:
    """What ended a value: the value that replaced it and who stated that, else the recorded reason."""
    successor = by_id.get(bar.ended_by or "")
    if successor is not None:
        return f"replaced by {successor.value!r} ({successor.by or successor.source})"
    return bar.cause


def plot_timeline(drawn: TimelineResult, out: str | Path) -> Plotted:
    """Draw `drawn` into `out` (.png or .svg)."""
    path = Path(out)
    if path.suffix.lower() not in FORMATS:
        raise InvalidInput(f"--plot {out}: name a .png or .svg file")
    if not path.parent.is_dir():
        raise InvalidInput(f"--plot {out}: the folder {path.parent} does not exist")
    made = draw_timeline(drawn)
    import matplotlib.pyplot as plt

    try:
        made.figure.savefig(path, dpi=120)
    finally:
        plt.close(made.figure)
    made.path = path
    return made
