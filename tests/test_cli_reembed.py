"""`chronomem reembed` from a real shell, between real models: the shipped all-MiniLM-L6-v2 (float32 compute, the
default), its int8 copy (CHRONOMEM_EMBED_PRECISION=int8, the default before), and a 256-d model (the shipped one
with its output cut to 256 dimensions, a real ONNX model of another dimension). Only the vectors change; a
SIGKILLed run finishes on the next; `doctor` and the store's refusal name the command."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from chronomem import tools
from chronomem.embed import FastEmbedder
from chronomem.records import MemoryRecord, new_id
from chronomem.search.engine import open_store
from chronomem.service import MemoryService
from chronomem.storage import MemoryStore
from chronomem.storage.backup import list_backups
from chronomem.storage.portable import append_records, export_lines
from chronomem.storage.reembed import staging_dir
from chronomem.storage.schema import stored_model
from tests.conftest import REPO, Clock, model_dir

INT8 = "sentence-transformers/all-MiniLM-L6-v2#int8"
FP32 = "sentence-transformers/all-MiniLM-L6-v2"


def chronomem(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """The command as a user runs it: no CHRONOMEM_* settings but `env` (none: the shipped model)."""
    return subprocess.run([sys.executable, "-m", "chronomem", *args], capture_output=True, text=True,
                          env=_env(env), timeout=timeout)


def _env(extra: dict[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOMEM_")}
    env.update({"HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])})
    if os.environ.get("CHRONOMEM_CACHE_DIR"):  # this run's cache folder (conftest), never the user's
        env["CHRONOMEM_CACHE_DIR"] = os.environ["CHRONOMEM_CACHE_DIR"]
    return {**env, **(extra or {})}


def int8_env() -> dict[str, str]:
    return {"CHRONOMEM_EMBED_PRECISION": "int8"}


def one_error_line(out: subprocess.CompletedProcess) -> str:
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in out.stderr, out.stderr
    return lines[0]


def fill(svc: MemoryService) -> None:
    """A few memories of each kind: chunks, facts, a superseded fact, a forgotten note."""
    tools.remember(svc, "The checkout API listens on port 8080.", facts=[{"subject": "checkout-api", "predicate": "port", "object": "8080"}])
    tools.remember(svc, "We deploy with helm every Friday afternoon.", tags=["ops"])
    tools.remember(svc, "Tests run with pytest and coverage.")
    tools.remember(svc, "The checkout API moved to port 9090.", facts=[{"subject": "checkout-api", "predicate": "port", "object": "9090"}])
    gone = tools.remember(svc, "The staging database is called pg-stage-2.")
    tools.forget(svc, gone.id, "renamed")


def memories(path: Path, dim: int, model: str) -> list[dict]:
    """The store's export (every column but the vector) without `embed_model`: what a move must not change."""
    store = MemoryStore.open(path, dim, model, read_index_rows=0)
    rows = [json.loads(line) for line in export_lines(store)]
    for row in rows:
        assert row.pop("embed_model") == model
    return rows


def assert_vectors_from(path: Path, dim: int, model: str, embedder: FastEmbedder) -> None:
    table = MemoryStore.open(path, dim, model, read_index_rows=0).table.to_arrow()
    assert stored_model(table.schema) == (model, dim)
    contents = table.column("content").to_pylist()
    made = np.asarray(embedder.embed(contents), dtype=np.float32)
    stored = np.asarray(table.column("vector").to_pylist(), dtype=np.float32)
    assert stored.shape == (len(contents), dim)
    assert np.min(np.sum(made * stored, axis=1)) > 0.999  # each row's vector is the model's for its text


@pytest.fixture(scope="module")
def int8_embedder() -> FastEmbedder:
    """The shipped model's int8 copy: what stores written before float32 became the default were embedded with."""
    emb = FastEmbedder(precision="int8")
    emb.wait()
    assert emb.name == INT8
    return emb


@pytest.fixture
def int8_svc(tmp_path: Path, int8_embedder: FastEmbedder, clock: Clock) -> MemoryService:
    """A store written by the int8 copy, as the default wrote them before float32."""
    from chronomem.config import Settings

    settings = Settings(store_path=tmp_path / "store", project="proj", embed_precision="int8")
    return MemoryService(settings, embedder=int8_embedder, clock=clock)


@pytest.fixture(scope="module")
def model_256(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped model with a Slice on its output: a real ONNX model whose vectors are 256-d."""
    import onnx
    from onnx import TensorProto, helper

    source, folder = model_dir(), tmp_path_factory.mktemp("model-256")
    graph_model = onnx.load(str(source / "model.onnx"))
    graph = graph_model.graph
    for node in graph.node:
        node.output[:] = ["hidden_full" if o == "last_hidden_state" else o for o in node.output]
        node.input[:] = ["hidden_full" if i == "last_hidden_state" else i for i in node.input]
    graph.initializer.extend(
        helper.make_tensor(name, TensorProto.INT64, [1], [value])
        for name, value in (("cut_starts", 0), ("cut_ends", 256), ("cut_axes", 2))
    )
    graph.node.append(helper.make_node("Slice", ["hidden_full", "cut_starts", "cut_ends", "cut_axes"], ["last_hidden_state"]))
    graph.output[0].type.tensor_type.shape.dim[2].dim_value = 256
    onnx.save(graph_model, str(folder / "model.onnx"))
    for item in source.iterdir():
        if item.name not in ("model.onnx", "chronomem-model.json"):
            shutil.copy(item, folder / item.name)
    (folder / "chronomem-model.json").write_text(json.dumps({"model": FP32, "dim": 256, "precision": "float16-weights"}))
    return folder


# ---------------------------------------------------------------------------- bad input


@pytest.mark.slow
def test_bad_input_is_one_error_line(tmp_path: Path, svc: MemoryService) -> None:
    missing = tmp_path / "nothing"
    assert "no store at" in one_error_line(chronomem("reembed", "--store", str(missing), "--yes"))
    assert not missing.exists()

    tools.remember(svc, "The checkout API listens on port 8080.")
    store = str(svc.settings.store_path)
    unknown = one_error_line(chronomem("reembed", "--store", store, "--model", "no-such/model", "--yes"))
    assert "unknown embedding model 'no-such/model'" in unknown
    folder = one_error_line(chronomem("reembed", "--store", store, "--model-path", str(tmp_path / "nope"), "--yes"))
    assert "is not a directory" in folder
    asked = chronomem("reembed", "--store", store, "--precision", "int8")
    assert "there is no terminal to confirm on, so pass --yes" in one_error_line(asked)
    assert stored_model(MemoryStore.open(store, 384, FP32).table.schema) == (FP32, 384)  # nothing changed


# ---------------------------------------------------------------------------- moves


@pytest.mark.slow
def test_a_move_between_precisions_changes_only_the_vectors(int8_svc: MemoryService, int8_embedder: FastEmbedder,
                                                             embedder: FastEmbedder) -> None:
    fill(int8_svc)
    path = int8_svc.settings.store_path
    before = memories(path, 384, INT8)

    # float32 (the default) configured, the store still the int8 copy's: it opens, and doctor names both fixes
    found = json.loads(chronomem("recall", "which port does checkout use", "--json", "--store", str(path),
                                 "--project", "proj").stdout)
    assert found["results"] and "9090" in found["results"][0]["text"]
    stale = json.loads(chronomem("doctor", "--json", "--store", str(path)).stdout)
    check = next(c for c in stale["checks"] if c["name"] == "store model")
    assert check["status"] == "warn" and INT8 in check["detail"] and "chronomem reembed" in check["fix"]
    assert "CHRONOMEM_EMBED_PRECISION=int8" in check["fix"]
    kept = json.loads(chronomem("doctor", "--json", "--store", str(path), env=int8_env()).stdout)
    assert next(c for c in kept["checks"] if c["name"] == "store model")["status"] == "ok"

    moved = chronomem("reembed", "--store", str(path), "--yes", "--json")
    assert moved.returncode == 0, moved.stderr
    report = json.loads(moved.stdout)
    assert (report["from_model"], report["model"], report["rows"], report["embedded"]) == (INT8, FP32, len(before), len(before))
    assert "re-embedding" not in moved.stderr  # no progress bar off a terminal
    assert memories(path, 384, FP32) == before
    assert_vectors_from(path, 384, FP32, embedder)
    assert not staging_dir(path).exists() and len(list_backups(path)) == 2

    found = json.loads(chronomem("recall", "which port does checkout use", "--json", "--store", str(path),
                                 "--project", "proj").stdout)
    assert found["results"] and "9090" in found["results"][0]["text"]
    ok = json.loads(chronomem("doctor", "--json", "--store", str(path)).stdout)
    assert next(c for c in ok["checks"] if c["name"] == "store model")["status"] == "ok"

    # and back, naming the precision by flag rather than setting: the int8 vectors are the int8 copy's again
    back = chronomem("reembed", "--store", str(path), "--yes", "--precision", "int8")
    assert back.returncode == 0 and "moved" in back.stdout and "CHRONOMEM_EMBED_PRECISION=int8" in back.stderr, back.stderr
    assert memories(path, 384, INT8) == before
    assert_vectors_from(path, 384, INT8, int8_embedder)


@pytest.mark.slow
def test_a_move_to_another_dimension_and_back(svc: MemoryService, model_256: Path, embedder: FastEmbedder) -> None:
    fill(svc)
    path, other = svc.settings.store_path, {"CHRONOMEM_MODEL_PATH": str(model_256)}
    before = memories(path, 384, FP32)

    refused = one_error_line(chronomem("recall", "checkout port", "--store", str(path), "--project", "proj", env=other))
    assert "holds 384-d vectors" in refused and "makes 256-d vectors" in refused and "chronomem reembed" in refused
    doctor = chronomem("doctor", "--store", str(path), env=other)
    assert doctor.returncode == 1 and "fail  store model: the store's vectors are 384-d" in doctor.stdout
    assert "fix: run `chronomem reembed" in doctor.stdout

    moved = chronomem("reembed", "--store", str(path), "--yes", env=other)
    assert moved.returncode == 0 and "(384-d) to sentence-transformers/all-MiniLM-L6-v2 (256-d)" in moved.stdout, moved.stderr
    assert memories(path, 256, FP32) == before
    assert_vectors_from(path, 256, FP32, FastEmbedder(model_path=model_256))
    found = json.loads(chronomem("recall", "which port does checkout use", "--json", "--store", str(path),
                                 "--project", "proj", env=other).stdout)
    assert found["results"] and "9090" in found["results"][0]["text"]
    # the shipped model no longer opens it, and says how to move it back
    assert "chronomem reembed" in one_error_line(chronomem("recall", "checkout", "--store", str(path), "--project", "proj"))

    back = chronomem("reembed", "--store", str(path), "--yes")
    assert back.returncode == 0, back.stderr
    assert memories(path, 384, FP32) == before
    assert_vectors_from(path, 384, FP32, embedder)
    assert chronomem("recall", "checkout port", "--store", str(path), "--project", "proj").returncode == 0


# ---------------------------------------------------------------------------- crash safety


@pytest.mark.slow
def test_a_killed_reembed_finishes_on_the_next_run(tmp_path: Path, embedder: FastEmbedder,
                                                   int8_embedder: FastEmbedder) -> None:
    """SIGKILL once the first staged part is on disk: the table is untouched, and the rerun embeds only the rest."""
    path = tmp_path / "store"
    store = open_store(path, 384, INT8)  # writes need the tokenizer of the rows' terms
    records = [
        MemoryRecord(id=new_id(), kind="chunk", project="p", content=f"note {i}: service {i % 37} handles queue {i} on port {8000 + i}",
                     valid_at=store_time(i), created_at=store_time(i), source="import", tags=[f"t{i % 5}"])
        for i in range(700)
    ]
    append_records(store, records, int8_embedder.embed_many, embed_model=INT8)
    before = memories(path, 384, INT8)

    run = subprocess.Popen([sys.executable, "-m", "chronomem", "reembed", "--store", str(path), "--yes"],
                           env=_env(None), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        while run.poll() is None and not list(staging_dir(path).glob("part-*.parquet")):
            time.sleep(0.01)
        run.send_signal(signal.SIGKILL)
    finally:
        _, err = run.communicate(timeout=60)
    assert run.returncode == -signal.SIGKILL, err.decode()
    assert memories(path, 384, INT8) == before  # still the old model, every row there
    staged = len(list(staging_dir(path).glob("part-*.parquet")))
    assert staged >= 1

    again = chronomem("reembed", "--store", str(path), "--yes", "--json")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["rows"] == len(records) and 0 < report["resumed"] < len(records)
    assert report["resumed"] + report["embedded"] == len(records)
    assert memories(path, 384, FP32) == before
    assert_vectors_from(path, 384, FP32, embedder)
    assert not staging_dir(path).exists()


def store_time(i: int):
    from datetime import datetime, timedelta

    from chronomem.records import UTC

    return datetime(2024, 1, 1, tzinfo=UTC) + timedelta(minutes=i)
