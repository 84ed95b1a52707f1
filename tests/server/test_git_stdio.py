"""Code anchors and git-aware time through `chronomem serve` over stdio, driven by the `mcp` client, on a real
git repository: remember with paths, staleness after an edit and a commit, recall by paths, as_of a tag,
history with commits."""

from __future__ import annotations

import sys

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from _server_helpers import READ_TIMEOUT, TEST_DEADLINE, call_error, call_ok, server_env
from tests.gitrepo import IDENTITY, GitRepo, isolated_git

pytestmark = pytest.mark.anyio

FAB = "deploy/fabfile.py"


@pytest.mark.slow
async def test_anchors_and_git_time_over_stdio(store, tmp_path, monkeypatch):
    isolated_git(monkeypatch)
    repo = GitRepo(tmp_path / "shop")
    repo.write(FAB, "def deploy():\n    rsync('build/', 'web1:/srv/shop')\n")
    repo.write("src/auth/login.py", "SESSION_TIMEOUT = 30\n")
    first = repo.commit("initial", "2024-05-01T09:00:00Z")
    repo.tag("v1.0.0", annotated=True, date="2024-05-02T00:00:00Z")

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "chronomem", "serve", "--store", str(store), "--project", str(repo.root)],
        env=server_env(**IDENTITY),
        cwd=repo.root,
    )
    with anyio.fail_after(TEST_DEADLINE):
        async with Client(params, read_timeout_seconds=READ_TIMEOUT) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert "paths" in listed["recall"].input_schema["properties"]
            assert "query" not in listed["recall"].input_schema.get("required", [])

            kept = await call_ok(
                client,
                "remember",
                {
                    "content": "We deploy with `fab deploy`; deploy/fabfile.py rsyncs the build to web1.",
                    "paths": [FAB],
                    "valid_from": "2024-04-01",
                    "facts": [{"subject": "shop", "predicate": "deploy_method", "object": "fab deploy (rsync)"}],
                },
            )
            assert kept["commit"] == first
            assert kept["anchors"] == [{"path": FAB, "blob": repo.blob(FAB)}]
            session = await call_ok(
                client, "remember", {"content": "Sessions last 30 minutes.", "paths": ["src/auth/login.py"]}
            )

            fresh = await call_ok(client, "recall", {"query": "how do we deploy"})
            assert fresh["results"][0]["stale"] is None
            assert fresh["results"][0]["commit"] == first

            repo.write(FAB, "def deploy():\n    kubectl('apply', '-f', 'k8s/')\n")
            second = repo.commit("deploy with kubectl", "2024-06-01T09:00:00Z")
            stale = await call_ok(client, "recall", {"query": "how do we deploy"})
            top = stale["results"][0]
            assert top["stale"]["files"] == [FAB], top
            assert top["stale"]["since_commit"] == first
            assert "stale" in stale["message"]

            about = await call_ok(client, "recall", {"paths": ["src/auth/*.py"]})
            assert [r["id"] for r in about["results"]] == [session["id"]]
            assert about["query"] is None and about["paths"] == ["src/auth/*.py"]
            await call_error(client, "recall", {})

            moved = await call_ok(
                client,
                "remember",
                {
                    "content": "We now deploy with kubectl apply.",
                    "paths": [FAB],
                    "facts": [{"subject": "shop", "predicate": "deploy_method", "object": "kubectl apply"}],
                },
            )
            assert moved["commit"] == second

            past = await call_ok(client, "as_of", {"query": "how do we deploy", "at": "v1.0.0"})
            assert past["at_ref"] == {"ref": "v1.0.0", "commit": first, "time": "2024-05-01T09:00:00Z"}
            assert [r["object"] for r in past["results"] if r["kind"] == "fact"] == ["fab deploy (rsync)"]
            message = await call_error(client, "as_of", {"query": "how do we deploy", "at": "v9"})
            assert "neither a time" in message and "commit, tag or branch" in message

            hist = await call_ok(client, "history", {"subject": "shop", "predicate": "deploy_method"})
            assert [(e["object"], e["commit"]) for e in hist["entries"]] == [
                ("fab deploy (rsync)", first),
                ("kubectl apply", second),
            ]
