"""Relative times in extracted facts, resolved against when the text was said:
"yesterday" -> "on 7 May 2023", "next month" -> "in June 2023", "last Saturday" -> a date.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
            "seven": 7, "eight": 8, "nine": 9, "ten": 10}  # fmt: skip
_TIME_WORDS = (
    r"yesterday|today|tonight|tomorrow|last night|this (?:morning|afternoon|evening)"
    r"|(?P<rel>last|this|next|past) (?P<span>week|weekend|month|year|summer|winter|spring|fall"
    r"|autumn)|(?P<n>an?|(?:a )?few|one|two|three|four|five|six|seven|eight|nine|ten|\d+"
    r"|a couple of) (?P<unit>day|week|month|year)s? ago"
    r"|(?P<wrel>last|this|next) (?P<wd>mon|tue|wed|thu|fri|sat|sun)[a-z]*"
)
_WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
TIME = re.compile(rf"\b(?:{_TIME_WORDS})\b", re.IGNORECASE)
_LEADING_TIME = re.compile(
    rf"^(?P<t>{_TIME_WORDS}|recently|lately|the other day|a while ago|earlier)\b[\s,]*",
    re.IGNORECASE,
)


def split_leading_time(clause: str) -> tuple[str | None, str]:
    """A time phrase that opens a clause ("Last week, I..."), and the rest of the clause."""
    match = _LEADING_TIME.match(clause)
    if match is None:
        return None, clause
    phrase = match.group("t")
    resolvable = TIME.fullmatch(phrase) is not None
    return (phrase if resolvable else None), clause[match.end() :]


def resolve_times(statement: str, at: datetime | None) -> str:
    """Relative times in ``statement`` made absolute against ``at`` (unchanged without it)."""
    if at is None:
        return statement
    resolved = TIME.sub(lambda m: _when(m, at), statement)
    # "for tonight" -> "for 7 May 2023", not "for on 7 May 2023"
    return re.sub(r"\b(for|by|until|till|since|from|before|after) (?:on|in) ", r"\1 ", resolved)


def _day(at: datetime) -> str:
    return f"{at.day} {at:%B} {at.year}"


def _month(at: datetime, delta: int) -> str:
    index = at.year * 12 + at.month - 1 + delta
    return f"{datetime(index // 12, index % 12 + 1, 1):%B} {index // 12}"


def _when(match: re.Match[str], at: datetime) -> str:
    word = match.group(0).lower()
    fixed = {"yesterday": -1, "last night": -1, "today": 0, "tonight": 0, "tomorrow": 1}
    if word in fixed or (word.startswith("this ") and match.group("rel") is None):
        return f"on {_day(at + timedelta(days=fixed.get(word, 0)))}"
    if match.group("unit"):
        return _ago(match.group("n").lower(), match.group("unit").lower(), at)
    if match.group("wd"):
        return f"on {_day(_weekday(match.group('wrel').lower(), match.group('wd').lower(), at))}"
    rel, span = match.group("rel").lower(), match.group("span").lower()
    rel = "last" if rel == "past" else rel
    if span == "month":
        return f"in {_month(at, {'last': -1, 'this': 0, 'next': 1}[rel])}"
    if span == "year":
        return f"in {at.year + {'last': -1, 'this': 0, 'next': 1}[rel]}"
    prep = "on" if span == "weekend" else "in"
    side = {"last": "before", "this": "of", "next": "after"}[rel]
    return f"{prep} the {span} {side} {_day(at)}"


def _weekday(rel: str, name: str, at: datetime) -> datetime:
    """The weekday ``name`` before (last), after (next) or in the week of (this) ``at``."""
    wanted = _WEEKDAYS.index(name)
    if rel == "last":
        return at - timedelta(days=(at.weekday() - wanted) % 7 or 7)
    ahead = (wanted - at.weekday()) % 7
    return at + timedelta(days=ahead or 7 if rel == "next" else ahead)


def _ago(amount: str, unit: str, at: datetime) -> str:
    n = _NUMBERS.get(amount) or (int(amount) if amount.isdigit() else None)
    if n is None:  # "a few", "a couple of": keep the vagueness, anchor it
        return f"{amount.removeprefix('a ')} {unit}s before {_day(at)}"
    if unit == "day":
        return f"on {_day(at - timedelta(days=n))}"
    if unit == "week":
        return f"in the week of {_day(at - timedelta(weeks=n))}"
    if unit == "month":
        return f"in {_month(at, -n)}"
    return f"in {at.year - n}"
