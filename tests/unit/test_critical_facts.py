"""Critical-fact extraction, retention and contradiction checks (pure functions)."""

from __future__ import annotations

import pytest

from agentcore.domain.critical_facts import FactKind, Passage, extract_critical_facts
from agentcore.domain.fact_checks import SourceIndex, missing_facts, retention
from agentcore.domain.fact_text import compact, split_sentences, terse


def _facts(*texts: str, flagged: bool = False) -> list[tuple[str, FactKind]]:
    passages = [Passage(f"m{i}", text, flagged) for i, text in enumerate(texts)]
    return [(fact.content, fact.kind) for fact in extract_critical_facts(passages)]


@pytest.mark.parametrize(
    ("text", "fact"),
    [
        ("You must run the migrations before deploying.", None),
        ("Never push directly to the main branch.", None),
        ("Please don't delete the nightly backups.", None),
        ("The API allows at most 100 requests per minute.", None),
        ("The report is due by Friday noon.", None),
        ("A second reviewer is required for schema changes.", None),
        ("I'm allergic to peanuts, so no satay for me.", None),  # short: one thought, kept whole
        ("We always run the full test suite on release branches.", None),
        ("Jo never eats meat.", None),
        ("The backup must be verified weekly.", None),
        ("Ok, the key rotation must not exceed 90 days, unless legal approves.", None),
    ],
)
def test_constraints_are_critical(text: str, fact: str | None) -> None:
    expected = fact or text.removeprefix("Ok, ").rstrip(".")
    [(content, kind)] = _facts(text)
    assert kind == FactKind.CONSTRAINT
    assert content.rstrip(".") == expected


@pytest.mark.parametrize(
    "text",
    [
        "That must be so hard for you.",
        "You must have been thrilled!",
        "I must say the view was stunning.",
        "I've always wanted to visit Lisbon.",
        "I never thought painting could be this relaxing.",
        "That always helps me relax after work.",
        "Always running around with the kids these days.",
        "Don't worry about it.",
        "Will there be an interview required?",
        "Hey, how have you been lately?",
        "We went hiking in the mountains last weekend.",
    ],
)
def test_guesses_memories_and_questions_are_not_critical(text: str) -> None:
    assert _facts(text) == []


def test_a_condition_or_deadline_attached_to_a_rule_stays_with_it() -> None:
    [(content, _)] = _facts("If the canary fails, never promote the release.")
    assert content == "If the canary fails, never promote the release."


def test_decisions_fixes_and_identifiers() -> None:
    facts = _facts(
        "We decided to use Postgres for the event store.",
        "The deploy failed with a TimeoutError on the pool.",
        "Fixed it by raising the pool timeout to 30 seconds.",
        "The invoice total is $1,250.",
        "Send the signed contract to legal by March 3rd.",
        "We met the client on March 1st.",
    )
    assert facts == [
        ("We decided to use Postgres for the event store.", FactKind.DECISION),
        ("Fixed it by raising the pool timeout to 30 seconds.", FactKind.ERROR_FIX),
        ("The invoice total is $1,250.", FactKind.IDENTIFIER),
        ("Send the signed contract to legal by March 3rd.", FactKind.CONSTRAINT),
    ]


def test_a_fix_without_an_error_before_it_is_not_an_error_fix() -> None:
    assert _facts("I fixed dinner for the kids tonight.") == []


def test_every_sentence_of_a_flagged_memory_is_critical() -> None:
    facts = _facts(
        "Hey! The customer is on the legacy plan. Their region is eu-west.", flagged=True
    )
    assert facts == [
        ("The customer is on the legacy plan.", FactKind.FLAGGED),
        ("Their region is eu-west.", FactKind.FLAGGED),
    ]


def test_a_flagged_fact_keeps_its_own_words() -> None:
    flagged = "Never deploy the billing service on a Friday."
    passages = [
        Passage("a", "Never deploy the billing service or the ledger on a Friday afternoon."),
        Passage("b", flagged, flagged=True),
        Passage("c", "Never deploy the billing service on a Friday."),  # the same rule again
        Passage("d", "Never deploy the billing service on Friday.", flagged=True),
    ]
    facts = extract_critical_facts(passages)
    contents = [f.content for f in facts]
    assert flagged in contents  # not replaced by the wider unflagged rule beside it
    assert "Never deploy the billing service on Friday." in contents  # flagged, own words
    assert [f.kind for f in facts] == [FactKind.CONSTRAINT, FactKind.FLAGGED, FactKind.FLAGGED]
    assert facts[0].source_ids == ("a", "c")  # the repeated rule merged into the first


def test_a_short_rule_keeps_its_clauses_and_quoted_code_is_no_rule() -> None:
    rule = "Fixes must not be force-pushed to the release branch; they go in as commits."
    assert _facts(rule) == [(rule, FactKind.CONSTRAINT)]
    assert _facts("The log says `ScannerError: mapping values are not allowed here`.") == []


def test_a_rule_about_fixes_is_a_constraint_not_an_error_fix() -> None:
    facts = _facts("The deploy failed with a timeout.", "Fixes must never skip the review.")
    assert facts == [("Fixes must never skip the review.", FactKind.CONSTRAINT)]


def test_a_relative_clause_keeps_what_it_refers_to() -> None:
    assert _facts("The admin has its own export, which holds at most 500 rows.") == [
        ("The admin has its own export, which holds at most 500 rows.", FactKind.CONSTRAINT)
    ]


def test_a_repeated_rule_is_one_fact_with_both_sources() -> None:
    passages = [
        Passage("a", "Never push directly to the main branch."),
        Passage("b", "Reminder: never push directly to main branch!"),
    ]
    [fact] = extract_critical_facts(passages)
    assert fact.source_ids == ("a", "b")
    assert fact.position == (0, 0)


def test_retention_needs_content_words_numbers_and_negations() -> None:
    fact = "The API allows at most 100 requests per minute."
    assert retention([fact], "Ana: The API allows at most 100 requests per minute.") == 1.0
    assert retention([fact], "API allows 100 requests each minute at most.") == 1.0  # reworded
    assert retention([fact], "The API allows at most 10 requests per minute.") == 0.0
    assert retention(["Never push to main."], "Push to main.") == 0.0
    assert retention(["Do not delete the backups."], "The backups are not deleted.") == 1.0
    assert retention([], "anything") == 1.0


def test_retention_accepts_four_of_five_content_words_not_three() -> None:
    fact = "Staging database credentials rotate monthly."  # 5 content words
    assert missing_facts([fact], "Staging database credentials rotate.") == []
    assert missing_facts([fact], "Staging credentials rotate.") == [fact]


def test_a_fact_split_over_two_adjacent_summary_sentences_is_retained() -> None:
    fact = "Never deploy the billing service on Fridays."
    assert retention([fact], "The billing service is fragile. Never deploy it on Fridays.") == 1.0


def test_a_negation_flip_is_a_contradiction() -> None:
    index = SourceIndex(["Ops said the staging database must not be reset before the demo."])
    [problem] = index.contradictions("The staging database must be reset before the demo.")
    assert problem.kind == "negation"
    assert index.contradictions("The staging database must not be reset before the demo.") == []
    assert index.contradictions("The demo went well.") == []


def test_always_becoming_never_is_a_contradiction() -> None:
    index = SourceIndex(["We always rebase feature branches before merging."])
    [problem] = index.contradictions("We never rebase feature branches before merging.")
    assert problem.kind == "negation"


def test_a_changed_number_is_a_contradiction() -> None:
    index = SourceIndex(["The cache TTL for sessions is 30 seconds."])
    [problem] = index.contradictions("Session cache TTL is 60 seconds.")
    assert problem.kind == "number"
    assert index.contradictions("Session cache TTL is 30 seconds.") == []


def test_a_summary_line_joining_two_log_lines_keeps_their_numbers() -> None:
    log = "-> Hash Join (actual rows=358 loops=1)\n-> Seq Scan on items (actual rows=1819 loops=1)"
    index = SourceIndex([log, "-> HashAggregate (actual rows=12 loops=1)"])
    joined = "Hash Join (actual rows=358 loops=1). > Seq Scan on items (actual rows=1819 loops=1)."
    assert index.contradictions(joined) == []
    [problem] = index.contradictions("Hash Join (actual rows=999 loops=1).")
    assert problem.kind == "number"


def test_a_source_that_says_both_is_not_contradicted_by_either() -> None:
    index = SourceIndex(["I don't eat red meat, but I love grilled fish."])
    assert index.contradictions("I love grilled fish.") == []
    assert index.contradictions("Sam doesn't eat red meat.") == []


def test_compact_drops_interjections_and_fillers_but_never_negations_or_numbers() -> None:
    assert compact("Hey Mel! I really can't make it before 5pm, you know.") == (
        "I can't make it before 5pm."
    )
    assert compact("Wow, thanks!") == ""


def test_terse_drops_articles_and_keeps_every_term() -> None:
    fact = "The export must keep the column order of the 2019 spec, because a bank reads it."
    short = terse(fact)
    assert short == "Export must keep column order of 2019 spec, because bank reads it."
    assert missing_facts([fact], short) == []


def test_sentences_split_on_ends_but_not_abbreviations() -> None:
    text = "Dr. Lee approved it, e.g. the schema. Ship v2.1 today!\nThen rest."
    assert split_sentences(text) == [
        "Dr. Lee approved it, e.g. the schema.",
        "Ship v2.1 today!",
        "Then rest.",
    ]
