"""The generator's data, read from data/; the order of every list is part of the output (a
seeded choice over a list picks by position).

* ``names.json``: first names of many origins by sex, pet names.
* ``persona.json``: what a person is drawn from, as options whose keys are the slots of an
  entity (``job_title``, ``pet_species``, ``hobby_doing``...): cities and homes, relatives, jobs,
  hobbies, pets, traits, goals, worries. An option may carry ``asks`` (questions about it, often
  open-domain inferences), ``tags`` and ``avoid`` (a cat allergy avoids ``cat``: the two never
  meet in one person), ``group`` (one per person) and age bounds.
* ``stories/*.json``: stories. A topic (``entity`` set) tells a persona entity; an event is a
  life event. A story has ``stages`` told in different sessions (``gap`` sessions apart, each
  happening ``ago`` days before its session), each a list of ``beats``: who speaks (the
  ``owner`` of the story or the ``friend``), the chance it is told, its wordings (``say``),
  the facts every wording states (``states``, checked here) and maybe a photo. ``asks`` are its
  questions: category, wordings, answer and ``ev``, groups of facts each stated in one turn.
  ``collect`` feeds questions across stories (all the pets, all the trips); ``label`` and
  ``dated`` name it in questions that compare dates. ``uses``, ``adds`` and ``replaces`` bind,
  create and retire entities (``kind:tag@alias``); ``options`` (or ``options_from`` a persona
  list), ``extra`` and ``names`` give its values; ``mood`` says what small talk may follow it.
* ``filler.json``: talk that answers nothing: greetings and goodbyes by the gap since the last
  session, small-talk exchanges (``x`` opens, ``y`` answers), reactions, asides, bridges,
  seasonal weather.
* ``questions.json``: wordings of questions across stories (aggregates, date pairs, common
  hobbies); ``time.json``: how people say when something happened and how an answer dates it;
  ``lists.json``: values for ``<pick list>``; ``style.json``: how people type; ``aliases.json``:
  the slots that state a fact.

Templates take ``{slot}`` (``{Slot}`` capitalizes), ``{@pool}`` (a line of a filler pool) and
``[[a|b]]`` alternatives; option values take ``<pick list>``, ``<int lo hi>`` and ``<choice a|b>``
draws, made once per story.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

_DATA = Path(__file__).with_name("data")
_SLOT = re.compile(r"\{@?([A-Za-z][A-Za-z0-9_]*)\}")

# Option values: a string (alternatives allowed) or a list, one item drawn per line.
Value = str | tuple[str, ...]
Option = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Beat:
    id: str
    who: str  # "owner" (whose story it is) or "friend"
    say: tuple[str, ...]
    states: tuple[str, ...]  # facts every template states, by slot name
    p: float  # chance the beat is told
    photo: tuple[str, ...]  # captions, when the speaker shares a picture
    photo_p: float
    pair: bool  # uses the template at the same position as the beat before (a fitting reply)


@dataclass(frozen=True, slots=True)
class Stage:
    beats: tuple[Beat, ...]
    gap: tuple[int, int]  # sessions after the previous stage
    ago: tuple[int, int]  # days between the happening and the session it is told in


@dataclass(frozen=True, slots=True)
class Ask:
    cat: int
    ask: tuple[str, ...]
    answer: str
    ev: tuple[tuple[str, ...], ...]  # groups of facts; each group is stated in one turn
    only: str  # "", "current" (the entity was not replaced) or "replaced"


@dataclass(frozen=True, slots=True)
class Collect:
    tag: str
    item: str
    ev: tuple[tuple[str, ...], ...]


@dataclass(frozen=True, slots=True)
class Story:
    key: str
    entity: str  # a topic tells this kind of persona entity; "" for a life event
    weight: float
    limit: int  # per person
    uses: tuple[str, ...]  # entities the story needs: "kind", "kind:tag", "kind@alias"
    unless: tuple[str, ...]  # entities the owner must not have: "kind:tag"
    tags: tuple[str, ...]  # what the story involves; "!tag" what it cannot go with
    options: tuple[Option, ...]
    extra: Mapping[str, Value]  # values drawn for every option
    options_from: str  # "list:tag:key": persona options with the tag, not a value of key owned
    names: Mapping[str, str]  # slot -> "pet", "female", "male" or "person"
    adds: str  # the entity kind the story creates (slots of that prefix)
    replaces: str  # the entity kind it replaces
    stages: tuple[Stage, ...]
    asks: tuple[Ask, ...]
    collect: tuple[Collect, ...]
    label: tuple[str, ...]  # noun phrases for questions across stories ("{his} move")
    dated: int  # the stage whose date the label refers to, 0 for none
    mood: str  # "good", "bad" or "neutral" news: what small talk around it may say


@dataclass(frozen=True, slots=True)
class Persona:
    ages: tuple[int, int]
    cities: tuple[Option, ...]
    housing: tuple[Option, ...]
    kin: tuple[Option, ...]
    jobs: tuple[Option, ...]
    hobbies: tuple[Option, ...]
    pets: tuple[Option, ...]
    traits: tuple[Option, ...]
    goals: tuple[Option, ...]
    worries: tuple[Option, ...]


@dataclass(frozen=True, slots=True)
class Catalog:
    female: tuple[str, ...]
    male: tuple[str, ...]
    pet_names: tuple[str, ...]
    persona: Persona
    lists: Mapping[str, tuple[str, ...]]
    time: Mapping[str, Any]
    filler: Mapping[str, Any]
    questions: Mapping[str, Any]
    aliases: Mapping[str, tuple[str, ...]]  # fact -> slots that state it
    topics: tuple[Story, ...]
    events: tuple[Story, ...]
    style: Mapping[str, Any]  # how people type: laughs, US spellings


def _freeze(value: Any) -> Any:
    """JSON lists as tuples, all the way down."""
    if isinstance(value, list):
        return tuple(_freeze(item) for item in value)
    if isinstance(value, dict):
        return {key: _freeze(item) for key, item in value.items()}
    return value


def _read(path: Path) -> Any:
    return _freeze(json.loads(path.read_text(encoding="utf-8")))


def _pair(value: Any) -> tuple[int, int]:
    low, high = value
    return int(low), int(high)


def ask_of(raw: Mapping[str, Any]) -> Ask:
    return Ask(
        cat=int(raw["cat"]),
        ask=tuple(raw["ask"]),
        answer=str(raw["answer"]),
        ev=tuple(tuple(group) for group in raw["ev"]),
        only=str(raw.get("only", "")),
    )


def _beat(raw: Mapping[str, Any]) -> Beat:
    return Beat(
        id=raw["id"],
        who=raw.get("who", "owner"),
        say=tuple(raw["say"]),
        states=tuple(raw.get("states", ())),
        p=float(raw.get("p", 1.0)),
        photo=tuple(raw.get("photo", ())),
        photo_p=float(raw.get("photo_p", 0.0)),
        pair=bool(raw.get("pair", False)),
    )


def _story(raw: Mapping[str, Any]) -> Story:
    return Story(
        key=raw["key"],
        entity=raw.get("entity", ""),
        weight=float(raw.get("weight", 1.0)),
        limit=int(raw.get("limit", 1)),
        uses=tuple(raw.get("uses", ())),
        unless=tuple(raw.get("unless", ())),
        tags=tuple(raw.get("tags", ())),
        options=tuple(raw.get("options", ({},))),
        extra=raw.get("extra", {}),
        options_from=raw.get("options_from", ""),
        names=raw.get("names", {}),
        adds=raw.get("adds", ""),
        replaces=raw.get("replaces", ""),
        stages=tuple(
            Stage(
                beats=tuple(_beat(beat) for beat in stage["beats"]),
                gap=_pair(stage.get("gap", (1, 3))),
                ago=_pair(stage.get("ago", (0, 10))),
            )
            for stage in raw["stages"]
        ),
        asks=tuple(ask_of(ask) for ask in raw.get("asks", ())),
        collect=tuple(
            Collect(c["tag"], c["item"], tuple(tuple(g) for g in c["ev"]))
            for c in raw.get("collect", ())
        ),
        label=tuple(raw.get("label", ())),
        dated=int(raw.get("dated", 0)),
        mood=raw.get("mood", "good"),
    )


def _check(story: Story, aliases: Mapping[str, tuple[str, ...]]) -> None:
    """Every template of a beat holds a slot for each fact the beat states."""
    ids = [beat.id for stage in story.stages for beat in stage.beats]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{story.key}: beat ids repeat")
    for stage in story.stages:
        for beat in stage.beats:
            if beat.states and beat.who != "owner":
                raise ValueError(f"{story.key}/{beat.id}: only the owner states facts")
            for template in beat.say:
                slots = set(_SLOT.findall(template))
                slots |= {slot[0].lower() + slot[1:] for slot in slots}
                for fact in beat.states:
                    if not slots & set(aliases.get(fact, (fact,))):
                        raise ValueError(f"{story.key}/{beat.id}: {fact!r} missing: {template}")


@cache
def load_catalog() -> Catalog:
    names = _read(_DATA / "names.json")
    persona = _read(_DATA / "persona.json")
    aliases = _read(_DATA / "aliases.json")
    stories = [
        _story(raw) for path in sorted((_DATA / "stories").glob("*.json")) for raw in _read(path)
    ]
    for story in stories:
        _check(story, aliases)
    keys = [story.key for story in stories]
    if len(set(keys)) != len(keys):
        raise ValueError("story keys repeat")
    return Catalog(
        female=names["female"],
        male=names["male"],
        pet_names=names["pets"],
        persona=Persona(
            ages=_pair(persona["ages"]),
            cities=persona["cities"],
            housing=persona["housing"],
            kin=persona["kin"],
            jobs=persona["jobs"],
            hobbies=persona["hobbies"],
            pets=persona["pets"],
            traits=persona["traits"],
            goals=persona["goals"],
            worries=persona["worries"],
        ),
        lists=_read(_DATA / "lists.json"),
        time=_read(_DATA / "time.json"),
        filler=_read(_DATA / "filler.json"),
        questions=_read(_DATA / "questions.json"),
        aliases=aliases,
        topics=tuple(story for story in stories if story.entity),
        events=tuple(story for story in stories if not story.entity),
        style=_read(_DATA / "style.json"),
    )
