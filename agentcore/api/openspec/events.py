"""What each history event is on the change stream: the seven event types, and the event's
JSON (``models.StreamEvent``)."""

from __future__ import annotations

from agentcore.api.openspec.models import StreamEvent
from agentcore.services.ports import FeedEvent

EXPIRY_ACTOR = "expiry"  # services/memory_manager.py: delete_expired
SUPERSESSION_ACTOR = "supersession"  # services/supersession.py: SUPERSESSION

EVENT_TYPES = ("create", "update", "delete", "supersede", "promote", "compact", "expire")
_BY_KIND = {"add": "create", "update": "update", "delete": "delete"}


def event_type(kind: str, actor: str | None) -> str:
    """``add`` is a create; an update by supersession a supersede; a delete by expiry an
    expire; promote and compact keep their names."""
    if kind == "update" and actor == SUPERSESSION_ACTOR:
        return "supersede"
    if kind == "delete" and actor == EXPIRY_ACTOR:
        return "expire"
    return _BY_KIND.get(kind, kind)


def stream_event(e: FeedEvent) -> StreamEvent:
    level, _, scope_id = e.scope_key.partition(":")
    layer = None
    for side in (e.after, e.before):
        if side is not None and isinstance(side.get("layer"), str):
            layer = side["layer"]
            break
    return StreamEvent(
        position=e.position,
        type=event_type(e.kind, e.actor),
        memory_id=e.memory_id,
        scope=level,
        scope_id=scope_id,
        at=e.at,
        actor=e.actor,
        layer=layer,
        before=e.before,
        after=e.after,
    )
