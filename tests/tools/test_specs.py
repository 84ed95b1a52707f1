"""Each tool module's `SPEC` (tools/spec.py) agrees with its handler: the arguments it maps a call to are ones the
handler takes, aliases stand only for optional parameters, and a clash between a parameter and its alias is refused."""

from __future__ import annotations

import inspect

import pytest

from chronomem.errors import InvalidInput
from chronomem.tools import SPECS
from chronomem.tools.spec import Hints, ToolSpec


def test_the_specs_are_the_six_tools_once_each() -> None:
    assert [s.name for s in SPECS] == ["remember", "recall", "as_of", "forget", "history", "entity"]
    for spec in SPECS:
        assert spec.handler.__name__ == spec.name and spec.handler.__module__ == f"chronomem.tools.{spec.name}"
        assert spec.arguments.__module__ == spec.handler.__module__, f"{spec.name}'s schema lives elsewhere"


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_every_published_argument_reaches_the_handler(spec: ToolSpec) -> None:
    published = spec.signature().parameters
    if spec.aliases:  # published after the real parameters, so the schema reads real names first
        assert list(published)[-len(spec.aliases):] == list(spec.aliases)
    given = {
        name: (p.default if p.default is not inspect.Parameter.empty else "x")
        for name, p in published.items()
        if name not in spec.aliases
    }
    kwargs = spec.handler_arguments(given)
    inspect.signature(spec.handler).bind(object(), **kwargs)  # raises TypeError on a name the handler lacks
    for alias, target in spec.aliases.items():
        value = 7 if target == "limit" else "01J0000000000000000000000"
        moved = spec.handler_arguments({**given, target: None, alias: value})
        assert moved[target] == value, (spec.name, alias)


def test_a_parameter_and_its_alias_must_agree() -> None:
    [remember] = [s for s in SPECS if s.name == "remember"]
    with pytest.raises(InvalidInput, match="^pass content or text, not both$"):
        remember.handler_arguments({"content": "a", "text": "b"})
    assert remember.handler_arguments({"content": "a", "text": "a"})["content"] == "a"


def test_an_alias_of_a_required_or_unknown_parameter_is_refused_when_the_spec_is_made() -> None:
    def arguments(query: str, limit: int | None = None) -> dict:
        return {"query": query, "limit": limit}

    common = dict(name="t", title="T", description="d", hints=Hints(True, False, True), handler=len, result=object)
    with pytest.raises(ValueError, match="optional parameter"):
        ToolSpec(**common, arguments=arguments, aliases={"q": "query"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="optional parameter"):
        ToolSpec(**common, arguments=arguments, aliases={"n": "count"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="also a parameter"):
        ToolSpec(**common, arguments=arguments, aliases={"limit": "limit"})  # type: ignore[arg-type]
