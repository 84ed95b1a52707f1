"""LanceDB imported through chronomem.storage leaves the REST namespace client's API modules unimported, and the
client still works for whoever uses it (storage/lazy_imports.py). A fresh interpreter each: the test process has
imported LanceDB long before."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_lancedb_through_storage_skips_the_namespace_api_modules_and_opens_a_table(tmp_path) -> None:
    out = run(f"""
        import sys
        import chronomem.storage, lancedb, pyarrow as pa
        db = lancedb.connect({str(tmp_path)!r})
        db.create_table("t", pa.table({{"x": [1, 2]}})).add(pa.table({{"x": [3]}}))
        print(db.open_table("t").count_rows(), sorted(m for m in sys.modules if m.startswith("lance_namespace_urllib3_client.api")))
    """)
    assert out == "3 []"


def test_the_namespace_client_loads_at_its_first_use() -> None:
    out = run("""
        import chronomem.storage, lancedb
        import lance_namespace_urllib3_client as client
        from lance_namespace_urllib3_client.api.table_api import TableApi
        print(client.TableApi is TableApi, client.ApiClient.__module__, hasattr(client, "NoSuchName"))
    """)
    assert out == "True lance_namespace_urllib3_client.api_client False"


def test_without_chronomem_first_lancedb_imports_the_client_as_usual() -> None:
    out = run("""
        import sys, lancedb
        print(any(m.startswith("lance_namespace_urllib3_client.api") for m in sys.modules))
    """)
    assert out == "True", "LanceDB still imports the client eagerly: the deferral is doing something"
