"""The second hop: the memory a name in the best match points to comes second; nothing moves otherwise."""

from __future__ import annotations

from chronomem.retrieval.bridge import placed
from chronomem.service import MemoryService
from chronomem.tools import recall, remember

NOISE = [
    "Auth tokens expire after an hour.",
    "The payments module retries failed charges twice.",
    "The linter runs with ruff on every commit.",
    "Deploys go out on Tuesdays and Thursdays.",
    *(f"{name}-svc listens on port {port}." for name, port in
      [("billing", 8120), ("search", 8350), ("ledger", 8410), ("gateway", 3165), ("catalog", 8220), ("audit", 8630)]),
]


def _texts(result) -> list[str]:  # type: ignore[no-untyped-def]
    return [item.text for item in result.results]


def test_the_memory_a_name_points_to_comes_second(svc: MemoryService) -> None:
    for text in NOISE:
        remember(svc, text)
    remember(svc, "The auth module is deployed as part of notifications-svc.")
    remember(svc, "notifications-svc listens on port 8576.")
    answer = _texts(recall(svc, "Which port do I use to call the auth module locally?", limit=5))
    assert "notifications-svc" in answer[0] and "auth" in answer[0]
    assert "notifications-svc listens on port 8576." in answer[1:5]
    hops = [i for i in recall(svc, "Which port do I use to call the auth module locally?", limit=5).results
            if "bridge" in i.channels]
    assert [h.text for h in hops] in ([], ["notifications-svc listens on port 8576."])


def test_a_best_match_that_covers_the_question_moves_nothing(svc: MemoryService) -> None:
    for text in NOISE:
        remember(svc, text)
    remember(svc, "The auth module is deployed as part of notifications-svc.")
    remember(svc, "notifications-svc listens on port 8576.")
    answer = recall(svc, "Where is the auth module deployed?", limit=5)
    assert "notifications-svc" in answer.results[0].text
    assert all("bridge" not in item.channels for item in answer.results)


def test_placed_moves_an_item_to_second_place_once() -> None:
    assert placed(list("abcdefg"), "g", str) == list("abcdgef")
    assert placed(list("abcdef"), "x", str) == list("abcdxef")
    assert placed(["a"], "x", str) == ["a", "x"]


OWNERS = [
    *(f"The {module} module is owned by the {team} team." for module, team in
      [("billing", "Payments"), ("search", "Discovery"), ("ledger", "Payments"), ("gateway", "Platform"),
       ("catalog", "Discovery"), ("audit", "Security")]),
    *(f"Escalations for {team} go through the on-call rota first." for team in ["Payments", "Discovery", "Platform"]),
    "The loyalty module is owned by the Localization team.",
    "Channel for Localization: #localization-help.",
    "The Localization team reviews every string change.",
    "Localization ships translations every sprint.",
]


def test_the_second_hop_is_chosen_by_meaning_not_a_shared_word(svc: MemoryService) -> None:
    # "lead" in the question, "led" in the answer: no word in common, the same meaning
    for text in OWNERS:
        remember(svc, text)
    remember(svc, "The Localization team is led by Astrid Holm.")
    answer = recall(svc, "For an escalation on loyalty, which team lead do I contact?", limit=5).results
    assert "loyalty" in answer[0].text and "Localization" in answer[0].text
    hops = [item.text for item in answer if "bridge" in item.channels]
    assert hops == ["The Localization team is led by Astrid Holm."]
