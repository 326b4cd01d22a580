"""``generate_traces``: a trace per (seed, index, size), each stage built and then validated."""

from __future__ import annotations

import random
from datetime import date, timedelta

from .catalog import Catalog, Domain, load_catalog
from .fill import Ctx, draw
from .model import STAGES, TaskTrace
from .stage import KEYWORD_RE, build_stage

_SIZES: dict[str, dict[str, tuple[int, int]]] = {
    "mixed": {
        "planning": (30, 50),
        "execution": (60, 150),
        "reflection": (30, 60),
        "verification": (30, 70),
    },
    "small": dict.fromkeys(STAGES, (30, 40)),
}


def _context(catalog: Catalog, domain: Domain, rng: random.Random) -> Ctx:
    params = {name: draw(spec, rng) for name, spec in domain.params.items()}
    cause, fix = rng.choice(domain.causes)
    wrong = rng.choice(domain.wrongs)
    pools: dict[str, tuple[str, ...]] = {
        "component": domain.components,
        "file": domain.files,
        "py_file": tuple(f for f in domain.files if f.endswith(".py")),
        "test_file": domain.test_files,
        "test": domain.tests,
        "func": domain.funcs,
        "table": domain.tables,
        "host": domain.hosts,
        "symptom": domain.symptoms,
        "finding": tuple(c for c, _ in domain.causes if c != cause),
        "other_wrong": tuple(w for w in domain.wrongs if w != wrong),
        "alt_fix": domain.alt_fixes,
        "error": domain.errors,
        "req": domain.reqs,
        "risk": domain.risks,
        "question": domain.questions,
        "remark": catalog.remarks,
    }
    metrics = tuple((m, rng.uniform(*m.before), rng.uniform(*m.after)) for m in domain.metrics)
    return Ctx(
        catalog=catalog,
        rng=rng,
        domain=domain,
        params=params,
        pools=pools,
        metrics=metrics,
        cause=cause,
        fix=fix,
        wrong=wrong,
        reviewer=rng.choice(domain.people)[0],
        estimate=str(rng.randint(3, 9)),
        suite=rng.randint(240, 1400),
        base_date=date(2024, 2, 1) + timedelta(days=rng.randint(0, 660)),
        zone=rng.choice(("eu1", "eu2", "us1", "us3")),
    )


def _validate(trace: TaskTrace) -> None:
    """The guarantees the benchmarks rely on; a violation is a bug in this module."""
    if tuple(stage.stage_type for stage in trace.stages) != STAGES:
        raise RuntimeError(f"{trace.task_id}: stages out of order")
    for stage in trace.stages:
        where = f"{trace.task_id}/{stage.stage_type}"
        texts = [memory.content for memory in stage.memories]
        for memory in stage.memories:
            if memory.critical and memory.content not in stage.constraints:
                raise RuntimeError(f"{where}: flagged memory missing from constraints")
        for sentence in stage.constraints:
            if not any(sentence in text for text in texts):
                raise RuntimeError(f"{where}: constraint not found: {sentence}")
        for detail in stage.details:
            hits = sum(detail.answer in text for text in texts)
            if hits != 1 or len(detail.answer) < 3:
                raise RuntimeError(f"{where}: detail {detail.answer!r} found {hits} times")
        for word, pattern in KEYWORD_RE.items():
            if not any(pattern.search(text) for text in texts):
                raise RuntimeError(f"{where}: keyword {word!r} missing")


def generate_traces(count: int, seed: int = 0, *, size: str = "mixed") -> list[TaskTrace]:
    """``count`` traces; the same (count, seed, size) always gives the same traces.

    Domains rotate in seeded shuffled rounds, so any ten consecutive traces cover all ten.
    Trace ``i`` depends only on (seed, i, size), so a longer list extends a shorter one.
    """
    if size not in _SIZES:
        raise ValueError(f"size must be one of {sorted(_SIZES)}, not {size!r}")
    if count < 0:
        raise ValueError("count must not be negative")
    catalog = load_catalog()
    order_rng = random.Random(seed)
    order: list[Domain] = []
    traces = []
    for index in range(count):
        if not order:
            order = list(catalog.domains)
            order_rng.shuffle(order)
        domain = order.pop()
        rng = random.Random(f"agent-traces/{seed}/{index}/{size}")
        ctx = _context(catalog, domain, rng)
        stages = tuple(build_stage(ctx, stage, _SIZES[size][stage]) for stage in STAGES)
        trace = TaskTrace(
            f"{domain.slug}-{seed}-{index:04d}", domain.key, ctx.sub(domain.goal), stages
        )
        _validate(trace)
        traces.append(trace)
    return traces
