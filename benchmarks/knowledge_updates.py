"""Knowledge that updates: does the newest value of a fact answer a "current value" question,
and do two facts that hold together both stay current?

Reads benchmarks/data/knowledge_updates.json (written by hand, independently of the service's
update rules; its split into dev and held-out halves is fixed in the file). Each case is a fresh
user scope in one embedded store (build_container, in process, default layer): its distractors,
then the old statement (update) or the first (coexist), then the new or the second, each a
memory.add in that order so creation times increase; then memory.search of the question
(limit 10), then the stored memories read back (counting no access).

- update cases: the new statement should rank first ("current at rank 1"); "stale at rank 1"
  when the old one does; "marked superseded" when writing the new one set the old memory's
  superseded_by / valid_to.
- coexist cases (both statements true at once): "false supersession" when the second marked
  the first superseded; "first in top 3" when the first still ranks in the top 3 for its
  question.
- wrong supersession of a distractor (someone else's value, small talk) is counted in both.

    .venv/bin/python benchmarks/knowledge_updates.py [--split dev|heldout|all] [--verbose]
        [--json] [--data FILE.json]

Tune on dev; held-out figures are the ones to quote, and its cases are not to be read while
changing the method.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcore.adapters.db.migrate import upgrade
from agentcore.bootstrap import Container, build_container
from agentcore.config import Settings
from agentcore.domain.models import Memory, ScopeIds
from agentcore.domain.records import NewMemory
from agentcore.services.retrieval import SearchQuery

DEFAULT = Path(__file__).resolve().parent / "data" / "knowledge_updates.json"
SPLITS = ("dev", "heldout")
KINDS = ("update", "coexist")
LIMIT = 10
TOP = 3  # a coexisting first statement should stay in the top 3


@dataclass(frozen=True)
class Case:
    id: str
    kind: str  # "update" or "coexist"
    attribute: str
    subject: str
    person: str
    dated: bool
    phrasing: str
    first: str  # update: the old statement
    second: str  # update: the new statement
    question: str
    question_kind: str
    distractors: tuple[str, ...]
    split: str


@dataclass(frozen=True)
class Outcome:
    case: Case
    first_rank: int  # 1-based, 0 when not among the results
    second_rank: int
    first_superseded: bool  # superseded_by or valid_to set on the first (old) memory
    distractors_superseded: int
    search_ms: float


def read_cases(path: Path) -> list[Case]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for c in data["cases"]:
        if c["kind"] not in KINDS or c["split"] not in SPLITS:
            raise ValueError(f"{c['id']}: kind {c['kind']!r}, split {c['split']!r}")
        first, second = ("old", "new") if c["kind"] == "update" else ("first", "second")
        if first not in c:  # a set that names both statements of every case "old" and "new"
            first, second = "old", "new"
        out.append(
            Case(
                id=c["id"],
                kind=c["kind"],
                attribute=c["attribute"],
                subject=c["subject"],
                person=c["person"],
                dated=bool(c["dated"]),
                phrasing=c.get("phrasing", ""),
                first=c[first],
                second=c[second],
                question=c["question"],
                question_kind=c["question_kind"],
                distractors=tuple(c["distractors"]),
                split=c["split"],
            )
        )
    return out


def superseded(memory: Memory) -> bool:
    return memory.superseded_by is not None or memory.valid_to is not None


async def run_case(container: Container, case: Case) -> Outcome:
    scope = ScopeIds(user_id=f"ku-{case.id}")
    distractors = [await container.memory.add(NewMemory(text, scope)) for text in case.distractors]
    first = await container.memory.add(NewMemory(case.first, scope))
    second = await container.memory.add(NewMemory(case.second, scope))
    started = time.perf_counter()
    outcome = await container.memory.search(SearchQuery(case.question, scope, limit=LIMIT))
    search_ms = (time.perf_counter() - started) * 1000
    ids = [r.memory.id for r in outcome.results]
    stored = await container.memory.read([first.id, *(d.id for d in distractors)], scope)
    return Outcome(
        case=case,
        first_rank=ids.index(first.id) + 1 if first.id in ids else 0,
        second_rank=ids.index(second.id) + 1 if second.id in ids else 0,
        first_superseded=superseded(stored[0]),
        distractors_superseded=sum(1 for m in stored[1:] if superseded(m)),
        search_ms=search_ms,
    )


def pct(part: int, whole: int) -> float | None:
    return round(100 * part / whole, 1) if whole else None


def summarize(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    updates = [o for o in outcomes if o.case.kind == "update"]
    coexist = [o for o in outcomes if o.case.kind == "coexist"]
    current = sum(1 for o in updates if o.second_rank == 1)
    stale = sum(1 for o in updates if o.first_rank == 1)
    marked = sum(1 for o in updates if o.first_superseded)
    false_sup = sum(1 for o in coexist if o.first_superseded)
    kept = sum(1 for o in coexist if 0 < o.first_rank <= TOP)
    wrong_distractor = sum(1 for o in outcomes if o.distractors_superseded)
    return {
        "update_cases": len(updates),
        "current_at_1_pct": pct(current, len(updates)),
        "stale_at_1_pct": pct(stale, len(updates)),
        "marked_superseded_pct": pct(marked, len(updates)),
        "coexist_cases": len(coexist),
        "false_supersession_pct": pct(false_sup, len(coexist)),
        "coexist_first_top3_pct": pct(kept, len(coexist)),
        "cases_with_a_distractor_superseded": wrong_distractor,
        "counts": {
            "current_at_1": current,
            "stale_at_1": stale,
            "marked_superseded": marked,
            "false_supersession": false_sup,
            "coexist_first_top3": kept,
        },
        "update_current_at_1_by_phrasing": by_group(
            updates, lambda o: o.case.phrasing, lambda o: o.second_rank == 1
        ),
        "update_marked_superseded_by_phrasing": by_group(
            updates, lambda o: o.case.phrasing, lambda o: o.first_superseded
        ),
        "update_current_at_1_by_question_kind": by_group(
            updates, lambda o: o.case.question_kind, lambda o: o.second_rank == 1
        ),
        "update_current_at_1_by_person": by_group(
            updates, lambda o: o.case.person, lambda o: o.second_rank == 1
        ),
        "coexist_false_supersession_by_phrasing": by_group(
            coexist, lambda o: o.case.phrasing, lambda o: o.first_superseded
        ),
        "coexist_first_top3_by_phrasing": by_group(
            coexist, lambda o: o.case.phrasing, lambda o: 0 < o.first_rank <= TOP
        ),
    }


def by_group(
    outcomes: Iterable[Outcome], key: Callable[[Outcome], str], hit: Callable[[Outcome], bool]
) -> dict[str, dict[str, int]]:
    """group → {hits, cases}."""
    groups: dict[str, dict[str, int]] = {}
    for o in outcomes:
        counts = groups.setdefault(key(o), {"hits": 0, "cases": 0})
        counts["hits"] += 1 if hit(o) else 0
        counts["cases"] += 1
    return dict(sorted(groups.items()))


def failures(outcomes: Sequence[Outcome]) -> list[str]:
    lines = []
    for o in outcomes:
        c = o.case
        ranks = f"first@{o.first_rank} second@{o.second_rank}"
        if c.kind == "update":
            ranks = f"new@{o.second_rank} old@{o.first_rank}"
            problems = [] if o.second_rank == 1 else ["not current"]
            if not o.first_superseded:
                problems.append("not marked")
        else:
            problems = ["FALSE SUPERSESSION"] if o.first_superseded else []
            if not 0 < o.first_rank <= TOP:
                problems.append(f"first not in top {TOP}")
        if o.distractors_superseded:
            problems.append(f"{o.distractors_superseded} distractor(s) superseded")
        if problems:
            lines.append(
                f"  {c.id} [{c.split} {c.attribute} / {c.phrasing} / {c.person}"
                f"{' / dated' if c.dated else ''}] {ranks}: {', '.join(problems)}\n"
                f"      {c.first!r} -> {c.second!r}\n      Q: {c.question!r}"
            )
    return lines


def print_summary(name: str, s: dict[str, Any]) -> None:
    n = s["counts"]

    def line(label: str, key: str, note: str = "") -> str:
        value = "-" if s[f"{key}_pct"] is None else f"{s[f'{key}_pct']}%"
        return f"  {label:<20}{n[key]:>4} = {value}{note}\n"

    print(
        f"{name}: {s['update_cases']} update cases, {s['coexist_cases']} coexist cases\n"
        + line("current at rank 1", "current_at_1")
        + line("stale at rank 1", "stale_at_1")
        + line("marked superseded", "marked_superseded")
        + line("false supersession", "false_supersession", "  (coexist)")
        + line(f"first in top {TOP}", "coexist_first_top3", "  (coexist)")
        + f"  cases where a distractor was superseded: {s['cases_with_a_distractor_superseded']}"
    )
    for label, key in (
        ("update current@1 by phrasing", "update_current_at_1_by_phrasing"),
        ("update marked by phrasing", "update_marked_superseded_by_phrasing"),
        ("update current@1 by question", "update_current_at_1_by_question_kind"),
        ("update current@1 by person", "update_current_at_1_by_person"),
        ("coexist false supersession", "coexist_false_supersession_by_phrasing"),
        ("coexist first in top 3", "coexist_first_top3_by_phrasing"),
    ):
        if s[key]:
            groups = ", ".join(f"{g} {v['hits']}/{v['cases']}" for g, v in s[key].items())
            print(f"    {label:<30} {groups}")


async def run(cases: Sequence[Case]) -> tuple[list[Outcome], float]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(agentcore_data_dir=Path(tmp))
        await asyncio.to_thread(upgrade, settings.sqlalchemy_url)
        container = await build_container(settings)
        started = time.perf_counter()
        try:
            outcomes = [await run_case(container, c) for c in cases]
        finally:
            await container.aclose()
    return outcomes, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--split", choices=(*SPLITS, "all"), default="all")
    parser.add_argument("--verbose", action="store_true", help="list the failing cases")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--data", type=Path, default=DEFAULT, help="the cases (JSON)")
    args = parser.parse_args()
    cases = [c for c in read_cases(args.data) if args.split in ("all", c.split)]
    outcomes, seconds = asyncio.run(run(cases))
    splits = SPLITS if args.split == "all" else (args.split,)
    result: dict[str, Any] = {
        "data": str(args.data),
        "split": args.split,
        "seconds": round(seconds, 1),
        "cases": len(outcomes),
        "search_ms_p50": round(statistics.median(o.search_ms for o in outcomes), 1),
        "search_ms_p95": round(statistics.quantiles([o.search_ms for o in outcomes], n=20)[18], 1)
        if len(outcomes) > 1
        else None,
        "splits": {
            name: summarize([o for o in outcomes if o.case.split == name]) for name in splits
        },
    }
    if args.split == "all":
        result["splits"]["all"] = summarize(outcomes)
    if args.verbose:
        result["failures"] = {
            name: [o.case.id for o in outcomes if o.case.split == name and failures([o])]
            for name in splits
        }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    if args.verbose:
        for name in splits:
            lines = failures([o for o in outcomes if o.case.split == name])
            print(f"{name}: {len(lines)} failing cases")
            print("\n".join(lines))
    for name, summary in result["splits"].items():
        print_summary(name, summary)
    print(
        f"{result['cases']} cases in {result['seconds']} s; search p50 "
        f"{result['search_ms_p50']} ms, p95 {result['search_ms_p95']} ms"
    )


if __name__ == "__main__":
    main()
