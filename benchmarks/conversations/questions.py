"""Questions from the timeline, never from the text: every story knows which of its turns stated
which fact, so a question's evidence is the turns holding all the facts of each of its groups.

Candidates come from the stories' and entities' own questions, from aggregates over a person's
stories (the pets, the trips, the books), from pairs of dated stories (which came first, how long
between) and from what the two have in common; ``select`` then takes about 45% single-hop, 20%
temporal, 20% multi-hop and 15% open-domain, spread over as many stories as it can.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from itertools import combinations
from typing import Any

from .catalog import Ask, Catalog, Value, ask_of
from .fill import Filler
from .model import Candidate, Entity, Instance, Line, Person
from .plan import owner_slots

SHARES = {4: 0.45, 2: 0.20, 1: 0.20, 3: 0.15}
_SLOT = re.compile(r"\{([A-Za-z][A-Za-z0-9_]*)\}")
# What the owner says in the first person, as a question or answer about them says it.
_THIRD = (
    (re.compile(r"\bI'm\b"), "{he}'s"),
    (re.compile(r"\bI've\b"), "{he}'s"),
    (re.compile(r"\bI'd\b"), "{he}'d"),
    (re.compile(r"\bI'll\b"), "{he}'ll"),
    (re.compile(r"\bI\b"), "{he}"),
    (re.compile(r"\bmyself\b"), "{him}self"),
    (re.compile(r"\b[Mm]y\b"), "{his}"),
    (re.compile(r"\bme\b"), "{him}"),
    (re.compile(r"\bwe're\b"), "they're"),
    (re.compile(r"\b[Ww]e\b"), "they"),
    (re.compile(r"\bour\b"), "their"),
    (re.compile(r"\bus\b"), "them"),
)


def third_person(values: Mapping[str, Value]) -> dict[str, Value]:
    """The values with "I", "my", "we" turned into the owner's "she", "her", "they"."""

    def turn(text: str) -> str:
        for pattern, replacement in _THIRD:
            text = pattern.sub(replacement, text)
        return text

    return {
        key: tuple(turn(item) for item in value) if isinstance(value, tuple) else turn(value)
        for key, value in values.items()
    }


def join(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def about(days: int, time: Mapping[str, Any]) -> str:
    """A rough span, worded by ``time.json``: "about two weeks", "about five months"."""
    spans, numbers = time["spans"], time["numbers"]
    if days < 11:
        return str(spans["week"])
    if days < 25:
        return str(spans["weeks"]).format(n=numbers[round(days / 7)])
    if days < 46:
        return str(spans["month"])
    if days < 335:
        return str(spans["months"]).format(n=numbers[round(days / 30.4)])
    return str(spans["year"])


class QuestionMaker:
    def __init__(
        self,
        rng: random.Random,
        catalog: Catalog,
        filler: Filler,
        people: list[Person],
        instances: Sequence[Instance],
        turns: Sequence[tuple[str, Line]],
    ) -> None:
        self.rng = rng
        self.catalog = catalog
        self.filler = filler
        self.people = people
        self.instances = instances
        self.order = {dia: position for position, (dia, _) in enumerate(turns)}
        self.by_fact: dict[str, set[str]] = {}
        for dia, line in turns:
            for fact in line.facts:
                self.by_fact.setdefault(fact, set()).add(dia)
        self.spec: Mapping[str, Any] = catalog.questions
        self.numbers: Sequence[str] = catalog.time["numbers"]

    # -- evidence -------------------------------------------------------------------------------

    def _group(self, facts: Sequence[str]) -> set[str]:
        found: set[str] | None = None
        for fact in facts:
            turns = self.by_fact.get(fact, set())
            found = set(turns) if found is None else found & turns
        return found or set()

    def _evidence(
        self, groups: Sequence[Sequence[str]], resolve: Callable[[str], str]
    ) -> tuple[str, ...]:
        """The turns stating each group, or () when a group was never stated."""
        evidence: set[str] = set()
        for group in groups:
            found = self._group([resolve(name) for name in group])
            if not found:
                return ()
            evidence |= found
        return tuple(sorted(evidence, key=self.order.__getitem__))

    def _ask(
        self,
        ask: Ask,
        values: Mapping[str, Value],
        resolve: Callable[[str], str],
        replaced: bool,
        source: str,
    ) -> Candidate | None:
        if (ask.only == "current" and replaced) or (ask.only == "replaced" and not replaced):
            return None
        evidence = self._evidence(ask.ev, resolve)
        if not evidence:
            return None
        values = third_person(values)
        question = self._reword(self.filler(self.filler.pick(ask.ask), values))
        return Candidate(ask.cat, question, self.filler(ask.answer, values), evidence, source)

    def _reword(self, question: str) -> str:
        """Another opening for a common one ("When did" -> "Around when did")."""
        for opener, others in self.spec["openers"].items():
            if question.startswith(opener):
                return self.filler.pick(others) + question[len(opener) :]
        return question

    # -- candidates -----------------------------------------------------------------------------

    def _story_candidates(self) -> list[Candidate]:
        found = []
        for instance in self.instances:
            replaced = instance.entity is not None and instance.entity.end is not None
            asks = list(instance.story.asks)
            if not instance.story.entity and not instance.story.adds:
                asks += [ask_of(raw) for raw in instance.option.get("asks", ())]
            for ask in asks:
                made = self._ask(ask, instance.values, instance.fact, replaced, instance.id)
                if made:
                    found.append(made)
        for person in self.people:
            other = self.people[1 - person.index]
            for entity in person.entities:
                values = {**owner_slots(person, other), **entity.slots}
                for ask in entity.asks:
                    made = self._ask(
                        ask, values, _resolver(entity), entity.end is not None, entity.id
                    )
                    if made:
                        found.append(made)
        return found

    def _aggregates(self) -> list[Candidate]:
        items: dict[tuple[int, str], dict[str, set[str]]] = {}
        for instance in self.instances:
            for collect in instance.story.collect:
                evidence = self._evidence(collect.ev, instance.fact)
                if evidence:
                    item = self.filler.plain(collect.item, third_person(instance.values))
                    bucket = items.setdefault((instance.owner, collect.tag), {})
                    bucket.setdefault(item, set()).update(evidence)
        found = []
        for (owner, tag), bucket in sorted(items.items()):
            if len(bucket) < 2:
                continue
            spec = self.spec["aggregates"][tag]
            person = self.people[owner]
            values = owner_slots(person, self.people[1 - owner])
            names = sorted(bucket, key=lambda item: min(self.order[d] for d in bucket[item]))
            turns = set().union(*bucket.values())
            ordered = tuple(sorted(turns, key=self.order.__getitem__))
            for key, answer in (("ask", join(names)), ("count", self.numbers[len(names)])):
                if spec.get(key):
                    question = self.filler(self.filler.pick(spec[key]), values)
                    found.append(Candidate(1, question, answer, ordered, f"{tag}-{owner}"))
        return found

    def _dated(self, person: Person) -> list[tuple[date, str, tuple[str, ...], str]]:
        dated = []
        for instance in self.instances:
            story = instance.story
            if instance.owner != person.index or not story.dated or not story.label:
                continue
            evidence = self._evidence([[f"when{story.dated}"]], instance.fact)
            if not evidence:
                continue
            template = self.rng.choice(story.label)
            # A careful reader also needs the turn naming what the label names ("adopting
            # Miso" when the dated turn only says "a kitten"), if the dated turn does not.
            for name in _SLOT.findall(template):
                named = self.by_fact.get(instance.fact(name[0].lower() + name[1:]), set())
                if named and not named & set(evidence):
                    first = min(named, key=self.order.__getitem__)
                    evidence = tuple(sorted({*evidence, first}, key=self.order.__getitem__))
            label = self.filler.plain(template, third_person(instance.values))
            dated.append((instance.told[story.dated - 1].day, label, evidence, instance.id))
        return dated

    def _temporal_pairs(self) -> list[Candidate]:
        found = []
        spec = self.spec["pairs"]
        for person in self.people:
            values = owner_slots(person, self.people[1 - person.index])
            pairs = [
                (a, b)
                for a, b in combinations(self._dated(person), 2)
                if abs((a[0] - b[0]).days) >= 10
            ]
            self.rng.shuffle(pairs)
            for number, (one, two) in enumerate(pairs[:9]):
                first, second = sorted((one, two))
                evidence = tuple(sorted({*one[2], *two[2]}, key=self.order.__getitem__))
                source = f"{one[3]}+{two[3]}"
                kind = ("first", "order", "after")[number % 3]
                shown = (one, two) if self.rng.random() < 0.5 else (two, one)
                if kind == "after":
                    shown = (first, second)
                    answer = about((second[0] - first[0]).days, self.catalog.time)
                elif kind == "first":
                    answer = first[1]
                else:
                    answer = spec["before"] if shown[0] is first else spec["after_word"]
                slots = {**values, "one": shown[0][1], "two": shown[1][1]}
                question = self.filler(self.filler.pick(spec[kind]), slots)
                found.append(Candidate(2, question, answer, evidence, source))
        return found

    def _shared(self) -> list[Candidate]:
        found = []
        first, second = self.people
        values = {"a": first.name, "b": second.name}
        for mine in first.of("hobby"):
            for theirs in second.of("hobby"):
                if mine.slots["hobby"] != theirs.slots["hobby"]:
                    continue
                groups = [f"{mine.id}.hobby"], [f"{theirs.id}.hobby"]
                evidence = self._evidence(groups, lambda fact: fact)
                if evidence:
                    question = self.filler(self.filler.pick(self.spec["shared_hobby"]), values)
                    answer = str(mine.slots["hobby"])
                    found.append(Candidate(1, question, answer, evidence, "shared"))
        return found

    def candidates(self) -> list[Candidate]:
        return [
            *self._story_candidates(),
            *self._aggregates(),
            *self._temporal_pairs(),
            *self._shared(),
        ]

    # -- selection ------------------------------------------------------------------------------

    def select(self, candidates: Sequence[Candidate], target: int) -> list[Candidate]:
        """About ``target`` questions in the category shares, no question twice, spread over
        sources: a story's second question comes only after every story had a first."""
        seen: set[str] = set()
        pools: dict[int, list[Candidate]] = {category: [] for category in SHARES}
        for candidate in candidates:
            key = candidate.question.lower().rstrip("?").strip()
            if key not in seen:
                seen.add(key)
                pools[candidate.category].append(candidate)
        for pool in pools.values():
            self.rng.shuffle(pool)
        wanted = {category: round(target * share) for category, share in SHARES.items()}
        for category in (1, 2, 3):
            spare = wanted[category] - len(pools[category])
            if spare > 0:
                wanted[category] -= spare
                wanted[4] += spare
        used: dict[str, int] = {}
        chosen: list[Candidate] = []
        for category in (1, 3, 2, 4):
            pool = pools[category]
            for _ in range(min(wanted[category], len(pool))):
                pool.sort(key=lambda c: used.get(c.source, 0))
                pick = pool.pop(0)
                used[pick.source] = used.get(pick.source, 0) + 1
                chosen.append(pick)
        order = self.order
        chosen.sort(key=lambda c: (order[c.evidence[-1]], c.category))
        return chosen


def _resolver(entity: Entity) -> Callable[[str], str]:
    def resolve(name: str) -> str:
        if name not in entity.slots:
            raise KeyError(f"{entity.kind} has no slot {name!r}")
        return f"{entity.id}.{name}"

    return resolve
