"""The meaning of a stated fact's slot: its slot phrase's cosine to the query, from the real model."""

from __future__ import annotations

import numpy as np

from chronomem.consolidate.slots import slot_matcher
from chronomem.retrieval.pipeline import attach_slot_cosines
from chronomem.search.engine import Search
from chronomem.service import MemoryService
from chronomem.storage import Filter
from chronomem.tools import recall, remember

QUERY = "Which person looks after billing?"


def test_stated_facts_get_their_slot_phrase_cosine_without_the_project_name(svc: MemoryService) -> None:
    remember(svc, "Dana Reyes maintains billing.", facts=[{"subject": "billing", "predicate": "maintainer", "object": "Dana Reyes"}])
    remember(svc, "Billing lives in src/billing/.", facts=[{"subject": "billing", "predicate": "directory", "object": "src/billing/"}])
    remember(svc, "proj pins Python 3.12.", facts=[{"subject": "proj", "predicate": "python_version", "object": "3.12"}])
    remember(svc, "Billing invoices are sent on the first of the month.")
    vector = svc.embed_one(QUERY)
    pool = Search(svc.store, Filter().projects(["proj"])).candidates(QUERY, vector)
    attach_slot_cosines(pool, vector, slot_matcher(svc).embed_phrases, ("proj",))
    by_slot = {c.record.predicate: c.slot_cosine for c in pool if c.record.kind == "fact"}
    assert all(c.slot_cosine is None for c in pool if c.record.kind == "chunk")
    assert by_slot["maintainer"] > by_slot["directory"]  # "looks after" means the maintainer
    [phrase] = [v for v in slot_matcher(svc).embed_phrases(["python version"]).values()]
    assert np.isclose(by_slot["python_version"], float(np.dot(vector, phrase)), atol=1e-5)  # not "proj python version"
    item = recall(svc, QUERY).results[0]
    assert item.text.startswith("billing maintainer") and "slot meaning" in item.channels


def test_extracted_facts_have_no_slot_meaning(svc: MemoryService) -> None:
    remember(svc, "Dana Reyes maintains billing.", facts=[{"subject": "billing", "predicate": "maintainer", "object": "Dana Reyes"}])
    vector = svc.embed_one(QUERY)
    pool = Search(svc.store, Filter().projects(["proj"])).candidates(QUERY, vector)
    for c in pool:
        c.record.source = "rules" if c.record.kind == "fact" else c.record.source
    attach_slot_cosines(pool, vector, slot_matcher(svc).embed_phrases, ("proj",))
    assert all(c.slot_cosine is None for c in pool)
