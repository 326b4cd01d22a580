"""Placing stories on the timeline: persona topics early (so later stories can lean on them),
then life events in order of their first session, binding the entities they use, creating the
ones they add (a pet, a hobby, a job) and retiring the ones they replace (a home, a job), then
second mentions of topics. Each stage of a story gets a session and a day it happened."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from datetime import datetime, timedelta

from .catalog import Catalog, Option, Story, Value, ask_of
from .dates import format_day, month_year, told
from .fill import draw
from .model import Entity, Instance, Person
from .persona import META, NameBook, clashes, pronouns, tags_of

_CAPACITY = 24  # story lines a session holds at most
_SLOT = re.compile(r"\{([A-Za-z][A-Za-z0-9_]*)\}")


def owner_slots(person: Person, other: Person) -> dict[str, Value]:
    return {
        "name": person.name,
        **pronouns("", person.sex),
        "age": str(person.age),
        "friend": other.name,
    }


class Planner:
    def __init__(
        self,
        rng: random.Random,
        catalog: Catalog,
        people: list[Person],
        dates: list[datetime],
        names: NameBook,
    ) -> None:
        self.rng = rng
        self.catalog = catalog
        self.people = people
        self.dates = dates
        self.names = names
        self.load = [0] * len(dates)
        self.instances: list[Instance] = []
        self.last_use: dict[str, int] = {}  # entity id -> last session a story uses it
        self.counter = 0

    # -- sessions -------------------------------------------------------------------------------

    def _beats(self, story: Story) -> list[list[int]]:
        """Indexes of the beats told, per stage; optional beats by their chance."""
        return [
            [i for i, beat in enumerate(stage.beats) if self.rng.random() < beat.p]
            for stage in story.stages
        ]

    def _sessions(self, story: Story, sizes: Sequence[int], low: int, high: int) -> list[int]:
        """Sessions for the stages (first in [low, high]), or [] when nothing has room."""
        count = len(self.dates)
        spans = [stage.gap[0] for stage in story.stages[1:]]
        high = min(high, count - 1 - sum(spans))
        if high < low:
            return []
        best: tuple[int, list[int]] | None = None
        for _ in range(5):
            sessions = [self.rng.randint(low, high)]
            for number, stage in enumerate(story.stages[1:]):
                room = count - 1 - sum(spans[number + 1 :])
                step = self.rng.randint(*stage.gap)
                sessions.append(max(sessions[-1] + stage.gap[0], min(sessions[-1] + step, room)))
            score = max(self.load[s] + size for s, size in zip(sessions, sizes, strict=True))
            if best is None or score < best[0]:
                best = (score, sessions)
        assert best is not None
        return best[1] if best[0] <= _CAPACITY else []

    def _reserve(self, sessions: Sequence[int], sizes: Sequence[int], sign: int = 1) -> None:
        for session, size in zip(sessions, sizes, strict=True):
            self.load[session] += sign * size

    # -- instances ------------------------------------------------------------------------------

    def _instance(
        self,
        story: Story,
        owner: Person,
        option: Option,
        bound: Sequence[tuple[Entity, str]],
        sessions: list[int],
        beats: list[list[int]],
    ) -> Instance:
        self.counter += 1
        other = self.people[1 - owner.index]
        values = owner_slots(owner, other)
        homes: dict[str, tuple[str, str]] = {}
        for entity, alias in bound:
            for key, value in entity.slots.items():
                slot = f"{alias}_{key}" if alias else key
                values[slot] = value
                homes[slot] = (entity.id, key)
        for key, value in (*option.items(), *story.extra.items()):
            if key not in META:
                values[key] = draw(value, self.rng, self.catalog.lists)
        for slot, kind in story.names.items():
            values.update(self.names.named(self.rng, kind, slot))
        self._settle(story, option, values)
        for key in [key for key in values if key.endswith("_years")]:
            # "for about six years": the word, and the year it began, seen from the telling
            years = int(str(values[key]))
            values[f"{key}_word"] = self.catalog.time["numbers"][years]
            values[f"{key}_since"] = str(self.dates[sessions[0]].year - years)
        instance = Instance(
            id=f"{'ab'[owner.index]}s{self.counter}",
            story=story,
            owner=owner.index,
            option=option,
            values=values,
            homes=homes,
            entity=bound[0][0] if story.entity and bound else None,
            sessions=sessions,
            beats=[
                [stage.beats[i] for i in chosen]
                for stage, chosen in zip(story.stages, beats, strict=True)
            ],
        )
        self._date(instance)
        self.instances.append(instance)
        for entity, _ in bound:
            self.last_use[entity.id] = max(self.last_use.get(entity.id, -1), sessions[-1])
        return instance

    def _settle(self, story: Story, option: Option, values: dict[str, Value]) -> None:
        """Slots a question answers with are drawn once, so every turn says the same thing."""
        texts = [ask.answer for ask in story.asks]
        texts += [str(raw["answer"]) for raw in option.get("asks", ())]
        texts += [collect.item for collect in story.collect]
        texts += list(story.label)
        pending = sorted({name for text in texts for name in _SLOT.findall(text)})
        seen: set[str] = set()
        while pending:
            key = pending.pop(0)
            key = key[0].lower() + key[1:]
            if key in seen or key not in values:
                continue
            seen.add(key)
            value = values[key]
            if isinstance(value, tuple):
                value = values[key] = self.rng.choice(value)
            pending += _SLOT.findall(value)

    def _date(self, instance: Instance) -> None:
        """The day each stage happened: after the session before the one that tells it."""
        for number, (stage, session) in enumerate(
            zip(instance.story.stages, instance.sessions, strict=True), 1
        ):
            said = self.dates[session].date()
            low, high = stage.ago
            if session:
                high = min(high, (said - self.dates[session - 1].date()).days - 1)
            low = min(low, high)
            happened = said - timedelta(days=self.rng.randint(low, high))
            when = told(self.rng, self.catalog.time, happened, said)
            instance.told.append(when)
            instance.values[f"date{number}"] = when.answer
            instance.values[f"day{number}"] = format_day(happened)
            instance.values[f"month{number}"] = month_year(happened)

    # -- topics ---------------------------------------------------------------------------------

    def _topic(self, story: Story, person: Person, entity: Entity, low: int, high: int) -> bool:
        beats = self._beats(story)
        sizes = [len(chosen) for chosen in beats]
        sessions = self._sessions(story, sizes, low, high)
        if not sessions:
            return False
        self._reserve(sessions, sizes)
        self._instance(story, person, {}, [(entity, "")], sessions, beats)
        if entity.start < 0:
            entity.start = sessions[0]
        return True

    def topics(self, again: bool) -> None:
        count = len(self.dates)
        for person in self.people:
            for entity in list(person.entities):
                stories = [s for s in self.catalog.topics if s.entity == entity.kind]
                if not stories or (entity.start >= 0) != again:
                    continue
                if not again:
                    self._topic(stories[0], person, entity, 0, max(2, int(count * 0.45)))
                    continue
                end = count if entity.end is None else entity.end
                for story in stories[1:]:
                    if self.rng.random() < story.weight:
                        self._topic(story, person, entity, entity.start + 2, end - 1)

    # -- events ---------------------------------------------------------------------------------

    def _options(self, story: Story, person: Person) -> list[Option]:
        if not story.options_from:
            used = [
                i.option for i in self.instances if i.story is story and i.owner == person.index
            ]
            options = [option for option in story.options if option not in used]
        else:
            source, tag, key = story.options_from.split(":")
            have = {str(e.slots.get(key, "")) for e in person.entities}
            options = [
                option
                for option in getattr(self.catalog.persona, source)
                if (not tag or tag in option.get("tags", ())) and option.get(key) not in have
            ]
        return [option for option in options if not clashes(tags_of(option), person)]

    def _bind(
        self, story: Story, person: Person, sessions: Sequence[int]
    ) -> list[tuple[Entity, str]] | None:
        """The entities the story uses (live during all its stages), each with its alias."""
        bound: list[tuple[Entity, str]] = []
        for spec in story.uses:
            spec, _, alias = spec.partition("@")
            kind, _, tag = spec.partition(":")
            taken = [entity for entity, _ in bound]
            fits = [
                entity
                for entity in person.of(kind)
                if 0 <= entity.start < sessions[0]
                and (entity.end is None or entity.end > sessions[-1])
                and (not tag or tag in entity.tags)
                and entity not in taken
            ]
            if not fits:
                return None
            bound.append((self.rng.choice(fits), alias))
        return bound

    @staticmethod
    def _allowed(story: Story, person: Person) -> bool:
        for spec in story.unless:
            kind, _, tag = spec.partition(":")
            if any(not tag or tag in entity.tags for entity in person.of(kind)):
                return False
        return not clashes(story.tags, person)

    def events(self) -> None:
        count = len(self.dates)
        drafts: list[tuple[int, Story, Person, list[int], list[list[int]]]] = []
        for person in self.people:
            wanted = round(count * self.rng.uniform(0.8, 1.1))
            taken: dict[str, int] = {}
            for _ in range(wanted * 4):
                if len(taken) and sum(taken.values()) >= wanted:
                    break
                stories = [
                    s
                    for s in self.catalog.events
                    if taken.get(s.key, 0) < s.limit and self._allowed(s, person)
                ]
                if not stories:
                    break
                story = self.rng.choices(stories, weights=[s.weight for s in stories])[0]
                beats = self._beats(story)
                sizes = [len(chosen) for chosen in beats]
                sessions = self._sessions(story, sizes, 1 if story.uses else 0, count - 1)
                spans = [(d[3][0], d[3][-1]) for d in drafts if d[1] is story and d[2] is person]
                if not sessions or any(
                    first <= sessions[-1] and sessions[0] <= last for first, last in spans
                ):  # one trip at a time: no story overlaps another of its kind
                    continue
                self._reserve(sessions, sizes)
                taken[story.key] = taken.get(story.key, 0) + 1
                drafts.append((sessions[0], story, person, sessions, beats))
        drafts.sort(key=lambda draft: (draft[0], draft[2].index))
        for _, story, person, sessions, beats in drafts:
            if not self._event(story, person, sessions, beats):
                self._reserve(sessions, [len(chosen) for chosen in beats], -1)

    def _event(
        self, story: Story, person: Person, sessions: list[int], beats: list[list[int]]
    ) -> bool:
        bound = self._bind(story, person, sessions)
        options = self._options(story, person)
        if bound is None or not options or not self._allowed(story, person):
            return False
        effect = sessions[-1]
        if story.replaces:
            old = [entity for entity, _ in bound if entity.kind == story.replaces]
            if not old or self.last_use.get(old[0].id, -1) >= effect:
                return False
        held = {tag for entity, _ in bound for tag in entity.tags}
        options = [o for o in options if not o.get("needs") or held & set(o["needs"])]
        if not options:
            return False
        option = self.rng.choice(options)
        instance = self._instance(story, person, option, bound, sessions, beats)
        if story.replaces:
            old[0].end = effect
        if story.adds:
            kind = story.adds
            slots = {
                key: value
                for key, value in instance.values.items()
                if key == kind or key.startswith(f"{kind}_")
            }
            created = Entity(
                id=instance.id,
                kind=kind,
                tags=tags_of(option),
                slots=slots,
                # A new job or home after a change says nothing of what came before it.
                asks=() if story.replaces else tuple(ask_of(a) for a in option.get("asks", ())),
                start=effect,
            )
            instance.entity = created
            person.entities.append(created)
        return True


def plan(
    rng: random.Random,
    catalog: Catalog,
    people: list[Person],
    dates: list[datetime],
    names: NameBook,
) -> list[Instance]:
    planner = Planner(rng, catalog, people, dates, names)
    planner.topics(again=False)
    planner.events()
    planner.topics(again=True)
    return planner.instances
