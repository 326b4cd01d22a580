"""Filling templates: ``[[a|b]]`` picks an alternative, ``{slot}`` a value (``{Slot}``
capitalizes it), ``{@pool}`` a line of a filler pool; values and pool lines may hold templates
themselves. Option values are drawn once per story with ``draw`` (``<pick list>``,
``<int lo hi>``, ``<choice a|b>``). Every random choice goes through the conversation's seeded
``rng``."""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence

from .catalog import Value

_ALT = re.compile(r"\[\[([^\[\]]*)\]\]")
_SLOT = re.compile(r"\{(@?)([A-Za-z][A-Za-z0-9_]*)\}")
_DRAW = re.compile(r"<(pick|int|choice) ([^<>]*)>")
_ARTICLE = re.compile(r"\b([Aa]) (?=[aeioAEIO]\w)")
_SPACE = re.compile(r"\s+")
_BEFORE_MARK = re.compile(r"\s+([,.!?;:])")

Values = Mapping[str, Value]


def tidy(text: str) -> str:
    text = _SPACE.sub(" ", text).strip()
    text = _BEFORE_MARK.sub(r"\1", text)
    text = _ARTICLE.sub(lambda m: m.group(1) + "n ", text)
    return text[:1].upper() + text[1:]


def draw(value: Value, rng: random.Random, lists: Mapping[str, Sequence[str]]) -> Value:
    """An option value with its ``<pick list>``, ``<int lo hi>`` and ``<choice a|b>`` draws
    made."""

    def one(match: re.Match[str]) -> str:
        kind: str = match.group(1)
        args: str = match.group(2)
        if kind == "int":
            low, high = args.split()
            return str(rng.randint(int(low), int(high)))
        if kind == "choice":
            return rng.choice(args.split("|"))
        return rng.choice(lists[args.strip()])

    if isinstance(value, tuple):
        return tuple(_DRAW.sub(one, item) for item in value)
    return _DRAW.sub(one, value)


class Filler:
    """Fills one conversation's templates. Pool lines and list values are picked among the
    least used so far, so a long conversation cycles through them before repeating."""

    __slots__ = ("pools", "rng", "uses")

    def __init__(self, rng: random.Random, pools: Mapping[str, Sequence[str]]) -> None:
        self.rng = rng
        self.pools = pools
        self.uses: dict[str, int] = {}

    def pick(self, options: Sequence[str]) -> str:
        low = min(self.uses.get(option, 0) for option in options)
        choice = self.rng.choice([option for option in options if self.uses.get(option, 0) == low])
        self.uses[choice] = self.uses.get(choice, 0) + 1
        return choice

    def __call__(self, template: str, values: Values) -> str:
        return tidy(self._fill(template, values, 0))

    def plain(self, template: str, values: Values) -> str:
        """Filled but not capitalized: a phrase to go inside a sentence."""
        text = _BEFORE_MARK.sub(r"\1", _SPACE.sub(" ", self._fill(template, values, 0)).strip())
        return _ARTICLE.sub(lambda m: m.group(1) + "n ", text)

    def _fill(self, template: str, values: Values, depth: int) -> str:
        if depth > 6:
            raise ValueError(f"templates nest too deep: {template}")
        text = template
        while _ALT.search(text):
            text = _ALT.sub(lambda m: self.rng.choice(m.group(1).split("|")), text)
        return _SLOT.sub(lambda m: self._slot(m, values, depth), text)

    def _slot(self, match: re.Match[str], values: Values, depth: int) -> str:
        pool, name = match.group(1), match.group(2)
        low = name[0].lower() + name[1:]
        if pool:
            raw: Value = self.pick(self.pools[low])
        elif low in values:
            raw = values[low]
        else:
            raise KeyError(f"no value for {{{name}}}")
        if isinstance(raw, tuple):
            raw = self.pick(raw)
        text = self._fill(raw, values, depth + 1)
        return text[:1].upper() + text[1:] if name[0].isupper() else text
