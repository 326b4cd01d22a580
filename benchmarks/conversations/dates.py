"""Session dates and the ways people say when something happened.

A story's stage happens some days before the session it is told in; ``told`` picks a phrase
for that distance that is true of the two dates ("yesterday", "last weekend", "back in March",
from ``time.json``) and the answer a temporal question gets from it, anchored like a reader
would anchor it: on the session's date ("the weekend before 14 May 2023") or on the day itself.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

MONTHS = (
    *("January", "February", "March", "April", "May", "June", "July"),
    *("August", "September", "October", "November", "December"),
)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
SESSION_FORMAT = "%I:%M %p on %d %B, %Y"


@dataclass(frozen=True, slots=True)
class Told:
    phrase: str  # "last weekend"
    answer: str  # "the weekend before 14 May 2023"
    day: date


def format_day(day: date) -> str:
    return f"{day.day} {MONTHS[day.month - 1]} {day.year}"


def month_year(day: date) -> str:
    return f"{MONTHS[day.month - 1]} {day.year}"


def format_session(moment: datetime) -> str:
    """LoCoMo's session stamp: ``1:56 pm on 8 May, 2023``."""
    hour = moment.hour % 12 or 12
    half = "am" if moment.hour < 12 else "pm"
    month = MONTHS[moment.month - 1]
    return f"{hour}:{moment.minute:02d} {half} on {moment.day} {month}, {moment.year}"


def parse_session(stamp: str) -> datetime:
    return datetime.strptime(stamp, SESSION_FORMAT)


def session_dates(rng: random.Random, count: int) -> list[datetime]:
    """``count`` moments over 6 to 18 months, at irregular gaps of at least a day."""
    start = date(2021, 1, 4) + timedelta(days=rng.randint(0, 4 * 365))
    span = rng.randint(182, 545)
    weights = [rng.expovariate(1.0) + 0.12 for _ in range(count - 1)]
    scale = span / sum(weights)
    day = start
    moments = []
    for index in range(count):
        if index:
            day += timedelta(days=max(1, round(weights[index - 1] * scale)))
        minute = rng.randint(7 * 60, 22 * 60 + 30)
        moments.append(datetime(day.year, day.month, day.day, minute // 60, minute % 60))
    return moments


def _ordinal(number: int) -> str:
    suffix = (
        "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    )
    return f"{number}{suffix}"


def _fits(rule: Mapping[str, Any], happened: date, said: date) -> bool:
    days = (said - happened).days
    if not rule["min"] <= days <= rule["max"]:
        return False
    if rule.get("weekend"):
        next_week = happened.isocalendar()[:2] != said.isocalendar()[:2]
        if happened.weekday() < 5 or not next_week or days > 8:
            return False
    if rule.get("same_week") and happened.isocalendar()[:2] != said.isocalendar()[:2]:
        return False
    previous = (said.replace(day=1) - timedelta(days=1)).replace(day=1)
    if rule.get("prev_month") and happened.replace(day=1) != previous:
        return False
    if rule.get("same_month") and happened.replace(day=1) != said.replace(day=1):
        return False
    if rule.get("other_month") and happened.replace(day=1) == said.replace(day=1):
        return False
    return not (rule.get("other_year") and happened.year == said.year)


def told(rng: random.Random, time: Mapping[str, Any], happened: date, said: date) -> Told:
    """A phrase for when ``happened`` was, said on ``said``, and the answer it supports."""
    rules = [rule for rule in time["past"] if _fits(rule, happened, said)]
    if not rules:
        raise ValueError(f"no way to say {happened} on {said}")
    rule = rng.choices(rules, weights=[float(rule.get("weight", 1.0)) for rule in rules])[0]
    slots = {
        "weekday": WEEKDAYS[happened.weekday()],
        "month": MONTHS[happened.month - 1],
        "day_ord": _ordinal(happened.day),
        "year": str(happened.year),
    }
    phrase = rng.choice(rule["say"]).format(**slots)
    answer = time["answers"][rule["answer"]].format(
        date=format_day(happened),
        session=format_day(said),
        month_year=month_year(happened),
        year=happened.year,
        weekday=WEEKDAYS[happened.weekday()],
    )
    return Told(phrase, answer, happened)
