"""`chronomem doctor`'s checks beyond the store's own (storage/doctor.py): model, indexes, client configs.

Each check is one `Check`: `ok`, `warn` (works, but slower or not set up everywhere) or
`fail` (something a client or command will trip on), with a one-line detail and, unless ok,
a one-line fix naming the command or setting that mends it.

- model: is CHRONOMEM_MODEL_PATH set, does its folder hold the ONNX export, does the
  model load and embed one sentence (bounded wait; a load failure is the model's own message);
- store model: are the store's vectors from the configured model (the model and dimension the table records,
  and each row's `embed_model`)? Another dimension fails (the store does not open), another model warns;
  both name `chronomem reembed`. The same model at the other precision (a store written by the int8 copy,
  the default before float32, and float32 configured, or the reverse) warns too, also naming the
  CHRONOMEM_EMBED_PRECISION that matches the store;
- index: the full-text index exists and how many rows it does not cover yet; past
  `VECTOR_INDEX_MIN_ROWS` rows, whether the vector index exists and covers the table.
  Read straight from LanceDB, without opening the store for writing (which would build
  missing indexes as a side effect);
- configs: the project and user config files of Claude Code and Cursor (`install.all_targets`,
  plus Claude Code's local scope: `projects[<repo>].mcpServers` in ~/.claude.json), each
  parsed, and any chronomem entry's command checked to exist and be executable.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from chronomem.config import Settings, is_remote
from chronomem.install import SERVER_NAME, Target, all_targets, project_root

OK, WARN, FAIL = "ok", "warn", "fail"
#: How an embedder names its int8 copy (`FastEmbedder.name`): the model's name with this suffix.
INT8_SUFFIX = "#int8"
#: Longest a doctor run waits for the embedding model to load.
MODEL_CHECK_SECONDS = 60.0
_MODEL_FILES = ("model.onnx", "tokenizer.json", "config.json")


@dataclass
class Check:
    """One line of the doctor's report."""

    name: str
    status: str
    detail: str
    fix: str | None = None

    def text(self) -> str:
        line = f"{self.status:<5} {self.name}: {self.detail}"
        return line + (f"\n      fix: {self.fix}" if self.fix and self.status != OK else "")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------- model


def configured_embedder(settings: Settings, wait_seconds: float = MODEL_CHECK_SECONDS) -> Any:
    """The embedder the settings configure (not loaded yet), waiting at most `wait_seconds` for its model."""
    from chronomem.embed import FastEmbedder

    return FastEmbedder(
        settings.model_name,
        settings.model_path,
        wait_seconds=min(wait_seconds, settings.model_wait_seconds),
        precision=settings.embed_precision,
    )


def check_model(settings: Settings, wait_seconds: float = MODEL_CHECK_SECONDS, embedder: Any = None) -> Check:
    """Does the configured embedding model load and embed a sentence? (`embedder`: the one to try, else the
    settings' own.)"""
    from chronomem.config import EMBED_PRECISIONS
    from chronomem.errors import ChronomemError

    path = settings.model_path
    set_fix = (
        f"set CHRONOMEM_MODEL_PATH to a folder holding the ONNX export of {settings.model_name} "
        f"({', '.join(_MODEL_FILES)})"
    )
    if path is not None:
        if not path.is_dir():
            return Check("model", FAIL, f"CHRONOMEM_MODEL_PATH {path} is not a directory", set_fix)
        missing = [f for f in _MODEL_FILES if not (path / f).is_file()]
        if missing:
            return Check("model", FAIL, f"{path} lacks {', '.join(missing)}", set_fix)
    embedder = embedder if embedder is not None else configured_embedder(settings, wait_seconds)
    shipped = path is None and getattr(embedder, "source", None) == "shipped"
    if path is not None:
        where = f"from {path}"
    elif shipped:
        where = "from the package (the shipped model)"
    else:
        where = "from fastembed's cache (CHRONOMEM_MODEL_PATH is not set)"
    started = time.monotonic()
    try:
        vector = embedder.embed(["chronomem doctor checks that the model embeds a sentence."])[0]
    except ChronomemError as exc:
        return Check("model", FAIL, f"{settings.model_name} does not load {where}: {exc}", set_fix)
    seconds = time.monotonic() - started
    detail = f"{settings.model_name} loads {where} and embeds ({len(vector)}-d, {embedder.precision}, {seconds:.1f} s)"
    if path is None and not shipped:
        return Check("model", WARN, detail, set_fix + " so no download is ever needed")
    asked = os.environ.get("CHRONOMEM_EMBED_PRECISION", "").strip().lower()
    if asked and asked not in EMBED_PRECISIONS:
        return Check(
            "model", WARN, f"{detail}; CHRONOMEM_EMBED_PRECISION={asked!r} is unknown, so {settings.embed_precision} runs",
            f"set CHRONOMEM_EMBED_PRECISION to one of {', '.join(EMBED_PRECISIONS)}",
        )
    if embedder.precision != embedder.requested_precision:
        return Check(
            "model", WARN, f"{detail}: its int8 copy could not be made (the server's log at WARNING says why)",
            "let chronomem write to its cache folder (CHRONOMEM_CACHE_DIR) and install onnx, "
            "or unset CHRONOMEM_EMBED_PRECISION (float32, the default)",
        )
    return Check("model", OK, detail)


# ---------------------------------------------------------------------------- the store's model


def check_store_model(
    store_path: Path, stored: tuple[str, int], row_models: dict[str, int], embedder: Any
) -> Check:
    """Are the store's vectors from the configured model? `stored` is the (model, dimension) the table records,
    `row_models` the rows per model that made them; `embedder` the configured one (its name once loaded, else
    the name it will have)."""
    model, dim = stored
    configured = embedder.name if embedder.ready else embedder.expected_name
    fix = (
        f"run `chronomem reembed --store {store_path}` to move the store to {configured}, "
        f"or configure {model} again"
    )
    if dim != embedder.dim:
        return Check(
            "store model", FAIL,
            f"the store's vectors are {dim}-d, from {model}; the configured model {configured} makes "
            f"{embedder.dim}-d vectors, so the store does not open with it", fix,
        )
    if model != configured and _precisions_of_one_model(model, configured):
        # the int8 copy and float32 of one model: their vectors agree to a cosine of ~0.99, so the store opens and
        # recall works across them, a little worse than with one precision (eval/results/embed_precision.md)
        if model.endswith(INT8_SUFFIX):
            keep = "set CHRONOMEM_EMBED_PRECISION=int8 to keep embedding with the int8 copy"
            what = "the int8 copy (the default before float32)"
        else:
            keep = "unset CHRONOMEM_EMBED_PRECISION (float32 is the default) to keep embedding in float32"
            what = "float32"
        return Check(
            "store model", WARN,
            f"the store's vectors are from {model}, {what}; the configured model is {configured}: recall still "
            "works (the two precisions' vectors agree to a cosine of ~0.99) but compares vectors of two precisions",
            f"run `chronomem reembed --store {store_path}` to make every vector with {configured}, or {keep}",
        )
    if model != configured:
        return Check(
            "store model", WARN,
            f"the store's vectors are from {model}, not the configured model {configured}: recall would compare "
            "vectors of two models", fix,
        )
    others = {name: n for name, n in row_models.items() if name != configured}
    if others:
        named = ", ".join(f"{name}: {n}" for name, n in sorted(others.items(), key=lambda kv: -kv[1])[:3])
        return Check(
            "store model", WARN,
            f"{sum(others.values())} of {sum(row_models.values())} rows have vectors from another model than "
            f"{configured} ({named})", f"run `chronomem reembed --store {store_path}` to make them again",
        )
    return Check("store model", OK, f"the store's vectors are from {configured} ({dim}-d), the configured model")


def _precisions_of_one_model(a: str, b: str) -> bool:
    """Are `a` and `b` one model's names at two precisions (`name` and `name#int8`)?"""
    return a != b and a.removesuffix(INT8_SUFFIX) == b.removesuffix(INT8_SUFFIX)


# ---------------------------------------------------------------------------- indexes


def check_index(store_path: Path) -> Check:
    """How much of the table the full-text (and, when large, vector) index covers."""
    from chronomem.consolidate.upkeep import UPKEEP_MIN_UNINDEXED, VECTOR_INDEX_MIN_ROWS, needs_vector_index
    from chronomem.storage.doctor import _connect, error_line
    from chronomem.storage.schema import FTS_INDEX, TABLE_NAME
    from chronomem.storage.store import VECTOR_INDEX_NAME

    refresh = "run `chronomem consolidate` to refresh the index"
    no_table = Check("index", OK, "no table yet (indexes are made with it)")
    if not (store_path / f"{TABLE_NAME}.lance").exists():  # a URI always "exists": it is asked below
        return no_table
    try:
        db = _connect(store_path)
        if is_remote(store_path) and TABLE_NAME not in db.list_tables().tables:
            return no_table
        table = db.open_table(TABLE_NAME)
        names = {idx.name for idx in table.list_indices()}
        rows = int(table.count_rows())
        if FTS_INDEX not in names:
            return Check("index", WARN, f"no full-text index over {rows} rows (searched flat)", refresh)
        stats = table.index_stats(FTS_INDEX)
        unindexed = int(stats.num_unindexed_rows) if stats is not None else rows
        trained: int | None = None
        if VECTOR_INDEX_NAME in names:
            vstats = table.index_stats(VECTOR_INDEX_NAME)
            trained = int(vstats.num_indexed_rows) if vstats is not None else 0
    except Exception as exc:  # the store check reports damage; here it is one line
        return Check("index", FAIL, f"cannot read the indexes: {error_line(exc)}", "run `chronomem doctor --repair`")
    problems = []
    if unindexed >= UPKEEP_MIN_UNINDEXED:
        problems.append(f"{unindexed} of {rows} rows are not in the full-text index yet (searched flat, slower)")
    if needs_vector_index(rows, trained):
        state = "no vector index" if not trained else f"the vector index covers {trained} rows"
        problems.append(f"{rows} rows and {state} (from {VECTOR_INDEX_MIN_ROWS} rows searches use one)")
    if problems:
        return Check("index", WARN, "; ".join(problems), refresh)
    vector = "" if trained is None else f"; vector index over {trained} rows"
    return Check("index", OK, f"full-text index covers {rows - unindexed} of {rows} rows{vector}")


# ---------------------------------------------------------------------------- client configs


def _install_fix(target: Target) -> str:
    return f"run `chronomem install {target.client} --scope {target.scope}`"


def _command_problem(entry: Any) -> str | None:
    """Why a chronomem config entry cannot start the server, or None."""
    if not isinstance(entry, dict):
        return "the entry is not a JSON object"
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        return "the entry has no command" + (" (it names a url: chronomem install writes stdio entries)" if "url" in entry else "")
    args = entry.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return "args is not a list of strings"
    if os.path.isabs(command):
        if not os.path.isfile(command):
            return f"its command {command} does not exist"
        if not os.access(command, os.X_OK):
            return f"its command {command} is not executable"
    elif "${" not in command and shutil.which(command) is None:
        return f"its command {command!r} is not on PATH"
    if "serve" not in args:
        return f"its args {args} do not run `serve`"
    model = (entry.get("env") or {}).get("CHRONOMEM_MODEL_PATH") if isinstance(entry.get("env"), dict) else None
    if isinstance(model, str) and "${" not in model and not os.path.isdir(os.path.expanduser(model)):
        return f"its CHRONOMEM_MODEL_PATH {model} is not a directory"
    return None


def _read(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(the file's JSON object, None) or (None, what is wrong with it)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"cannot be read ({exc})"
    if not text.strip():
        return {}, None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
    if not isinstance(data, dict):
        return None, f"holds a JSON {type(data).__name__}, not an object"
    return data, None


def check_configs(cwd: str | os.PathLike[str] | None = None, home: Path | None = None, name: str = SERVER_NAME) -> list[Check]:
    """Client config files: parseable, and a chronomem entry somewhere whose command runs."""
    home = home if home is not None else Path.home()
    root = project_root(cwd)
    checks: list[Check] = []
    found = False
    for target in all_targets(root, home):
        if not target.path.exists():
            continue
        label = f"{target.client} {target.scope}"
        data, problem = _read(target.path)
        if problem is not None or data is None:
            checks.append(Check(label, FAIL, f"{target.path} {problem}", f"fix or move aside {target.path}, then {_install_fix(target)}"))
            continue
        servers = data.get("mcpServers")
        entries: list[tuple[str, Any]] = []
        if isinstance(servers, dict) and name in servers:
            entries.append((str(target.path), servers[name]))
        if target.client == "claude-code" and target.scope == "user":
            local = ((data.get("projects") or {}).get(str(root)) or {}) if isinstance(data.get("projects"), dict) else {}
            local_servers = local.get("mcpServers") if isinstance(local, dict) else None
            if isinstance(local_servers, dict) and name in local_servers:
                entries.append((f"{target.path} (local scope of {root})", local_servers[name]))
        for where, entry in entries:
            found = True
            why = _command_problem(entry)
            if why:
                checks.append(Check(label, FAIL, f"{where}: {why}", _install_fix(target)))
            else:
                checks.append(Check(label, OK, f"{where} runs `{_shown(entry)}`"))
        if target.client == "claude-code" and target.scope == "project" and entries:
            rejected = _claude_rejected(root, home, name)
            if rejected:
                checks.append(Check(label, WARN, f"Claude Code has turned the project's {name} server off ({rejected})",
                                    f"run `claude mcp reset-project-choices` in {root}, then `claude` to approve it"))
    if not found:
        checks.append(Check("client config", WARN, f"no Claude Code or Cursor config in {root} or {home} names {name}",
                            "run `chronomem install claude-code` (or `chronomem install cursor`)"))
    return checks


def _shown(entry: dict[str, Any]) -> str:
    return " ".join([entry.get("command", ""), *entry.get("args", [])])


def _claude_rejected(root: Path, home: Path, name: str) -> str | None:
    """Where Claude Code's settings list `name` under disabledMcpjsonServers, if anywhere."""
    places = [home / ".claude" / "settings.json", root / ".claude" / "settings.json", root / ".claude" / "settings.local.json"]
    for place in places:
        data, _ = _read(place) if place.exists() else (None, None)
        if data and name in (data.get("disabledMcpjsonServers") or []):
            return f"disabledMcpjsonServers in {place}"
    data, _ = _read(home / ".claude.json") if (home / ".claude.json").exists() else (None, None)
    projects = (data or {}).get("projects")
    if isinstance(projects, dict):
        local = projects.get(str(root)) or {}
        if isinstance(local, dict) and name in (local.get("disabledMcpjsonServers") or []):
            return f"disabledMcpjsonServers for {root} in {home / '.claude.json'}"
    return None


# ---------------------------------------------------------------------------- all


def run_checks(
    settings: Settings,
    store_ok: bool,
    with_model: bool = True,
    stored: tuple[str, int] | None = None,
    row_models: dict[str, int] | None = None,
) -> list[Check]:
    """Every check after the store's own: model, whether the store's vectors are the model's (when the table
    records its model: `stored`, with its `row_models`), indexes (when the store reads), client configs."""
    checks: list[Check] = []
    if with_model:
        embedder = configured_embedder(settings)
        checks.append(check_model(settings, embedder=embedder))
        if stored is not None:
            checks.append(check_store_model(settings.store_path, stored, row_models or {}, embedder))
    if store_ok:
        checks.append(check_index(settings.store_path))
    checks.extend(check_configs())
    return checks
