"""Progress on the command line's long work (import, export, reembed, consolidate, purge, doctor --repair), with tqdm.

Bars go to stderr (stdout carries results, or an export itself) and only when stderr is a terminal:
piped, redirected or in CI they are off, so logs and scripts see nothing of them. `--quiet` turns
them off at a terminal too. `bar` counts items against a total; `ticking` is for one long call that
reports nothing until it returns (a purge's rewrite, a repair): it shows the step and the time so far.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: Seconds between redraws of a `ticking` line.
TICK_SECONDS = 0.5


def shown(quiet: bool = False) -> bool:
    """Whether progress is drawn: not asked to be quiet, and stderr is a terminal."""
    return not quiet and sys.stderr.isatty()


def bar(total: int | None = None, desc: str = "", unit: str = "it", quiet: bool = False) -> Any:
    """A tqdm bar on stderr (a context manager; `.update(n)`), disabled off a terminal."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not shown(quiet), **_size())


def _size() -> dict[str, int]:
    """The terminal's size for tqdm ($COLUMNS/$LINES, else the terminal's, else 80x24): tqdm draws nothing on a
    terminal that reports no size (a pseudo-terminal such as `script`'s gives 0 columns and -1 rows)."""
    import shutil

    size = shutil.get_terminal_size()
    return {"ncols": size.columns if size.columns > 0 else 80, "nrows": size.lines if size.lines > 0 else 24}


@contextmanager
def ticking(desc: str, quiet: bool = False) -> Iterator[Any]:
    """While the block runs, a line `desc: <elapsed>` redrawn every TICK_SECONDS (`.set_description` renames it)."""
    from tqdm import tqdm

    line = tqdm(
        total=None, desc=desc, file=sys.stderr, disable=not shown(quiet), bar_format="{desc}: {elapsed}", **_size()
    )
    stop = threading.Event()

    def redraw() -> None:
        while not stop.wait(TICK_SECONDS):
            line.refresh()

    ticker = threading.Thread(target=redraw, daemon=True)
    if not line.disable:
        ticker.start()
    try:
        yield line
    finally:
        stop.set()
        if ticker.is_alive():
            ticker.join()
        line.close()
