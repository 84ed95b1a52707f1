"""The documentation (README.md and the MkDocs pages under docs/) is checked against the code it describes.

- The site builds with `mkdocs build --strict` (nav complete, no broken link or anchor).
- Every ```console block is a transcript: each `$ chronomem …` line is run, in order, in a sandbox of its own per
  page (a temporary HOME, store, data and cache directories, and working directory; no CHRONOMEM_* setting of
  the caller's), and must exit 0; the lines shown under it must appear in its output, in order, `...` standing
  for any text (ids, times, temporary paths). The commands run in one Python process through
  `chronomem.cli.main`, the function the `chronomem` script calls, so the model loads once and the whole replay
  takes seconds.
- Every `chronomem …` command shown in a ```sh / ```bash / ```console block parses with the real command line
  (a synopsis such as `[--scope project|user]` is checked with each choice), and every `python -m eval.X` or
  `python scripts/X.py` command names a module that exists and options it defines.
- The README keeps the test commands: `.ci/run` runs the README's full-suite command.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
SEPARATORS = {"|", "||", "&&", ";", "&"}


def blocks(path: Path, *languages: str) -> list[str]:
    """The bodies of the fenced code blocks of `path` in these languages."""
    return [m.group(2) for m in FENCE.finditer(path.read_text(encoding="utf-8")) if m.group(1) in languages]


def transcript(body: str) -> list[tuple[str, list[str]]]:
    """A console block as (command, the output lines shown under it)."""
    steps: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:].strip(), []))
        elif steps and steps[-1][0].endswith("\\"):
            steps[-1] = (steps[-1][0][:-1] + " " + line.strip(), steps[-1][1])
        elif steps:
            steps[-1][1].append(line.rstrip())
        elif line.strip():
            raise AssertionError(f"a console block must start with a `$ ` command line, not {line!r}")
    return steps


def command_lines(body: str, language: str) -> list[str]:
    """Shell command lines of a block, continuations joined (a console block: its `$ ` lines)."""
    if language == "console":
        return [command for command, _ in transcript(body)]
    joined: list[str] = []
    for line in body.splitlines():
        if joined and joined[-1].endswith("\\"):
            joined[-1] = joined[-1][:-1] + " " + line.strip()
        else:
            joined.append(line.strip())
    return [line for line in joined if line]


def segments(line: str) -> list[list[str]]:
    """The simple commands of a shell line: split at pipes and lists, leading VAR=value assignments dropped. A
    synopsis's brackets are opened (`[--port N]` -> `--port N`, `[--model NAME | --model-path DIR]` -> both)."""
    line = re.sub(r"\[([^\[\]]*)\]", lambda m: m.group(1).replace(" | ", " "), line)
    try:
        tokens = shlex.split(line, comments=True)
    except ValueError:  # an unbalanced quote: not a command line of ours
        return []
    out: list[list[str]] = [[]]
    for token in tokens:
        if token in SEPARATORS:
            out.append([])
        elif out[-1] or not re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", token):
            out[-1].append(token)
    return [s for s in out if s]


def documented_commands(program: str) -> list[tuple[str, list[str]]]:
    """(where, argv after `program`) for every command line in the README's and the pages' shell blocks."""
    found = []
    for path in [README, *PAGES]:
        for language in ("sh", "bash", "console"):
            for body in blocks(path, language):
                for line in command_lines(body, language):
                    for argv in segments(line):
                        if argv[0] == program:
                            found += [(f"{path.relative_to(ROOT)}: {line}", v[1:]) for v in choices(argv)]
    return found


def choices(argv: list[str]) -> list[list[str]]:
    """A synopsis's `a|b` tokens (`--transport stdio|sse|http`) as one argv per choice, each checked."""
    at = next((i for i, token in enumerate(argv) if "|" in token and "://" not in token), None)
    if at is None:
        return [argv]
    return [v for choice in argv[at].split("|") for v in choices([*argv[:at], choice, *argv[at + 1 :]])]


def test_the_site_builds_with_mkdocs_strict(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="MkDocs is not installed (pip install -e '.[test]' or '.[docs]' brings it)")
    site = tmp_path / "site"
    out = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(site)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    for page in PAGES:
        assert (site / ("index.html" if page.stem == "index" else f"{page.stem}/index.html")).is_file(), page.name
    assert (site / "img" / "ui" / "search-timeline.png").is_file(), "docs/hooks.py adds the page's screenshots"


def test_the_readme_links_to_pages_that_exist() -> None:
    text = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if "://" not in link]
    assert any(link.startswith("docs/") for link in local), "the README points to the pages"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, f"README links to files that do not exist: {missing}"
    linked = {Path(link).name for link in local if link.startswith("docs/")}
    assert {p.name for p in PAGES} - {"index.md"} <= linked, "the README links every page"


def test_the_readme_keeps_the_test_commands_ci_runs() -> None:
    readme = README.read_text(encoding="utf-8")
    assert 'pip install -e ".[test]" && python -m pytest\n' in readme
    full = 'python -m pytest -m "slow or not slow"'
    assert f"`{full}`" in readme or f"\n{full}\n" in readme
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.rstrip().splitlines()[-1] == full, ".ci/run ends with the README's full-suite command"
    assert '-e ".[test]"' in ci, ".ci/run installs the test extra (MkDocs for this test comes with it)"


def test_every_documented_chronomem_command_parses() -> None:
    from chronomem.cli import build_parser

    commands = documented_commands("chronomem")
    assert len(commands) >= 40, f"only {len(commands)} chronomem commands found in the docs: is the extractor broken?"
    bad = []
    for where, argv in commands:
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                build_parser().parse_args(argv)
        except SystemExit as exc:
            if exc.code != 0:  # --help exits 0
                bad.append(f"{where}\n    {err.getvalue().strip().splitlines()[-1]}")
    assert not bad, "documented commands the command line refuses:\n" + "\n".join(bad)


def test_every_documented_python_command_names_a_module_and_its_options() -> None:
    bad = []
    checked = 0
    for where, argv in documented_commands("python"):
        if argv[:2] and argv[0] == "-m" and argv[1].startswith("eval."):
            source = ROOT / (argv[1].replace(".", "/") + ".py")
        elif argv and argv[0].startswith("scripts/"):
            source = ROOT / argv[0]
        else:
            continue  # python -m pytest, python -c '…'
        checked += 1
        if not source.is_file():
            bad.append(f"{where}: no {source.relative_to(ROOT)}")
            continue
        text = source.read_text(encoding="utf-8")
        for option in (a.split("=")[0] for a in argv if a.startswith("--")):
            if f'"{option}"' not in text and f"'{option}'" not in text:
                bad.append(f"{where}: {source.relative_to(ROOT)} defines no {option}")
    assert checked >= 10, f"only {checked} eval/scripts commands found in the docs"
    assert not bad, "\n".join(bad)


#: Runs each page's commands through chronomem.cli.main in a sandbox of its own; writes what each printed.
DRIVER = r"""
import contextlib, io, json, os, shlex, sys
from pathlib import Path

plan = json.loads(Path(sys.argv[1]).read_text())
from chronomem.cli import main

results = []
for page in plan:
    base = Path(page["sandbox"])
    dirs = {name: base / name for name in ("home", "data", "cache", "config", "work")}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    os.environ.update(HOME=str(dirs["home"]), XDG_DATA_HOME=str(dirs["data"]), XDG_CACHE_HOME=str(dirs["cache"]),
                      XDG_CONFIG_HOME=str(dirs["config"]), CHRONOMEM_HOME=str(base / "store"))
    os.chdir(dirs["work"])
    for command in page["commands"]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main(shlex.split(command)[1:])
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        results.append({"page": page["page"], "command": command, "rc": rc, "out": out.getvalue(), "err": err.getvalue()})
Path(sys.argv[2]).write_text(json.dumps(results))
"""


def shows(expected: list[str], output: str) -> str | None:
    """None when the expected lines appear in `output` in order (`...` any text), else the first one missing."""
    lines = [line.rstrip() for line in output.splitlines()]
    at = 0
    for want in expected:
        if want.strip() in ("", "..."):
            continue
        pattern = re.compile(re.escape(want).replace(r"\.\.\.", ".*"))
        while at < len(lines) and not pattern.fullmatch(lines[at]):
            at += 1
        if at == len(lines):
            return want
        at += 1
    return None


def test_console_transcripts_replay(tmp_path: Path) -> None:
    plan, expected = [], {}
    for path in [README, *PAGES]:
        steps = [step for body in blocks(path, "console") for step in transcript(body)]
        if not steps:
            continue
        for command, _ in steps:
            assert command.startswith("chronomem "), f"{path.name}: a transcript runs chronomem only: {command}"
        page = str(path.relative_to(ROOT))
        plan.append({"page": page, "sandbox": str(tmp_path / path.stem), "commands": [c for c, _ in steps]})
        expected[page] = steps
    assert len(plan) >= 3, "the quickstart, clients, command line and operations pages carry transcripts"
    plan_file, results_file = tmp_path / "plan.json", tmp_path / "results.json"
    plan_file.write_text(json.dumps(plan))

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHRONOMEM_", "XDG_"))}
    env.update(COLUMNS="80", HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT), HOME=str(tmp_path / "home"))
    run = subprocess.run(
        [sys.executable, "-c", DRIVER, str(plan_file), str(results_file)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    results = json.loads(results_file.read_text())
    assert len(results) == sum(len(p["commands"]) for p in plan)

    failures = []
    steps = [(page, step) for page in expected for step in expected[page]]
    for (page, (command, shown)), result in zip(steps, results, strict=True):
        assert result["command"] == command
        if result["rc"] != 0:
            failures.append(f"{page}: `{command}` exited {result['rc']}\n{result['err'][-1500:]}")
            continue
        missing = shows(shown, result["out"] + result["err"])
        if missing is not None:
            failures.append(f"{page}: `{command}` did not print {missing!r}; it printed:\n{result['out']}{result['err']}")
    assert not failures, "\n\n".join(failures)


def test_shows_matches_in_order_with_ellipses() -> None:
    out = "Remembered 01ABC in project shop-1.\n  fact 01ABD: a = 'b' → added\n"
    assert shows(["Remembered ... in project ....", "  fact ...: a = 'b' → added"], out) is None
    assert shows(["  fact ...: a = 'b' → added", "Remembered ..."], out) == "Remembered ..."
    assert shows(["Remembered 01ABC"], out) == "Remembered 01ABC", "a line must match whole"
