"""The scope isolation property, shared by the unit test (fakes) and the integration test."""

from __future__ import annotations

from hypothesis import strategies as st

from agentcore.domain.models import Memory, ScopeIds, ScopeLevel

LEVELS = list(ScopeLevel)
_IDS = st.sampled_from(["a", "b"])


@st.composite
def scope_ids(draw: st.DrawFn, min_size: int = 1) -> ScopeIds:
    chosen = draw(st.sets(st.sampled_from(LEVELS), min_size=min_size, max_size=3))
    return ScopeIds(**{level.id_field: draw(_IDS) for level in chosen})


@st.composite
def owned(draw: st.DrawFn) -> tuple[ScopeIds, str | None]:
    """A memory's scope ids and, sometimes, an explicit level among them."""
    ids = draw(scope_ids())
    explicit = draw(st.none() | st.sampled_from([level.value for level in ids.present()]))
    return ids, explicit


def visible(memory: Memory, caller: ScopeIds) -> bool:
    """The rule: the caller supplies the memory's own level with the same identifier."""
    return caller.get(memory.scope_level) == memory.scope.get(memory.scope_level)
