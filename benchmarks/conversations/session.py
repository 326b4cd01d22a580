"""Writing a session: a greeting, the story stages placed in it, small talk between them and a
goodbye. Speakers alternate: a block that opens with whoever spoke last is either merged into
that turn ("Haha same. Oh, guess what...") or preceded by a short bridge from the other one."""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from .catalog import Catalog, Value
from .fill import Filler
from .model import Instance, Line, Person
from .talk import Talk

MIN_WORDS, MAX_WORDS = 5, 45
MIN_TURNS, MAX_TURNS = 12, 35
_SLOT = re.compile(r"\{([A-Za-z][A-Za-z0-9_]*)\}")


class SessionWriter:
    def __init__(
        self,
        rng: random.Random,
        catalog: Catalog,
        filler: Filler,
        people: list[Person],
        dates: list[datetime],
        instances: Sequence[Instance],
        taken: set[str],
    ) -> None:
        self.rng = rng
        self.catalog = catalog
        self.filler = filler
        self.people = people
        self.dates = dates
        self.stages: dict[int, list[tuple[Instance, int]]] = {}
        for instance in instances:
            for number, session in enumerate(instance.sessions):
                self.stages.setdefault(session, []).append((instance, number))
        self.exchanges: tuple[Mapping[str, Any], ...] = catalog.filler["exchanges"]
        self.talk = Talk(catalog, people, dates, taken)
        self.hour = 12

    # -- single lines ---------------------------------------------------------------------------

    def _line(
        self,
        speaker: int,
        say: Sequence[str],
        values: Mapping[str, Value],
        facts: frozenset[str],
        position: int | None = None,
    ) -> Line:
        """A line from the least used of ``say`` (or the one at ``position``) whose text stays
        within the word bounds."""
        options = list(say) if position is None else [say[position % len(say)]]
        for _ in range(12):
            template = self.filler.pick(options)
            text = self.filler(template, values)
            if MIN_WORDS <= len(text.split()) <= MAX_WORDS:
                return Line(speaker, text, facts, template=template)
        raise ValueError(f"no line within {MIN_WORDS}-{MAX_WORDS} words from {say[0]!r}")

    def _stage(self, instance: Instance, number: int) -> list[Line]:
        owner = instance.owner
        values = dict(instance.values)
        values["when"] = instance.told[number].phrase
        lines: list[Line] = []
        previous: tuple[str, ...] = ()
        for beat in instance.beats[number]:
            speaker = owner if beat.who == "owner" else 1 - owner
            values["you"] = self.people[1 - speaker].name
            facts = {instance.fact(name) for name in beat.states if name != "when"}
            if "when" in beat.states:
                facts.add(instance.fact(f"when{number + 1}"))
            position = None
            if beat.pair and lines and lines[-1].template in previous:
                position = previous.index(lines[-1].template)
            say = beat.say
            if beat is instance.beats[number][-1] and beat.who == "friend":
                say = tuple(t for t in say if not t.endswith("?")) or say
            line = self._line(speaker, say, values, frozenset(facts), position)
            mood = instance.story.mood
            if beat.who == "owner":
                owned = any(line.speaker == owner for line in lines)
                line = self._aside(line, "aside_detail" if owned else f"aside_{mood}", values)
            elif lines:  # a reaction; a block's opening question stays as it is
                line = self._aside(line, f"aside_friend_{mood}", values)
            previous = beat.say
            if beat.photo and self.rng.random() < beat.photo_p:
                line.photo = self.filler(self.rng.choice(beat.photo), values)
            lines.append(line)
        if lines and instance.beats[number][0].who == "owner" and self.rng.random() < 0.3:
            lines[0] = self._lead(lines[0])
        return lines

    def _aside(self, line: Line, pool: str, values: Mapping[str, Value]) -> Line:
        """Short lines often get a second sentence that says nothing new, after a statement
        or, from the friend's pool of curious ones, before a closing question."""
        words = line.words()
        chance = 0.9 if words < 12 else 0.7 if words < 18 else 0.35 if words < 24 else 0.05
        if self.rng.random() >= chance:
            return line
        pools = self.catalog.filler["pools"]
        asks = line.text.rstrip("!").endswith("?")
        if asks:
            if not pool.startswith("aside_friend"):
                return line
            pool = "aside_friend_q"
        aside = self.filler(self.filler.pick(pools[pool]), values)
        if words + len(aside.split()) > MAX_WORDS:
            return line
        text = f"{aside} {line.text}" if asks else f"{line.text} {aside}"
        return Line(line.speaker, text, line.facts, line.photo, line.template)

    def _lead(self, line: Line) -> Line:
        """ "Oh, by the way, ..." before a block's first line, unless it starts with a name."""
        first = line.text.split()[0].strip(",.!?:;")
        if first in self.talk.proper or first.removesuffix("'s") in self.talk.proper:
            return line
        lead = self.filler(self.filler.pick(self.catalog.filler["pools"]["lead"]), {})
        text = f"{lead} {line.text[:1].lower()}{line.text[1:]}"
        if len(text.split()) > MAX_WORDS:
            return line
        return Line(line.speaker, text, line.facts, line.photo)

    # -- small talk -----------------------------------------------------------------------------

    def _exchange(
        self,
        options: Sequence[Mapping[str, Any]],
        views: Sequence[Mapping[str, Value]],
        opener: int,
        parity: int | None = None,
        aside: bool = False,
    ) -> list[Line]:
        """One small-talk exchange opened by ``opener`` (its ``x`` lines; ``y`` lines are the
        other's), of an odd or even number of lines when ``parity`` asks for one."""
        hour = self.hour
        usable = {
            f"exchange:{index}:{exchange['lines'][0][1]}": exchange
            for index, exchange in enumerate(options)
            if exchange.get("hours", (0, 24))[0] <= hour < exchange.get("hours", (0, 24))[1]
            and not set(exchange.get("unless", ())) & set(views[opener])
            and all(
                {slot[0].lower() + slot[1:] for slot in _SLOT.findall(text)}
                <= set(views[opener if who == "x" else 1 - opener])
                for who, text, *_ in exchange["lines"]
            )
        }
        keys = usable
        if parity is not None:
            keys = {k: e for k, e in usable.items() if len(e["lines"]) % 2 == parity} or usable
        chosen = keys[self.filler.pick(list(keys))]
        lines = []
        for who, text, *caption in chosen["lines"]:
            speaker = opener if who == "x" else 1 - opener
            line = self._line(speaker, (text,), views[speaker], frozenset())
            if caption:
                line.photo = self.filler(caption[0], views[speaker])
            elif aside and self.rng.random() < 0.6:
                line = self._aside(line, "aside_small", views[speaker])
            lines.append(line)
        return lines

    # -- the session ----------------------------------------------------------------------------

    def _append(
        self, turns: list[Line], block: Sequence[Line], after_opening: bool, start: int = 0
    ) -> None:
        """A block's lines as alternating turns. A line by whoever spoke last is merged into
        that turn or gets a bridge from the other speaker first; a block that opens right after
        a question from the other speaker first shrugs it off ("Haha, pretty much!")."""
        pools = self.catalog.filler["pools"]
        for position, line in enumerate(block, start):
            if not turns:
                turns.append(line)
                continue
            last = turns[-1]
            asked = last.text.endswith("?")
            if last.speaker != line.speaker:
                if position == 0 and asked and not after_opening:
                    line = self._prefix(line, pools["shrug"])
                elif (
                    position == 0
                    and not after_opening
                    and line.words() < 16
                    and self.rng.random() < 0.5
                ):
                    line = self._prefix(line, pools["ack"])
                turns.append(line)
                continue
            fits = last.words() + line.words() <= MAX_WORDS
            chance = 1.0 if position else 0.5
            mergeable = fits and not asked and not (last.photo and line.photo)
            if mergeable and self.rng.random() < chance:
                turns[-1] = Line(
                    line.speaker,
                    f"{last.text} {line.text}",
                    last.facts | line.facts,
                    last.photo or line.photo,
                )
                continue
            if after_opening and position == 0:
                pool = "bridge_hello"
            elif asked:
                pool = "bridge_q"
            else:
                pool = "bridge" if position == 0 else "backchannel"
            other = 1 - line.speaker
            names = {"me": self.people[other].name, "you": self.people[line.speaker].name}
            turns.append(self._line(other, pools[pool], names, frozenset()))
            turns.append(line)

    def _prefix(self, line: Line, pool: Sequence[str]) -> Line:
        lead = self.filler(self.filler.pick(pool), {})
        if len(lead.split()) + line.words() > MAX_WORDS:
            return line
        return Line(line.speaker, f"{lead} {line.text}", line.facts, line.photo)

    def _render(
        self,
        gap: str,
        stories: Sequence[list[Line]],
        small: Sequence[int],
        views: Sequence[Mapping[str, Value]],
    ) -> list[Line]:
        """The session with a small-talk exchange before story ``i`` for each ``i`` in
        ``small`` (``len(stories)``: before the goodbye). Each exchange is opened by whoever
        did not speak last and is as long as lets the next block open with the other one."""
        filler = self.catalog.filler
        items: list[list[Line] | None] = []
        for index in range(len(stories) + 1):
            items += [None] * small.count(index)
            if index < len(stories):
                items.append(stories[index])
        turns: list[Line] = []
        opener = self.rng.randrange(2)
        greeted = bool(items) and self.rng.random() < 0.65
        if greeted:
            self._greet(turns, gap, items, views, opener)
        else:
            self._append(turns, self._exchange(filler["openings"][gap], views, opener), False)
        for index, item in enumerate(items):
            if item is None:
                last = turns[-1].speaker
                following = items[index + 1] if index + 1 < len(items) else None
                parity = None if not following else int(following[0].speaker == last)
                item = self._exchange(self.exchanges, views, 1 - last, parity, aside=True)
            self._append(turns, item, index == 0 and not greeted)
        self._goodbye(turns, views, bool(items))
        return turns

    def _greet(
        self,
        turns: list[Line],
        gap: str,
        items: list[list[Line] | None],
        views: Sequence[Mapping[str, Value]],
        opener: int,
    ) -> None:
        """A one-line greeting that runs into the first block: the greeter goes straight on
        with news, or the other says hello back at the start of theirs."""
        pools = self.catalog.filler["pools"]
        turns.append(self._line(opener, pools[f"greet_{gap}"], views[opener], frozenset()))
        first = items.pop(0)
        if first is None:
            first = self._exchange(self.exchanges, views, self.rng.randrange(2), aside=True)
        line = first[0]
        if line.speaker != opener:
            hello = self.filler(self.filler.pick(pools["greet_back"]), views[line.speaker])
            if len(hello.split()) + line.words() <= MAX_WORDS:
                line = Line(line.speaker, f"{hello} {line.text}", line.facts, line.photo)
        self._append(turns, [line], True)
        self._append(turns, first[1:], False, start=1)

    def _goodbye(
        self, turns: list[Line], views: Sequence[Mapping[str, Value]], after_items: bool
    ) -> None:
        """A goodbye tacked onto the last turn and answered, or a goodbye exchange."""
        pools = self.catalog.filler["pools"]
        last = turns[-1]
        if not last.text.endswith("?") and self.rng.random() < 0.6:
            bye = self.filler(self.filler.pick(pools["goodbye"]), views[last.speaker])
            if last.words() + len(bye.split()) <= MAX_WORDS:
                turns[-1] = Line(last.speaker, f"{last.text} {bye}", last.facts, last.photo)
                other = 1 - last.speaker
                turns.append(self._line(other, pools["bye_back"], views[other], frozenset()))
                return
        closing = self._exchange(self.catalog.filler["closings"], views, 1 - last.speaker)
        self._append(turns, closing, not after_items)

    def write(self, session: int) -> list[Line]:
        rng = self.rng
        stories = [
            self._stage(instance, number) for instance, number in self.stages.get(session, [])
        ]
        rng.shuffle(stories)
        if session == 0:
            gap = "first"
        else:
            days = (self.dates[session] - self.dates[session - 1]).days
            gap = "short" if days <= 5 else "long" if days >= 30 else "medium"
        self.hour = self.dates[session].hour
        views = [self.talk.values(0, session), self.talk.values(1, session)]
        target = round(rng.triangular(MIN_TURNS, MAX_TURNS, 18))
        spare = target - 4 - sum(len(block) for block in stories)
        small = [rng.randint(0, len(stories)) for _ in range(max(0, round(spare / 2.4)))]
        turns = self._render(gap, stories, small, views)
        while len(turns) > MAX_TURNS and small:
            small.pop()
            turns = self._render(gap, stories, small, views)
        while len(turns) < MIN_TURNS:
            small.append(rng.randint(0, len(stories)))
            turns = self._render(gap, stories, small, views)
        if len(turns) > MAX_TURNS:
            raise ValueError(f"session {session + 1} has {len(turns)} turns")
        return [self.talk.styled(turn) for turn in turns]
