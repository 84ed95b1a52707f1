"""pyproject.toml's dependencies are exactly what chronomem/ imports: every third-party import is declared (runtime
dependencies, or the `llm` extra for the LLM extractor), and every declared runtime dependency is imported (`onnx`
too: embed/packaged.py reads and writes the shipped model's graph with it)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, distribution, packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Needed at run time but never imported by name (see pyproject.toml's comments); none today.
NEEDED_UNNAMED: set[str] = set()
#: Imported only by code that runs when an optional extra is installed.
EXTRAS = {"litellm": "llm"}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_top_levels() -> dict[str, set[str]]:
    """Third-party top-level modules imported anywhere under chronomem/ (also inside functions), with where."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "chronomem").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top != "chronomem" and top not in sys.stdlib_module_names:
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def declared(project: dict) -> set[str]:
    return {_canonical(re.split(r"[\s<>=!~;\[]", spec, maxsplit=1)[0]) for spec in project["dependencies"]}


def distribution_of(module: str, providers: dict[str, list[str]]) -> str:
    """The installed distribution that provides top-level `module`."""
    dists = providers.get(module)
    if not dists:
        pytest.skip(f"{module} is not installed here, so its distribution is unknown")
    return _canonical(dists[0])


@pytest.mark.slow
def test_every_import_is_declared_and_every_declared_dependency_is_imported() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = declared(project)
    imports = imported_top_levels()
    providers = packages_distributions()  # one scan of the installed distributions

    undeclared = {}
    used = set()
    for module, where in imports.items():
        dist = distribution_of(module, providers)
        used.add(dist)
        if module in EXTRAS:
            assert any(_canonical(s).startswith(dist) for s in project["optional-dependencies"][EXTRAS[module]])
        elif dist not in runtime:
            undeclared[dist] = sorted(where)[:3]
    assert not undeclared, f"imported but not declared in [project].dependencies: {undeclared}"

    unused = runtime - used - NEEDED_UNNAMED
    assert not unused, f"declared in [project].dependencies but imported nowhere in chronomem/: {sorted(unused)}"
    for name in NEEDED_UNNAMED:
        try:
            distribution(name)
        except PackageNotFoundError:  # pragma: no cover - only when the environment is incomplete
            pytest.fail(f"{name} is declared as needed but not installed")
