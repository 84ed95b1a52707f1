"""eval/devmem's confirming agent: it ends the probable updates a reply lists on the bases it trusts, and the replay
tallies each basis as right (the named memory is of the note's own slot) or not."""

from __future__ import annotations

import pytest

from chronomem.service import MemoryService
from chronomem.storage import Filter
from eval.agent_style import NamedFact, NoisyAgent
from eval.common import Upkeep
from eval.devmem import CONFIRMED_BASES, Replay, Write, agent_steps

SLOTS = [
    {
        "project": "proj", "slot": "service_port:dispatch-jobs", "stype": "service_port", "mode": "updated",
        "note_ids": ["n1", "n2"], "roles": ["initial", "update"], "values": ["5589", "5381"],
    },
]


class SkipsTheUpdate(NoisyAgent):
    """A model that names the first note's fact its own way and passes none with the second."""

    def fact(self, note_id: str, project: str, slot: str, value: str) -> NamedFact | None:
        return NamedFact("dispatch-jobs service", "port", value) if note_id == "n1" else None


def replay(svc: MemoryService, trusted: str | None) -> Replay:
    confirm = CONFIRMED_BASES[trusted] if trusted else frozenset()
    played = Replay(svc, True, agent_steps(SLOTS), [], Upkeep(svc, enabled=False), SkipsTheUpdate(), confirm)
    played.write(Write("n1", "proj", "2024-01-01T00:00:00Z", "dispatch-jobs listens on 5589.", "service_port:dispatch-jobs", "fact"))
    played.write(Write("n2", "proj", "2024-02-01T00:00:00Z", "dispatch-jobs → port 5381.", "service_port:dispatch-jobs", "fact"))
    return played


def live_port_facts(svc: MemoryService) -> list[str]:
    rows = svc.store.find(Filter().projects(["proj"]).kinds(["fact"]).live(svc.now(), svc.now()))
    return sorted(r.object or "" for r in rows)


@pytest.mark.parametrize(("trusted", "ended"), [(None, False), ("strong", False), ("all", True)])
def test_the_agent_confirms_only_the_bases_it_trusts(svc: MemoryService, trusted: str | None, ended: bool) -> None:
    played = replay(svc, trusted)
    assert played.actions["probable update (new value for its attribute): same slot"] == 1
    assert played.actions["confirmed update invalidated"] == (1 if ended else 0)
    # a confirmed update hands the port over to the newer note (tools/forget.carry_facts)
    assert played.actions["confirmed update: facts carried"] == (1 if ended else 0)
    assert live_port_facts(svc) == (["5381"] if ended else ["5589"])


def test_every_basis_the_reply_can_give_is_one_the_agent_can_confirm() -> None:
    from typing import get_args

    from chronomem.tools.results import UpdateBasis

    assert CONFIRMED_BASES["all"] == frozenset(get_args(UpdateBasis))
    assert CONFIRMED_BASES["strong"] < CONFIRMED_BASES["all"]
