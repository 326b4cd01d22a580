"""Promotion rules (hierarchical-memory-system, scoped-memory-store): a memory moves upward only.

Volatile levels (``task``, ``agent``, ``session``) promote to any persistent level; persistent
levels promote only to a broader one, in the order user → project → team → org → company.
Anything else (downward, sideways, to the same level, to a volatile level) is
``INVALID_PROMOTION``. Promotion makes a new memory at the target level; the target level's id
comes from the call, else from the memory's own scope ids.
"""

from __future__ import annotations

from dataclasses import replace

from agentcore.domain.errors import InvalidPromotion, MissingIdentifier
from agentcore.domain.models import ScopeIds, ScopeLevel

VOLATILE = (ScopeLevel.TASK, ScopeLevel.AGENT, ScopeLevel.SESSION)
PERSISTENT = (
    ScopeLevel.USER,
    ScopeLevel.PROJECT,
    ScopeLevel.TEAM,
    ScopeLevel.ORG,
    ScopeLevel.COMPANY,
)  # narrowest first


def goes_upward(source: ScopeLevel, target: ScopeLevel) -> bool:
    """Whether a memory of ``source`` may be promoted to ``target`` (module doc)."""
    return target in PERSISTENT and (
        source in VOLATILE or PERSISTENT.index(target) > PERSISTENT.index(source)
    )


def check_promotion(source: ScopeLevel, target: ScopeLevel) -> None:
    """Raises ``InvalidPromotion`` unless ``source`` → ``target`` goes upward."""
    if goes_upward(source, target):
        return
    raise InvalidPromotion(
        f"a {source.value} memory cannot be promoted to the {target.value} scope: promotion goes "
        "upward only, from task, agent or session to a persistent scope, or from a persistent "
        "scope to a broader one (user → project → team → org → company)",
        source_scope=source.value,
        target_scope=target.value,
    )


def promoted_scope(source: ScopeIds, call: ScopeIds, target: ScopeLevel) -> ScopeIds:
    """The scope ids of the promoted memory: the source's, with the target level's id from the
    call (else the source's own). ``MissingIdentifier`` when neither names it."""
    identifier = call.get(target) or source.get(target)
    if identifier is None:
        raise MissingIdentifier(
            f"promoting to the {target.value} scope needs {target.id_field}",
            errors=[{"field": target.id_field, "message": "required for the target scope"}],
        )
    return replace(source, **{target.id_field: identifier})


def first_persistent(scope: ScopeIds) -> ScopeLevel | None:
    """Where a session's memories go on close: the narrowest persistent level the scope names."""
    return next((level for level in PERSISTENT if scope.get(level) is not None), None)
