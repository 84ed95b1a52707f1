"""A read naming a project that holds no memories says so and names the projects that do (issue 46, "What a user
touches first"): the tools answer with an empty result whose message says it — not an error, since an agent may
ask before it writes — and a write to a new project just works. Real store, real model."""

from __future__ import annotations

from chronomem.project import MAX_NAMED_PROJECTS, empty_project_message
from chronomem.service import VISIBLE_PROJECTS, MemoryService
from chronomem.tools import as_of, entity, history, recall, remember


def seed(svc: MemoryService) -> None:
    remember(svc, "The shop's API listens on port 8080.", project="shop-3fa2c1d0",
             facts=[{"subject": "api", "predicate": "port", "object": "8080"}])
    remember(svc, "Tabs, not spaces.", project="global")


def test_every_read_of_a_named_empty_project_says_so_and_lists_the_known_ones(svc: MemoryService) -> None:
    seed(svc)
    found = recall(svc, "which port does the API listen on?", project="shpo")
    assert found.results == [] and found.abstained
    assert found.message.startswith("Project 'shpo' has no memories.")
    assert "shop-3fa2c1d0" in found.message and "global" in found.message

    past = as_of(svc, "which port does the API listen on?", "2030-01-01", project="shpo")
    assert past.results == [] and "'shpo' has no memories" in past.message and "shop-3fa2c1d0" in past.message

    about = recall(svc, paths=["src/api.py"], project="shpo")
    assert about.results == [] and "'shpo' has no memories" in about.message

    chain = history(svc, subject="api", predicate="port", project="shpo")  # an empty result, not NotFound
    assert chain.entries == [] and "'shpo' has no memories" in chain.message and "shop-3fa2c1d0" in chain.message

    views = entity(svc, "api", project="shpo")
    assert views.views == [] and "'shpo' has no memories" in views.message and "shop-3fa2c1d0" in views.message


def test_the_name_of_a_detected_key_is_pointed_at_it(svc: MemoryService) -> None:
    seed(svc)
    found = recall(svc, "which port does the API listen on?", project="shop")
    assert "Did you mean shop-3fa2c1d0?" in found.message


def test_a_project_with_memories_and_the_default_project_keep_their_answers(svc: MemoryService) -> None:
    seed(svc)
    found = recall(svc, "which port does the API listen on?", project="shop-3fa2c1d0")
    assert found.results and "has no memories" not in found.message
    nothing = recall(svc, "who owns the billing service?", project="shop-3fa2c1d0")
    assert nothing.results == [] and "has no memories" not in nothing.message  # abstains as before
    default = recall(svc, "which port does the API listen on?")  # the service's own project ("proj"), not named
    assert default.results == [] and "has no memories" not in default.message
    everything = recall(svc, "which database do we use?", project="shpo", scope="all")  # no project to name
    assert "has no memories" not in everything.message


def test_writing_to_a_new_project_just_works_and_then_it_reads(svc: MemoryService) -> None:
    seed(svc)
    kept = remember(svc, "Payments retry three times.", project="payments")
    assert kept.id
    found = recall(svc, "how often do payments retry?", project="payments")
    assert [r.id for r in found.results][:1] == [kept.id] and "has no memories" not in found.message


def test_an_empty_store_says_it_holds_nothing_yet(svc: MemoryService) -> None:
    found = recall(svc, "anything", project="shop")
    assert found.results == [] and "this store holds none yet" in found.message


def test_a_limited_caller_is_shown_only_its_projects(svc: MemoryService) -> None:
    """A team server's client limited to projects (server/team.py) is not told the names of the others."""
    seed(svc)
    remember(svc, "The web app builds with vite.", project="web-app")
    token = VISIBLE_PROJECTS.set(lambda key: key in ("web-app", "web-docs"))
    try:
        found = recall(svc, "how does it build?", project="web-docs")
    finally:
        VISIBLE_PROJECTS.reset(token)
    assert "web-app" in found.message and "shop" not in found.message and "global" not in found.message
    token = VISIBLE_PROJECTS.set(lambda key: key == "web-docs")
    try:
        alone = recall(svc, "how does it build?", project="web-docs")
    finally:
        VISIBLE_PROJECTS.reset(token)
    assert "nor has any other project you may read" in alone.message and "holds none yet" not in alone.message


def test_the_message_is_bounded() -> None:
    counts = {f"p{i:02d}": 100 - i for i in range(30)}
    message = empty_project_message("nope", counts)
    assert "p00" in message and f"p{MAX_NAMED_PROJECTS - 1:02d}" in message
    assert f"p{MAX_NAMED_PROJECTS:02d}" not in message
    assert f"and {30 - MAX_NAMED_PROJECTS} more" in message
