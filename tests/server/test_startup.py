"""The server answers `initialize` and `tools/list` without the embedding model, and a tool that
needs the model fails with a one-line, actionable error: never a traceback, never a hang.

No timing is asserted; the read timeout only turns a hang into a failure."""

from __future__ import annotations

import json
import subprocess
import sys

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from _server_helpers import TOOL_NAMES, call_error, serve_args, server_env

pytestmark = pytest.mark.anyio

#: Generous for a spawn on a slow machine, far below the model wait (120 s) a hang would take.
HANG_TIMEOUT = 45.0


def _model_dir(tmp_path, kind: str):
    """A CHRONOMEM_MODEL_PATH that cannot be loaded: absent, empty, or holding a corrupt model."""
    folder = tmp_path / f"model-{kind}"
    if kind == "empty":
        folder.mkdir()
    elif kind == "corrupt":
        folder.mkdir()
        (folder / "model.onnx").write_bytes(b"this is not an onnx graph")
        (folder / "tokenizer.json").write_text("{}")
        (folder / "config.json").write_text("{}")
    return folder


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "kind"), [("auto", "missing"), ("legacy", "missing"), ("auto", "empty"), ("legacy", "corrupt")]
)
async def test_starts_and_lists_tools_without_a_loadable_model(store, tmp_path, mode, kind):
    missing = _model_dir(tmp_path, kind)
    params = StdioServerParameters(
        command=sys.executable,
        args=serve_args(store),
        env=server_env(CHRONOMEM_MODEL_PATH=str(missing)),
        cwd=tmp_path,
    )
    stderr_path = tmp_path / "server-stderr.log"
    with open(stderr_path, "w") as errlog, anyio.fail_after(3 * HANG_TIMEOUT):
        async with Client(stdio_client(params, errlog=errlog), mode=mode, read_timeout_seconds=HANG_TIMEOUT) as client:
            listed = await client.list_tools()
            assert {t.name for t in listed.tools} == TOOL_NAMES

            message = await call_error(client, "recall", {"query": "how do we run the tests"})
            assert "CHRONOMEM_MODEL_PATH" in message, message
            assert str(missing) in message, message

            message = await call_error(client, "remember", {"content": "We run tests with pytest"})
            assert "CHRONOMEM_MODEL_PATH" in message, message

            # Still serving: a second call gets the same answer, quickly, not a dead pipe.
            message = await call_error(client, "as_of", {"query": "test command", "at": "2024-02-01"})
            assert "CHRONOMEM_MODEL_PATH" in message, message

    stderr = stderr_path.read_text(errors="replace")
    assert "Traceback" not in stderr, stderr


def test_the_server_module_imports_no_heavy_library() -> None:
    """What `serve` imports before it can answer `initialize`: the model's runtime, the store's libraries and
    NumPy load later, in the background warm-up or at the first call that needs them (a fresh interpreter: this
    process imported them long ago)."""
    heavy = ["lancedb", "lance", "pyarrow", "numpy", "onnxruntime", "tokenizers", "fastembed", "litellm"]
    code = f"import json, sys, chronomem.server.app; print(json.dumps([m for m in {heavy!r} if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
