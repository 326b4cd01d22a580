"""Scope rules: which level a memory belongs to, and which memories a caller may see.

A memory is visible to a call exactly when the call searches the memory's scope level and
supplies that level's identifier with the same value. A caller can only search levels whose
identifiers it supplies (DESIGN §1), so it never sees another scope's memories.
"""

from __future__ import annotations

from collections.abc import Iterable

from agentcore.domain.errors import InvalidScope, MissingIdentifier
from agentcore.domain.models import ScopeIds, ScopeLevel, scope_key

SCOPE_ID_FIELDS = tuple(level.id_field for level in ScopeLevel)


def parse_level(value: str) -> ScopeLevel:
    try:
        return ScopeLevel(value)
    except ValueError:
        allowed = ", ".join(level.value for level in ScopeLevel)
        raise InvalidScope(f"unknown scope {value!r}; expected one of: {allowed}") from None


def owning_level(ids: ScopeIds, explicit: str | None = None) -> ScopeLevel:
    """The level a new memory is stored at: the explicit one, else the most specific id given."""
    present = ids.present()
    if not present:
        raise MissingIdentifier(
            "a memory needs at least one scope identifier: " + ", ".join(SCOPE_ID_FIELDS)
        )
    if explicit is None:
        return next(iter(present))
    level = parse_level(explicit)
    if level not in present:
        raise MissingIdentifier(f"scope {level.value!r} needs {level.id_field}")
    return level


def visible_scope_keys(ids: ScopeIds, levels: Iterable[str] | None = None) -> list[str]:
    """Scope keys a caller may read: the requested levels (default: every level it supplies)."""
    present = ids.present()
    if not present:
        raise MissingIdentifier(
            "supply at least one scope identifier: " + ", ".join(SCOPE_ID_FIELDS)
        )
    if levels is None:
        chosen = list(present)
    else:
        chosen = [parse_level(value) for value in levels]
        for level in chosen:
            if level not in present:
                raise MissingIdentifier(f"searching scope {level.value!r} needs {level.id_field}")
    return [scope_key(level, present[level]) for level in dict.fromkeys(chosen)]
