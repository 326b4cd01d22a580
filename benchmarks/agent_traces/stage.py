"""One stage of a trace: ordinary notes, tool calls and output, planning steps, then the planted
constraints and details, with near-duplicates regenerated and every keyword present."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .catalog import Detail
from .fill import Ctx, Fill
from .model import KEYWORDS, PlantedDetail, StageTrace, TraceMemory
from .outputs import EXECUTION_OUTPUTS, VERIFICATION_OUTPUTS, ToolOutput

_TOKEN = re.compile(r"[a-z0-9_]+")
KEYWORD_RE = {
    word: re.compile(rf"(?<![\w/.\-]){word}(?![\w/\-])", re.IGNORECASE) for word in KEYWORDS
}
# Word-set Jaccard similarity at which two memories of a stage count as near-duplicates; new
# memories aim below _SIMILAR_TARGET and are never kept at _NEAR_DUPLICATE or above if avoidable.
_NEAR_DUPLICATE = 0.6
_SIMILAR_TARGET = 0.5
# Slots that report an observation or a result: only memories with one get a reaction.
_OBSERVING = ("{outcome}", "{obs}", "{error}", "{cause}", "{m_mid}", "{m_before}")


def _tokens(text: str) -> frozenset[str]:
    return frozenset(_TOKEN.findall(text.lower()))


def _has_keyword(text: str) -> bool:
    return any(pattern.search(text) for pattern in KEYWORD_RE.values())


class StageBuilder:
    def __init__(self, ctx: Ctx, stage: str) -> None:
        self.ctx = ctx
        self.rng = ctx.rng
        self.stage = stage
        self.catalog = ctx.catalog
        self.templates = ctx.catalog.templates[stage]
        self.memories: list[TraceMemory] = []
        self.kinds: list[str] = []
        self.tokens: list[frozenset[str]] = []
        self.uses: dict[str, int] = {}
        self.usage: dict[str, dict[int, int]] = {}
        self.output_turn = 0

    def fill(self) -> Fill:
        return Fill(self.ctx, self.usage)

    # -- bookkeeping ----------------------------------------------------------------------------

    def insert(self, position: int, memory: TraceMemory, kind: str) -> None:
        self.memories.insert(position, memory)
        self.kinds.insert(position, kind)
        self.tokens.insert(position, _tokens(memory.content))

    def append(self, memory: TraceMemory, kind: str) -> None:
        self.insert(len(self.memories), memory, kind)

    def similarity(self, text: str, skip: int = -1) -> float:
        """Highest similarity of ``text`` to the stage's memories (except the one at ``skip``)."""
        mine = _tokens(text)
        best = 0.0
        for index, other in enumerate(self.tokens):
            union = len(mine | other)
            if union and index != skip:
                best = max(best, len(mine & other) / union)
        return best

    def _usable(self) -> list[tuple[int, str]]:
        return [
            (p, t) for p, t in self.templates if not (t.startswith("^") and self.uses.get(t, 0))
        ] or list(self.templates)

    def _least_used(self, phase: int) -> str:
        """A template used least often so far in this stage, preferring the current phase.

        Templates marked ``^`` say something that happens once in a stage (the estimate, the
        sign-off) and are not repeated while any other template is left.
        """
        usable = self._usable()
        low = min(self.uses.get(t, 0) for _, t in usable)
        fresh = [(p, t) for p, t in usable if self.uses.get(t, 0) == low]
        same = [t for p, t in fresh if p == phase]
        return self.rng.choice(same if same and self.rng.random() < 0.8 else [t for _, t in fresh])

    def _follow(self, template: str) -> str | None:
        options = [f for f in self.catalog.follow[self.stage] if self.uses.get(f, 0) < 2]
        if self.stage == "execution" and any(slot in template for slot in _OBSERVING):
            options += [r for r in self.catalog.reactions if self.uses.get(r, 0) < 2]
        if not options:
            return None
        low = min(self.uses.get(f, 0) for f in options)
        return self.rng.choice([f for f in options if self.uses.get(f, 0) == low])

    # -- ordinary memories ----------------------------------------------------------------------

    def text(self, phase: int, only: Sequence[str] = ()) -> TraceMemory:
        rng = self.rng
        best: tuple[float, str, str, str | None] | None = None
        for attempt in range(40):
            if only:
                template = rng.choice(only)
            elif attempt < 15:
                template = self._least_used(phase)
            else:  # the least used templates keep colliding: take any usable one
                template = rng.choice([t for _, t in self._usable()])
            fill = self.fill()
            content = fill(template)
            follow = self._follow(template) if rng.random() < 0.22 else None
            if follow is not None:
                content = f"{content}{'' if content[-1] in '.!?' else '.'} {fill(follow)}"
            score = self.similarity(content)
            if not 7 <= len(content.split()) <= 70:
                score += 1.0
            if best is None or score < best[0]:
                best = (score, content, template, follow)
            if score < _SIMILAR_TARGET:
                break
        assert best is not None
        for used in best[2:]:
            if used is not None:
                self.uses[used] = self.uses.get(used, 0) + 1
        return TraceMemory(best[1])

    def tool_call(self) -> TraceMemory:
        best: tuple[float, TraceMemory] | None = None
        for _ in range(20):
            fill = self.fill()
            content = fill(self.rng.choice(self.catalog.tool_calls))
            memory = TraceMemory(content, metadata={"kind": "tool_call", "tool": fill.get("tool")})
            score = self.similarity(content)
            if best is None or score < best[0]:
                best = (score, memory)
            if score < _SIMILAR_TARGET:
                break
        assert best is not None
        return best[1]

    def tool_result(self, outputs: Sequence[ToolOutput]) -> TraceMemory:
        best: tuple[float, TraceMemory] | None = None
        for _ in range(2 * len(outputs)):
            make = outputs[self.output_turn % len(outputs)]
            self.output_turn += 1
            tool, content = make(self.fill())
            memory = TraceMemory(content, metadata={"kind": "tool_result", "tool": tool})
            score = self.similarity(content)
            if best is None or score < best[0]:
                best = (score, memory)
            if score < _SIMILAR_TARGET:
                break
        assert best is not None
        return best[1]

    def steps(self) -> list[TraceMemory]:
        rng = self.rng
        groups = list(self.catalog.step_groups)
        if rng.random() < 0.4:
            groups.pop()
        if rng.random() < 0.5:
            groups.pop(1)
        fill = self.fill()
        memories = []
        for number, group in enumerate(groups, 1):
            if number == 1:
                frame = rng.choice(self.catalog.step_first)
            elif number == len(groups):
                frame = rng.choice(self.catalog.step_last)
            else:
                frame = rng.choice(self.catalog.step_middle)
            action = fill(rng.choice(group))
            memories.append(TraceMemory(frame.replace("{a}", action).replace("{k}", str(number))))
        return memories

    def dedupe(self, outputs: Sequence[ToolOutput]) -> None:
        """Regenerate ordinary memories that ended up near-duplicates of another one."""
        for index, kind in enumerate(self.kinds):
            if kind not in ("text", "call", "result"):
                continue
            if self.similarity(self.memories[index].content, skip=index) < _NEAR_DUPLICATE:
                continue
            del self.memories[index], self.kinds[index], self.tokens[index]
            if kind == "result":
                memory = self.tool_result(outputs)
            elif kind == "call":
                memory = self.tool_call()
            else:
                memory = self.text(min(2, 3 * index // len(self.kinds)))
            self.insert(index, memory, kind)

    def ensure_keywords(self) -> None:
        """Swap ordinary notes for ones carrying any stage keyword that did not come up."""
        for word, pattern in KEYWORD_RE.items():
            if any(pattern.search(memory.content) for memory in self.memories):
                continue
            candidates = [t for _, t in self.templates if pattern.search(t)]
            spare = [
                i
                for i, kind in enumerate(self.kinds)
                if kind == "text" and not _has_keyword(self.memories[i].content)
            ]
            if not candidates or not spare:
                raise RuntimeError(f"cannot place keyword {word!r} in {self.stage}")
            index = self.rng.choice(spare)
            del self.memories[index], self.kinds[index], self.tokens[index]
            for _ in range(30):
                memory = self.text(0, candidates)
                if pattern.search(memory.content):
                    break
            self.insert(index, memory, "text")

    # -- planted constraints and details --------------------------------------------------------

    def flagged(self) -> list[str]:
        domain, rng = self.ctx.domain, self.rng
        if self.stage == "planning":
            chosen = rng.sample(domain.critical, k=rng.randint(2, 3))
        elif self.stage == "execution":
            chosen = [rng.choice(domain.exec_critical)]
        else:
            chosen = []
        return [Fill(self.ctx)(sentence) for sentence in chosen]

    def soft(self) -> tuple[TraceMemory, str]:
        ctx, rng = self.ctx, self.rng
        own = [s for s in ctx.domain.soft if s not in ctx.used_soft]
        generic = [s for s in self.catalog.soft_generic if s not in ctx.used_soft]
        raw = rng.choice(own if own and rng.random() < 0.5 else generic)
        ctx.used_soft.add(raw)
        fill = self.fill()
        sentence = fill(raw)
        lead = fill(rng.choice(self.catalog.soft_leads[self.stage]))
        shape = rng.random()
        if shape < 0.45:
            content = f"{lead} {sentence}"
        elif shape < 0.8:
            content = f"{lead} {sentence} {rng.choice(self.catalog.soft_tails)}"
        else:
            content = f"{sentence} {rng.choice(self.catalog.soft_tails)}"
        return TraceMemory(content), sentence

    def details(self, count: int) -> list[PlantedDetail]:
        rng = self.rng
        own = [d for d in self.ctx.domain.details if d.stage == self.stage]
        generic = [d for d in self.catalog.details if d.stage == self.stage]
        rng.shuffle(own)
        rng.shuffle(generic)
        planted: list[PlantedDetail] = []
        for spec in (*own, *generic):
            if len(planted) == count:
                break
            made = self._detail(spec, planted)
            if made is not None:
                memory, detail = made
                self.insert(rng.randint(0, len(self.memories)), memory, "detail")
                planted.append(detail)
        if len(planted) < 3:
            raise RuntimeError(f"only {len(planted)} details could be planted in {self.stage}")
        return planted

    def _detail(
        self, spec: Detail, planted: Sequence[PlantedDetail]
    ) -> tuple[TraceMemory, PlantedDetail] | None:
        for _ in range(10):
            fill = self.fill()
            answer = fill.answer(spec.answer)
            fill.values["answer"] = answer
            content, question = fill(spec.text), fill(spec.question)
            if len(answer) < 3 or answer not in content:
                continue
            if any(answer in memory.content for memory in self.memories):
                continue
            if any(detail.answer in content for detail in planted):
                continue
            if self.similarity(content) >= _NEAR_DUPLICATE:
                continue
            return TraceMemory(content), PlantedDetail(question, answer)
        return None


def build_stage(ctx: Ctx, stage: str, bounds: tuple[int, int]) -> StageTrace:
    rng = ctx.rng
    builder = StageBuilder(ctx, stage)
    total = rng.randint(*bounds)
    flagged = builder.flagged()
    n_soft, n_details = rng.randint(1, 2), rng.randint(3, 5)
    steps = builder.steps() if stage == "planning" else []
    n_plain = total - len(flagged) - n_soft - n_details - len(steps)

    kinds = ["text"] * n_plain
    if stage == "execution":
        n_results = max(1, round(total * rng.uniform(0.08, 0.12)))
        n_calls = rng.randint(2, 4)
    elif stage == "verification":
        n_results, n_calls = rng.randint(1, 2), 0
    else:
        n_results, n_calls = 0, 0
    for order, position in enumerate(rng.sample(range(2, n_plain), k=n_results + n_calls)):
        kinds[position] = "result" if order < n_results else "call"
    outputs = EXECUTION_OUTPUTS if stage == "execution" else VERIFICATION_OUTPUTS
    outputs = tuple(rng.sample(outputs, k=len(outputs)))
    for index, kind in enumerate(kinds):
        if kind == "result":
            builder.append(builder.tool_result(outputs), kind)
        elif kind == "call":
            builder.append(builder.tool_call(), kind)
        else:
            builder.append(builder.text(min(2, 3 * index // n_plain)), kind)

    if steps:
        low, high = n_plain // 4, (3 * n_plain) // 4
        for offset, position in enumerate(sorted(rng.sample(range(low, high), k=len(steps)))):
            builder.insert(position + offset, steps[offset], "step")
    builder.dedupe(outputs)
    builder.ensure_keywords()

    planted: dict[int, str] = {}
    for sentence in flagged:
        memory = TraceMemory(sentence, critical=True)
        limit = len(builder.memories) * 2 // 3 if stage == "planning" else len(builder.memories)
        builder.insert(rng.randint(0, limit), memory, "flagged")
        planted[id(memory)] = sentence
    for _ in range(n_soft):
        memory, sentence = builder.soft()
        builder.insert(rng.randint(0, len(builder.memories)), memory, "soft")
        planted[id(memory)] = sentence
    details = builder.details(n_details)
    constraints = tuple(planted[id(m)] for m in builder.memories if id(m) in planted)
    return StageTrace(stage, tuple(builder.memories), constraints, tuple(details))
