"""One writer process of the shared-store tests: a `MemoryService` on a store URI (what `chronomem serve` runs for
each client) writing through the tools, printing each acknowledged id on stdout as soon as `remember` returns.

    python -m tests.s3.worker STORE_URI TAG N chunks|slot
`chunks`: N plain memories; `slot`: N memories each stating a new value of one fact slot (two writers conflict).
A remember that fails with chronomem's own error (one line, nothing acknowledged) prints {"error": …} and the
writer goes on; any other exception ends it with a traceback.
"""

from __future__ import annotations

import json
import sys

from chronomem.config import Settings, parse_store
from chronomem.errors import ChronomemError
from chronomem.service import MemoryService
from chronomem.tools import remember


def main() -> int:
    uri, tag, count, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    svc = MemoryService(Settings(store_path=parse_store(uri), project="proj"))
    for i in range(count):
        try:
            if mode == "slot":
                result = remember(svc, f"Writer {tag} says the deploy target is now {tag}-{i}.",
                                  facts=[{"subject": "proj", "predicate": "deploy target", "object": f"{tag}-{i}"}])
            else:
                result = remember(svc, f"Writer {tag} note number {i}: unit {tag}/{i} is configured.")
        except ChronomemError as exc:
            print(json.dumps({"error": str(exc), "i": i}), flush=True)
            continue
        print(json.dumps({"id": result.id, "i": i}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
