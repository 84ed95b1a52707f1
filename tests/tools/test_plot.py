"""`chronomem history … --plot`: a fact chain drawn with matplotlib into PNG and SVG, one bar per value."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from chronomem import tools
from chronomem.plot import draw_timeline, plot_timeline
from chronomem.service import MemoryService
from chronomem.tools.timeline import Bar, TimelineResult, timeline
from tests.conftest import model_dir

VALUES = [("pytest", "2024-01-10"), ("tox", "2024-02-15"), ("nox -s tests", "2024-04-01")]


def seed(svc: MemoryService) -> list[str]:
    ids = []
    for value, since in VALUES:
        made = tools.remember(svc, f"Tests run with {value}", valid_from=since,
                              facts=[{"subject": "proj", "predicate": "test_command", "object": value}])
        ids.append(made.facts[0].id)
    return ids


def fixture_chain() -> TimelineResult:
    """Three values of a slot, as tools/timeline.py lays them out: two ended, one current."""
    ids = ["01HZ0000000000000000000001", "01HZ0000000000000000000002", "01HZ0000000000000000000003"]
    bars = []
    for i, (value, since) in enumerate(VALUES):
        end = VALUES[i + 1][1] + "T00:00:00Z" if i + 1 < len(VALUES) else None
        bars.append(Bar(
            id=ids[i], value=value, status="current" if end is None else "ended", start=since + "T00:00:00Z", end=end,
            learned_at=since + "T09:30:00Z", source="agent", ended_by=ids[i + 1] if end else None,
            cause=f"superseded by {ids[i + 1]}" if end else None, note=f"Tests run with {value}",
        ))
    return TimelineResult(project="proj", subject="proj", predicate="test_command", bars=bars,
                          now="2024-06-01T12:00:00Z", message="proj · test_command in proj: 3 value(s).")


def test_the_plot_draws_one_bar_per_value(tmp_path: Path) -> None:
    check_plot(fixture_chain(), tmp_path)


@pytest.mark.slow  # three remembers through the model, on a loaded machine ~10 s
def test_a_stored_chain_is_laid_out_and_plotted(svc: MemoryService, tmp_path: Path) -> None:
    ids = seed(svc)
    chain = timeline(svc, ids[0])
    assert [b.value for b in chain.bars] == [v for v, _ in VALUES]
    assert [b.status for b in chain.bars] == ["ended", "ended", "current"]
    # each ended value points at the value that replaced it (the row carrying that value's interval now)
    assert [b.ended_by for b in chain.bars] == [chain.bars[1].id, chain.bars[2].id, None]
    assert [b.note for b in chain.bars] == [f"Tests run with {v}" for v, _ in VALUES]
    check_plot(chain, tmp_path)


def check_plot(chain: TimelineResult, tmp_path: Path) -> None:
    drawn = draw_timeline(chain)
    bars = [p for p in drawn.figure.axes[0].patches if (p.get_gid() or "").startswith("bar-")]
    assert sorted(p.get_gid() for p in bars) == sorted(f"bar-{b.id}" for b in chain.bars)
    widths = {p.get_gid(): p.get_width() for p in bars}
    # the middle value held 2024-02-15 → 2024-04-01: 46 days on matplotlib's day-based axis
    assert widths[f"bar-{chain.bars[1].id}"] == pytest.approx(46, abs=1e-6)
    assert drawn.values == [v for v, _ in VALUES]

    for suffix, magic in ((".png", b"\x89PNG"), (".svg", b"<?xml")):
        out = tmp_path / f"chain{suffix}"
        made = plot_timeline(chain, out)
        data = out.read_bytes()
        assert data.startswith(magic)
        assert 5_000 < len(data) < 2_000_000, len(data)
        assert made.values == drawn.values
    svg = (tmp_path / "chain.svg").read_text()
    assert all(f'id="bar-{b.id}"' in svg for b in chain.bars)


@pytest.mark.slow  # three processes, each loading the model
def test_history_plot_from_the_command_line(tmp_path: Path) -> None:
    store = tmp_path / "store"
    env_args = ["--store", str(store), "--project", "proj"]
    run = lambda *a: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "chronomem", *a, *env_args], capture_output=True, text=True, timeout=300,
        env={"PATH": "/usr/bin:/bin", "CHRONOMEM_MODEL_PATH": str(model_dir()), "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    for value, since in VALUES[:2]:
        assert run("remember", f"Tests run with {value}", "--valid-from", since, "--fact", "proj", "test_command", value).returncode == 0
    out = tmp_path / "t.png"
    done = run("history", "test command", "--plot", str(out), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["values"] == ["pytest", "tox"]
    assert out.stat().st_size > 5_000
    bad = run("history", "test command", "--plot", str(tmp_path / "t.gif"))
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and ".png or .svg" in bad.stderr


def just_corrected_chain() -> TimelineResult:
    """Two years of an old value, then the current one stated a minute before now (a correction made just now)."""
    old_id, new_id = "01HZ0000000000000000000011", "01HZ0000000000000000000012"
    bars = [
        Bar(id=old_id, value="pytest", status="ended", start="2022-06-01T00:00:00Z", end="2024-06-01T11:59:00Z",
            learned_at="2022-06-01T09:00:00Z", source="agent", ended_by=new_id, cause=f"superseded by {new_id}"),
        Bar(id=new_id, value="nox -s tests", status="current", start="2024-06-01T11:59:00Z", end=None,
            learned_at="2024-06-01T11:59:00Z", source="agent", by="alice"),
    ]
    return TimelineResult(project="proj", subject="proj", predicate="test_command", bars=bars,
                          now="2024-06-01T12:00:00Z", message="proj · test_command in proj: 2 value(s).")


def test_the_current_value_is_drawn_up_to_now_with_a_width_in_its_own_colour(tmp_path: Path) -> None:
    """A value current for a minute after two years of another: its bar runs from its start through now, is wide
    enough to see, and is drawn in the current colour (opaque) while the ended value is grey — in the figure and in
    the pixels of the saved PNG."""
    import matplotlib.dates as mdates
    import matplotlib.image
    from matplotlib.colors import to_hex, to_rgb

    from chronomem.plot import COLOURS, MIN_SHARE

    chain = just_corrected_chain()
    drawn = draw_timeline(chain)
    patches = {p.get_gid(): p for p in drawn.figure.axes[0].patches if (p.get_gid() or "").startswith("bar-")}
    current, ended = patches[f"bar-{chain.bars[1].id}"], patches[f"bar-{chain.bars[0].id}"]
    now = mdates.date2num(datetime(2024, 6, 1, 12, 0, tzinfo=UTC))
    span = now - mdates.date2num(datetime(2022, 6, 1, tzinfo=UTC))
    assert current.get_x() == pytest.approx(mdates.date2num(datetime(2024, 6, 1, 11, 59, tzinfo=UTC)))
    assert current.get_x() + current.get_width() >= now  # up to now
    assert current.get_width() >= 0.999 * MIN_SHARE * span > 0
    assert to_hex(current.get_facecolor()) == COLOURS["current"] and current.get_alpha() in (None, 1.0)
    assert to_hex(ended.get_facecolor()) == COLOURS["ended"] != COLOURS["current"]

    out = tmp_path / "corrected.png"
    plot_timeline(chain, out)
    pixels = matplotlib.image.imread(str(out))[:, :, :3]
    green = sum(
        1 for row in pixels for px in row
        if all(abs(float(c) - g) < 0.03 for c, g in zip(px, to_rgb(COLOURS["current"]), strict=True))
    )
    assert green > 100, green  # the current bar is visible in its colour


def test_plotting_writes_nothing_into_home(tmp_path: Path) -> None:
    """matplotlib's font list and config went to ~/.cache/matplotlib and ~/.config/matplotlib; a plot now leaves
    an empty HOME empty (issue 46: nothing written outside the store) and removes its own folder at exit."""
    import os

    home, out = tmp_path / "home", tmp_path / "t.png"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MPLCONFIGDIR", "XDG_"))}
    env.update(HOME=str(home), TMPDIR=str(tmp_path), PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    code = ("import sys\n"
            "from tests.tools.test_plot import fixture_chain\n"
            "from chronomem.plot import plot_timeline\n"
            "print(plot_timeline(fixture_chain(), sys.argv[1]).values)\n")
    done = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert out.stat().st_size > 5_000
    assert sorted(p.name for p in home.rglob("*")) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "t.png"]  # its temporary folder removed at exit
