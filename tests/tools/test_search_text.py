"""The query text the channels search: one project's own name says nothing about which of its memories is meant."""

from __future__ import annotations

from chronomem.tools.recall import search_text

NAMES = {"copperfield-3fa2c1d0": "copperfield", "pinecask": "pinecask"}


def test_a_search_of_one_project_drops_its_name() -> None:
    q = "Which service hosts the ledger module in Copperfield?"
    assert search_text(q, ["copperfield-3fa2c1d0"], NAMES) == "Which service hosts the ledger module in?"
    assert search_text(q, ["copperfield-3fa2c1d0", "global"], NAMES) == "Which service hosts the ledger module in?"


def test_other_project_names_and_wider_searches_keep_the_text() -> None:
    q = "Which service hosts the ledger module in Pinecask?"
    assert search_text(q, ["copperfield-3fa2c1d0"], NAMES) == q  # another project named: the demotion's business
    assert search_text(q, None, NAMES) == q  # all projects: the name picks one out
    assert search_text(q, ["copperfield-3fa2c1d0", "pinecask"], NAMES) == q


def test_a_question_about_an_identifier_holding_the_project_name_is_answered(svc) -> None:
    """The project `effect`'s own name inside `Effect.interrupt` stays: dropping it left `.interrupt`, a name the
    store never spells, and recall abstained on a note that answers the question (agentfiles_validation)."""
    from chronomem.tools import recall, remember

    note = remember(
        svc, "When yielding `Effect.fail`, `Effect.interrupt`, or other terminal effects, always use `return yield*`",
        project="effect", valid_from="2024-05-01",
    )
    remember(svc, "Run `pnpm check` before pushing.", project="effect", valid_from="2024-05-02")
    found = recall(svc, "How should I yield Effect.interrupt or other terminal effects?", project="effect")
    assert not found.abstained
    assert found.results[0].id == note.id
