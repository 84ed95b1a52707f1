"""`ToolSpec`: what one tool publishes over MCP, kept in the tool's own module beside its handler.

Each tool module (`remember.py`, `recall.py`, `as_of.py`, `forget.py`, `history.py`) ends with a
`SPEC`: its name, title, a description written for the calling model (when to call it, what it
returns), its behaviour hints (MCP's tool annotations), the `arguments` function whose signature
is the tool's input schema, and `aliases` — near-miss argument names a model tends to send
(`text` for `content`, `k` for `limit`, `memory_id` for `id`), each published as a parameter of
its own that stands for the real one. `chronomem/server` only collects the specs and registers
them; it holds no tool's wording.

Pure data and argument mapping: no MCP SDK import here, so the CLI, which calls the same handlers,
does not load it.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, Field

from chronomem.errors import InvalidInput

# Parameter types several tools share (their descriptions are what the calling model reads).
Project = Annotated[str | None, Field(description="Project scope; default the current project.")]
Limit = Annotated[int | None, Field(description="Most results to return (1-100, default 10).")]
Budget = Annotated[int | None, Field(description="Cap on the estimated tokens of returned text.")]
Scope = Annotated[str, Field(description="`project` (default), `global`, `both` (project + global) or `all`.")]
Kinds = Annotated[list[str] | None, Field(description="Only `fact` and/or `chunk`.")]


@dataclass(frozen=True)
class Hints:
    """MCP tool annotations: how a client may treat the tool (confirmations, retries, caching).

    `read_only`: changes nothing the client can observe. `destructive`: may lose or overwrite
    information (only meaningful when not read-only). `idempotent`: the same call again has no
    further effect. `open_world`: reaches beyond this machine's store and repository.
    """

    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool = False


@dataclass(frozen=True)
class ToolSpec:
    """One tool as published: metadata, input schema (via `arguments`) and the handler it runs."""

    name: str
    title: str
    description: str
    hints: Hints
    #: `handler(svc, **kwargs)` does the work and returns a pydantic result (structured content + `text()`).
    handler: Callable[..., BaseModel]
    #: The result model: the tool's output schema.
    result: type[BaseModel]
    #: Its signature (names, `Annotated` types with descriptions, defaults) is the input schema; it maps the
    #: call's arguments (aliases already folded in) to the handler's keyword arguments.
    arguments: Callable[..., dict[str, Any]]
    #: Near-miss name -> the parameter it stands for. Each alias is published after the real parameters.
    aliases: Mapping[str, str] = field(default_factory=dict)
    #: Whether the ids it returns count as recall hits (they reinforce salience, off the read path).
    reinforces_hits: bool = False

    def __post_init__(self) -> None:
        params = inspect.signature(self.arguments).parameters
        for alias, target in self.aliases.items():
            if alias in params:
                raise ValueError(f"{self.name}: alias {alias} is also a parameter")
            if target not in params or params[target].default is not None:
                raise ValueError(f"{self.name}: alias {alias} must stand for an optional parameter (default None)")

    def signature(self) -> inspect.Signature:
        """The published parameters: those of `arguments`, with evaluated annotations, then one per alias."""
        hints = typing.get_type_hints(self.arguments, include_extras=True)
        params = [
            p.replace(annotation=hints.get(p.name, Any), kind=inspect.Parameter.KEYWORD_ONLY)
            for p in inspect.signature(self.arguments).parameters.values()
        ]
        by_name = {p.name: p for p in params}
        for alias, target in self.aliases.items():
            base = typing.get_args(by_name[target].annotation)[0] if _annotated(by_name[target].annotation) else Any
            described = Annotated[base, Field(description=f"Alias of {target}.")]  # type: ignore[valid-type]
            params.append(inspect.Parameter(alias, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=described))
        return inspect.Signature(params)

    def handler_arguments(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """The handler's keyword arguments for a call's validated arguments (aliases folded into their targets).

        Raises `InvalidInput` when a parameter and its alias are both given with different values.
        """
        values = {k: v for k, v in given.items() if k not in self.aliases}
        for alias, target in self.aliases.items():
            other = given.get(alias)
            if other is None:
                continue
            if values.get(target) is not None and values[target] != other:
                raise InvalidInput(f"pass {target} or {alias}, not both")
            values[target] = other
        return self.arguments(**values)


def _annotated(annotation: Any) -> bool:
    return typing.get_origin(annotation) is Annotated


def default(value: Any, fallback: Any) -> Any:
    """`fallback` when the caller left `value` out (None)."""
    return fallback if value is None else value
