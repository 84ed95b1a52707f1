"""eval/agent_style.py: the noisy agent is deterministic per note, skips and decorates at its rates, and names
every slot type of the three DevMem-format splits."""

from __future__ import annotations

import json

import pytest
from conftest import shared_dir

from chronomem.records import same_value
from eval.agent_style import DECORATE, PREDICATES, SKIP, NoisyAgent


def test_a_note_is_named_the_same_way_whatever_runs_before_it() -> None:
    agent = NoisyAgent(seed=7)
    first = [agent.fact(f"p-{i:04d}", "shop", "service_port:checkout-api", "8443") for i in range(50)]
    again = [NoisyAgent(seed=7).fact(f"p-{i:04d}", "shop", "service_port:checkout-api", "8443") for i in reversed(range(50))]
    assert first == list(reversed(again))
    assert first != [NoisyAgent(seed=8).fact(f"p-{i:04d}", "shop", "service_port:checkout-api", "8443") for i in range(50)]


def test_rates_and_namings() -> None:
    agent = NoisyAgent(seed=0)
    facts = [agent.fact(f"n-{i}", "shop", "module_owner:billing", "Payments") for i in range(2000)]
    passed = [f for f in facts if f is not None]
    assert abs(1 - len(passed) / len(facts) - SKIP) < 0.04
    decorated = [f for f in passed if f.object != "Payments"]
    assert abs(len(decorated) / len(passed) - DECORATE) < 0.04
    assert all(same_value(f.object, "Payments") for f in passed)  # decoration never changes the value
    assert {f.predicate for f in passed} == set(PREDICATES["module_owner"])
    assert {f.subject for f in passed} == {"billing", "billing module", "the billing module", "Billing"}


@pytest.mark.parametrize("split", ["devmem", "devmem_validation", "agentfiles_validation"])
def test_every_slot_type_of_the_data_has_paraphrases(split: str) -> None:
    slots = shared_dir("data", split, "slots.jsonl")
    types = {json.loads(line)["stype"] for line in slots.read_text().splitlines() if line.strip()}
    assert types <= set(PREDICATES), sorted(types - set(PREDICATES))
    assert all(3 <= len(PREDICATES[t]) <= 5 for t in types)
