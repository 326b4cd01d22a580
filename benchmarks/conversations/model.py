"""The generator's working values: people and what they have, stories placed on the timeline,
rendered lines and question candidates. The output itself is plain LoCoMo-shaped dicts."""

from __future__ import annotations

from dataclasses import dataclass, field

from .catalog import Ask, Beat, Option, Story, Value
from .dates import Told


@dataclass(slots=True)
class Entity:
    """Something a person has: a job, a home, a pet, a relative, a hobby, a trait, a goal.

    ``slots`` are prefixed by the kind (``pet``, ``pet_species``), so a story that uses the
    entity simply merges them; a fact about it is ``<id>.<slot>`` wherever it is stated.
    """

    id: str
    kind: str
    tags: tuple[str, ...]
    slots: dict[str, Value]
    asks: tuple[Ask, ...]
    start: int = -1  # the session that first tells it; stories use it only later
    end: int | None = None  # the session from which a new one replaces it


@dataclass(slots=True)
class Person:
    index: int  # 0 is speaker_a
    name: str
    sex: str  # "f" or "m"
    age: int
    entities: list[Entity]
    laugh: str = "Haha"  # how this person laughs in text
    us_spelling: bool = False  # "favorite", "neighbor", "mom"
    ok: bool = False  # writes "ok" for "okay"
    bang: bool = False  # doubles exclamation marks

    def of(self, kind: str) -> list[Entity]:
        return [entity for entity in self.entities if entity.kind == kind]


@dataclass(slots=True)
class Instance:
    """A story placed on the timeline: who tells it, its drawn values, its stages' sessions."""

    id: str
    story: Story
    owner: int
    option: Option
    values: dict[str, Value]
    homes: dict[str, tuple[str, str]]  # slot -> (entity id, its name there); else the story's
    entity: Entity | None  # the entity a topic tells, or the one the story creates
    sessions: list[int] = field(default_factory=list)
    told: list[Told] = field(default_factory=list)
    beats: list[list[Beat]] = field(default_factory=list)

    def fact(self, name: str) -> str:
        home, own = self.homes.get(name, (self.id, name))
        return f"{home}.{own}"


@dataclass(slots=True)
class Line:
    speaker: int
    text: str
    facts: frozenset[str] = frozenset()
    photo: str | None = None
    template: str = ""  # what it was written from, so a reply can fit the line it answers

    def words(self) -> int:
        return len(self.text.split())


@dataclass(frozen=True, slots=True)
class Candidate:
    category: int
    question: str
    answer: str
    evidence: tuple[str, ...]
    source: str  # the story or aggregate it comes from, to spread questions over stories
