"""Reading statements and questions for knowledge that updates (``agentcore.domain.updates``:
``subjects``, ``cues``, ``questions``): whose fact a statement states, what its words allow, and
what a question asks."""

from __future__ import annotations

import pytest

from agentcore.domain.updates import cues
from agentcore.domain.updates.questions import asks_now, asks_present, timeless
from agentcore.domain.updates.subjects import asked_people, states_for, subject_of


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
        ("User lives in Berlin.", ""),  # an agent's note on the user
        ("The user's manager is Sam.", ""),
        ("User's sister Ana lives in Rome.", "ana"),
    ],
)
def test_whose_fact_a_statement_states(text: str, holder: str) -> None:
    assert subject_of(text).holder == holder


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


def test_a_question_about_how_things_are() -> None:
    assert asks_present("Where does the user live?")
    assert asks_present("Current phone?")
    assert not asks_present("Where did Tom live in 2019?")
    assert not asks_present("When did Ana move to Porto?")
    assert not asks_present("deploy the billing service")  # a phrase to match, no question


@pytest.mark.parametrize(
    "text",
    [
        "Do you know a good plumber?",
        "Wow, that sounds amazing!",
        "Take care, talk soon!",
        "Remind me to call the bank.",
        " ".join(["word"] * 45),  # a long text tells several things
    ],
)
def test_what_is_no_statement_of_its_own(text: str) -> None:
    assert cues.asks_or_reacts(text)


def test_a_statement_of_its_own() -> None:
    assert not cues.asks_or_reacts("I cycle to work now that the new bike lane opened.")
    assert not cues.asks_or_reacts("Prod DB: Postgres 16")


def test_words_that_add_rather_than_replace() -> None:
    assert cues.adds_to("We also have a hamster.")
    assert cues.adds_to("I speak Dutch too.")
    assert cues.adds_to("We bought a second car.")
    assert not cues.adds_to("The fan is too loud.")


def test_a_wish_or_a_plan_is_not_how_things_stand() -> None:
    assert cues.wishes("I'm thinking about moving to Porto.")
    assert cues.wishes("We might switch to GitLab.")
    assert not cues.wishes("We moved to Porto in May.")  # the month is no "may"
