"""How the two people talk outside their stories: the values small talk may use, seen from one
speaker (names of their pets and relatives, never what they are; the season's weather where
they live; names of strangers), and each person's way of typing (laugh, "ok", "!!", US
spellings), applied to every turn they write."""

from __future__ import annotations

import re
from datetime import datetime

from .catalog import Catalog, Value
from .dates import MONTHS, WEEKDAYS
from .model import Line, Person

_SEASONS = (
    *("winter", "winter", "spring", "spring", "spring", "summer"),
    *("summer", "summer", "autumn", "autumn", "autumn", "winter"),
)
_FLIP = {"winter": "summer", "summer": "winter", "spring": "autumn", "autumn": "spring"}
_LAUGH = re.compile(r"\b(?:[Hh]ahaha|[Hh]aha|[Hh]a|[Ll]ol|[Ll]mao|[Hh]ehe)\b")
_OKAY = re.compile(r"\b([Oo])kay\b")
_BANG = re.compile(r"(?<![!?])!(?=\s|$)")


def _season(moment: datetime, south: bool) -> str:
    season = _SEASONS[moment.month - 1]
    return _FLIP[season] if south else season


class Talk:
    def __init__(
        self, catalog: Catalog, people: list[Person], dates: list[datetime], taken: set[str]
    ) -> None:
        self.catalog = catalog
        self.people = people
        self.dates = dates
        self.names = taken
        self.spellings: dict[str, str] = dict(catalog.style["us_spelling"])
        self.spelling = re.compile(r"\b(?:" + "|".join(self.spellings) + r")\b")
        self.proper = self._proper_nouns()

    def _proper_nouns(self) -> set[str]:
        """Words that keep their capital after a lead-in ("Oh, by the way, Leeds ...")."""
        words = set(self.names) | {"I", "I'm", "I've", "I'd", "I'll", "Mum", "Dad"}
        words |= {*MONTHS, *WEEKDAYS}
        for city in self.catalog.persona.cities:
            words |= set(str(city["home_city"]).split())
        return words

    def values(self, speaker: int, session: int) -> dict[str, Value]:
        """Slots of small talk, seen from ``speaker``: names only, never what they are."""
        me, you = self.people[speaker], self.people[1 - speaker]
        values: dict[str, Value] = dict(self.catalog.lists)
        values.update({"me": me.name, "you": you.name})
        for prefix, person in (("my", me), ("your", you)):
            alive = [
                e
                for e in person.entities
                if e.start <= session and (e.end is None or e.end > session)
            ]
            for kind in ("pet", "kin"):
                names = tuple(str(e.slots[kind]) for e in alive if e.kind == kind)
                if names:
                    values[f"{prefix}_{kind}"] = names
            rels = tuple(str(e.slots["kin_rel"]) for e in alive if e.kind == "kin")
            if rels:
                values[f"{prefix}_kin_rel"] = rels
            homes = [e for e in alive if e.kind == "home"] or me.of("home")
            south = bool(homes[0].slots.get("home_south"))
            season = _season(self.dates[session], south)
            if prefix == "my":
                values["weather"] = self.catalog.filler["pools"][f"weather_{season}"]
        own = {str(e.slots.get("hobby")) for e in me.entities if e.kind == "hobby"}
        hobbies = tuple(str(h["hobby"]) for h in self.catalog.persona.hobbies)
        values["any_hobby"] = hobbies
        values["new_hobby"] = tuple(h for h in hobbies if h not in own)
        free_f = tuple(name for name in self.catalog.female if name not in self.names)
        free_m = tuple(name for name in self.catalog.male if name not in self.names)
        values.update({"somebody": free_f + free_m, "somebody_f": free_f, "somebody_m": free_m})
        return values

    def styled(self, line: Line) -> Line:
        """The speaker's way of typing: their laugh, "ok", "!!", US spellings."""
        person = self.people[line.speaker]

        def laugh(match: re.Match[str]) -> str:
            word = person.laugh
            return word if match.group(0)[0].isupper() else word.lower()

        text = _LAUGH.sub(laugh, line.text)
        if person.ok:
            text = _OKAY.sub(lambda m: m.group(1) + "k", text)
        if person.bang:
            text = _BANG.sub("!!", text)
        if person.us_spelling:
            text = self.spelling.sub(lambda m: self.spellings[m.group(0)], text)
        return Line(line.speaker, text, line.facts, line.photo, line.template)
