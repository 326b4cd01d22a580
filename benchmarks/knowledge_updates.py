"""Knowledge that updates: does the newest value of a fact answer a "current value" question
at once, and do two facts that hold together both stay current?

Starts `agentcore serve` (embedded default, or --mode production: PostgreSQL and Redis) and
runs every case of the chosen sets over HTTP JSON-RPC: a fresh user scope per case; its
distractors, then the old statement (update) or the first (coexist), then the new or the
second, each a memory.add in that order; then, as soon as the last add has answered (or after
--wait seconds), memory.search of the question (limit 10); then the statements read back
(memory.get).

- update cases: the new statement should rank first ("current at rank 1"); "stale at rank 1"
  when the old one does; "marked superseded" when writing the new one set the old memory's
  superseded_by / valid_to.
- coexist cases (both statements true at once): "false supersession" when the second marked
  the first superseded; "first in top 3" when the first still ranks in the top 3 for its
  question.
- wrong supersession of a distractor (someone else's value, small talk) is counted in both.
- with --unrelated, each first-person update case also runs as an "unrelated-newer" case:
  its old statement, then a newer first-person statement about something else (another
  case's old statement, of another attribute and domain; fixed seed), asked its question:
  "answer at rank 1" when the old statement still ranks first, "newer one above it" when the
  unrelated statement outranks it.

Sets (benchmarks/data/): a = knowledge_updates.json, b = knowledge_updates_b.json, c, d and e =
knowledge_updates_{c,d,e}.json; b to e were each written by someone who had seen neither the
method nor the sets before it, and run once as held-out data before joining the development
data (docs/benchmarks.md: Knowledge updates). --in-flight N runs N cases at once.

    .venv/bin/python benchmarks/knowledge_updates.py [--sets a b c d e] [--data FILE.json]
        [--mode embedded|production] [--wait 0] [--in-flight 1] [--unrelated] [--verbose]
        [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rpc_client import RpcConnection
from serving import running

DATA = Path(__file__).resolve().parent / "data"
SETS = {
    "a": DATA / "knowledge_updates.json",
    "b": DATA / "knowledge_updates_b.json",
    "c": DATA / "knowledge_updates_c.json",
    "d": DATA / "knowledge_updates_d.json",
    "e": DATA / "knowledge_updates_e.json",
}
KINDS = ("update", "coexist")
UNRELATED = "unrelated"  # made from the update cases (``unrelated_cases``)
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
    set: str
    domain: str = ""


@dataclass(frozen=True)
class Outcome:
    case: Case
    first_rank: int  # 1-based, 0 when not among the results
    second_rank: int
    first_superseded: bool  # superseded_by or valid_to set on the first (old) memory
    distractors_superseded: int
    search_ms: float
    add_ms: tuple[float, ...]  # each memory.add of the case


def read_cases(path: Path, name: str) -> list[Case]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for c in data["cases"]:
        if c["kind"] not in KINDS:
            raise ValueError(f"{c['id']}: kind {c['kind']!r}")
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
                set=name,
                domain=c.get("domain", ""),
            )
        )
    return out


def unrelated_cases(cases: Sequence[Case], seed: int = 7) -> list[Case]:
    """For each first-person update case: its old statement, then a newer first-person
    statement about something else (the old statement of a case of another attribute and
    domain), asked the case's question. The old statement still answers it; the newer one
    must not rank above it."""
    mine = [c for c in cases if c.kind == "update" and c.person == "first"]
    rng = random.Random(seed)
    made = []
    for case in mine:
        others = [
            o
            for o in mine
            if o.attribute != case.attribute and (o.domain != case.domain or not case.domain)
        ]
        other = rng.choice(others)
        made.append(
            dataclasses.replace(case, id=f"{case.id}-u", kind=UNRELATED, second=other.first)
        )
    return made


class Caller:
    def __init__(self, port: int) -> None:
        self.connection = RpcConnection("127.0.0.1", port)

    async def __call__(self, method: str, **params: Any) -> dict[str, Any]:
        reply = await self.connection.call(method, params)
        if "error" in reply:
            raise SystemExit(f"{method} failed: {reply['error']}")
        result: dict[str, Any] = reply["result"]
        return result


async def run_case(rpc: Caller, case: Case, wait: float) -> Outcome:
    scope = {"user_id": f"ku-{case.set}-{case.id}"}
    ids, add_ms = [], []
    for text in (*case.distractors, case.first, case.second):
        started = time.perf_counter()
        ids.append((await rpc("memory.add", content=text, **scope))["memory_id"])
        add_ms.append((time.perf_counter() - started) * 1000)
    *distractors, first, second = ids
    if wait:
        await asyncio.sleep(wait)
    started = time.perf_counter()
    found = await rpc("memory.search", query=case.question, limit=LIMIT, **scope)
    search_ms = (time.perf_counter() - started) * 1000
    ranked = [r["memory"]["id"] for r in found["results"]]
    stored = [await rpc("memory.get", memory_id=i, **scope) for i in (first, *distractors)]
    return Outcome(
        case=case,
        first_rank=ranked.index(first) + 1 if first in ranked else 0,
        second_rank=ranked.index(second) + 1 if second in ranked else 0,
        first_superseded=superseded(stored[0]),
        distractors_superseded=sum(1 for m in stored[1:] if superseded(m)),
        search_ms=search_ms,
        add_ms=tuple(add_ms),
    )


def superseded(memory: dict[str, Any]) -> bool:
    return memory.get("superseded_by") is not None or memory.get("valid_to") is not None


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
    unrelated = [o for o in outcomes if o.case.kind == UNRELATED]
    answer_first = sum(1 for o in unrelated if o.first_rank == 1)
    passed = sum(
        1 for o in unrelated if o.second_rank and (not o.first_rank or o.second_rank < o.first_rank)
    )
    return {
        "unrelated_cases": len(unrelated),
        "unrelated_answer_at_1_pct": pct(answer_first, len(unrelated)),
        "unrelated_newer_above_pct": pct(passed, len(unrelated)),
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
            "unrelated_answer_at_1": answer_first,
            "unrelated_newer_above": passed,
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
        "update_current_at_1_by_domain": {
            domain: counts
            for domain, counts in by_group(
                updates, lambda o: o.case.domain, lambda o: o.second_rank == 1
            ).items()
            if domain
        },
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
        elif c.kind == UNRELATED:
            problems = [] if o.first_rank == 1 else [f"answer at {o.first_rank}"]
        else:
            problems = ["FALSE SUPERSESSION"] if o.first_superseded else []
            if not 0 < o.first_rank <= TOP:
                problems.append(f"first not in top {TOP}")
        if o.distractors_superseded:
            problems.append(f"{o.distractors_superseded} distractor(s) superseded")
        if problems:
            lines.append(
                f"  {c.id} [{c.set} {c.attribute} / {c.phrasing} / {c.person}"
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
    if s["unrelated_cases"]:
        print(
            f"  {s['unrelated_cases']} unrelated-newer cases\n"
            + line("answer at rank 1", "unrelated_answer_at_1")
            + line("newer one above it", "unrelated_newer_above")
        )
    for label, key in (
        ("update current@1 by phrasing", "update_current_at_1_by_phrasing"),
        ("update marked by phrasing", "update_marked_superseded_by_phrasing"),
        ("update current@1 by question", "update_current_at_1_by_question_kind"),
        ("update current@1 by person", "update_current_at_1_by_person"),
        ("update current@1 by domain", "update_current_at_1_by_domain"),
        ("coexist false supersession", "coexist_false_supersession_by_phrasing"),
        ("coexist first in top 3", "coexist_first_top3_by_phrasing"),
    ):
        if s[key]:
            groups = ", ".join(f"{g} {v['hits']}/{v['cases']}" for g, v in s[key].items())
            print(f"    {label:<30} {groups}")


async def run_all(port: int, cases: Sequence[Case], wait: float, in_flight: int) -> list[Outcome]:
    queue = list(reversed(cases))
    outcomes: list[Outcome] = []

    async def worker() -> None:
        rpc = Caller(port)
        while queue:
            outcomes.append(await run_case(rpc, queue.pop(), wait))
        await rpc.connection.close()

    await asyncio.gather(*(worker() for _ in range(in_flight)))
    order = {id(c): n for n, c in enumerate(cases)}
    return sorted(outcomes, key=lambda o: order[id(o.case)])


def run(
    cases: Sequence[Case], mode: str, wait: float, in_flight: int
) -> tuple[list[Outcome], float]:
    with running(mode) as (port, _):
        started = time.perf_counter()
        outcomes = asyncio.run(run_all(port, cases, wait, in_flight))
        seconds = time.perf_counter() - started
    return outcomes, seconds


def p95(values: Sequence[float]) -> float:
    return statistics.quantiles(values, n=20)[18] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--sets", nargs="*", choices=sorted(SETS), default=None)
    parser.add_argument("--data", type=Path, action="append", default=[], help="more cases")
    parser.add_argument("--mode", choices=("embedded", "production"), default="embedded")
    parser.add_argument("--wait", type=float, default=0.0, help="seconds before each search")
    parser.add_argument("--in-flight", type=int, default=1, help="cases run at once")
    parser.add_argument(
        "--unrelated", action="store_true", help="also the unrelated-newer cases (module doc)"
    )
    parser.add_argument("--verbose", action="store_true", help="list the failing cases")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args()
    names = args.sets if args.sets is not None else [n for n, p in SETS.items() if p.exists()]
    sources = [(name, SETS[name]) for name in names] + [(p.stem, p) for p in args.data]
    cases = [case for name, path in sources for case in read_cases(path, name)]
    if args.unrelated:
        cases += unrelated_cases(cases)
    outcomes, seconds = run(cases, args.mode, args.wait, args.in_flight)
    searches = [o.search_ms for o in outcomes]
    adds = [ms for o in outcomes for ms in o.add_ms]
    result: dict[str, Any] = {
        "mode": args.mode,
        "wait_s": args.wait,
        "in_flight": args.in_flight,
        "seconds": round(seconds, 1),
        "cases": len(outcomes),
        "search_ms_p50": round(statistics.median(searches), 1),
        "search_ms_p95": round(p95(searches), 1),
        "add_ms_p50": round(statistics.median(adds), 1),
        "add_ms_p95": round(p95(adds), 1),
        "sets": {
            name: summarize([o for o in outcomes if o.case.set == name]) for name, _ in sources
        },
    }
    if args.verbose:
        result["failures"] = {
            name: [o.case.id for o in outcomes if o.case.set == name and failures([o])]
            for name, _ in sources
        }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    if args.verbose:
        for name, _ in sources:
            lines = failures([o for o in outcomes if o.case.set == name])
            print(f"{name}: {len(lines)} failing cases")
            print("\n".join(lines))
    for name, summary in result["sets"].items():
        print_summary(f"set {name}", summary)
    print(
        f"{result['cases']} cases in {result['seconds']} s ({args.mode}, wait {args.wait} s, "
        f"{args.in_flight} in flight); search p50 {result['search_ms_p50']} ms, p95 "
        f"{result['search_ms_p95']} ms; memory.add p50 {result['add_ms_p50']} ms, p95 "
        f"{result['add_ms_p95']} ms"
    )


if __name__ == "__main__":
    main()
