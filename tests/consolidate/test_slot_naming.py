"""Facts as real agents name them: one slot whatever the naming, values compared as values, events that
accumulate, near misses reported (never merged), `supersedes` that ends exactly what it names, and probable
updates reported when the agent did not say."""

from __future__ import annotations

import pytest

from chronomem.consolidate.slots import predicate_form, slot_matcher, slot_verdict, subject_form
from chronomem.errors import InvalidInput, NotFound
from chronomem.facts import same_subject
from chronomem.records import differs_only_in_values, is_time_value, names_value, same_value, value_in_place, value_kind
from chronomem.service import MemoryService
from chronomem.tools import as_of, history, recall, remember


def fact(subject: str, predicate: str, obj: str, **extra: str) -> list[dict[str, str]]:
    return [{"subject": subject, "predicate": predicate, "object": obj, **extra}]


def test_normal_forms_ignore_case_articles_joiners_and_a_trailing_service() -> None:
    forms = {subject_form(s, "shop") for s in ("payments", "Payments", "the payments service", "payments-svc", "payments_service")}
    assert forms == {"payments"}
    assert subject_form("payments-db", "shop") != subject_form("payments", "shop")
    assert {subject_form(s, "shop") for s in ("shop", "the shop project", "Shop repo")} == {"shop"}
    assert predicate_form("Test-Command") == predicate_form("test_command") == predicate_form("the test command")


def test_objects_compare_as_values() -> None:
    assert same_value("port 8443", "8443") and same_value("v1.2.3", "1.2.3") and same_value("`uv run pytest`", "uv run pytest")
    assert not same_value("Node 18", "Python 18")
    assert not same_value("1.2.3", "1.2.4")
    assert not same_value("uv run pytest", "uv run --frozen pytest")


def test_a_decorated_value_has_its_values_kind_and_a_sentence_has_none() -> None:
    assert value_kind("port 7494") == value_kind("3551") == "integer"
    assert value_kind("GET /api/v2/invoices") == value_kind("/api/v1/invoices") == "path"
    assert value_kind("the contracts-server service") == value_kind("contracts-server") == "identifier"
    assert value_kind("go test -v -cover ./...") == "text"  # a command: many words, several shaped like values
    assert value_kind("bullet points, at most five") == "text"


def test_subjects_are_one_thing_when_one_names_the_other_with_words_around_it() -> None:
    assert same_subject("the audit-svc service", "audit-svc", "shop")
    assert same_subject("auth", "the auth module", "shop")
    assert not same_subject("payments", "payments-db", "shop")  # the hyphenated name is another thing
    assert not same_subject("checkout", "payments", "shop")


def test_verdict_needs_both_subject_and_predicate() -> None:
    assert slot_verdict(1.0, 1.0) == "same"
    assert slot_verdict(1.0, 0.70) == "ambiguous"  # a near miss on the attribute: reported, not merged
    assert slot_verdict(0.70, 1.0) == "distinct"  # another thing with the same attribute
    assert slot_verdict(1.0, 0.30) == "distinct"


def test_one_slot_under_several_namings(svc: MemoryService, clock) -> None:
    first = remember(svc, "payments listens on 8080", valid_from="2024-01-01", facts=fact("the payments service", "port", "8080"))
    clock.advance(seconds=1)
    second = remember(svc, "payments moved to 8443", valid_from="2024-02-01", facts=fact("payments-svc", "Port", "port 8443"))
    [outcome] = second.facts
    assert outcome.action == "superseded" and outcome.supersedes == first.facts[0].id
    assert (outcome.subject, outcome.predicate) == ("the payments service", "port")
    assert outcome.named == "payments-svc port"
    clock.advance(seconds=1)
    again = remember(svc, "payments is on 8443", valid_from="2024-03-01", facts=fact("Payments", "port", "8443"))
    assert again.facts[0].action == "reinforced"


def test_different_things_never_merge(svc: MemoryService, clock) -> None:
    remember(svc, "payments on 8080", facts=fact("payments", "port", "8080"))
    clock.advance(seconds=1)
    db = remember(svc, "payments db on 5432", facts=fact("payments-db", "port", "5432"))
    assert db.facts[0].action == "added" and db.facts[0].conflicts_with == [] and db.facts[0].named is None
    clock.advance(seconds=1)
    remember(svc, "billing is owned by Ana", facts=fact("billing module", "owner", "Ana"))
    clock.advance(seconds=1)
    reviewer = remember(svc, "billing is reviewed by Bo", facts=fact("billing module", "reviewer", "Bo"))
    assert reviewer.facts[0].action == "added" and reviewer.facts[0].possibly_same_as == []
    live = {(f.subject, f.predicate, f.object) for f in recall(svc, "payments billing port owner reviewer", kinds=["fact"]).results}
    assert {("payments", "port", "8080"), ("payments-db", "port", "5432")} <= live


def test_a_near_miss_is_reported_not_merged(svc: MemoryService, clock) -> None:
    # "feature flag" / "flag" (0.63) over values of two kinds (a dotted name, a hyphenated one): not one slot for sure
    a = remember(svc, "gift cards is gated behind flag.gift_cards.", facts=fact("gift cards", "feature flag", "flag.gift_cards"))
    clock.advance(seconds=1)
    b = remember(svc, "gift cards: enable-gift-cards.", facts=fact("gift cards", "flag", "enable-gift-cards"))
    [outcome] = b.facts
    assert outcome.named is None and outcome.possibly_same_as and outcome.possibly_same_as[0].startswith("gift cards feature_flag (0.")
    assert history(svc, subject="gift cards", predicate="feature_flag").entries[0].status == "current"
    assert outcome.conflicts_with == [a.facts[0].id]
    assert [(u.id, u.reason.split(":")[0], u.basis) for u in b.probable_updates] == [
        (a.facts[0].id, "same thing by meaning", "same slot by meaning")
    ]


def test_one_attribute_under_two_names_with_values_of_one_kind_is_one_slot(svc: MemoryService, clock) -> None:
    # the subjects are one as their notes say them; "port" / "http port" and "service" / "served by" mean one attribute
    first = remember(svc, "Port 8277 belongs to contracts-jobs.", facts=fact("contracts-jobs service", "http port", "8277"))
    clock.advance(seconds=1)
    second = remember(svc, "Port 9125 belongs to contracts-jobs.", facts=fact("the contracts-jobs service", "port", "9125"))
    assert second.facts[0].action == "superseded" and second.facts[0].supersedes == first.facts[0].id
    clock.advance(seconds=1)
    remember(svc, "loyalty runs in loyalty-jobs.", facts=fact("loyalty", "service", "loyalty-jobs"))
    clock.advance(seconds=1)
    moved = remember(svc, "loyalty is bundled into contracts-server.", facts=fact("the loyalty module", "served by", "contracts-server"))
    assert moved.facts[0].action == "superseded"
    # another attribute of the same thing with a value of another kind stays its own slot
    clock.advance(seconds=1)
    path = remember(svc, "loyalty lives in src/loyalty/.", facts=fact("loyalty", "lives in", "src/loyalty/"))
    assert path.facts[0].action == "added"


def test_events_accumulate_and_states_replace(svc: MemoryService, clock) -> None:
    assert is_time_value("2024-03-02") and is_time_value("`2024-03-02T10:00:00Z`") and not is_time_value("20 */6 * * *")
    ids = []
    for day in ("2024-03-02", "2024-03-09", "2024-03-20"):
        clock.advance(seconds=1)
        r = remember(svc, f"test_retry flaked on {day}", valid_from=day, facts=fact("tests/test_sync.py::test_retry", "flaky_report", day))
        assert r.facts[0].action == "added" and r.facts[0].supersedes is None
        ids.append(r.facts[0].id)
    chain = history(svc, subject="tests/test_sync.py::test_retry", predicate="flaky_report")
    assert [e.status for e in chain.entries] == ["current"] * 3
    # an explicit kind wins over the object's shape, both ways
    clock.advance(seconds=1)
    remember(svc, "deployed 4.1", valid_from="2024-04-01", facts=fact("api", "deploy", "4.1", kind="event"))
    clock.advance(seconds=1)
    second = remember(svc, "deployed 4.2", valid_from="2024-04-02", facts=fact("api", "deploy", "4.2", kind="event"))
    assert second.facts[0].action == "added"
    clock.advance(seconds=1)
    remember(svc, "release date 2024-05-01", valid_from="2024-04-03", facts=fact("api", "release date", "2024-05-01", kind="state"))
    clock.advance(seconds=1)
    moved = remember(svc, "release date moved", valid_from="2024-04-04", facts=fact("api", "release date", "2024-05-08", kind="state"))
    assert moved.facts[0].action == "superseded"


def test_supersedes_ends_exactly_the_named_memories(svc: MemoryService, clock) -> None:
    old = remember(svc, "The nightly export takes 44 min.", valid_from="2024-01-01")
    other = remember(svc, "The nightly import takes 12 min.", valid_from="2024-01-01")
    clock.advance(seconds=1)
    new = remember(svc, "Nightly export is down to 17 min after the batching change.", valid_from="2024-02-01", supersedes=[old.id])
    assert new.superseded == [old.id] and new.probable_updates == []
    now_ids = [r.id for r in recall(svc, "how long does the nightly export take").results]
    assert old.id not in now_ids and new.id in now_ids and other.id in [r.id for r in recall(svc, "nightly import").results]
    then = as_of(svc, "how long does the nightly export take", at="2024-01-15").results
    then_ids = {r.id for r in then} | {r.revision_of for r in then}  # the ended note is read as its revision
    assert old.id in then_ids and new.id not in then_ids
    with pytest.raises(InvalidInput, match="no longer current"):
        remember(svc, "again", supersedes=[old.id])
    with pytest.raises(NotFound):
        remember(svc, "nothing there", supersedes=["01J0000000000000000000000X"])


def test_a_label_and_its_value_is_a_frame_of_one_word() -> None:
    assert differs_only_in_values("- Format: `uv run ruff format .`", "- Format: `uv run --frozen ruff format .`")
    assert differs_only_in_values("**Port**: 8080", "**Port**: 9090")
    assert differs_only_in_values("3. Timeout: 30s", "3. Timeout: 45s")
    assert not differs_only_in_values("Format `a.py`", "Format `b.py`")  # a lone word beside a value names nothing
    assert not differs_only_in_values("- Check: `ruff check .`", "- Fix: `ruff check . --fix`")
    assert not differs_only_in_values("see: `a.py`", "- Format: `b.py`")


def test_the_value_a_text_says_in_place_of_another() -> None:
    before, after = "- Full check: `./scripts/test` (~20s, matches CI)", "- Full check: `./scripts/test` (~23s, matches CI)"
    assert value_in_place(before, after, "~20s") == "~23s"
    assert value_in_place(before, after, "./scripts/test") is None  # kept, not replaced
    assert value_in_place("- Format: `uv run ruff format .`", "- Format: `UV run --frozen ruff format .`", "uv run ruff format .") == (
        "UV run --frozen ruff format ."  # as written, without its backticks
    )
    assert value_in_place("payments listens on port 8080", "payments listens on port 8443", "port 8080") == "8443"
    assert value_in_place("the owner is Ana", "the reviewer is Bo", "Ana") is None  # other words: not one text


def test_a_probable_update_is_reported_with_its_id(svc: MemoryService, clock) -> None:
    assert differs_only_in_values("Full check: `./scripts/test` (~20s)", "Full check: `./scripts/test` (~23s)")
    assert not differs_only_in_values("the owner is Ana", "the reviewer is Ana")
    assert differs_only_in_values("billing-api moved to port 8080 (was 80)", "billing-api moved to port 9090 (was 8080)")
    # two services' ports: every value differs, the service's name too, so it is not one thing updated
    assert not differs_only_in_values(
        "loyalty-jobs serves HTTP on port 8730 (same in docker-compose).",
        "contracts-server serves HTTP on port 7340 (same in docker-compose).",
    )
    first = remember(svc, "Full check: `./scripts/test` (~20s, runs everything)", valid_from="2024-01-01")
    clock.advance(seconds=1)
    second = remember(svc, "Full check: `./scripts/test` (~23s, runs everything)", valid_from="2024-02-01")
    assert [(u.id, u.reason, u.basis) for u in second.probable_updates] == [
        (first.id, "the same text but for a value", "same text but for a value")
    ]
    assert first.id in second.message and f"forget(id, superseded_by={second.id!r})" in second.message


def test_a_note_without_facts_that_gives_a_fact_a_new_value_is_a_probable_update(svc: MemoryService, clock) -> None:
    port = remember(svc, "dispatch-jobs listens on 5589.", valid_from="2024-01-01", facts=fact("dispatch-jobs service", "port", "5589"))
    host = remember(svc, "feeds runs in invites-server.", valid_from="2024-01-01", facts=fact("the feeds module", "served by", "invites-server"))
    owner = remember(svc, "feeds is owned by Merchant Tools.", valid_from="2024-01-01", facts=fact("feeds", "owner", "Merchant Tools"))
    clock.advance(seconds=1)
    moved = remember(svc, "dispatch-jobs → port 5381.", valid_from="2024-02-01")
    # the thing, its attribute's words and another value: what a question or a rejected idea says too, a weaker basis
    assert [(u.id, u.basis) for u in moved.probable_updates] == [(port.facts[0].id, "new value for its attribute")]
    clock.advance(seconds=1)
    carved = remember(svc, "Moved feeds from invites-server into loyalty-jobs.", valid_from="2024-02-02")
    # not the owner: a name is not a service
    assert [(u.id, u.basis) for u in carved.probable_updates] == [(host.facts[0].id, "old value named")]
    clock.advance(seconds=1)
    unrelated = remember(svc, "dispatch-jobs had a slow deploy on Tuesday.", valid_from="2024-02-03")
    assert unrelated.probable_updates == [] and owner.facts[0].id not in carved.message


def test_a_note_about_another_project_updates_nothing_here(svc: MemoryService, clock) -> None:
    remember(svc, "Elsewhere the dispatch-jobs service is on 7000.", project="harbor-view", facts=fact("dispatch-jobs", "port", "7000"))
    port = remember(svc, "dispatch-jobs listens on 5589.", valid_from="2024-01-01", facts=fact("dispatch-jobs service", "port", "5589"))
    clock.advance(seconds=1)
    theirs = remember(svc, "Over in harbor-view, dispatch-jobs → port 6100.", valid_from="2024-02-01")
    assert theirs.probable_updates == []
    clock.advance(seconds=1)
    ours = remember(svc, "dispatch-jobs → port 5381.", valid_from="2024-02-02")
    assert [u.id for u in ours.probable_updates] == [port.facts[0].id]


def test_a_notes_own_tags_do_not_make_its_facts_events(svc: MemoryService, clock) -> None:
    remember(svc, "launch event port 8080", valid_from="2024-01-01", tags=["event"], facts=fact("launch-site", "port", "8080"))
    clock.advance(seconds=1)
    moved = remember(svc, "launch event port 9090", valid_from="2024-02-01", tags=["event"], facts=fact("launch-site", "port", "9090"))
    assert moved.facts[0].action == "superseded"


def test_a_note_that_names_a_slots_value_and_gives_another_moves_that_slot(svc: MemoryService, clock) -> None:
    # "cron" / "runs at" are less alike than the matcher's bars; the second note names the value the first gave
    first = remember(svc, "orphaned upload sweep fires on `0 2 1 * *`, UTC.", facts=fact("orphaned upload sweep job", "cron", "0 2 1 * *"))
    clock.advance(seconds=1)
    moved = remember(
        svc, "As of today the orphaned upload sweep cron is */10 * * * *, not `0 2 1 * *`.",
        facts=fact("orphaned upload sweep job", "runs at", "*/10 * * * *"),
    )
    [outcome] = moved.facts
    assert outcome.action == "superseded" and outcome.supersedes == first.facts[0].id
    assert (outcome.subject, outcome.predicate) == ("orphaned upload sweep job", "cron")
    # without the old value in the note, two namings this far apart stay two slots
    clock.advance(seconds=1)
    remember(svc, "invoice reminder emails fire on `45 4 * * *`.", facts=fact("invoice reminder emails job", "cron", "45 4 * * *"))
    clock.advance(seconds=1)
    apart = remember(svc, "invoice reminder emails: */5 * * * *.", facts=fact("invoice reminder emails job", "runs at", "*/5 * * * *"))
    assert apart.facts[0].action == "added"
    # another subject's note naming that value moves nothing of the sweep's
    clock.advance(seconds=1)
    other = remember(
        svc, "The nightly export now fires on */10 * * * *, where it ran at 0 3 * * * before.",
        facts=fact("nightly export job", "runs at", "*/10 * * * *"),
    )
    assert other.facts[0].action == "added"
    # a note naming one attribute's value while giving another attribute (a path, then a service) moves nothing
    clock.advance(seconds=1)
    remember(svc, "loyalty lives in src/loyalty/.", facts=fact("loyalty", "path", "src/loyalty/"))
    clock.advance(seconds=1)
    service = remember(
        svc, "loyalty left src/loyalty/ for a service of its own, loyalty-jobs.", facts=fact("loyalty", "deployed as", "loyalty-jobs")
    )
    assert service.facts[0].action == "added"
    assert history(svc, subject="loyalty", predicate="path").entries[0].status == "current"


def test_a_value_named_only_inside_the_new_one_moves_no_slot(svc: MemoryService, clock) -> None:
    # a table row lists the type check among the steps for test-only changes: another attribute, not a new value
    remember(svc, "Type check with `pnpm exec tsc --noEmit -p tsconfig.json`.", facts=fact("shop", "typecheck command", "pnpm exec tsc --noEmit -p tsconfig.json"))
    clock.advance(seconds=1)
    row = remember(
        svc, "| Tests-only changes | `pnpm lint-fix`, `pnpm exec tsc --noEmit -p tsconfig.json` |",
        facts=fact("shop", "validation for tests only", "pnpm lint-fix + pnpm exec tsc --noEmit -p tsconfig.json"),
    )
    assert row.facts[0].action == "added"
    assert history(svc, subject="shop", predicate="typecheck_command").entries[0].status == "current"


def test_a_value_is_named_as_a_value() -> None:
    assert names_value("refunds-server was rebound from port 8445 to 5720.", ":8445")
    assert names_value("switches from Cache-Control headers only to Redis", "Cache-Control headers only.")
    assert not names_value("rebound to 58445", "8445")
    assert not names_value("it is on by default", "on")  # a word of two letters stands in any sentence


def test_a_pair_the_judge_told_apart_stays_apart_whatever_the_note_names(svc: MemoryService, clock) -> None:
    # "ci system" / "ci provider" (0.73) over values of two kinds is a near miss the judge (the LLM, in the
    # consolidator) decides
    matcher = slot_matcher(svc)
    for subject, judge in (("web", None), ("api", lambda new, existing: False)):
        matcher.judge = judge
        remember(svc, f"{subject} CI is CircleCI.", facts=fact(subject, "ci system", "CircleCI"))
        clock.advance(seconds=1)
        moved = remember(
            svc, f"Moved {subject} CI from CircleCI to self-hosted Buildkite agents.",
            facts=fact(subject, "ci provider", "self-hosted Buildkite agents"),
        )
        clock.advance(seconds=1)
        # without a judge the note joins the namings; told apart, it does not
        assert moved.facts[0].action == ("superseded" if judge is None else "added")
