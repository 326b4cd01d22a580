"""Knowledge that updates: does the newest value of a fact answer a "current value" question?

Each case is one user's scope in one embedded store: an old statement of an attribute (home,
employer, job title, manager, partner, a pet's name, car, diet, a favourite, a preference, a
tool's version, a deadline, a phone number, a team), a few distractors (small talk, and the
same attribute of someone else: "My brother lives in Oslo"), the new statement, phrased
another way, then a question about the current value. A case passes when the new statement
ranks first; it is stale when the old one does. Phrasings are combined round-robin, so no
template pair repeats within an attribute.

    .venv/bin/python benchmarks/knowledge_updates.py [--verbose] [--cases FILE.json]

``--cases`` reads other cases instead: a JSON list of {attribute, old, new, question,
distractors}.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from agentcore.adapters.db.migrate import upgrade
from agentcore.bootstrap import Container, build_container
from agentcore.config import Settings
from agentcore.domain.models import ScopeIds
from agentcore.domain.records import NewMemory
from agentcore.services.retrieval import SearchQuery


@dataclass(frozen=True)
class Attribute:
    name: str
    old: tuple[str, ...]  # templates with {v}
    new: tuple[str, ...]
    questions: tuple[str, ...]
    values: tuple[tuple[str, str], ...]  # (old value, new value)
    others: tuple[str, ...]  # the same attribute of someone or something else


ATTRIBUTES = (
    Attribute(
        "home",
        (
            "I live in {v}.",
            "I've been living in {v} for a few years now.",
            "Home is {v} for me, I live in {v}.",
            "We live in {v} with the kids.",
        ),
        (
            "I moved to {v} last month.",
            "Big news: we relocated to {v} in March.",
            "I just moved to {v}!",
            "These days I live in {v}.",
            "I'm now based in {v}.",
        ),
        (
            "Where does the user live now?",
            "Which city is the user living in?",
            "Where is the user's home these days?",
        ),
        (
            ("Berlin", "Munich"),
            ("Boston", "Denver"),
            ("Lyon", "Paris"),
            ("Austin", "Seattle"),
            ("Leeds", "Bristol"),
            ("Osaka", "Kyoto"),
            ("Madrid", "Valencia"),
            ("Dublin", "Cork"),
        ),
        ("My brother lives in Oslo.", "Our office is in Zurich.", "My parents live in Porto."),
    ),
    Attribute(
        "employer",
        ("I work at {v}.", "I'm working for {v} as an engineer.", "I work for {v}."),
        (
            "I just joined {v}.",
            "I started a new job at {v} last week.",
            "I accepted an offer from {v} and started Monday.",
            "I now work at {v}.",
        ),
        (
            "Where does the user work now?",
            "Which company is the user's current employer?",
            "Who does the user work for?",
        ),
        (
            ("Acme", "Globex"),
            ("Initech", "Hooli"),
            ("Stark Industries", "Wayne Enterprises"),
            ("Umbrella", "Cyberdyne"),
            ("Soylent", "Tyrell"),
            ("Vandelay", "Pendant Publishing"),
            ("Dunder Mifflin", "Sabre"),
            ("Wonka", "Gringotts"),
            ("Oscorp", "Massive Dynamic"),
        ),
        ("My wife works at a hospital.", "My friend just got hired at a bakery."),
    ),
    Attribute(
        "job title",
        ("I work as a {v}.", "I'm working as a {v} these days."),
        ("I got promoted to {v}!", "My new role is {v}.", "I was promoted to {v} last week."),
        ("What is the user's job title now?", "What role does the user have at work?"),
        (
            ("junior designer", "senior designer"),
            ("software engineer", "staff engineer"),
            ("nurse", "head nurse"),
            ("analyst", "lead analyst"),
            ("teacher", "vice principal"),
            ("sales rep", "sales manager"),
            ("line cook", "sous chef"),
        ),
        ("My sister works as a lawyer.", "My cousin got promoted to captain."),
    ),
    Attribute(
        "manager",
        ("My manager is {v}.", "I report to {v}.", "{v} is my boss."),
        (
            "{v} is my new manager.",
            "I now report to {v}.",
            "After the reorg my manager is {v}.",
            "My boss is now {v}.",
        ),
        ("Who is the user's manager now?", "Who does the user report to?"),
        (
            ("Sarah", "Priya"),
            ("Tom", "Alex"),
            ("Maria", "Chen"),
            ("Omar", "Lena"),
            ("Dave", "Keiko"),
            ("Nina", "Raj"),
            ("Paul", "Zoe"),
            ("Greta", "Sol"),
        ),
        ("My wife's manager is Greg.", "Our team lead is out sick this week."),
    ),
    Attribute(
        "partner",
        ("My girlfriend is {v}.", "I'm dating {v}.", "My partner is {v}."),
        ("I'm seeing {v} now.", "My new partner is {v}.", "I'm now dating {v}."),
        ("Who is the user's partner now?", "Who is the user dating?"),
        (
            ("Maya", "Jules"),
            ("Ben", "Leo"),
            ("Ana", "Sofia"),
            ("Kim", "Noor"),
            ("Eli", "Mara"),
            ("Ivy", "Rosa"),
            ("Tomas", "Yara"),
        ),
        ("My brother is dating Clara.", "My best friend just got engaged."),
    ),
    Attribute(
        "pet",
        ("My dog's name is {v}.", "My dog is called {v}."),
        ("My dog is now called {v}, we renamed him.", "We renamed the dog: my dog's name is {v}."),
        ("What is the user's dog called?", "What is the name of the user's dog?"),
        (
            ("Max", "Rex"),
            ("Buddy", "Biscuit"),
            ("Luna", "Nova"),
            ("Rocky", "Pepper"),
            ("Daisy", "Maple"),
            ("Charlie", "Waffles"),
            ("Milo", "Pickles"),
        ),
        ("My neighbor's dog is called Bruno.", "My cat loves sleeping in the sun."),
    ),
    Attribute(
        "car",
        ("I drive a {v}.", "My car is a {v}."),
        ("I bought a new {v} car.", "My new car is a {v}.", "These days I drive a {v}."),
        ("What car does the user drive now?", "Which car does the user have?"),
        (
            ("Honda Civic", "Tesla Model 3"),
            ("Ford Focus", "Subaru Outback"),
            ("Toyota Corolla", "Kia EV6"),
            ("VW Golf", "Volvo XC40"),
            ("Mazda 3", "Hyundai Ioniq"),
            ("Fiat Panda", "Skoda Octavia"),
            ("Nissan Leaf", "Renault Zoe"),
        ),
        ("My dad drives a pickup truck.", "I took the bus to work today."),
    ),
    Attribute(
        "diet",
        ("I'm {v}.", "I've been {v} for years."),
        ("I went {v} in January.", "I'm {v} now.", "I became {v} last year."),
        ("What diet does the user follow now?", "Is the user vegetarian or vegan now?"),
        (
            ("vegetarian", "vegan"),
            ("vegan", "pescatarian"),
            ("keto", "vegetarian"),
            ("pescatarian", "vegetarian"),
            ("paleo", "keto"),
            ("vegetarian", "flexitarian"),
            ("keto", "vegan"),
        ),
        ("My sister is vegan.", "We had pasta for dinner."),
    ),
    Attribute(
        "favorite",
        ("My favorite color is {v}.", "{v} is my favorite color."),
        (
            "{v} is my new favorite color.",
            "My favorite color is {v} now.",
            "These days my favourite colour is {v}.",
        ),
        ("What is the user's favorite color?", "Which color does the user like best now?"),
        (
            ("blue", "green"),
            ("red", "yellow"),
            ("purple", "orange"),
            ("black", "teal"),
            ("pink", "navy"),
            ("gray", "gold"),
            ("white", "maroon"),
        ),
        ("My son's favorite color is red.", "I painted the fence white."),
    ),
    Attribute(
        "preference",
        ("I prefer {v}.", "I always prefer {v} when I fly."),
        ("I now prefer {v}.", "These days I prefer {v}.", "I prefer {v} now."),
        ("Which seat does the user prefer on flights?", "What seats does the user like?"),
        (
            ("window seats", "aisle seats"),
            ("aisle seats", "window seats"),
            ("front row seats", "exit row seats"),
            ("middle seats", "aisle seats"),
            ("bulkhead seats", "window seats"),
        ),
        ("My wife prefers the window.", "The flight was delayed by an hour."),
    ),
    Attribute(
        "version",
        ("We use Python {v}.", "The service runs Python {v}.", "We are on Python {v}."),
        (
            "We upgraded to Python {v} yesterday.",
            "We're now on Python {v}.",
            "We migrated the service to Python {v}.",
        ),
        ("Which Python version does the service use now?", "What version of Python do we run?"),
        (
            ("3.10", "3.11"),
            ("3.11", "3.12"),
            ("3.8", "3.11"),
            ("3.9", "3.12"),
            ("3.12", "3.13"),
            ("3.7", "3.10"),
            ("3.10", "3.12"),
        ),
        ("The docs site uses Node 20.", "Our laptops run Ubuntu 24.04."),
    ),
    Attribute(
        "deadline",
        ("The deadline for the report is {v}.", "The report is due on {v}."),
        (
            "The report deadline got pushed to {v}.",
            "The report is now due on {v}.",
            "Update: the report deadline moved to {v}.",
        ),
        ("When is the report due now?", "What is the current deadline for the report?"),
        (
            ("March 3", "March 10"),
            ("May 1", "May 15"),
            ("June 30", "July 14"),
            ("October 2", "October 9"),
            ("January 12", "February 2"),
            ("April 4", "April 18"),
            ("August 1", "August 22"),
        ),
        ("The budget review is due on Monday.", "The launch party is on Friday."),
    ),
    Attribute(
        "phone",
        ("My phone number is {v}.",),
        ("My new phone number is {v}.", "My phone number is now {v}."),
        ("What is the user's phone number?", "How can the user be reached by phone?"),
        (
            ("555-0101", "555-0199"),
            ("555-0123", "555-0456"),
            ("555-0111", "555-0777"),
            ("555-0222", "555-0888"),
            ("555-0333", "555-0999"),
            ("555-0444", "555-0555"),
            ("555-0660", "555-0661"),
        ),
        ("My office number is 555-0000.", "I lost my phone charger."),
    ),
    Attribute(
        "team",
        ("My team is {v}.", "I'm on the {v} team."),
        ("My new team is {v}.", "My team is now {v}.", "I moved to the {v} team."),
        ("Which team is the user on now?", "What team does the user belong to?"),
        (
            ("Payments", "Search"),
            ("Platform", "Mobile"),
            ("Growth", "Billing"),
            ("Infra", "Security"),
            ("Data", "Payments"),
            ("Support", "Sales"),
            ("Checkout", "Ledger"),
        ),
        ("My friend's team is Design.", "The team offsite is in May."),
    ),
)

SMALL_TALK = (
    "I had a great weekend hiking with friends.",
    "The weather has been rainy all week.",
    "I'm reading a novel about sailors.",
    "We watched a documentary about bees last night.",
    "I need to buy groceries after work.",
)


@dataclass(frozen=True)
class Case:
    attribute: str
    old: str
    new: str
    question: str
    distractors: tuple[str, ...]


def cases() -> list[Case]:
    out = []
    for a in ATTRIBUTES:
        olds = itertools.cycle(a.old)
        news = itertools.cycle(a.new)
        questions = itertools.cycle(a.questions)
        for i, (old_value, new_value) in enumerate(a.values):
            talk = tuple(SMALL_TALK[(i + k) % len(SMALL_TALK)] for k in range(3))
            out.append(
                Case(
                    a.name,
                    next(olds).format(v=old_value),
                    next(news).format(v=new_value),
                    next(questions),
                    (*a.others, *talk),
                )
            )
    return out


async def run_case(container: Container, index: int, case: Case) -> tuple[int, int]:
    """Ranks (1-based, 0 when absent) of the new and the old statement."""
    scope = ScopeIds(user_id=f"kn-{index}")
    await container.memory.add(NewMemory(case.old, scope))
    for text in case.distractors:
        await container.memory.add(NewMemory(text, scope))
    new = await container.memory.add(NewMemory(case.new, scope))
    results = (await container.memory.search(SearchQuery(case.question, scope, limit=10))).results
    ids = [r.memory.id for r in results]
    contents = [r.memory.content for r in results]
    new_rank = ids.index(new.id) + 1 if new.id in ids else 0
    old_rank = contents.index(case.old) + 1 if case.old in contents else 0
    return new_rank, old_rank


def read_cases(path: Path) -> list[Case]:
    return [
        Case(c["attribute"], c["old"], c["new"], c["question"], tuple(c["distractors"]))
        for c in json.loads(path.read_text(encoding="utf-8"))
    ]


async def main(verbose: bool, path: Path | None) -> None:
    all_cases = cases() if path is None else read_cases(path)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(agentcore_data_dir=Path(tmp))
        await asyncio.to_thread(upgrade, settings.sqlalchemy_url)
        container = await build_container(settings)
        started = time.perf_counter()
        try:
            ranks = [await run_case(container, i, c) for i, c in enumerate(all_cases)]
        finally:
            await container.aclose()
    seconds = time.perf_counter() - started
    by_attribute: dict[str, list[tuple[int, int]]] = {}
    for case, rank in zip(all_cases, ranks, strict=True):
        by_attribute.setdefault(case.attribute, []).append(rank)
        if verbose and rank[0] != 1:
            print(f"  miss [{case.attribute}] new@{rank[0]} old@{rank[1]}: {case.new!r}")
    current = sum(1 for new, _ in ranks if new == 1)
    stale = sum(1 for _, old in ranks if old == 1)
    print(f"{len(all_cases)} update pairs, {len(by_attribute)} attributes, {seconds:.1f} s")
    print(f"current value at rank 1: {current}/{len(all_cases)} = {current / len(all_cases):.1%}")
    print(f"stale value at rank 1:   {stale}/{len(all_cases)} = {stale / len(all_cases):.1%}")
    for name, attribute_ranks in by_attribute.items():
        hits = sum(1 for new, _ in attribute_ranks if new == 1)
        print(f"  {name:<12} {hits}/{len(attribute_ranks)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--verbose", action="store_true", help="print each missed case")
    parser.add_argument("--cases", type=Path, default=None, help="a JSON file of cases")
    args = parser.parse_args()
    asyncio.run(main(args.verbose, args.cases))
