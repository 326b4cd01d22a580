"""The seven layers of the hierarchical-memory specification on our four layers and scope
levels. Each (layer, scope level) pair belongs to exactly one spec layer, so every memory has
one spec layer and a request naming a spec layer reads or writes exactly its pairs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentcore.domain.errors import InvalidLayer
from agentcore.domain.models import Layer, ScopeLevel

ALL_LEVELS = tuple(ScopeLevel)
_SHARED = (ScopeLevel.PROJECT, ScopeLevel.TEAM, ScopeLevel.ORG, ScopeLevel.COMPANY)


@dataclass(frozen=True, slots=True)
class SpecLayer:
    name: str  # as the specification spells it
    layers: tuple[Layer, ...]  # ours; the first is where a create writes
    levels: tuple[ScopeLevel, ...]  # the scope levels it covers, most specific first
    description: str


SPEC_LAYERS = (
    SpecLayer(
        "Working",
        (Layer.WORKING,),
        (ScopeLevel.SESSION,),
        "a session's immediate context (memory.working.*: Redis or in process, token-bounded, "
        "1-hour idle TTL); read in order, not by meaning",
    ),
    SpecLayer(
        "Session",
        (Layer.EPISODIC,),
        (ScopeLevel.SESSION,),
        "what happened in a conversation: episodic memories of the session scope",
    ),
    SpecLayer(
        "Episodic",
        (Layer.EPISODIC,),
        (ScopeLevel.TASK, ScopeLevel.AGENT),
        "events and episodes of a task or an agent",
    ),
    SpecLayer(
        "Semantic",
        (Layer.SEMANTIC,),
        (ScopeLevel.TASK, ScopeLevel.AGENT, ScopeLevel.SESSION),
        "facts and learnings of a task, an agent or a session",
    ),
    SpecLayer(
        "Procedural",
        (Layer.PROCEDURAL,),
        ALL_LEVELS,
        "action → outcome patterns with success rates, at any level",
    ),
    SpecLayer(
        "UserPersonal",
        (Layer.SEMANTIC, Layer.EPISODIC),
        (ScopeLevel.USER,),
        "what is known about a user: facts, preferences and events of the user scope",
    ),
    SpecLayer(
        "Archival",
        (Layer.SEMANTIC, Layer.EPISODIC),
        _SHARED,
        "long-lived shared knowledge: project, team, org and company scopes",
    ),
)
_BY_KEY = {layer.name.lower(): layer for layer in SPEC_LAYERS}
_BY_KEY["user_personal"] = _BY_KEY["userpersonal"]


def spec_layer(name: object) -> SpecLayer:
    """The spec layer a request names (case ignored; ``user_personal`` too); ``InvalidLayer``
    for anything else."""
    found = _BY_KEY.get(name.lower()) if isinstance(name, str) else None
    if found is None:
        names = ", ".join(layer.name for layer in SPEC_LAYERS)
        shown = repr(name)[:100]
        raise InvalidLayer(f"unknown layer {shown}; expected one of: {names}")
    return found


def spec_layer_of(layer: Layer | str, level: ScopeLevel | str) -> SpecLayer:
    """The spec layer a memory of ``layer`` stored at ``level`` belongs to."""
    ours, at = Layer(layer), ScopeLevel(level)
    for candidate in SPEC_LAYERS:
        if ours in candidate.layers and at in candidate.levels:
            return candidate
    raise AssertionError(f"no spec layer for {ours.value} at {at.value}")  # the table is total


def levels_supplied(layer: SpecLayer, supplied: Sequence[ScopeLevel]) -> list[ScopeLevel]:
    """The levels of ``layer`` whose id the caller supplied, most specific first."""
    return [level for level in layer.levels if level in supplied]
