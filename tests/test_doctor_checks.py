"""`chronomem doctor`'s model, index and client-config checks, on real stores, the real model, real git
repositories and config files under a temporary $HOME; each problem comes with the fix that mends it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chronomem.checks import FAIL, OK, WARN, check_configs, check_index, check_model
from chronomem.config import Settings
from chronomem.records import MemoryRecord, new_id
from chronomem.service import MemoryService
from tests.conftest import fp32_model_dir, model_dir


def chronomem(*args: str, cwd: Path, home: Path, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOMEM_")}
    env.update({"HOME": str(home), "CHRONOMEM_MODEL_PATH": str(model_dir()), "HF_HUB_OFFLINE": "1", **extra})
    return subprocess.run([sys.executable, "-m", "chronomem", *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=180)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path.resolve()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def by_name(checks: list, name: str) -> list:
    return [c for c in checks if c.name == name]


# ---------------------------------------------------------------------------- configs


def test_no_config_is_a_warning_naming_install(repo: Path, home: Path) -> None:
    (checks,) = check_configs(repo, home)
    assert checks.status == WARN and checks.fix == "run `chronomem install claude-code` (or `chronomem install cursor`)"


@pytest.mark.slow
def test_installed_configs_check_ok_in_every_scope(repo: Path, home: Path) -> None:
    for client in ("claude-code", "cursor"):
        for scope in ("project", "user"):
            out = chronomem("install", client, "--scope", scope, cwd=repo, home=home)
            assert out.returncode == 0, out.stderr
    checks = check_configs(repo, home)
    assert {c.name for c in checks} == {"claude-code project", "cursor project", "claude-code user", "cursor user"}
    assert all(c.status == OK for c in checks), [c.text() for c in checks]
    assert str(repo / ".mcp.json") in by_name(checks, "claude-code project")[0].detail


def test_broken_json_and_a_missing_command_fail_with_their_fix(repo: Path, home: Path) -> None:
    (home / ".cursor").mkdir()
    (home / ".cursor" / "mcp.json").write_text('{"mcpServers": {')
    (repo / ".mcp.json").write_text(json.dumps(
        {"mcpServers": {"chronomem": {"type": "stdio", "command": str(repo / "gone" / "chronomem"), "args": ["serve"]},
                        "other": {"command": "/nowhere/else"}}}))

    checks = check_configs(repo, home)
    (cursor,) = by_name(checks, "cursor user")
    assert cursor.status == FAIL and "is not valid JSON (line 1" in cursor.detail
    assert cursor.fix and "chronomem install cursor --scope user" in cursor.fix
    (claude,) = by_name(checks, "claude-code project")
    assert claude.status == FAIL and f"its command {repo / 'gone' / 'chronomem'} does not exist" in claude.detail
    assert claude.fix == "run `chronomem install claude-code --scope project`"
    assert "other" not in " ".join(c.detail for c in checks), "only chronomem's entry is judged"

    # The fix it names does mend it.
    assert chronomem("install", "claude-code", cwd=repo, home=home).returncode == 0
    assert by_name(check_configs(repo, home), "claude-code project")[0].status == OK


def test_claude_local_scope_and_rejected_project_server(repo: Path, home: Path) -> None:
    # `claude mcp add` without --scope writes the local scope: projects[<repo>].mcpServers in ~/.claude.json.
    (home / ".claude.json").write_text(json.dumps({"projects": {str(repo): {
        "mcpServers": {"chronomem": {"type": "stdio", "command": sys.executable, "args": ["-m", "chronomem"]}},
        "disabledMcpjsonServers": ["chronomem"],
    }}}))
    (claude_user,) = by_name(check_configs(repo, home), "claude-code user")
    assert claude_user.status == FAIL and "local scope of" in claude_user.detail and "do not run `serve`" in claude_user.detail

    assert chronomem("install", "claude-code", cwd=repo, home=home).returncode == 0
    project = by_name(check_configs(repo, home), "claude-code project")
    assert [c.status for c in project] == [OK, WARN]
    assert "turned the project's chronomem server off" in project[1].detail
    assert "claude mcp reset-project-choices" in (project[1].fix or "")


# ---------------------------------------------------------------------------- model


@pytest.mark.slow
def test_model_loads_and_embeds(tmp_path: Path) -> None:
    result = check_model(Settings(store_path=tmp_path / "s", model_path=model_dir()))
    assert result.status == OK and "384-d, float32" in result.detail
    shipped = check_model(Settings(store_path=tmp_path / "s"))  # nothing set: the model in the package, no download
    assert shipped.status == OK and "from the package" in shipped.detail and "384-d, float32" in shipped.detail
    int8 = check_model(Settings(store_path=tmp_path / "s", embed_precision="int8"))
    assert int8.status == OK and "384-d, int8" in int8.detail


def test_model_check_names_an_unknown_precision_and_a_failed_int8_copy(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHRONOMEM_EMBED_PRECISION", "fp4")
    unknown = check_model(Settings.from_env(store=tmp_path / "s", environ={"CHRONOMEM_MODEL_PATH": str(model_dir())}))
    assert unknown.status == WARN and "'fp4' is unknown, so float32 runs" in unknown.detail
    monkeypatch.delenv("CHRONOMEM_EMBED_PRECISION")
    (tmp_path / "cache").write_text("not a folder")
    monkeypatch.setenv("CHRONOMEM_CACHE_DIR", str(tmp_path / "cache"))
    fallback = check_model(Settings(store_path=tmp_path / "s", model_path=fp32_model_dir(), embed_precision="int8"))
    assert fallback.status == WARN and "float32" in fallback.detail and "int8 copy could not be made" in fallback.detail
    assert fallback.fix and "unset CHRONOMEM_EMBED_PRECISION" in fallback.fix


def test_model_problems_name_the_setting(tmp_path: Path) -> None:
    missing = check_model(Settings(store_path=tmp_path / "s", model_path=tmp_path / "nope"))
    assert missing.status == FAIL and "is not a directory" in missing.detail
    assert missing.fix and missing.fix.startswith("set CHRONOMEM_MODEL_PATH to")
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "tokenizer.json").write_text("{}")
    lacking = check_model(Settings(store_path=tmp_path / "s", model_path=partial))
    assert lacking.status == FAIL and "lacks model.onnx, config.json" in lacking.detail
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("model.onnx", "tokenizer.json", "config.json"):
        (broken / name).write_text("not a model")
    failed = check_model(Settings(store_path=tmp_path / "s", model_path=broken))
    assert failed.status == FAIL and "does not load" in failed.detail


# ---------------------------------------------------------------------------- the store's model

INT8 = "sentence-transformers/all-MiniLM-L6-v2#int8"


def test_a_store_of_the_int8_copy_opens_with_float32_and_doctor_names_both_fixes(tmp_path: Path, clock,
                                                                                  embedder) -> None:
    """A store written by the int8 copy (the default before float32) under the float32 default: it opens, recall
    finds its memories, and the store-model check warns, naming `chronomem reembed` and CHRONOMEM_EMBED_PRECISION=int8."""
    from chronomem import tools
    from chronomem.checks import check_store_model
    from chronomem.embed import FastEmbedder
    from chronomem.storage.doctor import check
    from chronomem.storage.schema import stored_model

    path = tmp_path / "store"
    int8 = FastEmbedder(precision="int8")
    old = MemoryService(Settings(store_path=path, project="proj", embed_precision="int8"), embedder=int8, clock=clock)
    tools.remember(old, "The checkout API listens on port 8080.")
    tools.remember(old, "We deploy with helm every Friday afternoon.")
    assert int8.name == INT8 and stored_model(old.store.table.schema) == (INT8, 384)

    now = MemoryService(Settings(store_path=path, project="proj"), embedder=embedder, clock=clock)
    found = tools.recall(now, "which port does checkout use")
    assert found.results and "8080" in found.results[0].text
    report = check(path)
    result = check_store_model(path, (report.model, report.dim), report.row_models, embedder)
    assert result.status == WARN and INT8 in result.detail and "recall still works" in result.detail
    assert result.fix and f"chronomem reembed --store {path}" in result.fix
    assert "CHRONOMEM_EMBED_PRECISION=int8" in result.fix

    reverse = check_store_model(path, (embedder.name, 384), {embedder.name: 2}, int8)
    assert reverse.status == WARN and reverse.fix and "unset CHRONOMEM_EMBED_PRECISION" in reverse.fix
    same = check_store_model(path, (INT8, 384), {INT8: 2}, int8)
    assert same.status == OK


# ---------------------------------------------------------------------------- index


@pytest.mark.slow
def test_unindexed_rows_warn_until_consolidate_refreshes_the_index(svc: MemoryService, tmp_path: Path, repo: Path,
                                                                   home: Path) -> None:
    assert check_index(svc.settings.store_path).status == OK  # no table yet
    assert svc.store.count() == 0  # opening creates the table and its full-text index
    texts = [f"Service {i} listens on port {8000 + i}." for i in range(60)]
    vectors = svc.embedder.embed(texts)
    now = svc.now()
    svc.store.add([
        MemoryRecord(id=new_id(now), kind="chunk", project="proj", content=t, valid_at=now, created_at=now, vector=v,
                     embed_model=svc.embedder.name)
        for t, v in zip(texts, vectors, strict=True)
    ])
    stale = check_index(svc.settings.store_path)
    assert stale.status == WARN and "60 of 60 rows are not in the full-text index" in stale.detail
    assert stale.fix == "run `chronomem consolidate` to refresh the index"

    done = chronomem("consolidate", "--store", str(svc.settings.store_path), cwd=repo, home=home)
    assert done.returncode == 0, done.stderr
    fresh = check_index(svc.settings.store_path)
    assert fresh.status == OK and fresh.detail.startswith("full-text index covers")


# ---------------------------------------------------------------------------- the command


@pytest.mark.slow
def test_doctor_command_reports_every_check_and_fails_on_a_broken_config(repo: Path, home: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    assert chronomem("remember", "The API listens on port 8080.", "--store", store, cwd=repo, home=home).returncode == 0
    assert chronomem("install", "claude-code", "--store", store, cwd=repo, home=home).returncode == 0

    healthy = chronomem("doctor", "--json", "--store", store, cwd=repo, home=home)
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    report = json.loads(healthy.stdout)
    assert report["ok"] is True and report["store"]["ok"] is True and report["store"]["rows"] >= 1
    assert [c["name"] for c in report["checks"]] == ["model", "store model", "index", "claude-code project"]
    assert all(c["status"] == "ok" for c in report["checks"]), report["checks"]

    (home / ".claude.json").write_text("{not json")
    broken = chronomem("doctor", "--store", store, cwd=repo, home=home)
    assert broken.returncode == 1
    assert "store " in broken.stdout and "healthy" in broken.stdout
    assert "fail  claude-code user:" in broken.stdout and "is not valid JSON" in broken.stdout
    assert "      fix: fix or move aside" in broken.stdout
