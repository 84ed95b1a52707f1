"""LanceDB without the REST namespace client it imports and chronomem never calls.

`import lancedb` (0.40) imports `lance_namespace`, whose package `lance_namespace_urllib3_client` runs, in its
`__init__`, every generated REST API module: ~370 methods under pydantic's `validate_call`, about 0.7 s of CPU
of LanceDB's ~1.5 s import on these machines (`python -X importtime -c "import lancedb"`). Only a LanceDB Cloud or
REST-namespace connection uses those classes; chronomem opens directories and object-storage URIs, which the lance
engine reads itself. Pylance made the same import lazy upstream (lance-format/lance#9273); LanceDB still imports it
eagerly, so `defer_namespace_client` puts the package in `sys.modules` with its `__init__` not yet run: submodules
(`…client.models`, which `lance_namespace` does use) import as usual, and the first read of any other name of the
package runs the `__init__` then, so nothing that does use the client sees a difference.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from types import ModuleType
from typing import Any

NAMESPACE_CLIENT = "lance_namespace_urllib3_client"


def defer_namespace_client() -> None:
    """Register `NAMESPACE_CLIENT` with its package `__init__` deferred to the first use of one of its names. Does
    nothing when it is imported already or not installed; call it before LanceDB is first imported."""
    if NAMESPACE_CLIENT in sys.modules:
        return
    spec = importlib.util.find_spec(NAMESPACE_CLIENT)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    package = importlib.util.module_from_spec(spec)  # `__path__` set, so its submodules import; `__init__` not run
    loader = spec.loader
    lock = threading.RLock()
    loading = False

    def __getattr__(name: str) -> Any:  # PEP 562: only names the module does not hold yet come here
        nonlocal loading
        if name.startswith("__"):
            raise AttributeError(name)
        if importlib.util.find_spec(f"{NAMESPACE_CLIENT}.{name}") is not None:
            # `from lance_namespace_urllib3_client import rest` in its own submodules: the submodule, not the
            # `__init__`, which imports those very submodules and would find them half made
            return importlib.import_module(f"{NAMESPACE_CLIENT}.{name}")
        with lock:
            if loading:  # the `__init__` itself asking (`from … import`): not there yet
                raise AttributeError(name)
            if package.__dict__.get("__getattr__") is __getattr__:
                loading = True
                try:
                    loader.exec_module(package)
                finally:
                    loading = False
                    package.__dict__.pop("__getattr__", None)
        return _attribute(package, name)

    package.__getattr__ = __getattr__  # type: ignore[attr-defined]
    sys.modules[NAMESPACE_CLIENT] = package


def _attribute(module: ModuleType, name: str) -> Any:
    try:
        return module.__dict__[name]
    except KeyError:
        raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}") from None
