"""Error pattern detection (FR-4.2) on generated error streams with known planted patterns.

The generator mixes noise errors (every type, a context and a description of their own: no tool,
resource or description template repeats) with planted patterns: one error type recurring, one
type followed by another within a task, and a cluster of errors of mixed types in one context
(same tool and operation, paraphrased descriptions, varying extra context). Many seeds and
thresholds; planted patterns must be found (≥ 80%) and noise-only streams, where no type
reaches the threshold, must yield no pattern at all.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from agentcore.domain.error_patterns import context_patterns, detect_patterns
from agentcore.domain.error_records import ErrorPattern, ErrorRecord, ErrorType, PatternType

TYPES = list(ErrorType)
T0 = datetime(2026, 1, 1, tzinfo=UTC)
_SYLLABLES = "ka lo mi ne ru sa ti vo ba de fi gu ha je ko lu ma no pe ro se tu vi wa yo zu"
_OPERATIONS = "read write lookup update delete list create sync"
_NOUNS = (
    "account address amount archive balance batch budget cache calendar cart catalog channel "
    "checkout city client column comment config contract coupon currency customer dashboard "
    "dataset deadline department device discount document domain draft email employee endpoint "
    "event export feature field file filter folder form forecast gateway graph group header "
    "image index inventory invoice issue item job key label language ledger license limit link "
    "listing location log manifest margin message metric milestone module network note order "
    "owner package page parameter partner password payment permission phone plan policy "
    "portfolio price product profile project quota receipt record region release report "
    "request resource role route schedule schema score segment sensor server session setting "
    "shipment signature snapshot source statement status stock subscription summary supplier "
    "survey table tag target tax team template tenant ticket timezone token topic total "
    "transaction user vendor version warehouse webhook workflow"
)
SYLLABLES, OPERATIONS, NOUNS = _SYLLABLES.split(), _OPERATIONS.split(), _NOUNS.split()
TEMPLATES = [
    "The {a} {b} did not match the expected {c}",
    "Used the wrong {a} when preparing the {b}",
    "Claimed the {a} had a {b} that does not exist",
    "Could not find the {a} needed for the {b}",
    "Lost track of the {a} after switching to the {b}",
    "Sent the {a} to the {b} instead of the {c}",
    "Reported a {a} value for the {b} without checking it",
    "Forgot the {a} constraint while editing the {b}",
    "Skipped validation of the {a} before updating the {b}",
    "Mixed up the {a} and the {b} in the reply",
    "Answered about the {a} with an invented {b}",
    "Asked for the {a} again although the {b} contained it",
    "Called the {a} endpoint with a stale {b}",
    "Overwrote the {a} of the {b} by mistake",
    "Summarized the {a} but dropped the {b} details",
    "Assumed the {a} was in the {b} without looking",
    "Quoted an outdated {a} from memory instead of the {b}",
    "Deleted the {a} while cleaning up the {b}",
    "Ignored the {a} limit when creating the {b}",
    "Repeated the {a} step and duplicated the {b}",
    "Misread the {a} as a {b}",
    "Did not know which {a} owns the {b}",
    "Returned the {a} of another {b}",
    "Left the {a} half finished before moving on to the {b}",
    "Translated the {a} but kept the original {b}",
    "Rounded the {a} and broke the {b} totals",
    "Cited a {a} that the {b} never mentioned",
    "Waited for the {a} although the {b} had already arrived",
    "Merged two {a} entries into one {b}",
    "Applied the {a} rule to every {b}",
    "Confused this week's {a} with last week's {b}",
    "Dropped the {a} header from the {b}",
]
CLUSTER_TEMPLATES = [
    "The {tool} {op} returned a stale {s0} for the {s1} {x}",
    "Stale {s0} while trying to {op} the {s1} {x}",
    "{Op} of the {s1} gave an outdated {s0}, {x} was wrong",
    "Used an old {s0} of the {s1} after the {op} call to {tool}",
]

Draft = tuple[ErrorType, str, dict[str, Any]]


@dataclass(frozen=True)
class Planted:
    kind: PatternType
    error_types: tuple[ErrorType, ...]
    ids: frozenset[str]


@dataclass
class Stream:
    records: list[ErrorRecord] = field(default_factory=list)
    planted: list[Planted] = field(default_factory=list)


class Generator:
    """Blocks of errors (a noise error, a planted pair, a cluster member) shuffled into one
    chronological stream; every tool, resource and description template of noise is used once."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.used: set[str] = set()
        self.templates = self.rng.sample(TEMPLATES, len(TEMPLATES))
        self.blocks: list[list[tuple[Draft, int]]] = []  # (error, index of its plant or -1)
        self.plants: list[tuple[PatternType, tuple[ErrorType, ...]]] = []

    def _fresh(self, make: Callable[[], str]) -> str:
        while (name := make()) in self.used:
            pass
        self.used.add(name)
        return name

    def _tool(self) -> str:
        suffix = self.rng.choice(["_api", "_svc", "_tool", ""])
        return self._fresh(lambda: "".join(self.rng.choices(SYLLABLES, k=3)) + suffix)

    def _noise_error(self, error_type: ErrorType) -> Draft:
        a, b, c = self.rng.sample(NOUNS, 3)
        context = {
            "tool": self._tool(),
            "operation": self.rng.choice(OPERATIONS),
            "resource": self._fresh(lambda: self.rng.choice(NOUNS)),
            "step": self.rng.randint(1, 30),
        }
        return error_type, self.templates.pop().format(a=a, b=b, c=c), context

    def _plant(self, kind: PatternType, types: tuple[ErrorType, ...]) -> int:
        self.plants.append((kind, types))
        return len(self.plants) - 1

    def noise(self, count: int, per_type_below: int) -> None:
        """``count`` noise errors (at most ``per_type_below - 1`` of each type)."""
        pool = [t for t in TYPES for _ in range(per_type_below - 1)]
        for error_type in self.rng.sample(pool, min(count, len(pool))):
            self.blocks.append([(self._noise_error(error_type), -1)])

    def frequency(self, error_type: ErrorType, count: int) -> None:
        plant = self._plant(PatternType.FREQUENCY, (error_type,))
        self.blocks += [[(self._noise_error(error_type), plant)] for _ in range(count)]

    def sequence(self, first: ErrorType, then: ErrorType, count: int) -> None:
        plant = self._plant(PatternType.SEQUENCE, (first, then))
        for _ in range(count):
            pair = [self._noise_error(first), self._noise_error(then)]
            self.blocks.append([(error, plant) for error in pair])

    def cluster(self, size: int) -> None:
        rng = self.rng
        tool, op = self._tool(), rng.choice(OPERATIONS)
        s0, s1 = self._fresh(lambda: rng.choice(NOUNS)), self._fresh(lambda: rng.choice(NOUNS))
        plant = self._plant(PatternType.CONTEXT, ())
        for _ in range(size):
            text = rng.choice(CLUSTER_TEMPLATES)
            x = rng.choice(NOUNS)
            description = text.format(tool=tool, op=op, Op=op.capitalize(), s0=s0, s1=s1, x=x)
            context: dict[str, Any] = {"tool": tool, "operation": op, "step": rng.randint(1, 30)}
            if rng.random() < 0.7:
                context["resource"] = s1
            if rng.random() < 0.5:
                context["attempt"] = rng.randint(1, 3)
            self.blocks.append([((rng.choice(TYPES), description, context), plant)])

    def stream(self, task_id: str = "t1", start: datetime = T0) -> Stream:
        self.rng.shuffle(self.blocks)
        records: list[ErrorRecord] = []
        members: list[list[str]] = [[] for _ in self.plants]
        for (error_type, description, context), plant in (e for b in self.blocks for e in b):
            record = ErrorRecord(
                id=f"{task_id}-e{len(records):03d}",
                task_id=task_id,
                error_type=error_type,
                description=description,
                severity=round(self.rng.uniform(0.1, 1.0), 2),
                created_at=start + timedelta(minutes=len(records)),
                context=context,
            )
            records.append(record)
            if plant >= 0:
                members[plant].append(record.id)
        planted = [
            Planted(kind, types, frozenset(ids))
            for (kind, types), ids in zip(self.plants, members, strict=True)
        ]
        return Stream(records, planted)


def planted_stream(seed: int, threshold: int) -> Stream:
    gen = Generator(seed)
    first, then, frequent = gen.rng.sample(TYPES, 3)
    gen.noise(gen.rng.randint(3, 10), per_type_below=threshold)
    gen.frequency(frequent, gen.rng.randint(threshold, threshold + 2))
    gen.sequence(first, then, gen.rng.randint(threshold, threshold + 1))
    gen.cluster(gen.rng.randint(max(2, threshold), max(2, threshold) + 3))
    return gen.stream()


def matches(plant: Planted, pattern: ErrorPattern) -> bool:
    """A context pattern matches a planted cluster when each holds ≥ 80% of the other."""
    if pattern.pattern_type is not plant.kind:
        return False
    if plant.kind is not PatternType.CONTEXT:
        return pattern.error_types == plant.error_types
    shared = len(plant.ids & set(pattern.error_ids))
    return shared >= 0.8 * len(plant.ids) and shared >= 0.8 * len(pattern.error_ids)


SEEDS = range(80)
THRESHOLDS = (2, 3, 4)


def test_planted_patterns_are_found_across_seeds_and_thresholds() -> None:
    found = planted = 0
    by_kind: Counter[PatternType] = Counter()
    for threshold in THRESHOLDS:
        for seed in SEEDS:
            stream = planted_stream(seed, threshold)
            patterns = detect_patterns(stream.records, threshold)
            for plant in stream.planted:
                planted += 1
                hit = any(matches(plant, p) for p in patterns)
                found += hit
                by_kind[plant.kind] += not hit
    print(f"planted patterns found: {found}/{planted}; missed by kind: {dict(by_kind)}")
    assert found / planted >= 0.8


def noise_stream(seed: int, threshold: int, tasks: int = 1) -> list[ErrorRecord]:
    """Only noise: fewer than ``threshold`` errors of each type, nothing repeats."""
    gen = Generator(seed)
    gen.noise(4 * (threshold - 1), per_type_below=threshold)
    return gen.stream().records


def test_no_pattern_is_reported_in_noise_only_streams() -> None:
    reported = []
    for threshold in (2, 3, 4, 5):
        for seed in SEEDS:
            patterns = detect_patterns(noise_stream(seed, threshold), threshold)
            reported += [(threshold, seed, p.pattern_type.value) for p in patterns]
    assert reported == []


def test_context_clusters_hold_no_foreign_errors() -> None:
    """Precision of context patterns in planted streams: every reported cluster is ≥ 80% one
    planted cluster (noise errors and the other planted errors stay out)."""
    foreign = []
    for threshold in THRESHOLDS:
        for seed in SEEDS:
            stream = planted_stream(seed, threshold)
            for pattern in context_patterns(stream.records, threshold):
                if not any(matches(plant, pattern) for plant in stream.planted):
                    foreign.append((threshold, seed, pattern.description))
    assert foreign == []
