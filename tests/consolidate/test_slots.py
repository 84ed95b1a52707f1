"""Semantic slot matching: one attribute under two names is one chain; an ambiguous pair is flagged, not merged."""

from __future__ import annotations

from chronomem.consolidate.slots import AMBIGUOUS_SLOT, SAME_SLOT, classify, identifiers
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.tools import history, recall, remember


def test_classify_bands_and_identifier_guard() -> None:
    assert classify(SAME_SLOT, "proj deploy command", "proj deployment command") == "same"
    assert classify((SAME_SLOT + AMBIGUOUS_SLOT) / 2, "proj ci system", "proj ci provider") == "ambiguous"
    assert classify(AMBIGUOUS_SLOT - 0.01, "proj test command", "proj test runner") == "distinct"
    assert classify(0.99, "checkout-api port", "checkout-worker port") == "distinct"
    assert classify(0.99, "incident INC-5447 status", "incident INC-4408 status") == "distinct"
    assert identifiers("proj deploy command") == frozenset()
    assert identifiers("svc payments-v2 url") == {"payments-v2"}


def test_a_renamed_attribute_resolves_against_the_existing_slot(svc: MemoryService, clock) -> None:
    first = remember(svc, "Deploys: make deploy.", valid_from="2024-01-01",
                     facts=[{"subject": "proj", "predicate": "deploy command", "object": "make deploy"}])
    rows = svc.store.count()
    clock.advance(seconds=1)
    second = remember(svc, "Deploys now go through fly.", valid_from="2024-03-01",
                      facts=[{"subject": "proj", "predicate": "deployment command", "object": "fly deploy"}])
    [outcome] = second.facts
    assert (outcome.action, outcome.predicate, outcome.supersedes) == ("superseded", "deploy_command", first.facts[0].id)
    chain = history(svc, subject="proj", predicate="deploy_command")
    assert [(e.object, e.status) for e in chain.entries] == [("make deploy", "ended"), ("fly deploy", "current")]
    assert [i.object for i in recall(svc, "how do we deploy", kinds=["fact"]).results] == ["fly deploy"]
    assert svc.store.count() > rows and svc.store.get(first.facts[0].id) is not None


def test_an_ambiguous_pair_stays_live_and_is_flagged(svc: MemoryService, clock) -> None:
    a = remember(svc, "CI is CircleCI.", facts=[{"subject": "proj", "predicate": "ci system", "object": "CircleCI"}])
    clock.advance(seconds=1)
    # "ci system" / "ci provider" (0.73) over values of two kinds (a name, free text): a near miss, not one slot
    b = remember(svc, "CI provider: self-hosted Buildkite agents.",
                 facts=[{"subject": "proj", "predicate": "ci provider", "object": "self-hosted Buildkite agents"}])
    [outcome] = b.facts
    assert outcome.action == "conflict" and outcome.conflicts_with == [a.facts[0].id]
    assert history(svc, subject="proj", predicate="ci_provider").entries[0].conflicts_with == [a.facts[0].id]
    assert history(svc, subject="proj", predicate="ci_system").entries[0].conflicts_with == [b.facts[0].id]
    live = svc.store.find(Filter().kinds(["fact"]).live(clock.now, clock.now))
    assert {f.object for f in live} == {"CircleCI", "self-hosted Buildkite agents"}


def test_look_alike_identifiers_are_separate_slots(svc: MemoryService, clock) -> None:
    remember(svc, "x", facts=[{"subject": "checkout-api", "predicate": "port", "object": "8001"}])
    clock.advance(seconds=1)
    b = remember(svc, "y", facts=[{"subject": "checkout-worker", "predicate": "port", "object": "8002"}])
    assert b.facts[0].action == "added" and b.facts[0].conflicts_with == []
