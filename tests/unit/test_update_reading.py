"""Reading knowledge updates from meaning (``agentcore.domain.updates``: ``subjects``, ``cues``,
``replacement``): whose fact a statement states, what its words allow, and the decision that
combines them with a similarity given in units of the model."""

from __future__ import annotations

import pytest

from agentcore.domain.updates import cues, statement_of
from agentcore.domain.updates.questions import asks_now, timeless
from agentcore.domain.updates.replacement import (
    ADDS,
    BY_ENDING,
    BY_SLOT,
    FAR,
    NO_NEW_VALUE,
    NOT_A_FACT,
    NOT_DISTINCT,
    NOT_NOW,
    NOTHING_NEW,
    OTHER_SLOT,
    OTHER_SUBJECT,
    OTHER_THING,
    REPLACES,
    SAME_VALUE,
    UNCONFIRMED,
    Bars,
    Calibration,
    may_replace,
    reading_of,
    replaces,
)
from agentcore.domain.updates.subjects import (
    asked_people,
    same_subject,
    states_for,
    subject_of,
)

CALIBRATION = Calibration(background=0.6)  # lift = (similarity - 0.6) / 0.4
BARS = Bars(lift=0.25, margin=0.1)
CLOSE, TYPICAL = 0.8, 0.6  # lift 0.5 and 0: well above both bars


@pytest.mark.parametrize(
    ("text", "holder"),
    [
        ("I drive a Skoda Fabia.", ""),
        ("Sold the old bike last week.", ""),  # no subject said: the speaker's
        ("Kasia is my landlord.", ""),  # a name as the value
        ("Henrik teaches maths at a grammar school.", "henrik"),
        ("My cousin Mateo lives in Quito.", "mateo"),
        ("My stepdad drives a van.", "stepdad"),
        ("Lucia's husband works nights.", "lucia's husband"),
        ("Our neighbours keep bees.", "neighbours"),
        ("Grandpa uses a flip phone.", "grandpa"),
        ("My manager's favourite tool is Jira.", "manager"),  # the role owns it
        ("My manager is Ingrid.", ""),  # the role is the attribute
        ("Odile and I split up in May.", ""),
        ("Caroline: I paint on weekends.", ""),  # a conversation turn's speaker
    ],
)
def test_whose_fact_a_statement_states(text: str, holder: str) -> None:
    assert subject_of(text).holder == holder


@pytest.mark.parametrize(
    ("old", "new", "same"),
    [
        ("I drive a Skoda Fabia.", "Traded the Skoda for an e-bike.", True),
        ("I drive a Skoda Fabia.", "My brother drives a Skoda Octavia.", False),
        ("I drive a Skoda Fabia.", "I bought my dad a Skoda for his birthday.", False),
        ("I drive a Skoda Fabia.", "Henrik drives a Tesla now.", False),  # no "I": someone else
        ("I report to Ingrid.", "Pablo became my manager this week.", True),  # a name as value
        ("Henrik teaches maths.", "Henrik moved to a school in Leeds.", True),
        ("Henrik teaches maths.", "Henrik's wife teaches art.", False),
        ("My cousin Mateo lives in Quito.", "Mateo moved to Lima.", True),
        ("My cousin Mateo lives in Quito.", "I moved to Lima.", False),
        ("The sprint review is on Tuesday.", "The retro is on Thursday now.", False),
        ("The sprint review is on Tuesday.", "Sprint review moved to Wednesday.", True),
    ],
)
def test_a_newer_statement_may_be_about_the_same_subject(old: str, new: str, same: bool) -> None:
    assert same_subject(subject_of(old), subject_of(new)) is same


@pytest.mark.parametrize(
    ("question", "people"),
    [
        ("Which dentist does the user see now?", frozenset()),
        ("Who is the user's partner?", frozenset({"partner"})),
        ("What is my address?", frozenset()),
        ("What does the user's brother do?", frozenset({"brother"})),
        ("Where does Henrik teach?", None),  # not about the user
    ],
)
def test_whom_a_question_about_the_user_asks_about(
    question: str, people: frozenset[str] | None
) -> None:
    assert asked_people(question) == people


def test_a_statement_states_the_fact_of_someone_asked_about_or_not() -> None:
    assert states_for("I drive a van.", frozenset())
    assert not states_for("My stepdad drives a van.", frozenset())
    assert states_for("My stepdad drives a van.", frozenset({"stepdad"}))
    assert states_for("My cousin Mateo drives a van.", frozenset({"cousin"}))
    assert not states_for("My best friend is dating Luca.", frozenset({"partner"}))


@pytest.mark.parametrize(
    ("question", "now", "without_time"),
    [
        ("Which team is Ines on these days?", True, "Which team is Ines on?"),
        ("Is Tom still a vegan?", True, "Is Tom a vegan?"),
        ("What's the current release?", True, "What's the release?"),
        ("Where did Tom live in 2019?", False, "Where did Tom live in 2019?"),
        ("current account interest", False, "current account interest"),  # no question
    ],
)
def test_a_question_about_now(question: str, now: bool, without_time: str) -> None:
    assert asks_now(question) is now
    assert timeless(question) == without_time


@pytest.mark.parametrize(
    "text",
    [
        "Do you know a good plumber?",
        "Wow, that sounds amazing!",
        "Take care, talk soon!",
        "It was a lovely evening.",  # a pronoun only the conversation resolves
        " ".join(["word"] * 30),  # a long text tells several facts
    ],
)
def test_what_reads_as_no_fact(text: str) -> None:
    assert not cues.reads_as_fact(text)


@pytest.mark.parametrize(
    ("text", "now"),
    [
        ("I'm thinking about moving to Porto.", False),
        ("I'm flying to Oslo next week.", False),
        ("I was a waiter back in 2015.", False),
        ("Our lease ends next month, starting next month we rent in Graz.", False),
        ("The rent goes up starting next month.", True),
        ("I live in Graz now.", True),
    ],
)
def test_what_states_something_current(text: str, now: bool) -> None:
    assert cues.states_now(text) is now


def test_words_that_add_rather_than_replace() -> None:
    assert cues.adds_to("We also have a hamster.")
    assert cues.adds_to("I speak Dutch too.")
    assert cues.adds_to("We bought a second car.")
    assert not cues.adds_to("The fan is too loud.")


def test_a_past_event_replaces_only_when_it_tells_a_change() -> None:
    assert not cues.tells_a_change("I ran a half marathon on Sunday.")
    assert cues.tells_a_change("I moved to Graz in March.")
    assert cues.tells_a_change("I live in Graz.")  # no past event


def test_a_state_may_be_replaced_an_event_or_request_not() -> None:
    assert cues.states_a_state("The API is built with Flask.")
    assert not cues.states_a_state("I finally repaired the fence.")
    assert not cues.states_a_state("Remind me to call the bank.")


def test_a_named_value_that_ended() -> None:
    assert cues.ends("Sold the Skoda and got an e-bike.", frozenset({"skoda"}))
    assert cues.ends("Ingrid retired in spring.", frozenset({"ingrid"}))
    assert not cues.ends("Ingrid moved our sync to Friday.", frozenset({"ingrid"}))


def verdict(old: str, new: str, similarity: float = CLOSE, typical: float = TYPICAL) -> str:
    return replaces(reading_of(old), reading_of(new), similarity, typical, CALIBRATION, BARS).reason


SOLD = "Sold the Skoda last month, I drive a Kia Niro now."


def test_a_new_value_close_in_meaning_replaces_the_old_one() -> None:
    assert verdict("I drive a Skoda Fabia.", SOLD) == REPLACES


def test_meaning_must_be_close_and_stand_out_in_the_scope() -> None:
    old, new = "I drive a Skoda Fabia.", SOLD
    assert verdict(old, new, similarity=0.65) == FAR  # lift 0.125 < 0.15 (a name ended)
    assert verdict(old, new, similarity=0.72, typical=0.7) == NOT_DISTINCT  # 0.3 - 0.25 < 0.1


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        ("I drive a Skoda Fabia.", "Wow, love the new Kia!", NOT_A_FACT),
        ("I drive a Skoda Fabia.", "We also got a Kia Niro.", ADDS),
        ("I drive a Skoda Fabia.", "I'm thinking of getting a Kia Niro.", NOT_NOW),
        ("I drive a Skoda Fabia.", "I ran a charity 10k on Sunday.", NOT_NOW),
        ("I drive a Skoda Fabia.", "I drive a Skoda Fabia.", SAME_VALUE),
        ("I drive a Skoda Fabia.", "My brother drives a Kia Niro now.", OTHER_SUBJECT),
        ("I drive a Skoda Fabia.", "The Skoda got new tyres, finally.", NOTHING_NEW),
        ("My work laptop runs Linux.", "I run Windows 11 on my desktop now.", OTHER_THING),
        ("I keep my notes in Joplin.", "I switched my notes to dark mode.", NO_NEW_VALUE),
    ],
)
def test_the_readers_veto_what_meaning_cannot_tell_apart(old: str, new: str, reason: str) -> None:
    assert verdict(old, new) == reason


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("I speak Dutch at home.", "I speak English at work now."),  # only the verb is shared
        ("I play the cello in a quartet.", "I play the trumpet in a jazz band."),
        ("Henrik teaches maths.", "Henrik coaches the rowing team."),
        ("I work at Canva.", "Canva moved us to a bigger office in June."),  # about the value
        ("I bake sourdough at weekends.", "I've started a pottery course lately."),
    ],
)
def test_what_only_meaning_relates_is_not_a_replacement(old: str, new: str) -> None:
    assert verdict(old, new) == UNCONFIRMED  # however close in meaning


def test_a_value_said_to_have_ended_confirms_a_replacement() -> None:
    for old, new in (
        ("I drive a Skoda Fabia.", "Sold the Skoda, I cycle everywhere now."),
        ("We pay for Netflix.", "We cancelled Netflix last week, Disney+ is enough."),
        ("Ingrid coaches our team.", "Ingrid retired, Pablo coaches us."),  # our coach
    ):
        found = replaces(reading_of(old), reading_of(new), CLOSE, TYPICAL, CALIBRATION, BARS)
        assert (found.reason, found.confirmed_by) == (REPLACES, BY_ENDING), new


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # words of change or of now: as often a second fact or someone else's as an update
        ("I drive a Skoda Fabia.", "I switched to a Kia Niro last month."),
        ("Our wiki runs on Confluence.", "We migrated the wiki to Notion."),
        ("I keep my recipes in a paper binder.", "My recipes live in Paprika now."),
        ("I'm gluten-free because of coeliac disease.", "Switched gluten-free bread brands."),
        # the holder ended, not the value: "Mum retired" does not end her garden
        ("Mum loves her garden.", "Mum just retired from teaching after 35 years!"),
    ],
)
def test_words_of_change_alone_do_not_confirm_a_replacement(old: str, new: str) -> None:
    found = replaces(reading_of(old), reading_of(new), CLOSE, TYPICAL, CALIBRATION, BARS)
    assert not found.replaces
    assert found.confirmed_by is None


def test_a_confirmation_needs_less_meaning_than_the_bar_of_words_alone() -> None:
    bars = Bars(lift=0.25, margin=0.1, linked=0.1)
    old = reading_of("I drive a Skoda Fabia.")
    ended = reading_of("Sold the Skoda, I cycle everywhere now.")
    assert replaces(old, ended, 0.68, TYPICAL, CALIBRATION, bars).replaces  # lift 0.2
    assert replaces(old, ended, 0.62, TYPICAL, CALIBRATION, bars).reason == FAR  # lift 0.05


@pytest.mark.parametrize(
    ("text", "worth"),
    [
        ("I moved to Tallinn.", True),  # a rule slot
        ("I drive a Skoda Fabia.", True),  # a rule slot
        ("Sold the Skoda last week.", True),  # a value said to have ended
        ("My recipes live in Paprika now.", False),  # nothing could confirm a replacement
        ("Where did you move to?", False),
        ("Haha, so glad you moved, enjoy it!", False),
        ("I moved to Tallinn in May and " + "it has been lovely there " * 5 + "now.", False),
    ],
)
def test_words_decide_first_which_statements_are_read_further(text: str, worth: bool) -> None:
    statement = statement_of(text)
    slot, value = (None, None) if statement is None else (statement.slot, statement.value)
    assert may_replace(text, slot, value) is worth


def test_an_old_value_that_ended_is_replaced_without_a_new_name() -> None:
    assert verdict("I drive a Skoda Fabia.", "Sold the Skoda, I cycle everywhere now.") == (
        REPLACES
    )


def test_rule_slots_confirm_or_veto() -> None:
    old = reading_of("I live in Graz.", "user|home", "graz")
    same = reading_of("I moved to Linz.", "user|home", "linz")
    other = reading_of("My favourite city is Linz now.", "user|favorite:city", "linz")
    assert replaces(old, same, CLOSE, TYPICAL, CALIBRATION, BARS).confirmed_by == BY_SLOT
    assert replaces(old, other, CLOSE, TYPICAL, CALIBRATION, BARS).reason == OTHER_SLOT


def test_a_lift_is_relative_to_the_model() -> None:
    assert CALIBRATION.lift(0.6) == pytest.approx(0.0)
    assert CALIBRATION.lift(1.0) == pytest.approx(1.0)
    assert Calibration(0.05).lift(0.525) == pytest.approx(Calibration(0.75).lift(0.875))
