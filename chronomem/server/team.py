"""One server for a team: per-client bearer tokens from a token file, each with a name, read-only or not, and the
projects it may touch.

The token file (`serve --tokens FILE` or CHRONOMEM_TOKENS_FILE), JSON, kept out of the repository:

    {"clients": [
      {"name": "alice", "token": "<32+ random chars>"},
      {"name": "ci", "token": "<…>", "read_only": true},
      {"name": "web-team", "token": "<…>", "projects": ["web-app", "global"]}
    ]}

Every HTTP request must carry one of the tokens (security.BearerTokenMiddleware, constant-time); the tool call
then learns who it is from the same header (`Team.client`), and `Team.authorize` applies the client's rights:
a read-only client may call only the tools marked read-only; a client with `projects` may name only those
(a project key or the name people write for it, `display_name`), and may not read `scope="all"`. What a client
writes carries its name: `remember` tags the memory `client:<name>`, `forget` appends `(by <name>)` to the
reason. The session brief (resource and prompt, server/brief.py) obeys the same project limits, and a read of
an empty project names, of the projects with memories, only the client's (`Team.visible`).
Tokens never appear in logs or errors; names do.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chronomem.errors import ChronomemError, InvalidInput

#: Same floor as the single `--token` (security.MIN_TOKEN_CHARS).
MIN_TOKEN_CHARS = 16
#: The tag a client's name is recorded under on what it remembers.
CLIENT_TAG = "client:"


@dataclass(frozen=True)
class Client:
    name: str
    token: str
    read_only: bool = False
    #: Projects it may touch (None: any).
    projects: frozenset[str] | None = None


class Team:
    """The clients of one shared server, from its token file."""

    def __init__(self, clients: list[Client]) -> None:
        self.clients = clients

    @property
    def tokens(self) -> list[str]:
        return [c.token for c in self.clients]

    @classmethod
    def load(cls, path: str | Path) -> Team:
        """Read and check the token file; any problem is one line that names the file, never a token."""
        where = Path(path).expanduser()
        try:
            data = json.loads(where.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ChronomemError(f"the token file {where} does not exist") from None
        except (OSError, ValueError) as exc:
            raise ChronomemError(f"the token file {where} is not readable JSON ({type(exc).__name__})") from None
        entries = data.get("clients") if isinstance(data, dict) else None
        if not isinstance(entries, list) or not entries:
            raise ChronomemError(f"the token file {where} needs a non-empty \"clients\" list")
        clients: list[Client] = []
        for n, entry in enumerate(entries, 1):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"].strip():
                raise ChronomemError(f"client {n} of the token file {where} has no name")
            name, token = entry["name"].strip(), entry.get("token")
            if not isinstance(token, str) or len(token.strip()) < MIN_TOKEN_CHARS:
                raise ChronomemError(f"the token of client {name!r} in {where} must be a string of {MIN_TOKEN_CHARS}+ characters")
            projects = entry.get("projects")
            if projects is not None and (not isinstance(projects, list) or not all(isinstance(p, str) for p in projects)):
                raise ChronomemError(f"the projects of client {name!r} in {where} must be a list of names")
            clients.append(Client(name, token.strip(), bool(entry.get("read_only", False)),
                                  frozenset(projects) if projects is not None else None))
        if len({c.name for c in clients}) < len(clients) or len({c.token for c in clients}) < len(clients):
            raise ChronomemError(f"the token file {where} repeats a client name or a token")
        return cls(clients)

    def client(self, headers: Mapping[str, str] | None) -> Client | None:
        """The client whose token the request's `Authorization: Bearer` header carries (None: no match)."""
        value = next((v for k, v in (headers or {}).items() if k.lower() == "authorization"), "")
        scheme, _, credential = value.partition(" ")
        if scheme.lower() != "bearer":
            return None
        found = None
        for c in self.clients:  # every comparison made, constant-time each
            if hmac.compare_digest(credential.strip().encode(), c.token.encode()):
                found = c
        return found

    def visible(self, headers: Mapping[str, str] | None) -> Callable[[str], bool]:
        """Which project keys the request's client may see: a read's "projects with memories" names only those."""
        client = self.client(headers)
        if client is None:
            return lambda key: False
        return lambda key: _allowed(client, key)


def authorize(
    client: Client,
    tool: str,
    read_only: bool,
    arguments: dict[str, Any],
    project_of: Callable[[str | None], str],
    memory_project: Callable[[str], str | None] | None = None,
) -> dict[str, Any]:
    """The call's arguments with the client's name recorded, or InvalidInput saying what it may not do.
    `project_of` resolves the call's project (the server's default when it names none)."""
    if client.read_only and not read_only:
        raise InvalidInput(f"client {client.name!r} has a read-only token: {tool} is refused")
    if client.projects is not None:
        memory = arguments.get("id")
        if isinstance(memory, str) and memory_project is not None:  # forget / history by id: the memory's project
            owner = memory_project(memory)
            if owner is not None and not _allowed(client, owner):
                raise InvalidInput(f"client {client.name!r} may not use project {_name(owner)!r}")
        if arguments.get("scope") == "all":
            raise InvalidInput(f"client {client.name!r} may read only its projects: scope 'all' is refused")
        wanted = [project_of(arguments.get("project"))]
        if arguments.get("scope") in ("global", "both"):
            wanted.append("global")
        for key in wanted:
            if not _allowed(client, key):
                raise InvalidInput(f"client {client.name!r} may not use project {_name(key)!r}")
    if tool == "remember":
        tags = arguments.get("tags")
        tags = list(tags) if isinstance(tags, list) else ([tags] if isinstance(tags, str) else [])
        arguments = {**arguments, "tags": [*tags, f"{CLIENT_TAG}{client.name}"]}
    elif tool == "forget":
        reason = arguments.get("reason")
        arguments = {**arguments, "reason": f"{reason} (by {client.name})" if isinstance(reason, str) and reason
                     else f"by {client.name}"}
    return arguments


def check_brief(team: Team, context: Any, project: str | None, project_of: Callable[[str | None], str]) -> None:
    """Refuse (InvalidInput) a session brief of a project the requesting client may not use."""
    client = team.client(getattr(context, "headers", None))
    if client is None:
        raise InvalidInput("unauthorized: send Authorization: Bearer <your token>")
    key = project_of(project)
    if not _allowed(client, key):
        raise InvalidInput(f"client {client.name!r} may not use project {_name(key)!r}")


def _name(key: str) -> str:
    from chronomem.project import display_name

    return display_name(key)


def _allowed(client: Client, key: str) -> bool:
    return client.projects is None or key in client.projects or _name(key) in client.projects
