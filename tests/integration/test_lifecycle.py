"""The lifecycle on each backend: the expiry sweeper deletes expired rows and their vectors
(with a delete event by ``expiry`` and a metric), and promotion's dedupe reads the promoted."""

from __future__ import annotations

import asyncio

from agentcore.bootstrap import Container
from agentcore.domain.models import ScopeIds, ScopeLevel
from agentcore.domain.records import NewMemory
from agentcore.services.ports import VectorFilter

SCOPE = ScopeIds(user_id="sweep-user")


async def test_the_sweeper_deletes_expired_rows_and_vectors(stack: Container) -> None:
    brief = await stack.memory.add(NewMemory("The door code is 4711.", SCOPE, ttl_seconds=1))
    kept = await stack.memory.add(NewMemory("The office closes at six.", SCOPE))
    await stack.memory.indexed()
    filt = VectorFilter(scope_keys=["user:sweep-user"])
    assert await stack.vectors.count(filt) == 2
    await asyncio.sleep(1.1)

    assert await stack.expiry.sweep() == 1

    assert await stack.vectors.count(filt) == 1
    [event] = [e for e in await stack.memory.history(brief.id, SCOPE) if e.kind.value == "delete"]
    assert event.actor == "expiry"
    assert [m.id for m in await stack.memory.read([kept.id], SCOPE)] == [kept.id]
    assert stack.registry.get_sample_value("agentcore_memories_expired_total") == 1
    assert await stack.expiry.sweep() == 0


async def test_a_session_memory_gets_the_default_ttl_and_promotion_is_found(
    stack: Container,
) -> None:
    session = ScopeIds(session_id="s-ttl", user_id="ttl-user")
    note = await stack.memory.add(
        NewMemory("I prefer aisle seats.", session, scope_level="session")
    )
    assert note.expires_at is not None
    assert (note.expires_at - note.created_at).days == 30
    report = await stack.promotion.close_session("s-ttl", session)
    [promoted] = report.promoted
    assert promoted.memory.scope_level is ScopeLevel.USER
    assert promoted.memory.expires_at is None  # a user's memory keeps
    assert await stack.memory.promoted_from([note.id]) == {note.id: promoted.memory.id}


async def test_key_search_is_ranked_in_the_database(stack: Container) -> None:
    owner = ScopeIds(user_id="keys-user")
    for key, value in [("a_b_c", 1), ("abc", 2), ("xabcx", 3), ("other", "abc inside"), ("a%c", 4)]:
        await stack.key_values.put(key, value, owner)
    found = await stack.key_values.search("ABC", owner)
    assert [(h.found.key, h.matched_field, h.match) for h in found] == [
        ("abc", "key", "exact"),
        ("xabcx", "key", "substring"),
        ("other", "value", "substring"),
    ]
    assert [h.found.key for h in await stack.key_values.search("a%", owner)] == ["a%c"]
    assert [h.found.key for h in await stack.key_values.search("a_b", owner)] == ["a_b_c"]


async def test_closed_episodes_are_consolidated_on_schedule_once(stack: Container) -> None:
    session = ScopeIds(session_id="cons-s1", user_id="cons-user")
    for text in ("I prefer tea over coffee.", "My sister Ana lives in Porto."):
        await stack.working.append(session, text, kind="message", role="user")
    await stack.working.flush("cons-s1")  # the session's episode is closed with its items

    first = await stack.consolidator.run()
    again = await stack.consolidator.run()

    assert first >= 1
    assert again == 0
    facts = await stack.memory.in_session("cons-s1", [ScopeLevel.SESSION])
    semantic = [m for m in facts if m.layer.value == "semantic"]
    assert semantic
    assert all(m.metadata["source_ids"] for m in semantic)
