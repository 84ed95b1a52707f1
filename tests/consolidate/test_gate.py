"""The encoding gate: its three signals on statements written here (not taken from ../shared/data), the
policy's decisions, the skip policy's reply, and the signals in remember replies, recall items and the brief."""

from __future__ import annotations

from pathlib import Path

import pytest

from chronomem.config import Settings
from chronomem.errors import InvalidInput
from chronomem.consolidate.gate import GateSignals, decide
from chronomem.consolidate.runner import Consolidator
from chronomem.consolidate.salience import event_salience
from chronomem.service import MemoryService
from chronomem.tools import recall, remember
from chronomem.tools.brief import brief
from tests.conftest import model_dir


def service(tmp_path: Path, embedder, clock, policy: str) -> MemoryService:
    settings = Settings(store_path=tmp_path / "store", model_path=model_dir(), project="kestrel", gate_policy=policy)
    return MemoryService(settings, embedder=embedder, clock=clock)


def test_salience_rises_with_what_a_statement_names_not_with_how_it_is_worded() -> None:
    filler = ["ok, looking into it now", "Running the tests again.", "Done with that, moving on."]
    specific = [
        "The ingest worker reads from the `KESTREL_QUEUE_URL` env var.",
        "Pinned pydantic to 2.7.1 in requirements/base.txt.",
        "Deploys go through scripts/release.sh on the bastion host.",
    ]
    assert max(event_salience(t) for t in filler) < 0.3 < min(event_salience(t) for t in specific)
    # a repeated word adds nothing: the same status line twice says what it says once
    assert event_salience("tests pass tests pass tests pass") == pytest.approx(event_salience("tests pass"))
    assert event_salience("") == 0.0


def test_decide_keeps_what_changes_a_fact_and_acts_on_restatements_and_filler_by_policy() -> None:
    restated = GateSignals(novelty=0.02, salience=0.8, prediction_error=0.0, nearest="01AAA")
    filler = GateSignals(novelty=0.6, salience=0.1, prediction_error=0.0)
    change = GateSignals(novelty=0.02, salience=0.1, prediction_error=1.0)
    fresh = GateSignals(novelty=0.7, salience=0.8, prediction_error=0.0)
    for policy, verdict in (("record", "kept"), ("demote", "demoted"), ("skip", "skipped")):
        low = decide(restated, policy, 0.1, 0.3)
        assert low.below and low.decision == verdict
        assert any("novelty 0.02 < 0.10" in r and "01AAA" in r for r in low.reasons)
        assert decide(filler, policy, 0.1, 0.3).decision == verdict
        assert any("salience 0.10 < 0.30" in r for r in decide(filler, policy, 0.1, 0.3).reasons)
        assert decide(change, policy, 0.1, 0.3).decision == "kept", "a changed fact always passes"
        assert decide(fresh, policy, 0.1, 0.3).decision == "kept"
        assert decide(restated, policy, 0.1, 0.3, structured=True).decision == "kept", "the agent's facts pass"


def test_signals_on_a_small_stream_novelty_and_prediction_error_read_the_store(tmp_path: Path, embedder, clock) -> None:
    svc = service(tmp_path, embedder, clock, "record")
    runner = Consolidator(svc, llm=None)

    def write(text: str, **kw):
        clock.advance(minutes=10)
        out = remember(svc, text, **kw)
        runner.run_to_completion(force_upkeep=False)
        return out

    first = write("The ingest-api listens on port 7311.")
    assert first.gate.novelty == 1.0 and first.gate.prediction_error == 0.5, "a new value in an empty project"
    again = write("The ingest-api listens on port 7311.")
    assert again.gate.novelty < 0.05 and again.gate.prediction_error == 0.0 and again.gate.nearest == first.id
    assert again.gate.below_thresholds and again.gate.decision == "kept", "record keeps it and says so"
    assert "gate: kept under policy record" in again.message
    moved = write("The ingest-api listens on port 7420 now.")
    assert moved.gate.prediction_error == 1.0 and not moved.gate.below_thresholds
    assert any("port" in c for c in moved.gate.changes)
    chatter = write("ok, looking into it now")
    assert chatter.gate.salience < 0.3 and chatter.gate.below_thresholds

    item = next(i for i in recall(svc, "which port does ingest-api listen on", kinds=["chunk"]).results if i.id == moved.id)
    assert (item.novelty, item.prediction_error, item.gate) == (moved.gate.novelty, 1.0, "kept")
    assert item.salience == pytest.approx(moved.gate.salience, abs=1e-4)
    derived = [i for i in recall(svc, "which port does ingest-api listen on", kinds=["fact"]).results if moved.id in i.source_ids]
    assert derived, "the rule extractor read the port from the note"
    assert (derived[0].novelty, derived[0].prediction_error) == (moved.gate.novelty, 1.0), "a fact shows its statement's signals"
    notes = brief(svc, budget_tokens=2000).notes
    assert chatter.id not in {n.id for n in notes} and again.id not in {n.id for n in notes}, "the brief leaves them out"


def test_skip_policy_does_not_store_and_says_why(tmp_path: Path, embedder, clock) -> None:
    svc = service(tmp_path, embedder, clock, "skip")
    kept = remember(svc, "Nightly exports land in the s3://kestrel-exports bucket.")
    rows = svc.store.count()
    clock.advance(minutes=5)
    skipped = remember(svc, "Nightly exports land in the s3://kestrel-exports bucket.")
    assert skipped.id is None and skipped.gate is not None and skipped.gate.decision == "skipped"
    assert skipped.gate.nearest == kept.id and skipped.gate.policy == "skip"
    assert skipped.message.startswith("Not stored") and "novelty" in skipped.message and kept.id in skipped.message
    assert svc.store.count() == rows, "nothing was written"
    # a statement with the agent's facts is never skipped, even when it repeats one
    clock.advance(minutes=5)
    stated = remember(svc, "Nightly exports land in the s3://kestrel-exports bucket.",
                      facts=[{"subject": "exports", "predicate": "bucket", "object": "s3://kestrel-exports"}])
    assert stated.id is not None and stated.gate.decision == "kept"


def test_demote_policy_stores_the_mark_and_ranks_it_below_an_equal_note(tmp_path: Path, embedder, clock) -> None:
    svc = service(tmp_path, embedder, clock, "demote")
    first = remember(svc, "Schema migrations run with `alembic upgrade head` from the api folder.")
    clock.advance(minutes=5)
    second = remember(svc, "Schema migrations run with `alembic upgrade head` from the api folder!")
    assert second.gate.decision == "demoted" and svc.store.get(second.id).gate == "demoted"
    scores = {i.id: i.score for i in recall(svc, "how do schema migrations run", kinds=["chunk"]).results}
    # equal evidence but for the `!`: the demoted restatement scores below the note it restates ("the newer wins"
    # may still list it first: it says the same thing, later)
    assert scores[second.id] < scores[first.id]


def test_the_policy_and_thresholds_come_from_the_environment(tmp_path: Path) -> None:
    env = {"CHRONOMEM_GATE": " Skip ", "CHRONOMEM_GATE_NOVELTY": "0.2", "CHRONOMEM_GATE_SALIENCE": "7"}
    settings = Settings.from_env(store=tmp_path, environ=env)
    assert (settings.gate_policy, settings.gate_novelty, settings.gate_salience) == ("skip", 0.2, 1.0)
    fallback = Settings.from_env(store=tmp_path, environ={"CHRONOMEM_GATE": "drop-everything", "CHRONOMEM_GATE_NOVELTY": "x"})
    assert fallback.gate_policy == "record" and fallback.gate_novelty == Settings(store_path=tmp_path).gate_novelty


def test_the_signals_survive_export_and_import_lines(svc: MemoryService) -> None:
    from chronomem.storage.portable import export_lines, parse_line

    kept = remember(svc, "The staging cluster runs in eu-west-3.")
    line = next(line for line in export_lines(svc.store) if kept.id in line)
    back = parse_line(line, 1)
    assert (back.novelty, back.gate) == (kept.gate.novelty, "kept")
    assert back.event_salience == pytest.approx(kept.gate.salience, abs=1e-4)
    with pytest.raises(InvalidInput, match="novelty must be a number or null"):
        parse_line(line.replace('"novelty":1.0', '"novelty":"high"'), 2)
