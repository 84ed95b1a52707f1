"""How a realistic calling model names the facts it hands `remember`: the noisy agent of eval.devmem.

The ideal agent of agent mode names every slot the same way each time (subject = the project, predicate =
the data's slot key) and passes a fact with every note that states a value. Real models do not: they name
one thing several ways ("test_cmd", "test command", "command to run tests"; "checkout", "the checkout
module"), decorate values ("port 8443", "v1.2.3") and skip facts on some notes. `NoisyAgent` plays such a
model, deterministically from a seed (each note's choices hang on (seed, note id) alone, so a note is named
the same way whatever runs before it):

- per note, no facts `SKIP` (30%) of the time;
- the subject is the slot's entity (the data's slot qualifier, e.g. the `checkout` of
  `module_owner:checkout`) or, for a slot about the project as a whole, the project, each under one of a few
  aliases;
- the predicate is one of 3-5 paraphrases written per slot type (`PREDICATES`, every slot type of devmem,
  devmem_validation and agentfiles_validation); for agentfiles_validation's slot facets (`test_cmd:iterate`)
  the facet's words go with it;
- `DECORATE` (20%) of objects carry what models add around a value: a unit or kind word, a `v`, backticks.

The rates are the issue's (#44: "no facts 30% of the time, ... 20% decorated objects").
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

#: Share of notes a realistic agent passes no fact with.
SKIP = 0.30
#: Share of objects that come decorated.
DECORATE = 0.20

#: Slot types whose qualifier names an entity (the subject of the fact), with the kind-noun a model puts after it.
ENTITY_NOUN: dict[str, str] = {
    "module_owner": "module",
    "module_path": "module",
    "module_service": "module",
    "service_port": "service",
    "team_channel": "team",
    "team_lead": "team",
    "dep_version": "dependency",
    "endpoint": "endpoint",
    "env_var": "setting",
    "config_key": "setting",
    "decision": "decision",
    "incident": "incident",
    "perf": "metric",
    "secret_location": "secret",
    "cron_schedule": "job",
    "feature_flag": "feature",
    "infra_host": "host",
    "timeout": "timeout",
    "flaky": "test",
    "bug": "bug",
}

#: 3-5 ways a model names each slot type's attribute (written for every slot type in the three DevMem-format sets).
PREDICATES: dict[str, tuple[str, ...]] = {
    # attributes of an entity
    "module_owner": ("owner", "owned by", "owning team", "team that owns it"),
    "module_path": ("path", "lives in", "directory", "source location"),
    "module_service": ("service", "served by", "runs in service", "deployed as"),
    "service_port": ("port", "listens on", "listening port", "http port"),
    "team_channel": ("channel", "slack channel", "chat channel", "contact channel"),
    "team_lead": ("lead", "team lead", "led by", "lead engineer"),
    "dep_version": ("version", "pinned version", "pinned at", "current version"),
    "endpoint": ("endpoint", "route", "http route", "url path"),
    "env_var": ("env var", "environment variable", "configured by env", "env name"),
    "config_key": ("config key", "setting key", "configured at", "config location"),
    "decision": ("decision", "chosen option", "we use", "choice"),
    "incident": ("incident", "summary", "what happened", "description"),
    "perf": ("measured", "value", "benchmark result", "latest measurement"),
    "secret_location": ("stored in", "location", "secret location", "kept in"),
    "cron_schedule": ("schedule", "cron", "runs at", "cron expression"),
    "feature_flag": ("flag", "feature flag", "flag name", "toggle"),
    "infra_host": ("host", "hostname", "address", "server"),
    "timeout": ("timeout", "time limit", "times out after", "deadline"),
    "flaky": ("flaky", "flaky report", "marked flaky", "flake"),
    "bug": ("bug", "open bug", "known issue", "defect"),
    # attributes of the project
    "branch_naming": ("branch naming", "branch name convention", "branch names", "branching scheme"),
    "build_cmd": ("build_cmd", "build command", "command to build", "builds with"),
    "ci_system": ("ci", "ci system", "ci provider", "continuous integration"),
    "commit_style": ("commit style", "commit message convention", "commit messages", "commit format"),
    "db_engine": ("database", "db engine", "db", "database engine"),
    "default_branch": ("default branch", "main branch", "trunk branch", "default_branch"),
    "deploy_procedure": ("deploy procedure", "how to deploy", "deployment process", "deploy steps"),
    "formatter": ("formatter", "code formatter", "formatting tool", "formats with"),
    "lint_cmd": ("lint_cmd", "lint command", "command to lint", "linter command"),
    "package_manager": ("package manager", "package_manager", "pkg manager", "dependency manager"),
    "runtime": ("runtime", "runtime version", "language runtime", "runs on"),
    "staging_url": ("staging url", "staging", "staging address", "staging environment url"),
    "test_cmd": ("test_cmd", "test command", "command to run tests", "tests run with"),
    "user_editor": ("editor", "preferred editor", "user editor", "ide"),
    "user_language": ("language", "preferred language", "user language", "speaks"),
    "user_verbosity": ("verbosity", "answer style", "preferred response style", "verbosity preference"),
    "base_image": ("base image", "docker base image", "container base image", "base_image"),
    "typecheck_cmd": ("typecheck command", "type checker", "typecheck_cmd", "command for type checking"),
    "agent_mode_trigger": ("agent mode trigger", "agent trigger", "agent mode triggers", "when agent mode runs"),
    "format_cmd": ("format command", "format_cmd", "formatter command", "command to format"),
    "full_check_time": ("full check time", "full check duration", "how long the full check takes", "check runtime"),
    "line_length": ("line length", "max line length", "line_length", "line width"),
    "token_management": ("token management", "token handling", "auth token flow", "token flow"),
    "upgrade_cmd": ("upgrade command", "upgrade_cmd", "how to upgrade a package", "package upgrade command"),
    "check_cmd": ("check command", "check_cmd", "command to check", "verification command"),
    "api": ("api", "api to use", "recommended api", "api for"),
    "path": ("path", "location", "directory", "where"),
    "validation": ("validation", "validation steps", "checks to run", "validate with"),
}

_VERSION = re.compile(r"^\d+(?:\.\d+)+\S*$")
_NUMBER = re.compile(r"^\d+$")


@dataclass(frozen=True)
class NamedFact:
    subject: str
    predicate: str
    object: str


class NoisyAgent:
    """The fact a realistic model passes with one note (or None), deterministic from `seed` and the note's id."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def fact(self, note_id: str, project: str, slot: str, value: str) -> NamedFact | None:
        rng = random.Random(f"{self.seed}:{note_id}")
        if rng.random() < SKIP:
            return None
        stype, _, qualifier = slot.partition(":")
        paraphrases = PREDICATES.get(stype) or (stype.replace("_", " "), stype)
        predicate = rng.choice(paraphrases)
        if qualifier and stype in ENTITY_NOUN:
            subject = rng.choice(entity_aliases(qualifier, ENTITY_NOUN[stype]))
        else:
            subject = rng.choice(project_aliases(project))
            if qualifier:  # a facet of a project attribute (agentfiles_validation's `test_cmd:iterate`)
                facet = qualifier.replace("_", " ")
                predicate = rng.choice((f"{predicate} ({facet})", f"{facet} {predicate}", f"{predicate} for {facet}"))
        obj = decorate(value, stype, rng) if rng.random() < DECORATE else value
        return NamedFact(subject, predicate, obj)


def entity_aliases(name: str, noun: str) -> tuple[str, ...]:
    """How a model names an entity: as written, with its kind-noun, with an article, or re-cased."""
    recased = name.replace("-", "_") if "-" in name else name.capitalize() if name.islower() else name.lower()
    return (name, f"{name} {noun}", f"the {name} {noun}", recased)


def project_aliases(project: str) -> tuple[str, ...]:
    return (project, project.capitalize(), f"{project} repo", f"the {project} project")


def decorate(value: str, stype: str, rng: random.Random) -> str:
    """What a model adds around a value: a kind word for a bare number, `v` before a version, or quotes."""
    if _NUMBER.match(value) and "port" in stype:
        return rng.choice((f"port {value}", f":{value}"))
    if _VERSION.match(value):
        return f"v{value}"
    return rng.choice((f"`{value}`", f'"{value}"', f"{value}."))
