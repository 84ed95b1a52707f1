"""The `chronomem` command: `serve`, the five tools from the shell, and `demo`.

argparse (standard library) rather than a CLI framework: it costs nothing at start-up,
which matters for `serve`, whose client waits on `initialize`. Human-readable output by
default, `--json` for scripts; a bad input prints one `error:` line and exits 2 — so does a read
(`READS`) of a project named by `--project` or CHRONOMEM_PROJECT that holds no memories, naming
the projects that do (`MemoryService.empty_project_note`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from chronomem import __version__, admin, install
from chronomem.config import Settings
from chronomem.errors import ChronomemError, NotFound

EXIT_USAGE = 2


def _common(defaults: bool = True) -> argparse.ArgumentParser:
    """Options every command takes. Sub-commands get a copy without defaults (SUPPRESS), so an option given
    before the command name (`chronomem --store X recall …`) is not reset by the sub-command's default."""
    common = argparse.ArgumentParser(add_help=False, argument_default=None if defaults else argparse.SUPPRESS)
    common.add_argument("--store", metavar="PATH", help="store directory (default: $CHRONOMEM_HOME or the user data dir)")
    common.add_argument("--project", help="project scope (default: $CHRONOMEM_PROJECT or the git repository)")
    common.add_argument("--json", action="store_true", help="print the structured result as JSON")
    common.add_argument(
        "--yes", action="store_true", **({"default": False} if defaults else {}),
        help="do not ask for confirmation (purge, reembed, upgrading an older store)",
    )
    common.add_argument(
        "-v", "--verbose", action="count", **({"default": 0} if defaults else {}), help="log to stderr (-vv for debug)"
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chronomem",
        description="Local-first, bi-temporal long-term memory for coding agents, over MCP.",
        parents=[_common()],
    )
    common = _common(defaults=False)
    parser.add_argument("--version", action="version", version=f"chronomem {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("serve", parents=[common], help="run the MCP server (stdio by default)")
    p.add_argument(
        "--transport", choices=["stdio", "sse", "http"], default="stdio",
        help="stdio (default: the client starts the server), sse (/sse) or http (streamable HTTP at /mcp)",
    )
    p.add_argument("--host", default="127.0.0.1", help="bind address for sse/http (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="port for sse/http (default 8765)")
    p.add_argument(
        "--token",
        help="bearer token required on every sse/http request (default $CHRONOMEM_TOKEN); "
        "needed to bind to a non-loopback --host",
    )
    p.add_argument("--ui", action="store_true", help="with --transport http: also serve the local page at / (see `ui`)")
    p.add_argument(
        "--tokens", metavar="FILE",
        help="a team's token file: one named token per client, read-only and project limits (default "
        "$CHRONOMEM_TOKENS_FILE; README, team memory)",
    )

    p = sub.add_parser("ui", parents=[common], help="open the local page: projects, search, fact timelines, brief, corrections")
    p.add_argument("--port", type=int, default=8766, help="port (default 8766); the same server also answers MCP at /mcp")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1; any other needs a token)")
    p.add_argument("--token", help="the page's token (default $CHRONOMEM_TOKEN, else a random one for this run)")
    p.add_argument("--no-browser", action="store_true", help="print the one-time link, do not open a browser")

    p = sub.add_parser("remember", parents=[common], help="store a statement (and optional facts)")
    p.add_argument("content", help="the text to remember; '-' reads standard input")
    p.add_argument(
        "--fact",
        nargs=3,
        action="append",
        metavar=("SUBJECT", "PREDICATE", "OBJECT"),
        help="a structured fact the statement makes (repeatable)",
    )
    p.add_argument("--valid-from", help="when it became true (ISO 8601 or '2 days ago'; default now)")
    p.add_argument("--tag", action="append", dest="tags", help="a label (repeatable)")
    p.add_argument(
        "--path", action="append", dest="paths",
        help="a file or glob it is about, relative to the repository (repeatable); its content hash is recorded",
    )

    for name, help_text in (("recall", "what is true and remembered now"), ("as-of", "what was true at a time")):
        p = sub.add_parser(name, parents=[common], help=help_text)
        if name == "as-of":
            p.add_argument("query", help="what you want to know")
            p.add_argument(
                "--at", required=True,
                help="ISO 8601 date/time, a phrase like '3 weeks ago', or a git commit, tag or branch (v1.4.0)",
            )
            p.add_argument("--known-at", help="as recorded at this time or git ref (default now)")
        else:
            p.add_argument("query", nargs="?", help="what you want to know (optional with --path)")
            p.add_argument(
                "--path", action="append", dest="paths",
                help="what is known about this file or glob (repeatable)",
            )
        p.add_argument("-k", "--limit", type=int, default=10, help="most results (1-100, default 10)")
        p.add_argument("--budget-tokens", type=int, help="cap on the estimated tokens of the answer")
        p.add_argument(
            "--scope", choices=["project", "global", "both", "all"], default="project",
            help="project (default), global, both (project + global) or all projects",
        )
        p.add_argument(
            "--kind", action="append", dest="kinds", choices=["fact", "chunk"],
            help="only facts or only chunks (repeatable)",
        )

    p = sub.add_parser("forget", parents=[common], help="end a memory's validity (nothing is deleted)")
    p.add_argument("id", help="the memory's id, from recall, as-of or history")
    p.add_argument("--reason", help="why it is no longer true (shown in history)")
    p.add_argument("--retract", action="store_true", help="it was never true")
    p.add_argument("--at", help="when it stopped being true (default now)")
    p.add_argument(
        "--superseded-by", metavar="ID",
        help="the later memory that replaces it: it ends then, and its facts that memory updates move to it",
    )

    p = sub.add_parser("history", parents=[common], help="a fact's supersession chain")
    p.add_argument(
        "id", nargs="?", metavar="ID|QUERY",
        help="the id of any memory in the chain, or words naming the fact (or give --subject and --predicate)",
    )
    p.add_argument("--subject", help="the fact's subject, with --predicate")
    p.add_argument("--predicate", help="the fact's predicate, with --subject")
    p.add_argument("--plot", metavar="FILE", help="draw the fact's timeline into FILE (.png or .svg)")

    p = sub.add_parser("entity", parents=[common], help="an entity's views: counts, latest values, extremes over its facts")
    p.add_argument("name", nargs="?", help="the entity (a test, dependency, service, module)")
    p.add_argument("--view", help="one view (flaky, incidents, version, owner, port, or one declared in entities.toml)")
    p.add_argument("--as-of", help="valid time to read at (ISO 8601, a phrase, or a git ref; default now)")
    p.add_argument("--known-at", help="as recorded at this time (default now)")

    p = sub.add_parser("brief", parents=[common], help="the session brief: current facts and recent changes, within a budget")
    p.add_argument("--budget-tokens", type=int, help="most tokens it may take (default $CHRONOMEM_BRIEF_TOKENS or 1500)")

    sub.add_parser("consolidate", parents=[common], help="run the consolidator to completion (for CI and cron)")
    sub.add_parser("projects", parents=[common], help="every project in the store, with counts (* = this one)")
    sub.add_parser("demo", parents=[common], help="a short story of changing facts in a temporary store")
    admin.add_parsers(sub, common)
    install.add_parser(sub, common)
    return parser


def _setup_logging(verbose: int, settings: Settings) -> None:
    level = {0: settings.log_level, 1: "INFO"}.get(verbose, "DEBUG")
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, level, logging.WARNING), format="%(levelname)s %(name)s: %(message)s")


def _read_stdin() -> str:
    """Standard input as UTF-8 text; anything else is one `error:` line, not a traceback."""
    from chronomem.errors import InvalidInput

    try:
        return sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"standard input is not UTF-8 text (byte {exc.start}): send plain text") from None


def _csv(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def _emit(result: Any, as_json: bool) -> None:
    if as_json:
        print(result.model_dump_json(indent=2))
    else:
        print(result.text())


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        settings = Settings.from_env(store=args.store, project=args.project)
    except ValueError as exc:  # CHRONOMEM_STORAGE_OPTIONS that is not a JSON object
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    _setup_logging(args.verbose, settings)
    try:
        _consent_to_upgrade(args, settings)
        return _run(args, settings)
    except BrokenPipeError:  # `chronomem doctor | head`: the reader left; nothing more to say, no traceback
        _silence_stdout()
        return 0
    except ChronomemError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        from chronomem.storage.doctor import damage_error, is_damage, resource_error

        known = resource_error(settings.store_path, exc)  # a full disk or a read-only store is not damage
        if known is not None:
            print(f"error: {known}", file=sys.stderr)
            return EXIT_USAGE
        if not is_damage(exc):
            raise
        print(f"error: {damage_error(settings.store_path, exc)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's final flush of a closed pipe raises nothing."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


#: Commands that never open the store through `MemoryStore.open` (doctor reads it as it is) or, for `serve`,
#: upgrade it at start without asking: a client started the server and no one is at a terminal.
NO_UPGRADE_QUESTION = ("install", "demo", "doctor", "restore", "serve")


def _consent_to_upgrade(args: argparse.Namespace, settings: Settings) -> None:
    """Ask before a command opens a store of an older schema, which migrates it (storage/migrate.py, a backup
    first). Proceeds without asking with --yes, when CI=true, or when standard input is not a terminal."""
    if args.command in NO_UPGRADE_QUESTION:
        return
    from chronomem.storage.migrate import pending
    from chronomem.storage.schema import SCHEMA_VERSION

    found = pending(settings.store_path)
    if found is None or getattr(args, "yes", False) or os.environ.get("CI", "").lower() == "true":
        return
    if not sys.stdin.isatty():
        return
    answer = input(
        f"The store at {settings.store_path} has schema {found}; this chronomem upgrades it to {SCHEMA_VERSION} "
        "(a backup is taken first; older chronomem versions cannot open it afterwards). Upgrade? [y/N] "
    )
    if answer.strip().lower() not in ("y", "yes"):
        raise ChronomemError(f"the store at {settings.store_path} was not upgraded (nothing changed)")


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from chronomem.service import MemoryService

    if args.command == "demo":
        from chronomem.demo import run_demo

        return run_demo(settings, build_parser().parse_args, tool_result, as_json=args.json)

    if args.command == "install":
        return install.run(args)
    if args.command in admin.COMMANDS:
        return admin.run(args, settings)
    network = args.command == "ui" or (args.command == "serve" and args.transport != "stdio")
    token = (args.token or os.environ.get("CHRONOMEM_TOKEN") or None) if args.command in ("serve", "ui") else None
    # a team's token file (server/team.py) is for `serve`; the page (`ui`) has one token
    tokens_file = (args.tokens or os.environ.get("CHRONOMEM_TOKENS_FILE") or None) if args.command == "serve" else None
    if network:
        from chronomem.server.security import check_exposure

        if not tokens_file:
            check_exposure(args.host, token)  # refuse at once, before anything loads

    svc = MemoryService(settings)
    if args.command in ("serve", "ui"):
        from chronomem.server.transports import serve

        page = args.command == "ui" or args.ui
        serve(
            svc,
            "http" if args.command == "ui" else args.transport,
            host=args.host,
            port=args.port,
            token=token,
            allowed_hosts=_csv(os.environ.get("CHRONOMEM_ALLOWED_HOSTS")),
            allowed_origins=_csv(os.environ.get("CHRONOMEM_ALLOWED_ORIGINS")),
            ui=page,
            open_browser=args.command == "ui" and not args.no_browser,
            tokens_file=tokens_file,
        )
        return 0

    if args.command == "consolidate":
        steps = _consolidate(svc)
        if args.json:
            print(json.dumps([{"did": s.did, "seconds": round(s.seconds, 3), "detail": s.detail} for s in steps], indent=2))
        else:
            totals: dict[str, tuple[int, float, dict[str, int]]] = {}
            for s in steps:  # one line per kind of work: a backlog is hundreds of batches
                n, secs, counts = totals.get(s.did, (0, 0.0, {}))
                totals[s.did] = (n + 1, secs + s.seconds, {k: counts.get(k, 0) + s.counts.get(k, 0) for k in {*counts, *s.counts}})
            for did, (n, secs, counts) in totals.items():
                tail = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
                print(f"{did}: {n} step(s), {secs:.2f} s" + (f" ({tail})" if tail else ""))
        return 0

    if args.command == "projects":
        return _projects(svc, args.json)

    result = tool_result(svc, args)
    if result is not None:
        _emit(result, args.json)
    return 0


#: The commands that read memories: a `--project` (or CHRONOMEM_PROJECT) that holds none is an error for them.
READS = ("recall", "as-of", "history", "entity", "brief")
#: The commands that run one tool and print its result (`tool_result`).
TOOL_COMMANDS = ("remember", "forget", *READS)


def tool_result(svc: Any, args: argparse.Namespace) -> Any:
    """The result of a tool command (`TOOL_COMMANDS`) as parsed by `build_parser`; None when the command printed
    its own (`history --plot`). `chronomem demo` runs its printed commands through this too."""
    from chronomem import tools

    if args.command in READS:
        try:
            found = _read(svc, args)
        except NotFound as exc:  # "no facts for …": and the project holds nothing at all, if so
            empty = _empty_project(svc)
            raise NotFound(f"{exc}. {empty}") if empty is not None else exc from None
        if _found_nothing(found) and (empty := _empty_project(svc)) is not None:
            raise empty
        return found
    if args.command == "remember":
        content = _read_stdin() if args.content == "-" else args.content
        facts = [{"subject": s, "predicate": p, "object": o} for s, p, o in (args.fact or [])]
        return tools.remember(
            svc, content, valid_from=args.valid_from, facts=facts or None, tags=args.tags, paths=args.paths
        )
    if args.command == "forget":
        return tools.forget(svc, args.id, args.reason, retract=args.retract, at=args.at, superseded_by=args.superseded_by)
    raise ChronomemError(f"unknown command {args.command}")  # pragma: no cover - argparse restricts the choices


def _read(svc: Any, args: argparse.Namespace) -> Any:
    """The result of a read command (None when it printed its own: `history --plot`)."""
    from chronomem import tools
    from chronomem.tools.timeline import find_fact
    from chronomem.tools.validate import looks_like_id

    if args.command == "recall":
        result = tools.recall(
            svc, args.query, paths=args.paths, scope=args.scope, limit=args.limit, budget_tokens=args.budget_tokens,
            kinds=args.kinds,
        )
    elif args.command == "as-of":
        result = tools.as_of(
            svc,
            args.query,
            args.at,
            known_at=args.known_at,
            scope=args.scope,
            limit=args.limit,
            budget_tokens=args.budget_tokens,
            kinds=args.kinds,
        )
    elif args.command == "history":
        if args.plot:
            _plot(svc, args)
            return None
        ident = args.id if args.id is None or looks_like_id(args.id) else find_fact(svc, args.id, None)
        result = tools.history(svc, ident, subject=args.subject, predicate=args.predicate)
    elif args.command == "entity":
        result = tools.entity(svc, args.name, view=args.view, as_of=args.as_of, known_at=args.known_at)
    else:
        from chronomem.tools.brief import brief

        result = brief(svc, budget_tokens=args.budget_tokens)
    return result


def _found_nothing(result: Any) -> bool:
    """Whether a read's result is empty: no results (recall, as-of), entries (history), views (entity), or
    nothing stored (brief)."""
    if result is None:
        return False
    for name in ("results", "entries", "views"):
        if hasattr(result, name):
            return not getattr(result, name)
    return not getattr(result, "stored", True)


def _empty_project(svc: Any) -> NotFound | None:
    """The error of a read whose project — named by `--project` or CHRONOMEM_PROJECT — holds no memories."""
    note = svc.empty_project_note(svc.settings.project)
    return NotFound(note) if note is not None else None


def _consolidate(svc: Any) -> list[Any]:
    """Run the consolidator to completion; a progress bar over the pending notes (stderr, at a terminal)."""
    from chronomem.consolidate.runner import Consolidator
    from chronomem.progress import bar, shown

    runner = Consolidator(svc)
    pending = runner.pending_chunks().get("rules", 0) if shown() else 0
    steps = []
    with bar(pending, "consolidating", "note") as line:
        while (step := runner.step()) is not None:
            steps.append(step)
            line.set_postfix_str(step.did, refresh=False)
            line.update(step.counts.get("chunks", 0) if step.did == "extract rules" else 0)
        steps.extend(runner.run_to_completion())  # nothing left but the final index upkeep
    return steps


def _plot(svc: Any, args: argparse.Namespace) -> int:
    """`history … --plot FILE`: the fact's timeline drawn into FILE (plot.py); one line says what was drawn."""
    from chronomem.plot import plot_timeline
    from chronomem.tools.timeline import timeline
    from chronomem.tools.validate import looks_like_id

    named = args.id if args.id is None or looks_like_id(args.id) else None
    drawn = timeline(svc, named, subject=args.subject, predicate=args.predicate, query=None if named else args.id)
    made = plot_timeline(drawn, args.plot)
    if args.json:
        print(json.dumps({"file": str(made.path), "values": made.values, **drawn.model_dump(mode="json")}, indent=2))
    else:
        print(f"{drawn.message} Drew {len(made.values)} value(s) to {made.path}")
    return 0


def _projects(svc: Any, as_json: bool) -> int:
    """`chronomem projects`: each project key with its name, live chunks and facts, all rows, newest write."""
    from chronomem.project import display_name

    if not svc.settings.store_path.exists():
        rows: list[dict[str, Any]] = []
    else:
        stats = svc.store.project_stats(svc.now())
        try:
            current = svc.project()
        except ChronomemError:
            current = None
        rows = [
            {
                "project": key,
                "name": display_name(key),
                "live_chunks": s["live_chunks"],
                "live_facts": s["live_facts"],
                "rows": s["rows"],
                "newest": s["newest"].isoformat() if s["newest"] else None,
                "current": key == current,
            }
            for key, s in sorted(stats.items(), key=lambda kv: (kv[1]["newest"] or svc.now(), kv[0]), reverse=True)
        ]
    if as_json:
        print(json.dumps(rows, indent=2))
    elif not rows:
        print(f"no projects in {svc.settings.store_path}")
    else:
        head = ("", "PROJECT", "NAME", "CHUNKS", "FACTS", "ROWS", "NEWEST")
        table = [head] + [
            ("*" if r["current"] else "", r["project"], r["name"], str(r["live_chunks"]), str(r["live_facts"]),
             str(r["rows"]), (r["newest"] or "")[:16].replace("T", " "))
            for r in rows
        ]
        widths = [max(len(row[i]) for row in table) for i in range(len(head))]
        for row in table:
            print("  ".join(cell.ljust(w) if i < 3 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))).rstrip())
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

