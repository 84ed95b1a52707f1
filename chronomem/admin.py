"""CLI-only data administration: `purge`, `export`, `import`, `doctor`, `backup`, `restore` and `reembed`.

These act on a whole store and some destroy data, so they are commands a person runs,
never MCP tools an agent can call. They reach LanceDB only through
`chronomem.storage.portable`, `chronomem.storage.doctor` and `chronomem.storage.reembed` (handed the
embedder's function: storage never imports embed/). Prompts and progress go
to stderr; stdout carries only the result (or the export itself).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from chronomem.config import Settings, is_remote
from chronomem.errors import InvalidInput, StoreError

COMMANDS = ("purge", "export", "import", "doctor", "backup", "restore", "reembed")
#: Exit code of `doctor` when the store is damaged (and, with --repair, could not be fixed).
EXIT_DAMAGED = 1


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Register the administration commands on the `chronomem` sub-command parser."""
    p = sub.add_parser(
        "purge",
        parents=[common],
        help="delete memories for good, including from the store's history (asks first)",
        description="Hard-delete memories by id, by project, or by a text they contain, with every revision of them "
        "and every fact derived from them, and erase them from old table versions and index files. "
        "--project alone purges that whole project; with --query it limits the search to that project "
        "(without it, --query searches all projects). Stop other chronomem processes on the store first: "
        "a purge ends the old versions they may be reading. On a shared store (s3:// …) it holds the write lease "
        "(other servers' writes wait for it) and only deletes files that no writer may still commit.",
    )
    p.add_argument("--id", action="append", dest="ids", metavar="ID", default=[], help="a memory id (repeatable)")
    p.add_argument("--query", help="purge every memory whose text contains this (case-insensitive substring)")

    p = sub.add_parser("export", parents=[common], help="write every memory as JSON lines (no vectors), ordered by id")
    p.add_argument("--out", metavar="FILE", help="write here instead of standard output")

    p = sub.add_parser(
        "import",
        parents=[common],
        help="load an export into an empty store, or a reference MCP memory server's memory.jsonl into a project",
        description="Two formats, told apart by content (or --from): an export from `chronomem export`, loaded into an "
        "empty store with ids and times kept and vectors recomputed; or the knowledge graph of the reference MCP "
        "memory server (memory.jsonl: entities, relations, observations), added to --project (default: the current "
        "one) as chunks and facts. Importing the same memory.jsonl again adds nothing; bad lines are reported by number.",
    )
    p.add_argument("file", metavar="FILE", help="the file to import; '-' reads standard input")
    p.add_argument(
        "--from", dest="source_format", choices=["auto", "chronomem", "memory-jsonl"], default="auto",
        help="the file's format (default: recognised from its first lines)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")

    p = sub.add_parser(
        "doctor",
        parents=[common],
        help="check the store, the model, the indexes and client configs; --repair fixes the store",
        description="Check that the store opens and reads, the embedding model loads and embeds, the indexes cover "
        "the table, and the Claude Code / Cursor config files parse and start chronomem. Each check prints ok, "
        "warn or fail with the fix; the exit code is 1 when any check fails.",
    )
    p.add_argument(
        "--repair", action="store_true",
        help="keep every row that still reads, merged with the newest backup, as a new version (never deletes)",
    )

    p = sub.add_parser(
        "backup", parents=[common], help="snapshot every memory (vectors included) into <store>/backups/ now",
        description="Write the whole table at its current version to <store>/backups/backup-<time>-v<version>.parquet "
        "and keep the newest --keep. The server's consolidator takes one by itself every 6 hours of changes.",
    )
    p.add_argument("--keep", type=int, default=None, help="backups to keep (default 4)")

    p = sub.add_parser(
        "restore", parents=[common], help="make the store a backup's memories (its newest one by default)",
        description="Load a backup file into the store as a new table version. A store that holds memories is replaced "
        "only with --replace (its current state is backed up first); one that does not open is moved to "
        "<store>/quarantine/ whole, never deleted.",
    )
    p.add_argument("file", nargs="?", metavar="FILE", help="the backup file (default: the store's newest backup)")
    p.add_argument(
        "--replace", action="store_true",
        help="replace the memories the store holds now (it lists those written after the backup, which it leaves out)",
    )

    p = sub.add_parser(
        "reembed", parents=[common], help="move the store to another embedding model (resumable; asks first)",
        description="Make every memory's vector again with the configured model (CHRONOMEM_MODEL, "
        "CHRONOMEM_MODEL_PATH, CHRONOMEM_EMBED_PRECISION) or the one given here, and record that model on the "
        "store, so it opens with it; another vector dimension is fine. Only the vectors change: ids, text, times "
        "and provenance stay as they are. A backup is taken first (`chronomem restore` of it undoes the move). "
        "Interrupted, it resumes where it stopped when run again. Stop chronomem servers on the store first.",
    )
    p.add_argument("--model", metavar="NAME", help="fastembed model name (default: $CHRONOMEM_MODEL or all-MiniLM-L6-v2)")
    p.add_argument(
        "--model-path", metavar="DIR", help="folder holding the model's ONNX export (default: $CHRONOMEM_MODEL_PATH)"
    )
    p.add_argument(
        "--precision", choices=["int8", "float32"], help="how the model computes (default: $CHRONOMEM_EMBED_PRECISION or float32; int8: its int8 copy)"
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")


#: Commands that work on a local store's directory (its files, its backups, a local lock) and are refused on a
#: store in object storage, each with what to do instead.
LOCAL_ONLY = {
    "backup": "backups are files beside a local store; keep the bucket's own versioning or `chronomem export` it",
    "restore": "restore into a local store, then `chronomem export` it and `chronomem import` into a new prefix",
    "reembed": "it rewrites every row while servers of other machines write: re-embed a local copy "
    "(`chronomem export`, `import`) and point the team at its new prefix",
    "import": "import into a local store first, or ask for a shared-store import",
}


def run(args: argparse.Namespace, settings: Settings) -> int:
    if is_remote(settings.store_path) and args.command in LOCAL_ONLY:
        raise StoreError(
            f"`chronomem {args.command}` works on a local store only, and {settings.store_path} is in object storage: "
            f"{LOCAL_ONLY[args.command]}"
        )
    if args.command == "doctor":
        return _doctor(args, settings)
    if args.command == "restore":
        return _restore(args, settings)
    if args.command == "reembed":
        return _reembed(args, settings)
    from chronomem.service import MemoryService

    if args.command in ("export", "purge") and not settings.store_path.exists():
        raise StoreError(f"no store at {settings.store_path}: pass --store or set CHRONOMEM_HOME")
    svc = MemoryService(settings)
    if args.command == "export":
        return _export(svc, args.out)
    if args.command == "import":
        return _import(svc, args)
    if args.command == "backup":
        return _backup(svc, args)
    return _purge(svc, args)


# ---------------------------------------------------------------------------- backup / restore


def _backup(svc: Any, args: argparse.Namespace) -> int:
    from chronomem.storage.backup import BACKUP_KEEP, take_backup

    if not svc.settings.store_path.exists():
        raise StoreError(f"no store at {svc.settings.store_path}: pass --store or set CHRONOMEM_HOME")
    keep = args.keep if args.keep is not None else BACKUP_KEEP
    if keep < 1:
        raise InvalidInput("--keep must be at least 1")
    made = take_backup(svc.store, keep=keep)
    if args.json:
        print(json.dumps({"backup": str(made.path), "version": made.version, "rows": made.rows}))
    else:
        print(f"backed up {made.rows} rows (version {made.version}) to {made.path}")
    return 0


def _restore(args: argparse.Namespace, settings: Settings) -> int:
    from chronomem.storage.backup import latest_backup
    from chronomem.storage.doctor import restore_backup

    file = args.file
    if file is None:
        newest = latest_backup(settings.store_path)
        if newest is None:
            raise InvalidInput(f"no backup in {settings.store_path / 'backups'}: name a backup file")
        file = str(newest.path)
    done = restore_backup(settings.store_path, file, replace=args.replace)
    if args.json:
        print(json.dumps({
            "restored": done.rows, "version": done.version, "from": file, "store": str(settings.store_path),
            "left_out": {"notes": done.notes_left_out, "facts": done.facts_left_out, "changes": done.changes_left_out,
                         "listed": [m.__dict__ for m in done.left_out]},
            "replaced_backup": done.replaced_backup,
        }))
        return 0
    print(f"restored {done.rows} rows from {file} into {settings.store_path} (version {done.version})")
    if done.summary():  # what the replaced state held and the backup lacks: gone from the store now
        print(f"left out {done.summary()}:")
        for m in done.left_out:
            print(f"  {m.line()}")
        if done.left_out_count > len(done.left_out):
            print(f"  … and {done.left_out_count - len(done.left_out)} more")
        if done.replaced_backup:
            print(f"the replaced state, all of them included, is kept in {done.replaced_backup} "
                  f"(`chronomem restore --replace` of it undoes this restore)")
    return 0


# ---------------------------------------------------------------------------- reembed


def _reembed(args: argparse.Namespace, settings: Settings) -> int:
    """Move the store to the configured (or given) model: survey, confirm, then `storage.reembed.reembed` with
    the model's bulk embedding, the store's write lock held for the swap, progress on stderr at a terminal."""
    from dataclasses import replace

    from chronomem.progress import bar as progress_bar
    from chronomem.storage.reembed import open_table, reembed, survey

    target = replace(
        settings,
        model_name=args.model or settings.model_name,
        model_path=Path(args.model_path).expanduser() if args.model_path else settings.model_path,
        embed_precision=args.precision or settings.embed_precision,
    )
    path = settings.store_path
    open_table(path)  # a missing or foreign store: one line, before the model loads
    if target.model_path is None:
        from chronomem.embed.embedder import known_models, model_dim

        if model_dim(target.model_name) is None:
            examples = ", ".join(sorted(known_models())[:3])
            raise InvalidInput(
                f"unknown embedding model {target.model_name!r}: fastembed does not know it (it knows e.g. "
                f"{examples}); give one of its names, or --model-path DIR with the model's ONNX export"
            )
    elif not target.model_path.is_dir():
        raise InvalidInput(f"the model folder {target.model_path} (--model-path or CHRONOMEM_MODEL_PATH) is not a directory")
    from chronomem.embed import FastEmbedder

    embedder = FastEmbedder(
        target.model_name, target.model_path, wait_seconds=target.model_wait_seconds, precision=target.embed_precision
    )
    embedder.wait()  # ModelUnavailable: one line naming the setting
    seen = survey(path, embedder.name, embedder.dim)
    if not seen.up_to_date and not args.yes:
        _confirm_reembed(seen)
    with progress_bar(seen.stale, "re-embedding", "memory", quiet=args.quiet) as bar:

        def started(total: int, done: int) -> None:
            bar.reset(total=total)
            bar.update(done)

        report = reembed(
            path, embedder.embed_many, embedder.name, embedder.dim, lambda: _write_lock(path),
            progress=bar.update, started=started,
        )
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    elif report.already:
        print(f"the store at {path} already holds vectors from {report.model} ({report.dim}-d) only: nothing to do")
    else:
        done = f"{report.embedded} embedded ({report.texts} distinct texts)"
        if report.resumed:
            done += f", {report.resumed} staged by the interrupted run"
        if report.kept:
            done += f", {report.kept} already from {report.model}"
        print(
            f"moved {report.rows} memories of {path} from {report.from_model} ({report.from_dim}-d) to "
            f"{report.model} ({report.dim}-d): {done}; the backup taken first is {report.backup}"
        )
    hint = _configure_hint(args, settings, target)
    if hint:
        print(hint, file=sys.stderr)
    return 0


def _configure_hint(args: argparse.Namespace, settings: Settings, target: Settings) -> str | None:
    """When the flags chose another model than the settings, the settings that open the store with it."""
    wanted = []
    if target.model_name != settings.model_name:
        wanted.append(f"CHRONOMEM_MODEL={target.model_name}")
    if target.model_path != settings.model_path and target.model_path is not None:
        wanted.append(f"CHRONOMEM_MODEL_PATH={target.model_path.resolve()}")
    if target.embed_precision != settings.embed_precision:
        wanted.append(f"CHRONOMEM_EMBED_PRECISION={target.embed_precision}")
    if not wanted:
        return None
    return (
        f"note: configure {' '.join(wanted)} wherever chronomem runs on this store (servers, `chronomem install` "
        "entries); `chronomem doctor` says when the store's model and the configured one differ"
    )


def _confirm_reembed(seen: Any) -> None:
    what = (
        f"re-embed {seen.stale} of the {seen.rows} memories in {seen.path} with {seen.target} ({seen.target_dim}-d); "
        f"the store's vectors are from {seen.model} ({seen.dim}-d)"
    )
    if not sys.stdin.isatty():
        raise InvalidInput(f"reembed would {what}; there is no terminal to confirm on, so pass --yes")
    err = sys.stderr
    print(f"This will {what}.", file=err)
    if seen.staged:
        print(f"{seen.staged} of them were embedded by an interrupted run and are kept.", file=err)
    print(
        "A backup is taken first; only the vectors change. Stop chronomem servers on this store first. "
        "Type 'yes' to go on: ", end="", file=err,
    )
    err.flush()
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise InvalidInput("reembed cancelled; nothing was changed")


@contextmanager
def _write_lock(path: Path) -> Iterator[None]:
    """The store's cross-process write lock (the one `MemoryService.writing` takes), for the swap."""
    from filelock import FileLock, Timeout

    from chronomem.service import WRITE_LOCK_NAME, WRITE_LOCK_TIMEOUT

    lock = FileLock(str(path / WRITE_LOCK_NAME))
    try:
        lock.acquire(timeout=WRITE_LOCK_TIMEOUT)
    except Timeout:
        raise StoreError(
            f"another process has held the write lock of {path} for {WRITE_LOCK_TIMEOUT:.0f} s; stop the chronomem "
            "servers on this store and run `chronomem reembed` again (it resumes)"
        ) from None
    try:
        yield
    finally:
        lock.release()


# ---------------------------------------------------------------------------- export / import


def _export(svc: Any, out: str | None) -> int:
    from chronomem.storage.portable import export_lines

    store = svc.store
    if out is None:
        count = _write_lines(export_lines(store), sys.stdout, store.count())
    else:
        target = Path(out)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent if str(target.parent) else ".")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
                count = _write_lines(export_lines(store), handle, store.count())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        print(f"exported {count} memories to {target}", file=sys.stderr)
    return 0


def _write_lines(lines: Any, handle: TextIO, total: int) -> int:
    """Write each line to `handle`, with a progress bar over the `total` rows (stderr, at a terminal)."""
    from chronomem.progress import bar

    count = 0
    with bar(total, "exporting", "memory") as shown:
        for line in lines:
            handle.write(line + "\n")
            count += 1
            shown.update(1)
    return count


def _read_text_lines(file: str) -> list[str]:
    try:
        if file == "-":
            return sys.stdin.buffer.read().decode("utf-8").splitlines()
        with open(file, encoding="utf-8") as handle:
            return handle.read().splitlines()
    except FileNotFoundError:
        raise InvalidInput(f"no such file: {file}") from None
    except IsADirectoryError:
        raise InvalidInput(f"{file} is a directory, not a file") from None
    except UnicodeDecodeError:
        raise InvalidInput(f"{file} is not UTF-8 text: neither a chronomem export nor a memory.jsonl") from None


def _import(svc: Any, args: argparse.Namespace) -> int:
    from chronomem.importers.memory_jsonl import looks_like_memory_jsonl
    from chronomem.storage.portable import import_records, read_export, require_empty

    file, as_json = args.file, args.json
    lines = _read_text_lines(file)
    fmt = args.source_format
    if fmt == "auto":
        fmt = "memory-jsonl" if looks_like_memory_jsonl(lines) else "chronomem"
    if fmt == "memory-jsonl":
        return _import_memory_jsonl(svc, args, lines)
    records = read_export(lines)
    store = svc.store
    require_empty(store)
    from chronomem.progress import bar as progress_bar

    with svc.writing(), progress_bar(len(records), "embedding", "memory", quiet=args.quiet) as bar:
        count = import_records(store, records, svc.embedder.embed_many, progress=bar.update, embed_model=svc.embedder.name)
    if as_json:
        print(json.dumps({"imported": count, "store": str(store.path)}))
    else:
        print(f"imported {count} memories into {store.path}")
    return 0


def _import_memory_jsonl(svc: Any, args: argparse.Namespace, lines: list[str]) -> int:
    """The reference MCP memory server's graph into a project; progress on stderr when it is a terminal."""
    from chronomem.importers.memory_jsonl import import_memory_jsonl
    from chronomem.progress import bar as progress_bar

    with progress_bar(None, "importing", "item", quiet=args.quiet) as bar:

        def started(total: int) -> None:
            bar.reset(total=total)

        report = import_memory_jsonl(svc, lines, project=args.project, progress=bar.update, on_parsed=started)
    if report.bad_lines and not (report.entities or report.relations):
        first = report.bad_lines[0]
        raise InvalidInput(
            f"{args.file} holds no entity or relation: {len(report.bad_lines)} bad lines, the first "
            f"line {first.line}: {first.error}"
        )
    if args.json:
        print(json.dumps({**report.as_dict(), "store": str(svc.store.path)}, indent=2))
    else:
        print(report.text())
    for bad in report.bad_lines[:20]:
        print(f"line {bad.line}: {bad.error}", file=sys.stderr)
    if len(report.bad_lines) > 20:
        print(f"… and {len(report.bad_lines) - 20} more bad lines", file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------- purge


def _purge(svc: Any, args: argparse.Namespace) -> int:
    from chronomem.storage.portable import erase, plan_purge
    from chronomem.tools.validate import memory_id

    ids = [memory_id(i) for i in args.ids]
    project = args.project
    if not ids and args.query is None and not project:
        raise InvalidInput("say what to purge: --id ID, --query TEXT, or --project NAME")
    if ids and project and args.query is None:
        raise InvalidInput("pass --id or --project, not both (--project with --query limits the search)")
    store = svc.store

    def plan_now() -> Any:
        return plan_purge(
            store,
            ids=ids,
            projects=[project] if project and args.query is None and not ids else [],
            query=args.query,
            query_projects=[project] if project and args.query is not None else None,
        )

    if not args.yes:  # asked before the write lock is taken: other writers do not wait while a person reads
        shown = plan_now()
        if shown.rows:
            _confirm(shown.rows)
    with svc.writing():
        plan = plan_now()  # again under the lock: what matches now, revisions and facts derived meanwhile too
        if not plan.rows:
            print("nothing matches; nothing was purged", file=sys.stderr)
            if args.json:
                print(json.dumps({"purged": 0, "ids": []}))
            return 0
        from chronomem.progress import ticking

        with ticking(f"purging {len(plan.rows)} memories (rewriting the table, erasing old versions)"):
            report = erase(store, plan)
        if not store.remote:  # the read index's snapshot holds the purged rows' text too (search/snapshot.py)
            from chronomem.search.snapshot import discard

            discard(store.path)
    if args.json:
        print(json.dumps({"purged": report.removed, "ids": plan.ids, "reasons_scrubbed": report.reasons_scrubbed}))
    else:
        line = f"purged {report.removed} memories ({report.kept} remain); older table versions and index files erased"
        if report.reasons_scrubbed:
            line += f"; blanked the reason of {report.reasons_scrubbed} memories that quoted them"
        print(line)
    return 0


def _confirm(rows: list[Any]) -> None:
    if not sys.stdin.isatty():
        raise InvalidInput(
            f"purge would delete {len(rows)} memories for good; there is no terminal to confirm on, so pass --yes"
        )
    err = sys.stderr
    print(f"These {len(rows)} memories (with their revisions and derived facts) will be deleted for good:", file=err)
    for row in rows[:20]:
        text = " ".join(row.content.split())
        print(f"  {row.id} {row.kind:5} {row.project}: {text[:70]}{'…' if len(text) > 70 else ''}", file=err)
    if len(rows) > 20:
        print(f"  … and {len(rows) - 20} more", file=err)
    print("They are also erased from the store's history (older versions). Type 'yes' to purge: ", end="", file=err)
    err.flush()
    answer = sys.stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise InvalidInput("purge cancelled; nothing was deleted")


# ---------------------------------------------------------------------------- doctor


def _doctor(args: argparse.Namespace, settings: Settings) -> int:
    """The store's own check (and --repair), then the model, the indexes and the client configs (checks.py)."""
    from chronomem.checks import FAIL, run_checks
    from chronomem.storage.doctor import check, repair

    if args.repair:
        from chronomem.progress import ticking

        with ticking("repairing (reading every row, salvaging, merging the newest backup)"):
            report = repair(settings.store_path)
    else:
        report = check(settings.store_path)
    stored = (report.model, report.dim) if report.model is not None and report.dim is not None else None
    checks = run_checks(settings, store_ok=report.ok, stored=stored, row_models=report.row_models)
    ok = report.ok and all(c.status != FAIL for c in checks)
    if args.json:
        print(json.dumps({"ok": ok, "store": report.__dict__, "checks": [c.as_dict() for c in checks]}, indent=2))
    else:
        print(report.text())
        for c in checks:
            print(c.text())
    return 0 if ok else EXIT_DAMAGED
