"""Knowledge that updates: the slot a statement fills and a question asks about
(``agentcore.domain.updates``), supersession by the rules on write (``MemoryManager``), and
ranking by validity (``EnhancedRetrieval``): the current value first, ``as_of`` for the past,
an unrecorded newer statement first for a question about how things are. The newest-statement
preference itself: test_update_ranking.py; with the real embedder:
tests/integration/test_update_reader.py."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agentcore.domain.models import EventKind, ScopeIds
from agentcore.domain.records import MemoryChanges, NewMemory
from agentcore.domain.updates import Statement, asked_slot, statement_of
from agentcore.services.access import AccessRecorder
from agentcore.services.memory_manager import MemoryManager
from agentcore.services.retrieval import EnhancedRetrieval, SearchQuery
from agentcore.services.supersession import SUPERSESSION
from agentcore.services.vector_sync import VectorSync
from tests.fakes import FakeEmbedder, FakeStore, FakeVectorStore
from tests.unit.conftest import FakeClock

ALICE = ScopeIds(user_id="alice")


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("I live in Berlin.", "user|home", "berlin"),
        ("I moved to Munich last month.", "user|home", "munich"),
        ("Big news: we relocated to Denver in March!", "user|home", "denver"),
        ("I'm now based in Bristol.", "user|home", "bristol"),
        ("Caroline: I moved back to Sweden.", "caroline|home", "sweden"),
        ("The user lives in Lisbon", "user|home", "lisbon"),
        ("Melanie lives in Rome.", "melanie|home", "rome"),
        ("I work at Acme Corp.", "user|employer", "acme corp"),
        ("I just joined Initech as a designer.", "user|employer", "initech"),
        ("I left Initech.", "user|employer", "not initech"),
        ("I got promoted to senior engineer.", "user|job title", "senior engineer"),
        ("Tom is my new manager.", "user|manager", "tom"),
        ("I now report to Priya.", "user|manager", "priya"),
        ("I'm dating Alex.", "user|partner", "alex"),
        ("My dog is now called Rex, we renamed him.", "user|pet:dog", "rex"),
        ("I drive a Honda Civic.", "user|car", "honda civic"),
        ("I've been a vegetarian for years.", "user|diet", "vegetarian"),
        ("I eat meat again.", "user|diet", "eats meat"),
        ("These days my favourite colour is orange.", "user|favorite:color", "orange"),
        ("I now prefer aisle seats on long flights.", "user|prefers:seat", "aisle seats"),
        ("We upgraded to Python 3.12 yesterday.", "*|version:python", "3.12"),
        ("The API is on v2.3.1 now.", "*|version:api", "v2.3.1"),
        ("The report deadline got pushed to March 10.", "*|deadline:report", "march 10"),
        ("The report is now due on Friday.", "*|deadline:report", "friday"),
        ("I moved to the Billing team.", "user|team", "billing"),
        ("My phone number is 555-1234.", "user|phone number", "555-1234"),
    ],
)
def test_a_statement_fills_a_slot(text: str, slot: str, value: str) -> None:
    found = statement_of(text)
    assert found is not None, text
    assert (found.slot, found.value) == (slot, value)


@pytest.mark.parametrize(
    "text",
    [
        "My sister is visiting next week.",  # a relative, not an attribute
        "My sister is a nurse.",
        "My sister lives in Rome.",  # someone else's home: no slot of the speaker's
        "I want to move to Paris.",  # a wish
        "I'm thinking about moving to Lisbon.",
        "Do you live in Berlin?",
        "Ran the existing test suite: 143 tests passed.",  # an agent's log line
        "Sketched a plan to stream rows.",
        "I think the plan is good.",
        "My day is going great.",
        "I love hiking on weekends.",
        "I live in a small town.",
        "I've started eating more lentils.",  # more of a food is no diet
        "I got picked for a car mod workshop.",  # no car is named
    ],
)
def test_other_sentences_fill_no_slot(text: str) -> None:
    assert statement_of(text) is None


def test_the_speaker_is_the_subject() -> None:
    assert statement_of("I live in Oslo", speaker="Jo") == Statement("jo", "home", "oslo")


@pytest.mark.parametrize(
    ("question", "slot"),
    [
        ("Where does the user live now?", "user|home"),
        ("Where does Caroline live?", "caroline|home"),
        ("Who does the user work for?", "user|employer"),
        ("Who is the user's manager now?", "user|manager"),
        ("What is the name of the user's dog?", "user|pet:dog"),
        ("What's the user's favourite colour?", "user|favorite:color"),
        ("What is the user's favorite color?", "user|favorite:color"),
        ("Which seat does the user prefer on flights?", "user|prefers:seat"),
        ("What version of Python do we run?", "*|version:python"),
        ("When is the report due now?", "*|deadline:report"),
        ("Which team is the user on now?", "user|team"),
        ("Where did Caroline move from?", None),  # the past: ranked as usual
        ("When did Melanie paint a sunrise?", None),
        ("What is the plan for today?", None),
    ],
)
def test_a_question_asks_for_a_slot(question: str, slot: str | None) -> None:
    assert asked_slot(question) == slot


class Rig:
    def __init__(self) -> None:
        self.store, self.clock = FakeStore(), FakeClock()
        vectors, embedder = FakeVectorStore(), FakeEmbedder()
        retrieval = EnhancedRetrieval(
            self.store, vectors, embedder, self.clock, 200, access=AccessRecorder(self.store)
        )
        sync = VectorSync(self.store, vectors, embedder, self.clock)
        self.memory = MemoryManager(self.store, embedder, sync, retrieval, self.clock, 500, 10)

    async def add(self, text: str, scope: ScopeIds = ALICE, **kw: object) -> str:
        self.clock.advance(60)
        return (await self.memory.add(NewMemory(text, scope, **kw))).id  # type: ignore[arg-type]


@pytest.fixture
def rig() -> Rig:
    return Rig()


async def test_a_newer_value_supersedes_the_old_one_in_its_history(rig: Rig) -> None:
    old = await rig.add("I live in Berlin.")
    new = await rig.add("I moved to Munich last month.")
    stale = await rig.memory.get(old, ALICE)
    current = await rig.memory.get(new, ALICE)
    assert stale.superseded_by == new
    assert stale.valid_to == current.created_at
    assert (current.superseded_by, current.valid_to) == (None, None)
    events = await rig.memory.history(old, ALICE)
    assert [(e.kind, e.actor) for e in events] == [
        (EventKind.ADD, "api"),
        (EventKind.UPDATE, SUPERSESSION),
    ]
    assert events[1].after == {"valid_to": current.created_at.isoformat(), "superseded_by": new}


async def test_what_is_not_an_update_supersedes_nothing(rig: Rig) -> None:
    berlin = await rig.add("I live in Berlin.")
    await rig.add("I live in Berlin, near the park.")  # the same value again
    await rig.add("I moved to Munich.", ScopeIds(user_id="bob"))  # another scope
    await rig.add("Melanie moved to Munich.")  # another subject
    await rig.add("I started a new job at Globex.")  # another attribute
    assert (await rig.memory.get(berlin, ALICE)).superseded_by is None


async def test_an_imported_older_value_is_superseded_on_arrival(rig: Rig) -> None:
    current = await rig.add("I moved to Munich.")
    long_ago = rig.clock() - timedelta(days=400)
    old = await rig.add("I live in Berlin.", created_at=long_ago)
    assert (await rig.memory.get(old, ALICE)).superseded_by == current
    assert (await rig.memory.get(current, ALICE)).superseded_by is None


async def test_a_chain_of_updates_ranks_the_last_value_first(rig: Rig) -> None:
    berlin = await rig.add("I live in Berlin.")
    await rig.add("I love long walks by the river.")
    munich = await rig.add("I moved to Munich.")
    vienna = await rig.add("We relocated to Vienna.")
    found = await rig.memory.search(SearchQuery("Do I live in Berlin", ALICE, limit=3))
    ids = [r.memory.id for r in found.results]
    assert ids[0] == vienna  # took the place of the Berlin result
    assert ids.index(vienna) < ids.index(berlin)
    by_id = {r.memory.id: r for r in found.results}
    assert by_id[berlin].superseded_by == vienna
    assert (await rig.memory.get(munich, ALICE)).superseded_by == vienna


async def test_the_current_value_answers_a_question_about_the_slot(rig: Rig) -> None:
    await rig.add("I live in Berlin.")
    await rig.add("My sister lives in Rome and loves where she lives.")
    munich = await rig.add("We relocated to Munich last spring.")
    found = await rig.memory.search(SearchQuery("Where does the user live now?", ALICE))
    first = found.results[0]
    assert (first.memory.id, first.current_for) == (munich, "user|home")
    assert first.score == max(r.score for r in found.results)


async def test_as_of_searches_the_past_as_it_was(rig: Rig) -> None:
    berlin = await rig.add("I live in Berlin.")
    then = rig.clock()
    munich = await rig.add("I moved to Munich.")
    past = await rig.memory.search(SearchQuery("Where does the user live?", ALICE, as_of=then))
    assert [r.memory.id for r in past.results] == [berlin]
    assert past.results[0].superseded_by is None
    now = await rig.memory.search(SearchQuery("Where does the user live?", ALICE))
    assert [r.memory.id for r in now.results][:2] == [munich, berlin]


async def test_a_question_about_now_is_matched_without_its_words_of_time(rig: Rig) -> None:
    cooks = await rig.add("Jo grills ramen.")
    await rig.add("These days, these days, these days.")
    found = await rig.memory.search(SearchQuery("What does Jo cook these days?", ALICE))
    assert found.results[0].memory.id == cooks


async def test_a_question_about_the_user_ranks_someone_elses_fact_lower(rig: Rig) -> None:
    dad = await rig.add("My dad's phone does use the old Android.")
    mine = await rig.add("I use a Pixel phone.")
    about_user = await rig.memory.search(SearchQuery("Which phone does the user use?", ALICE))
    assert [r.memory.id for r in about_user.results] == [mine, dad]
    about_dad = await rig.memory.search(SearchQuery("Which phone does the dad use?", ALICE))
    assert about_dad.results[0].memory.id == dad  # no question about the user: as before


async def test_a_content_update_fills_the_slot_its_words_fill_now(rig: Rig) -> None:
    home = await rig.memory.add(NewMemory("I live in Graz.", ALICE))
    assert home.fact_slot == "user|home"
    await rig.memory.update(home.id, ALICE, MemoryChanges(content="I enjoy long walks."))
    (changed,) = await rig.memory.read([home.id], ALICE)
    assert (changed.fact_slot, changed.fact_value) == (None, None)
    rig.clock.advance(60)
    moved = await rig.memory.add(NewMemory("I live in Linz.", ALICE))
    assert (await rig.memory.read([home.id], ALICE))[0].superseded_by is None  # no Graz now
    assert moved.fact_slot == "user|home"


async def test_a_content_update_supersedes_what_its_slot_held(rig: Rig) -> None:
    old = await rig.memory.add(NewMemory("I live in Graz.", ALICE))
    rig.clock.advance(60)
    note = await rig.memory.add(NewMemory("I keep my notes in a paper diary.", ALICE))
    await rig.memory.update(note.id, ALICE, MemoryChanges(content="I moved to Linz."))
    assert (await rig.memory.read([old.id], ALICE))[0].superseded_by == note.id


async def test_an_update_no_rule_reads_is_not_recorded_but_answers_first(rig: Rig) -> None:
    old = await rig.memory.add(NewMemory("Ravi coaches the juniors at the club.", ALICE))
    rig.clock.advance(60)
    # close to the older statement in the fake embedder's terms (shared words; e5's meaning:
    # tests/integration/test_knowledge_updates_e5.py)
    new = await rig.memory.add(NewMemory("Ravi coaches the seniors at the club these days.", ALICE))
    assert (await rig.memory.read([old.id], ALICE))[0].superseded_by is None
    for question in ("Who does Ravi coach at the club now?", "Who does Ravi coach at the club?"):
        found = await rig.memory.search(SearchQuery(question, ALICE))
        assert [hit.memory.id for hit in found.results][:2] == [new.id, old.id], question
    past = await rig.memory.search(SearchQuery("Who did Ravi coach at the club?", ALICE))
    assert [hit.memory.id for hit in past.results][:2] == [old.id, new.id]
