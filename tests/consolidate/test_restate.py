"""A note with no facts that gives a known slot a new value (consolidate/restate.py): the pure rule, then the
rules stage over the real store and model, where the old value ends at the note and stays readable before it."""

from __future__ import annotations

from chronomem.consolidate.restate import (
    Restatement,
    SlotView,
    mentions_slot,
    pick,
    restated_value,
    restatements,
    thing_words,
)
from chronomem.consolidate.runner import Consolidator
from chronomem.facts import about_other_project
from chronomem.service import MemoryService
from chronomem.tools import as_of, history, remember

PROJECT = "ashcombe"


def slot(subject: str, predicate: str, value: str, stated_in: str = "") -> SlotView:
    return SlotView((subject, predicate), value, tuple(thing_words(subject, predicate, PROJECT, stated_in)), stated_in)


def test_a_new_value_of_the_slots_kind_about_its_thing_is_a_restatement() -> None:
    memory = slot("peak memory of the importer", "latest_measurement", "2223 MB")
    assert restated_value("Profiling run: peak memory of the importer ≈ 1273 MB.", memory, PROJECT) == ("1273 MB", False)
    host = slot("the feeds module", "host service", "invites-server", "invites-server is the host service for feeds.")
    assert host.words == ("feeds",), "`module` is the model's word: the note that stated the value does not say it"
    assert restated_value("Moved feeds from invites-server into loyalty-jobs.", host, PROJECT) == ("loyalty-jobs", True)
    lead = slot("Fraud team", "lead", "Emre Yilmaz")
    assert restated_value("The Fraud team is led by Tobias Keller.", lead, PROJECT) == ("Tobias Keller", False)


def test_every_word_of_the_thing_its_own_note_said_must_be_said() -> None:
    path = slot("the analytics module", "path", "src/analytics/", "The analytics module lives in `src/analytics/`.")
    assert path.words == ("analytics", "module")
    assert restated_value("The billing module lives in `src/billing/`.", path, PROJECT) is None
    assert restated_value("The analytics module lives in `pkg/analytics/`.", path, PROJECT) == ("pkg/analytics/", False)


def test_the_thing_may_be_named_in_the_sentence_before() -> None:
    note = "Had to change invites-server's port, 6940 clashed with something else. New port: 8663."
    assert restatements(note, [slot("invites-server", "port", "6940")], PROJECT) == [
        Restatement(("invites-server", "port"), "8663", False)
    ]


def test_no_restatement_without_the_thing_a_plain_statement_or_one_new_value() -> None:
    host = slot("carts", "host", "carts-server")
    # `carts` inside the value `carts-backend` does not name the carts module
    assert restated_value("payroll is bundled into carts-backend.", host, PROJECT) is None
    # a hedge, a question, a negation
    assert restated_value("Maybe carts could move to carts-jobs.", host, PROJECT) is None
    assert restated_value("Should carts run in carts-jobs?", host, PROJECT) is None
    assert restated_value("carts does not run in carts-jobs.", host, PROJECT) is None
    # two new values: which one is the slot's is not said
    assert restated_value("carts runs in carts-jobs and cart-web.", host, PROJECT) is None
    # the same value again, or a value of another kind
    assert restated_value("carts runs in carts-server.", host, PROJECT) is None
    assert restated_value("carts listens on 8080.", host, PROJECT) is None


def test_free_text_and_plain_words_are_never_restated() -> None:
    steps = slot("proj", "deploy steps", "run the playbook by hand")
    assert restated_value("The deploy steps are now run make release.", steps, "proj") is None
    assert restated_value("The queue engine is now nats.", slot("queue", "engine", "kafka"), "proj") is None


def test_the_stating_notes_words_around_another_value_restate_any_kind_of_value() -> None:
    # A line of an agent file edited in place: its words never name the slot ("typecheck command"), and a command
    # is free text, but the value stands where the old one stood in the very words that stated it.
    tool = slot(PROJECT, "typecheck command", "uv run pyright", "- Tool: `uv run pyright`")
    assert restatements("- Tool: `uv run --frozen pyright`", [tool], PROJECT) == [
        Restatement((PROJECT, "typecheck command"), "uv run --frozen pyright", False)
    ]
    assert restatements("- Check: `uv run --frozen ruff check .`", [tool], PROJECT) == [], "another label"
    assert restatements("- Tool: `uv run pyright`", [tool], PROJECT) == [], "the same value"
    assert restatements("- Tool: `uv run --frozen pyright`", [slot(PROJECT, "typecheck command", "uv run pyright")],
                        PROJECT) == [], "without the stating note, free text is never restated"


def test_a_slot_of_the_project_itself_is_named_by_its_predicate() -> None:
    host = slot(PROJECT, "staging database host", "db1.internal.example.com")
    assert host.words == ("staging", "database", "host")
    assert restated_value("The staging database host is db2.internal.example.com now.", host, PROJECT) == (
        "db2.internal.example.com", False)
    assert restated_value("Ashcombe moved to db2.internal.example.com.", host, PROJECT) is None
    assert mentions_slot("the staging database host changed", host.words)
    assert not mentions_slot("the importer changed", host.words)


def test_pick_prefers_the_slot_whose_old_value_is_named_and_refuses_a_tie() -> None:
    port = Restatement(("api", "port"), "8081", False)
    debug = Restatement(("api", "debug port"), "8081", True)
    assert pick([port, debug]) == debug
    assert pick([port, Restatement(("api", "admin port"), "8081", False)]) is None
    assert pick([port, Restatement(("api", "port"), "9090", False)]) is None
    assert pick([port, Restatement(("api", "port"), "8081", False)]) == port
    assert pick([]) is None


def test_a_note_about_another_project_names_it_and_not_its_own() -> None:
    assert about_other_project("Yarrowick has loyalty-jobs as refunds's host service.", ["ashcombe"], ["yarrowick"])
    assert not about_other_project("Unlike Yarrowick, Ashcombe runs refunds in loyalty-jobs.", ["ashcombe"], ["yarrowick"])
    assert not about_other_project("Run `yarrowick sync` before the tests.", ["ashcombe"], ["yarrowick"]), "code"
    assert not about_other_project("the yarrowick-cli wrapper is slow", ["ashcombe"], ["yarrowick"]), "part of a name"


def note(svc: MemoryService, clock, text: str, at: str, **kw):
    clock.advance(seconds=1)
    return remember(svc, text, valid_from=at, **kw)


def test_a_fact_less_note_ends_the_slots_old_value_at_its_time(svc: MemoryService, clock) -> None:
    note(svc, clock, "The importer peaks at 64 MB.", "2024-01-01", project="yarrowick")
    note(svc, clock, "Benchmark: the importer peaks at 2223 MB.", "2024-01-10",
         facts=[{"subject": "importer", "predicate": "peak memory", "object": "2223 MB"}])
    note(svc, clock, "invites-server answers on port 6940.", "2024-01-11",
         facts=[{"subject": "invites-server", "predicate": "port", "object": "6940"}])
    note(svc, clock, "Maybe the importer could get down to 900 MB with streaming.", "2024-02-01")
    note(svc, clock, "In yarrowick the importer peaks at 64 MB.", "2024-02-03")
    note(svc, clock, "After the streaming rewrite the importer peaks at 1484 MB.", "2024-03-01")
    clock.advance(minutes=1)
    Consolidator(svc, llm=None).run_to_completion()

    chain = history(svc, subject="importer", predicate="peak memory")
    assert [(e.object, e.status) for e in chain.entries] == [("2223 MB", "ended"), ("1484 MB", "current")], (
        "neither the hedge nor the note about another project restates the slot"
    )
    assert chain.entries[1].source == "structure" and chain.entries[1].supersedes is not None
    assert chain.entries[0].invalid_at == "2024-03-01T00:00:00Z"
    assert [i.object for i in as_of(svc, "importer peak memory", "2024-02-15", kinds=["fact"]).results][:1] == ["2223 MB"]
    untouched = history(svc, subject="invites-server", predicate="port")
    assert [(e.object, e.status) for e in untouched.entries] == [("6940", "current")]


def test_only_a_slot_someone_stated_is_restated(svc: MemoryService, clock) -> None:
    note(svc, clock, "Bumped numpy to 1.26.4.", "2024-01-10")  # the rules read this one: an extracted slot
    Consolidator(svc, llm=None).run_to_completion()
    note(svc, clock, "The lockfile holds numpy 2.0.1 after the upgrade today.", "2024-02-01")
    clock.advance(minutes=1)
    Consolidator(svc, llm=None).run_to_completion()
    chain = history(svc, subject="numpy", predicate="version")
    assert [(e.object, e.source, e.status) for e in chain.entries] == [("1.26.4", "rules", "current")]


def _typecheck_line_then(svc: MemoryService, clock, edited: str) -> list[tuple[str, str]]:
    """The agent states the typecheck command on a line of mcppy's agent file, then the line reads `edited`: the
    typecheck slot's chain after the consolidator ran (also states the format command on another line)."""
    note(svc, clock, "- Tool: `uv run pyright`", "2024-01-10", project="mcppy",
         facts=[{"subject": "mcppy", "predicate": "typecheck command", "object": "uv run pyright"}])
    note(svc, clock, "- Format: `uv run ruff format .`", "2024-01-10", project="mcppy",
         facts=[{"subject": "mcppy", "predicate": "format command", "object": "uv run ruff format ."}])
    note(svc, clock, edited, "2024-05-01", project="mcppy")
    clock.advance(minutes=1)
    Consolidator(svc, llm=None).run_to_completion()
    chain = history(svc, subject="mcppy", predicate="typecheck command", project="mcppy")
    return [(e.object, e.status, e.source) for e in chain.entries]


def test_a_line_edited_in_place_carries_the_agents_slot_to_its_new_value(svc: MemoryService, clock) -> None:
    assert _typecheck_line_then(svc, clock, "- Tool: `uv run --frozen pyright`") == [
        ("uv run pyright", "ended", "agent"), ("uv run --frozen pyright", "current", "structure")
    ]
    untouched = history(svc, subject="mcppy", predicate="format command", project="mcppy")
    assert [(e.object, e.status) for e in untouched.entries] == [("uv run ruff format .", "current")]


def test_a_line_edited_in_place_into_a_question_changes_nothing(svc: MemoryService, clock) -> None:
    assert _typecheck_line_then(svc, clock, "- Tool: `uv run --frozen pyright`?") == [("uv run pyright", "current", "agent")]


def test_a_line_edited_in_place_restates_a_slot_whose_fact_reads_unlike_it(svc: MemoryService, clock) -> None:
    """The agent named the slot in its own words ("final verification command"), which read unlike the line
    (cosine ~0.43) and share none of its words; among the project's other facts a search by the fact's meaning
    does not reach it. The stating note, found by the words the two lines share, ties the edited line to it."""
    for n, tool in enumerate(("ruff", "mypy", "pytest", "tox", "nox", "black", "isort", "flake8", "pyright", "uv",
                              "pnpm", "bun", "deno", "cargo", "go", "make", "just", "bazel", "gradle", "maven")):
        note(svc, clock, f"* Run `{tool} check --all` when you're done with {tool} things.", "2024-01-05",
             project="hugo", facts=[{"subject": tool, "predicate": "done check", "object": f"{tool} check --all"}])
    note(svc, clock, "* Use `mage check` when you're done.", "2024-01-10", project="hugo",
         facts=[{"subject": "hugo", "predicate": "final verification command", "object": "mage check"}])
    note(svc, clock, "* Use `./check.sh` when you're done.", "2024-05-01", project="hugo")
    clock.advance(minutes=1)
    Consolidator(svc, llm=None).run_to_completion()
    chain = history(svc, subject="hugo", predicate="final verification command", project="hugo")
    assert [(e.object, e.status, e.source) for e in chain.entries] == [
        ("mage check", "ended", "agent"), ("./check.sh", "current", "structure")
    ]
