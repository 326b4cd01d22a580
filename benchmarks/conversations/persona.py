"""Drawing the two people of a conversation and what they have: a home, a job, relatives, pets,
hobbies (sometimes one in common), traits, a goal and maybe a worry, each an ``Entity``."""

from __future__ import annotations

import random
from collections.abc import Sequence

from .catalog import Catalog, Option, Value, ask_of
from .fill import draw
from .model import Entity, Person

META = frozenset(("asks", "tags", "avoid", "group", "needs", "weight", "min_age", "max_age"))


def pronouns(prefix: str, sex: str) -> dict[str, Value]:
    he, his, him = ("she", "her", "her") if sex == "f" else ("he", "his", "him")
    lead = f"{prefix}_" if prefix else ""
    return {f"{lead}he": he, f"{lead}his": his, f"{lead}him": him}


class NameBook:
    """Names handed out in one conversation, so no two people or pets share one."""

    __slots__ = ("catalog", "taken")

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.taken: set[str] = set()

    def _fresh(self, rng: random.Random, pool: Sequence[str]) -> str:
        for _ in range(50):
            name = rng.choice(pool)
            if name not in self.taken:
                self.taken.add(name)
                return name
        raise RuntimeError("ran out of names")

    def person(self, rng: random.Random, sex: str) -> str:
        return self._fresh(rng, self.catalog.female if sex == "f" else self.catalog.male)

    def pet(self, rng: random.Random) -> str:
        return self._fresh(rng, self.catalog.pet_names)

    def named(self, rng: random.Random, kind: str, prefix: str) -> dict[str, Value]:
        """A name for slot ``prefix``: ``pet``, ``female``, ``male`` or ``person``, with
        pronoun slots (``<prefix>_he``)."""
        sex = rng.choice("fm") if kind in ("pet", "person") else kind[0]
        name = self.pet(rng) if kind == "pet" else self.person(rng, sex)
        return {prefix: name, **pronouns(prefix, sex)}


def make_entity(
    ident: str, kind: str, option: Option, rng: random.Random, catalog: Catalog
) -> Entity:
    slots = {
        key: draw(value, rng, catalog.lists) for key, value in option.items() if key not in META
    }
    answers = " ".join(str(ask["answer"]) for ask in option.get("asks", ()))
    for key, value in slots.items():
        if isinstance(value, tuple) and f"{{{key}}}" in answers:
            slots[key] = rng.choice(value)
    return Entity(
        id=ident,
        kind=kind,
        tags=tags_of(option),
        slots=slots,
        asks=tuple(ask_of(ask) for ask in option.get("asks", ())),
    )


def tags_of(option: Option) -> tuple[str, ...]:
    """An option's tags, and what it cannot go with as ``!tag`` (a cat allergy: ``!cat``)."""
    return (*option.get("tags", ()), *(f"!{tag}" for tag in option.get("avoid", ())))


def clashes(tags: Sequence[str], person: Person) -> bool:
    """Whether something tagged ``tags`` contradicts what ``person`` has or is."""
    held = {tag for entity in person.entities for tag in entity.tags}
    return any((tag.startswith("!") and tag[1:] in held) or f"!{tag}" in held for tag in tags)


def _distinct(
    rng: random.Random,
    options: Sequence[Option],
    count: int,
    person: Person,
    avoid: Sequence[Option] = (),
) -> list[Option]:
    """``count`` options, none twice, none of ``avoid`` and none clashing with what ``person``
    has; ``group`` keys do not repeat."""
    pool = [o for o in options if o not in avoid and not clashes(tags_of(o), person)]
    rng.shuffle(pool)
    chosen: list[Option] = []
    groups: set[str] = set()
    for option in pool:
        if len(chosen) >= count:
            break
        group = option.get("group", "")
        if (group and group in groups) or clashes(tags_of(option), person):
            continue
        chosen.append(option)
        groups.add(group)
    return chosen


def _person(
    index: int,
    rng: random.Random,
    catalog: Catalog,
    names: NameBook,
    other: Person | None,
    shared_hobby: Option | None,
) -> Person:
    persona = catalog.persona
    sex = rng.choice("fm")
    person = Person(index, names.person(rng, sex), sex, rng.randint(*persona.ages), [])
    prefix = "ab"[index]

    def add(kind: str, option: Option, extra: dict[str, Value] | None = None) -> Entity:
        entity = make_entity(f"{prefix}{len(person.entities)}", kind, option, rng, catalog)
        entity.slots.update(extra or {})
        person.entities.append(entity)
        return entity

    city = rng.choice(persona.cities)
    add("home", {**city, **rng.choice(persona.housing)})
    style = catalog.style
    person.laugh = rng.choice(style["laughs"])
    person.us_spelling = city["home_country"] in style["us_countries"]
    person.ok = rng.random() < 0.3
    person.bang = rng.random() < 0.15
    other_jobs = [] if other is None else [e.slots["job_title"] for e in other.of("job")]
    jobs = [job for job in persona.jobs if job["job_title"] not in other_jobs]
    add("job", rng.choice(jobs))
    fitting = [
        kin for kin in persona.kin if kin.get("min_age", 0) <= person.age <= kin.get("max_age", 200)
    ]
    for kin in _distinct(rng, fitting, rng.choice((1, 2, 2, 3)), person):
        sex_of = kin["kin_sex"] if kin["kin_sex"] in ("f", "m") else rng.choice("fm")
        place = rng.choice([c for c in persona.cities if c is not city])["home_city"]
        add(
            "kin",
            kin,
            {**names.named(rng, "female" if sex_of == "f" else "male", "kin"), "kin_city": place},
        )
    for pet in _distinct(rng, persona.pets, rng.choice((0, 0, 1, 1, 1, 2)), person):
        add("pet", pet, names.named(rng, "pet", "pet"))
    hobbies = [] if shared_hobby is None else [shared_hobby]
    group = None if shared_hobby is None else shared_hobby.get("group")
    alike = [option for option in persona.hobbies if group and option.get("group") == group]
    hobbies += _distinct(rng, persona.hobbies, rng.choice((2, 3, 3)) - len(hobbies), person, alike)
    for hobby in hobbies:
        add("hobby", hobby)
    for trait in _distinct(rng, persona.traits, rng.choice((2, 3, 3)), person):
        add("trait", trait)
    add("goal", _distinct(rng, persona.goals, 1, person)[0])
    if rng.random() < 0.6:
        add("worry", rng.choice(persona.worries))
    return person


def draw_people(rng: random.Random, catalog: Catalog) -> tuple[list[Person], NameBook]:
    names = NameBook(catalog)
    first = _person(0, rng, catalog, names, None, None)
    shared = None
    if rng.random() < 0.55:
        hobby_options = [
            option
            for option in catalog.persona.hobbies
            if any(option.get("hobby") == e.slots["hobby"] for e in first.of("hobby"))
        ]
        shared = rng.choice(hobby_options)
    second = _person(1, rng, catalog, names, first, shared)
    return [first, second], names
